"""One HTTP chat client for every provider: `WireCodec` and `HTTPChatClient`
(spec/providers.md).

Rules
-----
1. Everything a provider call does on the network is decided here, once, for every
   plugin: the request's URL and headers (PV-38), when to try again (PV-25 .. PV-29),
   which error a failure is (PV-23, PV-35: one table, ``_FAILURES``), what is bounded
   (PV-36), what is redacted (PV-24) and when a connection is given back or closed
   (PV-30). Which event loop a connection pool belongs to (PV-37) is `LoopBound`'s, in
   ``transport``.
2. A plugin never touches the network. It is its connection settings (environment, URL,
   credentials: a subclass of `HTTPChatClient`) plus a `WireCodec` (sans-I/O: bytes in,
   wire types out, and back).
3. A `Transport` (``transport``) only moves bytes; an HTTP library's exceptions reach
   this module only as the kinds of `TransportError`.
4. Every error leaves a client scrubbed (``ProviderError.redact``), raised outside the
   ``except`` block that caught its cause, so nothing the library held is chained to it.

Theory of operation
-------------------
A call encodes the messages (``codec.encode``), then makes attempts under
``retry_call``. An attempt is one `Request` through ``transport.send``: a non-2xx answer
becomes the codec's typed error; a 2xx body is read whole (non-streaming, at most
``max_body_size``) or up to its first chunk (streaming). So everything before the first
byte of a stream is inside the attempt and retried, and nothing after it is (PV-29). The
stream is then fed chunk by chunk to the codec's `StreamDecoder`, whose updates are
yielded as soon as they are decoded; a decoder error comes with the updates decoded
before it, which are yielded first (PV-14). At the end the codec says whether the stream
was complete (PV-15); an incomplete or broken stream is a `StreamInterruptedError`. A
streaming request answered with a JSON body is decoded whole. Every exit that is not a
clean end (an error, the consumer's cancellation, an early ``aclose()``) closes the
response, and with it its connection (PV-30).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, ClassVar, Protocol, Self
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

from .. import (
    BaseChatClient,
    ChatResponse,
    ChatResponseUpdate,
    FunctionInvocationConfiguration,
    Message,
)
from .errors import (
    AuthenticationError,
    ProviderConnectionError,
    ProviderError,
    ProviderTimeoutError,
    StreamInterruptedError,
    describe,
)
from .retry import RetryPolicy, SupportsRandom, retry_call
from .secrets import Secret, redact
from .transport import Request, Response, Timeouts, Transport, TransportError

__all__ = [
    "DEFAULT_MAX_BODY_SIZE",
    "DEFAULT_MAX_LINE_SIZE",
    "MAX_ERROR_BODY",
    "HTTPChatClient",
    "StreamDecoder",
    "WireCodec",
]

DEFAULT_MAX_BODY_SIZE = 32 * 1024 * 1024  # bytes of a 2xx non-streaming body (PV-36)
DEFAULT_MAX_LINE_SIZE = 16 * 1024 * 1024  # one line or event of a stream (PV-36)
MAX_ERROR_BODY = 64 * 1024  # bytes of a non-2xx body read for its message (PV-11)
# read past the cut, so that no cut can split a secret before it is redacted (PV-24)
_SECRET_MARGIN = 4096

Sleep = Callable[[float], Awaitable[object]]

# --------------------------------------------------------------------------------------------
# The codec: what a plugin writes


class StreamDecoder(Protocol):
    """Bytes of a streaming answer in, updates out (PV-12 .. PV-16). An error raised by
    ``feed`` or ``close`` is a `ProviderError` carrying, as ``.updates``, what it
    decoded before it."""

    @property
    def done(self) -> bool:
        """The terminator arrived (PV-15)."""
        ...

    def feed(self, chunk: bytes, /) -> list[ChatResponseUpdate]: ...

    def close(self) -> list[ChatResponseUpdate]: ...


class WireCodec(Protocol):
    """A provider's wire format, sans-I/O (PV-1): what a plugin gives `HTTPChatClient`.

    ``encode`` returns the body and a *context* (anything: the tool-id map, a seed) that
    goes with the request to ``decode`` / ``stream_decoder``. ``protocol_error`` is the
    class of the plugin's PV-10 errors (it takes a message). ``unfinished`` says why a
    stream that ended here is not a complete answer (PV-15), or None when it is.
    """

    @property
    def provider(self) -> str: ...

    @property
    def request_id_headers(self) -> tuple[str, ...]: ...

    @property
    def protocol_error(self) -> type[ProviderError]: ...

    def headers(self, *, stream: bool) -> dict[str, str]: ...

    def encode(
        self,
        messages: list[Message],
        options: Mapping[str, Any],
        *,
        model: str,
        stream: bool,
    ) -> tuple[bytes, Any]: ...

    def decode(self, body: bytes, context: Any) -> ChatResponse: ...

    def stream_decoder(
        self, context: Any, *, max_line_size: int | None
    ) -> StreamDecoder: ...

    def parse_error(
        self, status: int, body: bytes, headers: Mapping[str, str]
    ) -> tuple[str, str | None]: ...

    def status_error(
        self,
        status: int,
        message: str,
        request_id: str | None,
        headers: Mapping[str, str],
    ) -> ProviderError: ...

    def unfinished(self, decoder: Any, finished: bool) -> str | None: ...


# --------------------------------------------------------------------------------------------
# The client


# What a transport failure before the answer is complete becomes (PV-23, PV-35): kind ->
# (class, retryable, text). After the first byte of a stream every kind is an
# interruption (PV-29).
_FAILURES: dict[str, tuple[type[ProviderError], bool, str]] = {
    "connect": (
        ProviderConnectionError,
        True,
        "connection failed ({url}): {detail}{hint}",
    ),
    "network": (ProviderConnectionError, True, "connection failed ({url}): {detail}"),
    "protocol": (
        ProviderConnectionError,
        True,
        "the answer of {url} is not valid HTTP: {detail}",
    ),
    "connect_timeout": (ProviderTimeoutError, True, "{waited} ({url})"),
    "read_timeout": (
        ProviderTimeoutError,
        True,
        "no answer within {timeout} s: {waited} ({url})",
    ),
    "total_timeout": (ProviderTimeoutError, True, "{waited} ({url})"),
    "other": (ProviderError, False, "the request to {url} failed: {detail}"),
}
_USERINFO = re.compile(r"//.*@")  # greedy: a raw "/" in a password must not split it


class HTTPChatClient(BaseChatClient):
    """A chat client over HTTP: the transport rules of spec/providers.md, written once.

    A plugin subclasses it with its connection settings: ``path`` (appended to the base
    URL's path), ``api_key_env`` (named when a 401 arrives without a key),
    ``connect_hint`` (added when nothing answers), ``user_agent``, ``keeps_request_id``
    (OA-29) and ``_auth_headers``; its constructor reads the environment and passes a
    `WireCodec` and a `Transport`. Retries are logged by the logger named after the
    subclass's top-level package.
    """

    path: ClassVar[str] = ""
    api_key_env: ClassVar[str] = ""
    connect_hint: ClassVar[str] = ""
    user_agent: ClassVar[str] = "minagent"
    keeps_request_id: ClassVar[bool] = False
    # added to a 404's text: what a wrong base URL usually is (PV-45)
    not_found_hint: ClassVar[str] = ""
    # hosts (or ".suffix"es) that need credentials (PV-46)
    hosted: ClassVar[tuple[str, ...]] = ()

    def __init__(
        self,
        model: str,
        *,
        codec: WireCodec,
        transport: Transport,
        base_url: str,
        api_key: str = "",
        timeout: float | None = 60.0,
        total_timeout: float | None = None,
        max_retries: int = 2,
        retry_policy: RetryPolicy | None = None,
        default_headers: Mapping[str, str] | None = None,
        default_query: Mapping[str, str] | None = None,
        sleep: Sleep | None = None,
        rng: SupportsRandom | None = None,
        max_body_size: int = DEFAULT_MAX_BODY_SIZE,
        max_line_size: int | None = DEFAULT_MAX_LINE_SIZE,
        middleware: Any = None,
        function_invocation_configuration: FunctionInvocationConfiguration
        | None = None,
    ) -> None:
        super().__init__(
            middleware=middleware,
            function_invocation_configuration=function_invocation_configuration,
        )
        self.model = model
        self.codec = codec
        self.transport = transport
        self._api_key = Secret(api_key)
        self._init_url(base_url, api_key)
        if self._url_password and "Authorization" in self._auth_headers():
            raise ValueError(
                f"base_url {self.base_url!r} carries credentials and an API key is configured: both would "
                "be sent as the Authorization header; remove the user:password@ part or the key"
            )
        self.timeout = _positive(timeout, "timeout")
        self.total_timeout = _positive(total_timeout, "total_timeout")
        self.retry_policy = retry_policy or RetryPolicy(max_retries=max_retries)
        self.default_headers = _check_headers(dict(default_headers or {}))
        self.default_query: dict[str, str] = {}
        for name, value in (default_query or {}).items():
            if not isinstance(name, str) or not isinstance(value, str):
                raise TypeError(
                    f"default_query: names and values must be str, got {name!r}: {value!r}"
                )
            self.default_query[name] = value
        for name, size in (
            ("max_body_size", max_body_size),
            ("max_line_size", max_line_size),
        ):
            if size is None and name == "max_line_size":
                continue
            if not isinstance(size, int) or isinstance(size, bool) or size < 1:
                raise ValueError(f"{name} must be a positive int (bytes), got {size!r}")
        self.max_body_size = max_body_size
        self.max_line_size = max_line_size
        self._sleep: Sleep = sleep or asyncio.sleep
        self._rng = rng
        self._logger = logging.getLogger(type(self).__module__.partition(".")[0])

    def _init_url(self, url: str, key: str) -> None:
        """Split the base URL: endpoint, query (kept, OA-30) and credentials (a secret,
        PV-24)."""
        url = url.strip()
        masked = redact(_USERINFO.sub("//***@", url), key)
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"base_url must be an http(s) URL, got {masked!r}")
        password = unquote(parts.password or "")
        self._url_user = unquote(parts.username or "")
        self._url_password = Secret(password)
        netloc = parts.hostname if ":" not in parts.hostname else f"[{parts.hostname}]"
        port: int | None = None
        with contextlib.suppress(ValueError):
            port = parts.port
        if port is None and parts.netloc.rsplit("@", 1)[-1].rstrip("]").count(
            ":"
        ) > parts.hostname.count(":"):
            raise ValueError(f"base_url has an invalid port: {masked!r}")
        if port is not None:
            netloc = f"{netloc}:{port}"
        path = parts.path.rstrip("/")
        self._endpoint = urlunsplit((parts.scheme, netloc, path, "", ""))
        self._base_query = parse_qsl(parts.query, keep_blank_values=True)
        user = self._url_user
        shown = (
            netloc
            if not user
            else f"{user}:***@{netloc}"
            if password
            else f"{user}@{netloc}"
        )
        self.base_url = urlunsplit((parts.scheme, shown, path, parts.query, ""))

    @property
    def _secrets(self) -> tuple[Secret, ...]:
        return (self._api_key, self._url_password)

    def __repr__(self) -> str:
        key = "***" if self._api_key else None
        return f"{type(self).__name__}(model={self.model!r}, base_url={self.base_url!r}, api_key={key!r})"

    # -- life cycle (PV-31) ---------------------------------------------------------------------

    @property
    def session(self) -> Any:
        """The transport's session (an ``aiohttp.ClientSession`` by default), once there
        is one."""
        return getattr(self.transport, "session", None)

    async def aclose(self) -> None:
        """Close what the transport opened (a session passed in stays open).
        Idempotent."""
        await self.transport.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    # -- the two calls --------------------------------------------------------------------------

    async def _inner_get_response(
        self, *, messages: list[Message], options: dict[str, Any], **kwargs: Any
    ) -> ChatResponse:
        body, context = self.codec.encode(
            messages, options, model=self.model, stream=False
        )
        response, raw = await self._send(body, stream=False)
        request_id = self._request_id(response.headers)
        result = self._decode(raw, context, request_id)
        if request_id and self.keeps_request_id:
            result.additional_properties["request_id"] = request_id
        return result

    async def _inner_get_streaming_response(
        self, *, messages: list[Message], options: dict[str, Any], **kwargs: Any
    ) -> AsyncIterator[ChatResponseUpdate]:
        body, context = self.codec.encode(
            messages, options, model=self.model, stream=True
        )
        response, first = await self._send(body, stream=True)
        request_id = self._request_id(response.headers)
        tag = request_id if self.keeps_request_id else None
        clean = False
        try:
            # a server that ignored stream
            if _content_type(response.headers) == "application/json":
                whole, failure = await self._rest_of_body(response, first, request_id)
                if failure is not None:
                    raise failure
                for update in self._decode(whole, context, request_id).as_updates():
                    yield _tagged(update, tag)
                clean = True
                return
            decoder = self.codec.stream_decoder(
                context, max_line_size=self.max_line_size
            )
            finished = False  # a finish_reason was seen (PV-15)
            chunk = first
            while True:
                updates, error = _step(decoder.feed, chunk)
                for update in updates:
                    finished = finished or update.finish_reason is not None
                    yield _tagged(update, tag)
                if error is not None:
                    raise self._finish_error(error, request_id)
                if decoder.done:
                    break  # data after the terminator is ignored (PV-15)
                chunk, broken = await self._read_chunk(response)
                if broken is not None:
                    raise self._interrupted(broken, request_id)
                if not chunk:
                    break
            updates, error = _step(decoder.close, None)
            for update in updates:
                finished = finished or update.finish_reason is not None
                yield _tagged(update, tag)
            if error is not None:
                if self._truncated(error, decoder):
                    raise self._interrupted(f"truncated event: {error}", request_id)
                raise self._finish_error(error, request_id)
            why = self.codec.unfinished(decoder, finished)
            if why is not None:
                raise self._interrupted(why, request_id)
            clean = True
        finally:
            # PV-30: every other exit (an error, the consumer's cancellation, an early
            # aclose()) closes the response and its connection; a clean end gives the
            # connection back.
            if clean:
                response.release()
            else:
                response.close()

    # -- sending ----------------------------------------------------------------------------------

    def _auth_headers(self) -> dict[str, str]:
        """The credentials' headers: ``Authorization: Bearer <key>`` unless a plugin
        says otherwise."""
        return (
            {"Authorization": f"Bearer {self._api_key.reveal()}"}
            if self._api_key
            else {}
        )

    def _connection_headers(self) -> dict[str, str]:
        """The connection's own headers, before ``default_headers`` (which may replace
        them)."""
        return {"User-Agent": self.user_agent}

    def _headers(self, *, stream: bool) -> dict[str, str]:
        headers = self.codec.headers(stream=stream)
        headers.update(self._connection_headers())
        headers.update(self.default_headers)
        headers.update(self._auth_headers())
        # user:password@ in the base URL
        if self._url_user and "Authorization" not in headers:
            pair = f"{self._url_user}:{self._url_password.reveal()}".encode()
            headers["Authorization"] = "Basic " + base64.b64encode(pair).decode("ascii")
        return headers

    def _query(self) -> list[tuple[str, str]]:
        """The base URL's query, then ``default_query`` (which wins for a name in both,
        OA-30)."""
        if not self.default_query:
            return list(self._base_query)
        return [
            (k, v) for k, v in self._base_query if k not in self.default_query
        ] + list(self.default_query.items())

    async def _send(self, body: bytes, *, stream: bool) -> tuple[Response, bytes]:
        """Attempts under the retry policy (PV-25); the last error when every attempt
        failed."""
        host = urlsplit(self._endpoint).hostname or ""
        if any(
            host == h or (h.startswith(".") and host.endswith(h)) for h in self.hosted
        ) and not (self._auth_headers() or self._url_user):
            raise AuthenticationError(  # PV-46: nothing is sent
                describe(
                    None,
                    f"{host} needs an API key: pass api_key= or set {self.api_key_env}",
                    provider=self.codec.provider,
                ),
                provider_message="",
                provider=self.codec.provider,
            )
        return await retry_call(
            lambda: self._attempt(body, stream=stream),
            policy=self.retry_policy,
            sleep=self._sleep,
            rng=self._rng,
            logger=self._logger,
        )

    async def _attempt(self, body: bytes, *, stream: bool) -> tuple[Response, bytes]:
        """One request: a 2xx response with its whole body (released), or, when
        streaming, with its first chunk (still open: the caller closes it). Every
        failure is a `ProviderError`."""
        url = f"{self._endpoint}{self.path}"
        query = self._query()
        timeouts = Timeouts(
            connect=self.timeout, read=self.timeout, total=self.total_timeout
        )
        request = Request(
            "POST",
            f"{url}?{urlencode(query)}" if query else url,
            self._headers(stream=stream),
            body,
            timeouts,
        )
        self._logger.debug(
            "POST %s (stream=%s)",
            redact(f"{self.base_url}{self.path}", *self._secrets),
            stream,
        )
        response: Response | None = None
        kept = False
        failure: ProviderError
        try:
            response = await self.transport.send(request)
            if response.status >= 300:
                failure = await self._status_error(response, url)
            elif stream:
                first = await response.read_chunk()
                if first:
                    kept = True
                    return response, first
                failure = ProviderConnectionError(
                    describe(
                        None,
                        "the stream ended before its first byte",
                        provider=self.codec.provider,
                    ),
                    provider_message="",
                    request_id=self._request_id(response.headers),
                    provider=self.codec.provider,
                    headers=response.headers,
                )
            else:
                raw = await self._read_body(response)
                kept = True
                response.release()
                return response, raw
        except ProviderError as error:  # the body was larger than max_body_size
            failure = error
        except TransportError as error:
            failure = self._transport_error(error, response)
        finally:
            if not kept and response is not None:
                response.close()
        raise self._scrub(failure)  # outside the except: nothing is chained (PV-35)

    async def _read_body(self, response: Response, first: bytes = b"") -> bytes:
        """The whole 2xx body (after ``first``, already read), at most ``max_body_size``
        bytes (PV-36)."""
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self.max_body_size:
            raise self._too_large(response)
        data = bytearray(first)
        while len(data) <= self.max_body_size:
            chunk = await response.read_chunk()
            if not chunk:
                return bytes(data)
            data += chunk
        raise self._too_large(response)

    def _too_large(self, response: Response) -> ProviderError:
        error = self.codec.protocol_error(
            f"{self.codec.provider}: the response body is larger than max_body_size={self.max_body_size} bytes"
        )
        error.request_id = self._request_id(response.headers)
        return error

    async def _rest_of_body(
        self, response: Response, first: bytes, request_id: str | None
    ) -> tuple[bytes, ProviderError | None]:
        """The whole body of a JSON answer to a stream, or the scrubbed error to
        raise."""
        try:
            return await self._read_body(response, first), None
        except ProviderError as error:
            return b"", self._finish_error(error, request_id)
        except TransportError as error:
            return b"", self._interrupted(self._what(error), request_id)

    async def _read_chunk(self, response: Response) -> tuple[bytes, str | None]:
        """The next chunk of a stream, or ``(b"", what failed)``: the caller raises
        (PV-29, PV-35)."""
        try:
            return await response.read_chunk(), None
        except TransportError as error:
            return b"", self._what(error)

    async def _status_error(self, response: Response, url: str) -> ProviderError:
        headers = response.headers
        raw, unreadable = b"", ""
        try:
            while len(raw) < MAX_ERROR_BODY + _SECRET_MARGIN:
                chunk = await response.read_chunk()
                if not chunk:
                    break
                raw += chunk
        # the status is the error; the body only adds its text
        except TransportError as error:
            unreadable = f" (the error body could not be read: {error.detail})"
        text = raw.decode("utf-8", "replace")
        # PV-24: redact first, then cut
        if (scrubbed := redact(text, *self._secrets)) != text:
            raw = scrubbed.encode("utf-8")
        message, request_id = self.codec.parse_error(
            response.status, raw[:MAX_ERROR_BODY], headers
        )
        message += unreadable
        if response.status == 401 and not self._api_key:
            message += (
                f" (no API key was configured: pass api_key= or set {self.api_key_env})"
            )
        failure = self.codec.status_error(response.status, message, request_id, headers)
        hint = (
            f"; {self.not_found_hint}"
            if response.status == 404 and self.not_found_hint
            else ""
        )
        text, tail = (
            failure.message,
            f" (request id {request_id})" if request_id else "",
        )
        # PV-45: where, before the id
        text = text.removesuffix(tail) if tail and text.endswith(tail) else text
        failure.message = (
            f"{text} (POST {url}{hint}){tail if text != failure.message else ''}"
        )
        failure.args = (failure.message, *failure.args[1:])
        return failure

    def _request_id(self, headers: Mapping[str, str]) -> str | None:
        for name in self.codec.request_id_headers:
            value = headers.get(name)
            if value:
                return value
        return None

    # -- errors -------------------------------------------------------------------------------------

    def _what(self, error: TransportError) -> str:
        """What failed, without the base URL: a timeout's bound, or the library's
        words."""
        if error.kind == "connect_timeout":
            return f"could not connect within timeout={self.timeout} s"
        if error.kind == "read_timeout":
            return f"no data within timeout={self.timeout} s"
        if error.kind == "total_timeout":
            return f"the request took longer than total_timeout={self.total_timeout} s"
        return error.detail

    def _transport_error(
        self, error: TransportError, response: Response | None
    ) -> ProviderError:
        """PV-35: a transport failure before the answer was complete, as a typed error
        (``_FAILURES``)."""
        cls, retryable, text = _FAILURES.get(error.kind, _FAILURES["other"])
        hint = f"; {self.connect_hint}" if self.connect_hint else ""
        text = text.format(
            url=self.base_url,
            detail=error.detail,
            hint=hint,
            timeout=self.timeout,
            waited=self._what(error),
        )
        request_id = (
            self._request_id(response.headers) if response is not None else None
        )
        return cls(
            describe(None, text, request_id, provider=self.codec.provider),
            provider_message="",
            request_id=request_id,
            retryable=retryable,
            provider=self.codec.provider,
            headers=response.headers if response is not None else None,
        )

    def _truncated(self, error: ProviderError, decoder: StreamDecoder) -> bool:
        """A protocol error at the end of a stream that never saw its terminator: the
        body ended inside an event (PV-29), unless the error is a bound (PV-36)."""
        return (
            isinstance(error, self.codec.protocol_error)
            and not decoder.done
            and "max_line_size" not in str(error)
        )

    def _scrub(self, error: ProviderError) -> ProviderError:
        """The error as it may leave the client: secrets redacted, chain cut (PV-24,
        PV-35)."""
        return error.redact(*self._secrets)

    def _interrupted(self, what: str, request_id: str | None) -> StreamInterruptedError:
        error = StreamInterruptedError(
            describe(
                None,
                f"the stream was interrupted: {what}",
                request_id,
                provider=self.codec.provider,
            ),
            provider_message="",
            request_id=request_id,
            provider=self.codec.provider,
        )
        return error.redact(*self._secrets)

    def _finish_error(
        self, error: ProviderError, request_id: str | None
    ) -> ProviderError:
        """A codec error leaving the client: with the request id and without the key."""
        if error.request_id is None and request_id:
            error.request_id = request_id
        return self._scrub(error)

    def _decode(self, raw: bytes, context: Any, request_id: str | None) -> ChatResponse:
        """A whole answer as a response; only the codec's typed errors come out
        (PV-10)."""
        try:
            return self.codec.decode(raw, context)
        except ProviderError as error:
            raise self._finish_error(error, request_id)  # noqa: B904 - its chain is cut


def _step(
    step: Callable[..., list[ChatResponseUpdate]], chunk: bytes | None
) -> tuple[list[ChatResponseUpdate], ProviderError | None]:
    """Run one decoder step; an error comes back with the updates decoded before it
    (PV-14)."""
    try:
        return (step(chunk) if chunk is not None else step()), None
    except ProviderError as error:
        return list(getattr(error, "updates", ())), error


def _tagged(update: ChatResponseUpdate, request_id: str | None) -> ChatResponseUpdate:
    """OA-29: the answer's request id in ``additional_properties["request_id"]``."""
    if request_id:
        update.additional_properties["request_id"] = request_id
    return update


def _content_type(headers: Mapping[str, str]) -> str:
    return headers.get("content-type", "").partition(";")[0].strip().lower()


def _positive(value: float | None, name: str) -> float | None:
    if value is not None and not value > 0:
        raise ValueError(f"{name} must be > 0 seconds or None, got {value!r}")
    return value


def _check_headers(headers: Mapping[str, str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, value in headers.items():
        if not isinstance(name, str) or not isinstance(value, str):
            raise TypeError(
                f"default_headers: header names and values must be str, got {name!r}"
            )
        if (
            not name
            or any(c in name for c in "\r\n:")
            or "\r" in value
            or "\n" in value
        ):
            raise ValueError(
                f"default_headers: header {name!r} has an empty name, a colon or a line break"
            )
        out[name] = value
    return out
