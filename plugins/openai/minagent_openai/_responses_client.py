"""The connection of the OpenAI Responses API (spec/openai-responses.md, OR-20, OR-21,
OR-23).

Rules
-----
1. `OpenAIResponsesClient` is `OpenAIChatClient` with another path and another codec: it
   overrides nothing else. The constructor (key, base URL and query, organization and
   project, timeouts, retry policy, headers, body and line bounds, ``sleep`` and
   ``rng``), the headers, the request id (OA-29) and everything `HTTPChatClient` does
   (PV-23 .. PV-40) are the same.
2. Azure's Responses client adds only its URL to `AzureOpenAIChatClient`'s key, token
   and environment handling (OR-23).

Theory of operation
-------------------
``path`` is ``/responses``; ``_codec()`` gives a `ResponsesCodec`, which takes the
request's ``store`` option with the request, so the codec decides whether the response
id is the thread's id (OR-15). A stream that ends without ``response.completed`` /
``response.incomplete`` (or ``[DONE]``) is a `StreamInterruptedError` (PV-15).
"""

from __future__ import annotations

import os
from typing import Any

from ._client import AzureOpenAIChatClient, OpenAIChatClient
from ._codec import ResponsesCodec
from ._minagent import WireCodec

__all__ = ["AzureOpenAIResponsesClient", "OpenAIResponsesClient"]


class OpenAIResponsesClient(OpenAIChatClient):
    """A chat client for ``POST /responses`` of OpenAI and compatible servers (OR-20).

    Takes the arguments of `OpenAIChatClient` (``max_tokens_key`` has no effect here:
    ``max_tokens`` is always sent as ``max_output_tokens``, OR-10). By default the
    service keeps the conversation (``store`` is the service's default): each response's
    id becomes the ``conversation_id`` and the next call sends only the new messages
    with ``previous_response_id`` (OR-15). Pass ``options={"store": False}`` to keep the
    history on this side instead; add ``"include": ["reasoning.encrypted_content"]`` so
    reasoning models get their reasoning back (OR-5).
    """

    path = "/responses"

    def _codec(self) -> WireCodec:
        return ResponsesCodec()


class AzureOpenAIResponsesClient(OpenAIResponsesClient, AzureOpenAIChatClient):
    """The Responses API of Azure OpenAI (OR-23): `OpenAIResponsesClient` with the
    endpoint, key and token handling of `AzureOpenAIChatClient`.

    ``POST {endpoint}/openai/v1/responses`` (the v1 API), or with an ``api_version``
    ``POST {endpoint}/openai/responses?api-version=...``; ``base_url`` replaces either.
    The deployment name is the body's ``model``. ``endpoint``, ``api_key`` and
    ``api_version`` default to ``AZURE_OPENAI_ENDPOINT``, ``AZURE_OPENAI_API_KEY`` and
    ``OPENAI_API_VERSION``.
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
                raise ValueError(
                    "AzureOpenAIResponsesClient needs endpoint= or AZURE_OPENAI_ENDPOINT"
                )
            base_url = f"{endpoint.rstrip('/')}/openai" + ("" if version else "/v1")
        super().__init__(deployment, api_version=version, base_url=base_url, **kwargs)
