"""The aiohttp transport of the OpenAI Responses API (spec/openai-responses.md, OR-20).

Theory of operation
-------------------
`OpenAIResponsesClient` is `OpenAIChatClient` with another path and another codec. It inherits
the constructor (key, base URL and query, organization and project, timeouts, retry policy,
headers, body and line bounds, injectable ``sleep`` and ``rng``), the session life cycle
(PV-31, PV-37), the headers and every error helper, and overrides:

1. ``path``: the inherited attempt posts to ``{base_url}/responses``; it reads the whole body,
   or the first chunk of a stream, so a stream is retried only before its first byte (PV-29).
2. ``_encode``: the body of ``build_responses_request`` (OR-1 .. OR-12).
3. ``_inner_get_response``: the body through ``parse_responses_response``.
4. ``_inner_get_streaming_response``: each chunk through a ``ResponsesStreamDecoder``, its
   updates yielded as soon as they are decoded. A stream that ends without
   ``response.completed`` / ``response.incomplete`` (or ``[DONE]``) is a
   `StreamInterruptedError` (PV-15).

The request's ``store`` option goes to the codec, which decides whether the response id is the
thread's id (OR-15). Every exit that is not a clean end closes the HTTP response and with it its
connection (PV-30); every error leaves through the inherited scrubbing (PV-24).
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from typing import Any

import aiohttp

from minagent import ChatResponse, ChatResponseUpdate, Message, ProviderError

from ._client import AzureOpenAIChatClient, OpenAIChatClient, _decode, _tagged
from ._codec import OpenAIProtocolError, loads
from ._responses_codec import build_responses_request, parse_responses_response
from ._responses_stream import ResponsesStreamDecoder

__all__ = ["AzureOpenAIResponsesClient", "OpenAIResponsesClient"]


class OpenAIResponsesClient(OpenAIChatClient):
    """A chat client for ``POST /responses`` of OpenAI and compatible servers (OR-20).

    Takes the arguments of `OpenAIChatClient` (``max_tokens_key`` has no effect here:
    ``max_tokens`` is always sent as ``max_output_tokens``, OR-10). By default the service keeps
    the conversation (``store`` is the service's default): each response's id becomes the
    ``conversation_id`` and the next call sends only the new messages with
    ``previous_response_id`` (OR-15). Pass ``options={"store": False}`` to keep the history on
    this side instead; add ``"include": ["reasoning.encrypted_content"]`` so reasoning models
    get their reasoning back (OR-5).
    """

    path = "/responses"

    # -- the two calls ------------------------------------------------------------------------

    async def _inner_get_response(
        self, *, messages: list[Message], options: dict[str, Any], **kwargs: Any
    ) -> ChatResponse:
        body = self._encode(messages, options, stream=False)
        response, raw = await self._send(body, stream=False)
        request_id = response.headers.get("x-request-id")
        result = self._parse_responses_body(raw, request_id, options.get("store"))
        if request_id:
            result.additional_properties["request_id"] = request_id
        return result

    async def _inner_get_streaming_response(
        self, *, messages: list[Message], options: dict[str, Any], **kwargs: Any
    ) -> AsyncIterator[ChatResponseUpdate]:
        body = self._encode(messages, options, stream=True)
        store = options.get("store")
        response, first = await self._send(body, stream=True)
        request_id = response.headers.get("x-request-id")
        clean = False
        try:
            if response.content_type == "application/json":  # the server ignored stream (OR-20)
                rest = await self._rest_of_body(response, request_id)
                for update in self._parse_responses_body(first + rest, request_id, store).as_updates():
                    yield _tagged(update, request_id)
                clean = True
                return
            decoder = ResponsesStreamDecoder(
                store=store if isinstance(store, bool) else None, max_line_size=self.max_line_size
            )
            chunk = first
            while True:
                updates, error = _decode(decoder.feed, chunk)
                for update in updates:
                    yield _tagged(update, request_id)
                if error is not None:
                    raise self._finish_error(error, request_id)
                if decoder.done:
                    break  # data after the terminal event is ignored (PV-15)
                chunk, failure = await self._read_chunk(response)
                if failure is not None:
                    raise self._interrupted(failure, request_id)
                if not chunk:
                    break
            updates, error = _decode(decoder.close, None)
            for update in updates:
                yield _tagged(update, request_id)
            if error is not None:
                if isinstance(error, OpenAIProtocolError) and not decoder.done and "PV-36" not in str(error):
                    raise self._interrupted(f"truncated event: {error}", request_id)  # ended inside an event
                raise self._finish_error(error, request_id)
            if not decoder.done:
                raise self._interrupted("the stream ended before response.completed", request_id)
            clean = True
        finally:
            if clean:  # PV-30: a fully read body returns its connection to the pool
                response.release()
            else:
                response.close()

    # -- sending ------------------------------------------------------------------------------

    def _encode(self, messages: list[Message], options: dict[str, Any], *, stream: bool) -> bytes:
        request = build_responses_request(messages, options, model=self.model, stream=stream)
        return json.dumps(request, ensure_ascii=False, allow_nan=False).encode("utf-8")

    async def _rest_of_body(self, response: aiohttp.ClientResponse, request_id: str | None) -> bytes:
        try:
            return await self._read_body(response)
        except ProviderError as error:
            raise self._finish_error(error, request_id) from None
        except Exception:
            failure = "the connection failed while reading the body"
        raise self._interrupted(failure, request_id)

    def _parse_responses_body(self, raw: bytes, request_id: str | None, store: Any) -> ChatResponse:
        """A whole JSON answer as a response; a body that is not valid JSON is a protocol error."""
        try:
            data = loads(raw, "the response body")  # strict JSON (PV-10)
            return parse_responses_response(data, store=store if isinstance(store, bool) else None)
        except ProviderError as error:
            raise self._finish_error(error, request_id) from None


class AzureOpenAIResponsesClient(OpenAIResponsesClient, AzureOpenAIChatClient):
    """The Responses API of Azure OpenAI (OR-23): `OpenAIResponsesClient` with the endpoint,
    key and token handling of `AzureOpenAIChatClient`.

    ``POST {endpoint}/openai/v1/responses`` (the v1 API), or with an ``api_version``
    ``POST {endpoint}/openai/responses?api-version=...``; ``base_url`` replaces either. The
    deployment name is the body's ``model``. ``endpoint``, ``api_key`` and ``api_version``
    default to ``AZURE_OPENAI_ENDPOINT``, ``AZURE_OPENAI_API_KEY`` and ``OPENAI_API_VERSION``.
    """

    def __init__(
        self,
        deployment: str,
        *,
        endpoint: str | None = None,
        api_version: str | None = None,
        base_url: str | None = None,
        **kwargs: Any,
    ) -> None:
        version = api_version or os.environ.get("OPENAI_API_VERSION") or None
        if base_url is None:
            endpoint = endpoint or os.environ.get("AZURE_OPENAI_ENDPOINT") or None
            if not endpoint:
                raise ValueError("AzureOpenAIResponsesClient needs endpoint= or AZURE_OPENAI_ENDPOINT")
            base_url = f"{endpoint.rstrip('/')}/openai" + ("" if version else "/v1")
        super().__init__(deployment, api_version=version, base_url=base_url, **kwargs)
