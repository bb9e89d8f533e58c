"""The aiohttp transport of the native Ollama plugin (spec/ollama.md, spec/providers.md).

Theory of operation
-------------------
This is the only module of the package that imports aiohttp (PV-1). It does three things and
leaves every decision about the wire format to the codec:

1. **Send.** ``_attempt`` makes one ``POST {base_url}/api/chat`` (OL-21). A non-2xx answer
   becomes a typed error through ``parse_error`` and ``error_for_answer`` (PV-23, OL-19,
   OL-20); a timeout or a refused/reset connection becomes `ProviderTimeoutError` /
   `ProviderConnectionError`. For a stream the attempt also reads the first chunk of the body,
   so everything up to the first byte is inside the attempt and nothing after it is.
2. **Retry.** ``retry_call`` repeats attempts under the client's `RetryPolicy` (PV-25 .. PV-27),
   waiting through the injectable ``sleep`` with the injectable ``rng``. A stream is therefore
   retried only before its first byte; after it, a failure is `StreamInterruptedError` (PV-29).
3. **Decode.** The body goes to ``parse_response`` or, chunk by chunk as it arrives, to an
   ``OllamaStreamDecoder``; updates are yielded as soon as they are decoded. Both get the
   request's ``call_id_seed``, so generated tool-call ids are the same in both modes (OL-15).

Every exit that is not a clean end — an error, cancellation of the consumer, an early
``aclose()`` of the stream — closes the HTTP response, which closes its connection: no
connection stays acquired and no task is left (PV-30).

Secrets (PV-24, PV-35): an API key (Ollama's hosted API) is held in a `Secret`. Every error
leaves through ``_scrub``, which redacts its texts, attributes and headers and cuts its
``__cause__``/``__context__``; errors are raised outside the ``except`` block that caught the
library's exception, so no library exception is ever chained to them.

The session (PV-31, PV-37) belongs to the event loop that created it. A small async generator
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
from urllib.parse import urlsplit

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
    redact,
    retry_call,
)

from ._errors import OllamaProtocolError, OllamaStreamError, _snippet, error_for_answer, parse_error
from ._request import build_request, call_id_seed, parse_host
from ._response import DEFAULT_MAX_LINE_SIZE, OllamaStreamDecoder, parse_response

__all__ = ["DEFAULT_MAX_BODY_SIZE", "OllamaChatClient"]

PROVIDER = "ollama"
USER_AGENT = "minagent-ollama"
DEFAULT_MAX_BODY_SIZE = 32 * 1024 * 1024  # bytes of a 2xx non-streaming body (PV-36)
_MAX_ERROR_BODY = 64 * 1024  # bytes of a non-2xx body read for its message (PV-11)

logger = logging.getLogger("minagent_ollama")

Sleep = Callable[[float], Awaitable[object]]


class OllamaChatClient(BaseChatClient):
    """A chat client for Ollama's native ``POST /api/chat`` (spec/ollama.md).

    ``base_url`` defaults to ``OLLAMA_HOST`` (read as the official SDK reads it), then
    ``http://127.0.0.1:11434``; ``api_key`` to ``OLLAMA_API_KEY`` (Ollama's hosted API; a
    local server needs none, and without a key no ``Authorization`` header is sent) (OL-21).
    ``timeout`` (seconds, None for none) bounds connecting and every wait for data, not a
    whole stream; the default is long because a local model may take minutes to load (OL-22).
    ``max_retries`` builds the `RetryPolicy` unless ``retry_policy`` is given. ``session``: an
    ``aiohttp.ClientSession`` to use (and leave open); by default the client creates one on
    first use and closes it in ``aclose()`` / ``async with`` (PV-31, PV-37).
    ``max_body_size`` and ``max_line_size`` bound what the server may send (PV-36). ``sleep``
    and ``rng`` replace ``asyncio.sleep`` and the random source of the backoff (tests, PV-32).
    ``options["model"]`` overrides ``model`` per call.
    """

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float | None = 300.0,
        max_retries: int = 2,
        middleware: Any = None,
        function_invocation_configuration: FunctionInvocationConfiguration | None = None,
        session: aiohttp.ClientSession | None = None,
        retry_policy: RetryPolicy | None = None,
        default_headers: Mapping[str, str] | None = None,
        sleep: Sleep | None = None,
        rng: SupportsRandom | None = None,
        max_body_size: int = DEFAULT_MAX_BODY_SIZE,
        max_line_size: int = DEFAULT_MAX_LINE_SIZE,
    ) -> None:
        super().__init__(
            middleware=middleware,
            function_invocation_configuration=function_invocation_configuration,
        )
        self.model = model
        key = api_key if api_key is not None else os.environ.get("OLLAMA_API_KEY", "")
        self._api_key = Secret(key)
        url = base_url.strip().rstrip("/") if base_url else parse_host(os.environ.get("OLLAMA_HOST"))
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"base_url must be an http(s) URL, got {redact(url, key)!r}")
        self.base_url = url
        if timeout is not None and not timeout > 0:
            raise ValueError(f"timeout must be > 0 seconds or None, got {timeout!r}")
        self.timeout = timeout
        self.retry_policy = retry_policy or RetryPolicy(max_retries=max_retries)
        self.default_headers = _check_headers(dict(default_headers or {}))
        for name, size in (("max_body_size", max_body_size), ("max_line_size", max_line_size)):
            if not isinstance(size, int) or isinstance(size, bool) or size < 1:
                raise ValueError(f"{name} must be a positive int (bytes), got {size!r}")
        self.max_body_size = max_body_size
        self.max_line_size = max_line_size
        self._sleep: Sleep = sleep or asyncio.sleep
        self._rng = rng
        self._session = session
        self._owns_session = session is None
        self._session_loop: asyncio.AbstractEventLoop | None = None
        self._keeper: AsyncGenerator[None, None] | None = None

    def __repr__(self) -> str:
        key = "***" if self._api_key else None
        return f"{type(self).__name__}(model={self.model!r}, base_url={self.base_url!r}, api_key={key!r})"

    # -- life cycle (PV-31, PV-37) ------------------------------------------------------------

    @property
    def session(self) -> aiohttp.ClientSession | None:
        """The HTTP session, once there is one."""
        return self._session

    async def _get_session(self) -> aiohttp.ClientSession:
        """The session of the running loop: created on first use, recreated on a new loop."""
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

    async def __aenter__(self) -> OllamaChatClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    # -- the two calls ------------------------------------------------------------------------

    async def _inner_get_response(
        self, *, messages: list[Message], options: dict[str, Any], **kwargs: Any
    ) -> ChatResponse:
        body, seed = self._encode(messages, options, stream=False)
        response, raw = await self._send(body, stream=False)
        request_id = response.headers.get("x-request-id")
        return self._parse_body(raw, request_id, seed)

    async def _inner_get_streaming_response(
        self, *, messages: list[Message], options: dict[str, Any], **kwargs: Any
    ) -> AsyncIterator[ChatResponseUpdate]:
        body, seed = self._encode(messages, options, stream=True)
        response, first = await self._send(body, stream=True)
        request_id = response.headers.get("x-request-id")
        clean = False
        try:
            if response.content_type == "application/json":  # the server ignored stream (OL-22)
                for update in await self._json_as_updates(response, first, request_id, seed):
                    yield update
                clean = True
                return
            decoder = OllamaStreamDecoder(seed, max_line_size=self.max_line_size)
            chunk = first
            while True:
                updates, error = _decode(decoder.feed, chunk)
                for update in updates:
                    yield update
                if error is not None:
                    raise self._finish_error(error, request_id)
                if decoder.done:
                    break  # data after the done chunk is ignored (PV-15, OL-17)
                chunk, failure = await self._read_chunk(response)
                if failure is not None:
                    raise self._interrupted(failure, request_id)
                if not chunk:
                    break
            updates, error = _decode(decoder.close, None)
            for update in updates:
                yield update
            if error is not None:
                if isinstance(error, OllamaProtocolError) and "max_line_size" not in str(error):
                    raise self._interrupted(f"truncated line: {error}", request_id)  # ended inside a line
                raise self._finish_error(error, request_id)
            if not decoder.done:
                raise self._interrupted('the stream ended before its "done": true chunk', request_id)
            clean = True
        finally:
            # PV-30: every other exit (an error, the consumer's cancellation, an early aclose())
            # closes the response and its connection. After a clean end, release() returns
            # the connection to the pool when the body was read to its end, else closes it.
            if clean:
                response.release()
            else:
                response.close()

    # -- sending ------------------------------------------------------------------------------

    def _encode(self, messages: list[Message], options: dict[str, Any], *, stream: bool) -> tuple[bytes, str]:
        """The request body as UTF-8 JSON, and the seed of its calls' ids (OL-15)."""
        request = build_request(messages, options, model=self.model, stream=stream)
        try:
            data = json.dumps(request, ensure_ascii=False, allow_nan=False).encode("utf-8")
        except ValueError as exc:
            raise ValueError(f"the request cannot be sent as JSON: {exc} (NaN and infinities are not JSON)") from None
        return data, call_id_seed(request)

    def _headers(self, *, stream: bool) -> dict[str, str]:
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/x-ndjson" if stream else "application/json",
            "User-Agent": USER_AGENT,
            **self.default_headers,
        }
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key.reveal()}"
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
        url = f"{self.base_url}/api/chat"
        timeout = aiohttp.ClientTimeout(total=None, connect=self.timeout, sock_read=self.timeout)
        logger.debug("POST %s (stream=%s)", redact(url, self._api_key), stream)
        response: aiohttp.ClientResponse | None = None
        handed_over = False
        failure: ProviderError
        session = await self._get_session()  # a RuntimeError here is the caller's to fix (PV-37)
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
                    request_id=response.headers.get("x-request-id"),
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

    async def _read_body(self, response: aiohttp.ClientResponse, first: bytes = b"") -> bytes:
        """The whole 2xx body (after ``first``, already read), at most ``max_body_size`` bytes (PV-36)."""
        declared = response.content_length
        if declared is not None and declared > self.max_body_size:
            raise self._too_large(response)
        data = bytearray(first)
        if len(data) > self.max_body_size:
            raise self._too_large(response)
        while True:
            chunk = await response.content.read(1 << 16)
            if not chunk:
                return bytes(data)
            data += chunk
            if len(data) > self.max_body_size:
                raise self._too_large(response)

    def _too_large(self, response: aiohttp.ClientResponse) -> OllamaProtocolError:
        error = OllamaProtocolError(
            f"ollama: the response body is larger than max_body_size={self.max_body_size} bytes"
        )
        error.request_id = response.headers.get("x-request-id")
        return error

    async def _read_chunk(self, response: aiohttp.ClientResponse) -> tuple[bytes, str | None]:
        """The next chunk of a stream, or ``(b"", what failed)``: the caller raises (PV-29, PV-35)."""
        try:
            return await response.content.readany(), None
        except Exception as exc:
            return b"", f"no data within timeout={self.timeout} s" if isinstance(exc, TimeoutError) else _what(exc)

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
            message += " (no API key was configured: pass api_key= or set OLLAMA_API_KEY)"
        return error_for_answer(response.status, message, request_id, headers=headers)

    def _transport_error(self, exc: Exception, response: aiohttp.ClientResponse | None) -> ProviderError:
        """PV-35: a library exception before the answer was complete, as a typed error."""
        request_id = response.headers.get("x-request-id") if response is not None else None
        headers = response.headers if response is not None else None
        cls: type[ProviderError] = ProviderConnectionError
        retryable: bool | None = None
        if isinstance(exc, TimeoutError):
            cls, text = ProviderTimeoutError, f"no answer within {self.timeout} s ({self.base_url}): {_what(exc)}"
        elif isinstance(exc, aiohttp.ClientResponseError):  # raised only by the HTTP parser here
            text = f"the answer of {self.base_url} is not valid HTTP: {exc.message}"
        elif isinstance(exc, aiohttp.ClientConnectorError):  # nothing listens there (OL-22)
            text = (
                f"connection failed ({self.base_url}): {_what(exc)}; is Ollama running there? "
                "Start it with `ollama serve`, or set OLLAMA_HOST / base_url to where it listens"
            )
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
        """The error as it may leave the client: the key redacted, the chain cut (PV-24, PV-35)."""
        return error.redact(self._api_key)

    def _interrupted(self, what: str, request_id: str | None) -> StreamInterruptedError:
        error = StreamInterruptedError(
            describe(None, f"the stream was interrupted: {what}", request_id, provider=PROVIDER),
            provider_message="",
            request_id=request_id,
            provider=PROVIDER,
        )
        return error.redact(self._api_key)

    def _finish_error(self, error: ProviderError, request_id: str | None) -> ProviderError:
        """A codec error leaving the client: with the request id and without the key (OL-22)."""
        if error.request_id is None and request_id:
            error.request_id = request_id
        return self._scrub(error)

    async def _json_as_updates(
        self, response: aiohttp.ClientResponse, first: bytes, request_id: str | None, seed: str
    ) -> list[ChatResponseUpdate]:
        whole, failure = b"", None
        try:
            whole = await self._read_body(response, first)
        except ProviderError as error:
            raise self._finish_error(error, request_id)  # noqa: B904 - our own error, its chain is cut
        except Exception as exc:
            failure = _what(exc)
        if failure is not None:
            raise self._interrupted(failure, request_id)
        return self._parse_body(whole, request_id, seed).as_updates()

    def _parse_body(self, raw: bytes, request_id: str | None, seed: str) -> ChatResponse:
        """A whole JSON answer as a response; a body that is not valid JSON is a protocol error."""
        failure: ProviderError
        try:
            data = json.loads(raw)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            text = _snippet(raw.decode("utf-8", "replace"))
            failure = OllamaProtocolError(f"response body is not valid JSON ({exc}): {text}")
        else:
            try:
                return parse_response(data, id_seed=seed)
            except ProviderError as error:
                failure = error
        raise self._finish_error(failure, request_id)


def _check_headers(headers: Mapping[str, str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, value in headers.items():
        if not isinstance(name, str) or not isinstance(value, str):
            raise TypeError(f"default_headers: header names and values must be str, got {name!r}")
        if not name or any(c in name for c in "\r\n:") or "\r" in value or "\n" in value:
            raise ValueError(f"default_headers: header {name!r} has an empty name, a colon or a line break")
        out[name] = value
    return out


async def _keeper(session: aiohttp.ClientSession) -> AsyncGenerator[None, None]:
    """Closes ``session`` when its loop shuts down its async generators (PV-37)."""
    try:
        yield
    finally:
        if not session.closed:
            await session.close()


def _decode(
    step: Callable[..., list[ChatResponseUpdate]], chunk: bytes | None
) -> tuple[list[ChatResponseUpdate], ProviderError | None]:
    """Run one decoder step; an error comes back with the updates decoded before it (PV-14)."""
    try:
        return (step(chunk) if chunk is not None else step()), None
    except (OllamaStreamError, OllamaProtocolError) as error:
        return error.updates, error


def _what(exc: BaseException) -> str:
    text = exc.message if isinstance(exc, aiohttp.ClientResponseError) else str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


async def _read_upto(content: aiohttp.StreamReader, limit: int) -> bytes:
    data = bytearray()
    while len(data) < limit:
        chunk = await content.read(limit - len(data))
        if not chunk:
            break
        data += chunk
    return bytes(data)
