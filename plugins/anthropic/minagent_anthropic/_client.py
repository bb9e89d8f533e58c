"""The aiohttp transport of the Anthropic Messages API plugin (spec/anthropic.md, AN-19 .. AN-21).

Theory of operation
-------------------
This is the only module of the package that imports aiohttp (PV-1). It does three things and
leaves every decision about the wire format to the codec:

1. **Send.** ``_attempt`` makes one ``POST {base_url}/v1/messages`` (AN-19). A non-2xx answer
   becomes a typed error through ``parse_error`` and ``error_for_status`` (PV-23, AN-18); a
   timeout or a refused/reset connection becomes `ProviderTimeoutError` /
   `ProviderConnectionError`. For a stream the attempt also reads the first chunk of the body,
   so everything up to the first byte is inside the attempt and nothing after it is.
2. **Retry.** ``retry_call`` repeats attempts under the client's `RetryPolicy` (PV-25 .. PV-27):
   429 and 529 (overloaded) among them, after the server's ``retry-after`` (AN-20), waiting
   through the injectable ``sleep`` with the injectable ``rng``. After the first byte a failure
   is `StreamInterruptedError` (PV-29), never retried.
3. **Decode.** The body goes to ``parse_response`` or, chunk by chunk as it arrives, to a
   ``MessagesStreamDecoder``; updates are yielded as soon as they are decoded. Each call's
   map of normalised tool ids (``wire_tool_ids``, AN-8) goes with it to the decoder.

Every exit that is not a clean end — an error, cancellation of the consumer, an early
``aclose()`` of the stream — closes the HTTP response, which closes its connection: no
connection stays acquired and no task is left (PV-30).

Secrets (PV-24, PV-35): the API key and a password in the base URL are held in `Secret`s.
Every error leaves through ``_scrub``, which redacts its texts, attributes and headers and
cuts its chain; errors are raised outside the ``except`` block that caught the library's
exception, so no library exception (whose request info carries the headers) is chained.

The session (PV-31, PV-37) belongs to the event loop that created it: a small async generator
(the *keeper*), started on that loop, closes it when the loop shuts down its async generators
(as ``asyncio.run`` does), so a client can be used under one ``asyncio.run`` after another.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

import aiohttp

from minagent import (
    BaseChatClient,
    ChatResponse,
    ChatResponseUpdate,
    FunctionInvocationConfiguration,
    Message,
    ProviderConnectionError,
    ProviderError,
    ProviderTimeoutError,
    StreamInterruptedError,
)
from minagent.providers import (
    RetryPolicy,
    Secret,
    SupportsRandom,
    describe,
    error_for_status,
    redact,
    retry_call,
)

from ._request import API_VERSION, DEFAULT_MAX_TOKENS, build_request, wire_tool_ids
from ._response import (
    DEFAULT_MAX_LINE_SIZE,
    AnthropicProtocolError,
    AnthropicStreamError,
    MessagesStreamDecoder,
    _snippet,
    parse_error,
    parse_response,
)

__all__ = ["DEFAULT_BASE_URL", "DEFAULT_MAX_BODY_SIZE", "AnthropicChatClient"]

DEFAULT_BASE_URL = "https://api.anthropic.com"
DEFAULT_MAX_BODY_SIZE = 32 * 1024 * 1024  # bytes of a 2xx non-streaming body (PV-36)
PROVIDER = "anthropic"
USER_AGENT = "minagent-anthropic"
_MAX_ERROR_BODY = 64 * 1024  # bytes of a non-2xx body read for its message (AN-20)

logger = logging.getLogger("minagent_anthropic")

Sleep = Callable[[float], Awaitable[object]]


class AnthropicChatClient(BaseChatClient):
    """A chat client for ``POST /v1/messages`` of the Anthropic Messages API.

    ``api_key`` and ``base_url`` default to ``ANTHROPIC_API_KEY`` and ``ANTHROPIC_BASE_URL``
    (then ``https://api.anthropic.com``, without ``/v1`` as in the official SDK).
    ``anthropic_version`` is the API version sent (default the current ``2026-10-21``; pass
    ``"2023-06-01"`` to use temperature / top_p / top_k on models that accept them). ``max_tokens``
    is sent when a call's options name none (the API requires it). ``timeout`` (seconds, None
    for none) bounds connecting and every wait for data, not a whole stream. ``max_retries``
    builds the `RetryPolicy` unless ``retry_policy`` is given. ``session``: an
    ``aiohttp.ClientSession`` to use (and leave open); by default the client creates one on
    first use and closes it in ``aclose()`` / ``async with`` (PV-31). ``sleep`` and ``rng``
    replace ``asyncio.sleep`` and the random source of the backoff (tests, PV-32).
    ``max_body_size`` (bytes) and ``max_line_size`` (characters) bound what the server may send
    (PV-36).
    """

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float | None = 600.0,
        max_retries: int = 2,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        middleware: Any = None,
        function_invocation_configuration: FunctionInvocationConfiguration | None = None,
        session: aiohttp.ClientSession | None = None,
        retry_policy: RetryPolicy | None = None,
        default_headers: Mapping[str, str] | None = None,
        anthropic_version: str = API_VERSION,
        sleep: Sleep | None = None,
        rng: SupportsRandom | None = None,
        max_body_size: int = DEFAULT_MAX_BODY_SIZE,
        max_line_size: int | None = DEFAULT_MAX_LINE_SIZE,
    ) -> None:
        super().__init__(
            middleware=middleware,
            function_invocation_configuration=function_invocation_configuration,
        )
        self.model = model
        key = api_key if api_key is not None else os.environ.get("ANTHROPIC_API_KEY", "")
        self._api_key = Secret(key)
        self._init_url((base_url or os.environ.get("ANTHROPIC_BASE_URL") or DEFAULT_BASE_URL).strip(), key)
        if timeout is not None and not timeout > 0:
            raise ValueError(f"timeout must be > 0 seconds or None, got {timeout!r}")
        if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
            raise ValueError(f"max_tokens must be a positive int, got {max_tokens!r}")
        if max_body_size < 1:
            raise ValueError(f"max_body_size must be >= 1 byte, got {max_body_size!r}")
        self.max_body_size = max_body_size
        self.max_line_size = max_line_size
        self.timeout = timeout
        self.max_tokens = max_tokens
        self.retry_policy = retry_policy or RetryPolicy(max_retries=max_retries)
        self.default_headers = dict(default_headers or {})
        self.anthropic_version = anthropic_version
        self._sleep: Sleep = sleep or asyncio.sleep
        self._rng = rng
        self._session = session
        self._owns_session = session is None
        self._session_loop: asyncio.AbstractEventLoop | None = None
        self._keeper: AsyncGenerator[None, None] | None = None

    def _init_url(self, url: str, key: str) -> None:
        """The endpoint to call and the URL to show: a password in the URL is a secret (PV-24)."""
        parts = urlsplit(url.rstrip("/"))
        password = unquote(parts.password or "")
        self._url_password = Secret(password)
        masked = redact(url, key, password) if password else redact(url, key)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"base_url must be an http(s) URL, got {masked!r}")
        self._endpoint = urlunsplit(parts)
        shown = parts.netloc
        if password:
            shown = f"{parts.username}:***@{parts.netloc.rsplit('@', 1)[1]}"
        self.base_url = urlunsplit((parts.scheme, shown, parts.path, parts.query, ""))

    @property
    def _secrets(self) -> tuple[Secret, ...]:
        return (self._api_key, self._url_password)

    def __repr__(self) -> str:
        key = "***" if self._api_key else None
        return f"{type(self).__name__}(model={self.model!r}, base_url={self.base_url!r}, api_key={key!r})"

    # -- life cycle (PV-31) -------------------------------------------------------------------

    @property
    def session(self) -> aiohttp.ClientSession | None:
        """The HTTP session, once there is one."""
        return self._session

    async def _get_session(self) -> aiohttp.ClientSession:
        """The session of the running loop: created on first use, recreated on a new loop (PV-37)."""
        loop = asyncio.get_running_loop()
        session = self._session
        if not self._owns_session and session is not None:
            return session  # the caller's session: used as is (PV-31)
        if session is not None and not session.closed and self._session_loop is not loop:
            old = self._session_loop
            if old is not None and not old.is_closed():
                raise RuntimeError(
                    f"{type(self).__name__}: its HTTP session belongs to another event loop that is still "
                    "open; `await client.aclose()` on that loop first, or use one client per event loop"
                )
            await session.close()  # its loop is closed: nothing of it can run any more
            session = None
        if session is None or session.closed:
            session = aiohttp.ClientSession()
            self._session, self._session_loop = session, loop
            self._keeper = _keeper(session)
            await self._keeper.asend(None)  # now closed by the loop's shutdown_asyncgens()
        return session

    async def aclose(self) -> None:
        """Close the session the client created (a session passed in stays open). Idempotent."""
        if self._owns_session and self._session is not None:
            session, self._session = self._session, None
            keeper, self._keeper = self._keeper, None
            if keeper is not None and self._session_loop is asyncio.get_running_loop():
                await keeper.aclose()
            if not session.closed:
                await session.close()

    async def __aenter__(self) -> AnthropicChatClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    # -- the two calls ------------------------------------------------------------------------

    async def _inner_get_response(
        self, *, messages: list[Message], options: dict[str, Any], **kwargs: Any
    ) -> ChatResponse:
        body = self._encode(messages, options, stream=False)
        response, raw = await self._send(body, stream=False)
        return self._parse_body(raw, _request_id(response), wire_tool_ids(messages))

    async def _inner_get_streaming_response(
        self, *, messages: list[Message], options: dict[str, Any], **kwargs: Any
    ) -> AsyncIterator[ChatResponseUpdate]:
        body = self._encode(messages, options, stream=True)
        tool_ids = wire_tool_ids(messages)
        response, first = await self._send(body, stream=True)
        request_id = _request_id(response)
        clean = False
        try:
            if response.content_type == "application/json":  # a server that ignored stream
                for update in await self._json_as_updates(response, first, request_id, tool_ids):
                    yield update
                clean = True
                return
            decoder = MessagesStreamDecoder(tool_ids=tool_ids, max_line_size=self.max_line_size)
            finished = False  # a finish_reason was seen (PV-15)
            chunk = first
            while True:
                updates, error = _decode(decoder.feed, chunk)
                for update in updates:
                    finished = finished or update.finish_reason is not None
                    yield update
                if error is not None:
                    raise self._finish_error(error, request_id)
                if decoder.done:
                    break  # data after message_stop is ignored (PV-15)
                chunk, failure = await self._read_chunk(response)
                if failure is not None:
                    raise self._interrupted(failure, request_id)
                if not chunk:
                    break
            updates, error = _decode(decoder.close, None)
            for update in updates:
                finished = finished or update.finish_reason is not None
                yield update
            if error is not None:
                if isinstance(error, AnthropicProtocolError) and "PV-36" not in str(error):  # ended inside an event
                    raise self._interrupted(f"truncated event: {error}", request_id)
                raise self._finish_error(error, request_id)
            if not decoder.done and not finished:
                raise self._interrupted("the stream ended before message_stop and without a stop_reason", request_id)
            clean = True
        finally:
            # PV-30: every other exit (an error, the consumer's cancellation, an early aclose())
            # closes the response and its connection.
            if clean:
                response.release()
            else:
                response.close()

    # -- sending ------------------------------------------------------------------------------

    def _encode(self, messages: list[Message], options: dict[str, Any], *, stream: bool) -> bytes:
        request = build_request(
            messages,
            options,
            model=self.model,
            stream=stream,
            max_tokens=self.max_tokens,
            api_version=self.anthropic_version,
        )
        return json.dumps(request, ensure_ascii=False).encode("utf-8")

    def _headers(self, *, stream: bool) -> dict[str, str]:
        headers = {
            "content-type": "application/json",
            "accept": "text/event-stream" if stream else "application/json",
            "anthropic-version": self.anthropic_version,
            "user-agent": USER_AGENT,
            **self.default_headers,
        }
        if self._api_key:
            headers["x-api-key"] = self._api_key.reveal()
        return headers

    async def _send(self, body: bytes, *, stream: bool) -> tuple[aiohttp.ClientResponse, bytes]:
        """Attempts under the retry policy (PV-25); the last error when every attempt failed."""
        return await retry_call(
            lambda: self._attempt(body, stream=stream),
            policy=self.retry_policy,
            sleep=self._sleep,
            rng=self._rng,
            logger=logger,
        )

    async def _attempt(self, body: bytes, *, stream: bool) -> tuple[aiohttp.ClientResponse, bytes]:
        """One POST: a 2xx response with its whole body (released), or, when streaming, with its
        first chunk (still open: the caller closes it). Every failure is a `ProviderError`."""
        url = f"{self._endpoint}/v1/messages"
        timeout = aiohttp.ClientTimeout(total=None, connect=self.timeout, sock_read=self.timeout)
        logger.debug("POST %s (stream=%s)", redact(f"{self.base_url}/v1/messages", *self._secrets), stream)
        response: aiohttp.ClientResponse | None = None
        handed_over = False
        failure: ProviderError
        session = await self._get_session()  # a RuntimeError of PV-37 is the caller's to fix
        try:
            response = await session.post(url, data=body, headers=self._headers(stream=stream), timeout=timeout)
            if response.status >= 300:
                failure = await self._status_error(response)
            elif stream:
                first = await response.content.readany()
                if first:
                    handed_over = True
                    return response, first
                failure = ProviderConnectionError(
                    describe(None, "the stream ended before its first byte", provider=PROVIDER),
                    provider_message="",
                    request_id=_request_id(response),
                    provider=PROVIDER,
                    headers=response.headers,
                )
            else:
                return response, await self._read_body(response)
        except ProviderError as error:  # the body was larger than max_body_size
            failure = error
        except Exception as exc:
            failure = self._transport_error(exc, response)
        finally:
            if not handed_over and response is not None:
                response.close()  # a fully read body already went back to the pool
        raise self._scrub(failure)  # outside the except: nothing is chained (PV-35)

    async def _read_body(self, response: aiohttp.ClientResponse) -> bytes:
        """The whole 2xx body, at most ``max_body_size`` bytes (PV-36)."""
        declared = response.content_length
        if declared is not None and declared > self.max_body_size:
            raise self._too_large(response)
        data = bytearray()
        while True:
            chunk = await response.content.read(1 << 16)
            if not chunk:
                return bytes(data)
            data += chunk
            if len(data) > self.max_body_size:
                raise self._too_large(response)

    def _too_large(self, response: aiohttp.ClientResponse) -> AnthropicProtocolError:
        error = AnthropicProtocolError(
            f"anthropic: the response body is larger than max_body_size={self.max_body_size} bytes (PV-36)"
        )
        error.request_id = _request_id(response)
        return error

    async def _read_chunk(self, response: aiohttp.ClientResponse) -> tuple[bytes, str | None]:
        """The next chunk of a stream, or ``(b"", what failed)``: the caller raises (PV-29, PV-35)."""
        try:
            return await response.content.readany(), None
        except Exception as exc:
            if isinstance(exc, TimeoutError):
                return b"", f"no data within timeout={self.timeout} s"
            return b"", _what(exc)

    async def _status_error(self, response: aiohttp.ClientResponse) -> ProviderError:
        headers = {k.lower(): v for k, v in response.headers.items()}
        raw, unreadable = b"", ""
        try:
            raw = await _read_upto(response.content, _MAX_ERROR_BODY)
        except Exception as exc:  # the status is the error; the body only adds its text
            unreadable = f" (the error body could not be read: {_what(exc)})"
        message, request_id = parse_error(response.status, raw, headers)
        message += unreadable
        if response.status == 401 and not self._api_key:
            message += " (no API key was configured: pass api_key= or set ANTHROPIC_API_KEY)"
        return error_for_status(response.status, message, request_id, provider=PROVIDER, headers=headers)

    def _transport_error(self, exc: Exception, response: aiohttp.ClientResponse | None) -> ProviderError:
        """PV-35: a library or OS exception before the answer was complete, as a typed error."""
        request_id = _request_id(response) if response is not None else None
        headers = response.headers if response is not None else None
        cls: type[ProviderError] = ProviderConnectionError
        retryable: bool | None = None
        if isinstance(exc, TimeoutError):
            cls, text = ProviderTimeoutError, f"no answer within timeout={self.timeout} s ({self.base_url})"
        elif isinstance(exc, aiohttp.ClientResponseError):  # raised only by the HTTP parser here
            text = f"the answer of {self.base_url} is not valid HTTP: {exc.message}"
        elif isinstance(exc, aiohttp.ClientConnectionError | aiohttp.ClientPayloadError | OSError):
            text = f"connection failed ({self.base_url}): {_what(exc)}"
        else:
            cls, retryable = ProviderError, False
            text = f"the request to {self.base_url} failed: {_what(exc)}"
        return cls(
            describe(None, text, request_id, provider=PROVIDER),
            provider_message="",
            request_id=request_id,
            retryable=retryable,
            provider=PROVIDER,
            headers=headers,
        )

    def _scrub(self, error: ProviderError) -> ProviderError:
        """The error as it may leave the client: secrets redacted, chain cut (PV-24, PV-35)."""
        return error.redact(*self._secrets)

    def _interrupted(self, what: str, request_id: str | None) -> StreamInterruptedError:
        error = StreamInterruptedError(
            describe(None, f"the stream was interrupted: {what}", request_id, provider=PROVIDER),
            provider_message="",
            request_id=request_id,
            provider=PROVIDER,
        )
        return error.redact(*self._secrets)

    def _finish_error(self, error: ProviderError, request_id: str | None) -> ProviderError:
        """A codec error leaving the client: with the request id and without the key (AN-20)."""
        if error.request_id is None and request_id:
            error.request_id = request_id
        return self._scrub(error)

    async def _json_as_updates(
        self,
        response: aiohttp.ClientResponse,
        first: bytes,
        request_id: str | None,
        tool_ids: Mapping[str, str],
    ) -> list[ChatResponseUpdate]:
        rest, failure = b"", None
        try:
            rest = await self._read_body(response)
        except ProviderError as error:
            raise self._finish_error(error, request_id)  # noqa: B904 - our own error, its chain is cut
        except Exception as exc:
            failure = _what(exc)
        if failure is not None:
            raise self._interrupted(failure, request_id)
        return self._parse_body(first + rest, request_id, tool_ids).as_updates()

    def _parse_body(self, raw: bytes, request_id: str | None, tool_ids: Mapping[str, str]) -> ChatResponse:
        """A whole JSON answer as a response; a body that is not valid JSON is a protocol error."""
        try:
            try:
                data = json.loads(raw)
            except (UnicodeDecodeError, json.JSONDecodeError) as exc:
                raise AnthropicProtocolError(
                    f"response body is not valid JSON ({exc}): {_snippet(raw.decode('utf-8', 'replace'))}"
                ) from None
            return parse_response(data, tool_ids=tool_ids)
        except ProviderError as error:
            raise self._finish_error(error, request_id)  # noqa: B904 - our own error, its chain is cut


async def _keeper(session: aiohttp.ClientSession) -> AsyncGenerator[None, None]:
    """Closes ``session`` when its loop shuts down its async generators (PV-37)."""
    try:
        yield
    finally:
        if not session.closed:
            await session.close()


def _request_id(response: aiohttp.ClientResponse) -> str | None:
    return response.headers.get("request-id") or response.headers.get("x-request-id")


def _decode(
    step: Callable[..., list[ChatResponseUpdate]], chunk: bytes | None
) -> tuple[list[ChatResponseUpdate], ProviderError | None]:
    """Run one decoder step; an error comes back with the updates decoded before it (PV-14)."""
    try:
        return (step(chunk) if chunk is not None else step()), None
    except (AnthropicStreamError, AnthropicProtocolError) as error:
        return error.updates, error


def _what(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


async def _read_upto(content: aiohttp.StreamReader, limit: int) -> bytes:
    data = bytearray()
    while len(data) < limit:
        chunk = await content.read(limit - len(data))
        if not chunk:
            break
        data += chunk
    return bytes(data)
