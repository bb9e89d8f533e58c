"""The aiohttp transport of the OpenAI-compatible Chat Completions plugin (spec/providers.md).

Theory of operation
-------------------
This is the only module of the package that imports aiohttp (PV-1). It does three things and
leaves every decision about the wire format to the codec:

1. **Send.** ``_attempt`` makes one ``POST {base_url}/chat/completions`` (OA-20) with the
   query of the base URL and ``default_query`` (OA-30). A non-2xx answer becomes a typed
   error through ``parse_error`` and ``error_for_status`` (PV-23, OA-22); every exception of
   the HTTP library becomes a typed `ProviderError` (PV-35). For a stream the attempt also
   reads the first chunk of the body, so everything up to the first byte is inside the
   attempt and nothing after it is.
2. **Retry.** ``retry_call`` repeats attempts under the client's `RetryPolicy` (PV-25 .. PV-27),
   waiting through the injectable ``sleep`` with the injectable ``rng``. A stream is therefore
   retried only before its first byte; after it, a failure is `StreamInterruptedError` (PV-29).
3. **Decode.** The body goes to ``decode_response`` or, chunk by chunk as it arrives, to a
   ``ChatCompletionsStreamDecoder``; updates are yielded as soon as they are decoded.

Every exit that is not a clean end — an error, cancellation of the consumer, an early
``aclose()`` of the stream — closes the HTTP response, which closes its connection: no
connection stays acquired and no task is left (PV-30).

Secrets (PV-24, PV-35): the API key and a password in the base URL are held in `Secret`s.
Every error leaves through ``_scrub``, which redacts its texts, attributes and headers and
cuts its ``__cause__``/``__context__``; errors are raised outside the ``except`` block that
caught the library's exception, so no library exception (whose request info carries the
headers) is ever chained to them.

The session (PV-31, PV-37) belongs to the event loop that created it. A small async generator
(the *keeper*), started on that loop, closes it when the loop shuts down its async generators
(as ``asyncio.run`` does), so a client can be used under one ``asyncio.run`` after another.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit, urlunsplit

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

from ._codec import (
    DEFAULT_MAX_LINE_SIZE,
    ChatCompletionsStreamDecoder,
    OpenAIProtocolError,
    OpenAIStreamError,
    build_request,
    decode_response,
    encode_request,
    parse_error,
)

__all__ = [
    "DEFAULT_BASE_URL",
    "DEFAULT_MAX_BODY_SIZE",
    "AzureOpenAIChatClient",
    "OpenAIChatClient",
]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_MAX_BODY_SIZE = 32 * 1024 * 1024  # bytes of a 2xx non-streaming body (PV-36)
PROVIDER = "openai"
_MAX_ERROR_BODY = 64 * 1024  # bytes of a non-2xx body read for its message (PV-11)
_USERINFO = re.compile(r"//.*@")  # greedy: a raw "/" in a password must not split it


def _plugin_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("minagent-openai")
    except PackageNotFoundError:  # running from a source tree without installing
        return "0+unknown"


USER_AGENT = f"minagent-openai/{_plugin_version()}"

logger = logging.getLogger("minagent_openai")

Sleep = Callable[[float], Awaitable[object]]


def _check_headers(headers: Mapping[str, str], where: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, value in headers.items():
        if not isinstance(name, str) or not isinstance(value, str):
            raise TypeError(f"{where}: header names and values must be str, got {name!r}")
        if not name or any(c in name for c in "\r\n:") or "\r" in value or "\n" in value:
            raise ValueError(f"{where}: header {name!r} has an empty name, a colon or a line break")
        out[name] = value
    return out


def _positive(value: float | None, name: str) -> float | None:
    if value is not None and not value > 0:
        raise ValueError(f"{name} must be > 0 seconds or None, got {value!r}")
    return value


class OpenAIChatClient(BaseChatClient):
    """A chat client for ``POST /chat/completions`` of OpenAI and compatible servers.

    ``api_key``, ``base_url``, ``organization`` and ``project`` default to ``OPENAI_API_KEY``,
    ``OPENAI_BASE_URL`` (then ``https://api.openai.com/v1``), ``OPENAI_ORG_ID`` and
    ``OPENAI_PROJECT_ID``; without a key no ``Authorization`` header is sent (local servers
    need none). ``default_query`` is sent on every request, after the base URL's own query
    (OA-30). ``timeout`` (seconds, None for none) bounds connecting and every wait for data;
    ``total_timeout`` bounds each attempt from sending to the end of its body (OA-23).
    ``max_retries`` builds the `RetryPolicy` unless ``retry_policy`` is given. ``session``:
    an ``aiohttp.ClientSession`` to use (and leave open); by default the client creates one
    on first use, honouring ``HTTP_PROXY``/``HTTPS_PROXY``/``NO_PROXY`` when ``trust_env``
    (OA-31), and closes it in ``aclose()`` / ``async with`` (PV-31). ``max_body_size`` and
    ``max_line_size`` bound what the server may send (PV-36). ``sleep`` and ``rng`` replace
    ``asyncio.sleep`` and the random source of the backoff (tests, PV-32).
    ``options["model"]`` overrides ``model`` per call.
    """

    path = "/chat/completions"  # appended to the base URL's path; a subclass for another endpoint sets its own

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        organization: str | None = None,
        project: str | None = None,
        timeout: float | None = 60.0,
        total_timeout: float | None = 600.0,
        max_retries: int = 2,
        middleware: Any = None,
        function_invocation_configuration: FunctionInvocationConfiguration | None = None,
        session: aiohttp.ClientSession | None = None,
        retry_policy: RetryPolicy | None = None,
        default_headers: Mapping[str, str] | None = None,
        default_query: Mapping[str, str] | None = None,
        max_tokens_key: str = "max_completion_tokens",
        sleep: Sleep | None = None,
        rng: SupportsRandom | None = None,
        trust_env: bool = True,
        max_body_size: int = DEFAULT_MAX_BODY_SIZE,
        max_line_size: int = DEFAULT_MAX_LINE_SIZE,
    ) -> None:
        super().__init__(
            middleware=middleware,
            function_invocation_configuration=function_invocation_configuration,
        )
        self.model = model
        key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY", "")
        self._api_key = Secret(key)
        self._init_url(base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL, key)
        if self._url_password and key and self._auth_header_name() == "Authorization":
            raise ValueError(
                f"base_url {self.base_url!r} carries credentials and an API key is configured: both would "
                "be sent as the Authorization header; remove the user:password@ part or the key"
            )
        self.organization = organization if organization is not None else os.environ.get("OPENAI_ORG_ID") or None
        self.project = project if project is not None else os.environ.get("OPENAI_PROJECT_ID") or None
        self.timeout = _positive(timeout, "timeout")
        self.total_timeout = _positive(total_timeout, "total_timeout")
        self.retry_policy = retry_policy or RetryPolicy(max_retries=max_retries)
        self.default_headers = _check_headers(dict(default_headers or {}), "default_headers")
        self.default_query: dict[str, str] = {}
        for name, value in (default_query or {}).items():
            if not isinstance(name, str) or not isinstance(value, str):
                raise TypeError(f"default_query: names and values must be str, got {name!r}: {value!r}")
            self.default_query[name] = value
        self.max_tokens_key = max_tokens_key
        for name, size in (("max_body_size", max_body_size), ("max_line_size", max_line_size)):
            if not isinstance(size, int) or isinstance(size, bool) or size < 1:
                raise ValueError(f"{name} must be a positive int (bytes), got {size!r}")
        self.max_body_size = max_body_size
        self.max_line_size = max_line_size
        self.trust_env = trust_env
        self._sleep: Sleep = sleep or asyncio.sleep
        self._rng = rng
        self._session = session
        self._owns_session = session is None
        self._session_loop: asyncio.AbstractEventLoop | None = None
        self._keeper: AsyncGenerator[None, None] | None = None

    def _init_url(self, url: str, key: str) -> None:
        """Split the base URL: endpoint, query (kept, OA-30) and credentials (a secret, PV-24)."""
        masked = redact(_USERINFO.sub("//***@", url), key)
        parts = urlsplit(url.strip())
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"base_url must be an http(s) URL, got {masked!r}")
        password = unquote(parts.password or "")
        self._url_user = unquote(parts.username or "")
        self._url_password = Secret(password)
        netloc = parts.hostname if ":" not in parts.hostname else f"[{parts.hostname}]"
        port: int | None = None
        with contextlib.suppress(ValueError):
            port = parts.port
        if port is None and parts.netloc.rsplit("@", 1)[-1].rstrip("]").count(":") > (parts.hostname.count(":")):
            raise ValueError(f"base_url has an invalid port: {masked!r}")
        if port is not None:
            netloc = f"{netloc}:{port}"
        path = parts.path.rstrip("/")
        self._endpoint = urlunsplit((parts.scheme, netloc, path, "", ""))
        self._base_query = parse_qsl(parts.query, keep_blank_values=True)
        shown = (
            netloc
            if not self._url_user
            else f"{self._url_user}:***@{netloc}"
            if password
            else f"{self._url_user}@{netloc}"
        )
        self.base_url = urlunsplit((parts.scheme, shown, path, parts.query, ""))

    @property
    def _secrets(self) -> tuple[Secret, ...]:
        return (self._api_key, self._url_password)

    def __repr__(self) -> str:
        key = "***" if self._api_key else None
        return f"{type(self).__name__}(model={self.model!r}, base_url={self.base_url!r}, api_key={key!r})"

    # -- life cycle (PV-31, PV-37) --------------------------------------------------------------

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
            session = aiohttp.ClientSession(trust_env=self.trust_env)
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

    async def __aenter__(self) -> OpenAIChatClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    # -- the two calls ------------------------------------------------------------------------

    async def _inner_get_response(
        self, *, messages: list[Message], options: dict[str, Any], **kwargs: Any
    ) -> ChatResponse:
        body = self._encode(messages, options, stream=False)
        response, raw = await self._send(body, stream=False)
        request_id = response.headers.get("x-request-id")
        result = self._parse_body(raw, request_id)
        if request_id:
            result.additional_properties["request_id"] = request_id
        return result

    async def _inner_get_streaming_response(
        self, *, messages: list[Message], options: dict[str, Any], **kwargs: Any
    ) -> AsyncIterator[ChatResponseUpdate]:
        body = self._encode(messages, options, stream=True)
        response, first = await self._send(body, stream=True)
        request_id = response.headers.get("x-request-id")
        clean = False
        try:
            if response.content_type == "application/json":  # the server ignored stream (OA-24)
                for update in await self._json_as_updates(response, first, request_id):
                    yield update
                clean = True
                return
            decoder = ChatCompletionsStreamDecoder(max_line_size=self.max_line_size)
            finished = False  # a finish_reason was seen (PV-15)
            chunk = first
            while True:
                updates, error = _decode(decoder.feed, chunk)
                for update in updates:
                    finished = finished or update.finish_reason is not None
                    yield _tagged(update, request_id)
                if error is not None:
                    raise self._finish_error(error, request_id)
                if decoder.done:
                    break  # data after [DONE] is ignored (PV-15)
                chunk, failure = await self._read_chunk(response)
                if failure is not None:
                    raise self._interrupted(failure, request_id)
                if not chunk:
                    break
            updates, error = _decode(decoder.close, None)
            for update in updates:
                finished = finished or update.finish_reason is not None
                yield _tagged(update, request_id)
            if error is not None:
                if isinstance(error, OpenAIProtocolError) and not decoder.done and "PV-36" not in str(error):
                    raise self._interrupted(f"truncated event: {error}", request_id)  # ended inside an event
                raise self._finish_error(error, request_id)
            if not decoder.done and not finished:
                raise self._interrupted("the stream ended before [DONE] and without a finish_reason", request_id)
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

    def _encode(self, messages: list[Message], options: dict[str, Any], *, stream: bool) -> bytes:
        request = build_request(messages, options, model=self.model, stream=stream, max_tokens_key=self.max_tokens_key)
        return encode_request(request)

    def _auth_header_name(self) -> str:
        return "Authorization"

    def _auth_headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._api_key.reveal()}"} if self._api_key else {}

    def _missing_key_hint(self) -> str:
        return "no API key was configured: pass api_key= or set OPENAI_API_KEY"

    def _headers(self, *, stream: bool) -> dict[str, str]:
        headers = {
            "Content-Type": "application/json",
            "Accept": "text/event-stream" if stream else "application/json",
            "User-Agent": USER_AGENT,
        }
        if self.organization:
            headers["OpenAI-Organization"] = self.organization
        if self.project:
            headers["OpenAI-Project"] = self.project
        headers.update(self.default_headers)
        headers.update(self._auth_headers())
        if self._url_user and "Authorization" not in headers:  # user:password@ in base_url (OA-20)
            import base64

            pair = f"{self._url_user}:{self._url_password.reveal()}".encode()
            headers["Authorization"] = "Basic " + base64.b64encode(pair).decode("ascii")
        return headers

    def _query(self) -> list[tuple[str, str]]:
        """The base URL's query, then ``default_query`` (which wins for a name in both, OA-30)."""
        if not self.default_query:
            return list(self._base_query)
        return [(k, v) for k, v in self._base_query if k not in self.default_query] + list(self.default_query.items())

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
        url = f"{self._endpoint}{self.path}"
        timeout = aiohttp.ClientTimeout(total=self.total_timeout, connect=self.timeout, sock_read=self.timeout)
        logger.debug("POST %s (stream=%s)", redact(f"{self.base_url}{self.path}", *self._secrets), stream)
        response: aiohttp.ClientResponse | None = None
        handed_over = False
        failure: ProviderError
        session = await self._get_session()  # a RuntimeError of PV-37 is the caller's to fix
        try:
            response = await session.post(
                url,
                params=self._query() or None,
                data=body,
                headers=self._headers(stream=stream),
                timeout=timeout,
            )
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

    def _too_large(self, response: aiohttp.ClientResponse) -> OpenAIProtocolError:
        error = OpenAIProtocolError(
            f"openai: the response body is larger than max_body_size={self.max_body_size} bytes"
        )
        error.request_id = response.headers.get("x-request-id")
        return error

    async def _read_chunk(self, response: aiohttp.ClientResponse) -> tuple[bytes, str | None]:
        """The next chunk of a stream, or ``(b"", what failed)``: the caller raises (PV-29, PV-35)."""
        try:
            return await response.content.readany(), None
        except Exception as exc:
            return b"", self._timeout_text(exc) if isinstance(exc, TimeoutError) else _what(exc)

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
            message += f" ({self._missing_key_hint()})"
        return error_for_status(response.status, message, request_id, provider=PROVIDER, headers=headers)

    def _timeout_text(self, exc: BaseException) -> str:
        if isinstance(exc, aiohttp.ConnectionTimeoutError):
            return f"could not connect within timeout={self.timeout} s"
        if isinstance(exc, aiohttp.ServerTimeoutError):
            return f"no data within timeout={self.timeout} s"
        return f"the request took longer than total_timeout={self.total_timeout} s"

    def _transport_error(self, exc: Exception, response: aiohttp.ClientResponse | None) -> ProviderError:
        """PV-35: a library exception before the answer was complete, as a typed error."""
        request_id = response.headers.get("x-request-id") if response is not None else None
        headers = response.headers if response is not None else None
        cls: type[ProviderError] = ProviderConnectionError
        retryable: bool | None = None
        if isinstance(exc, TimeoutError):
            cls, text = ProviderTimeoutError, f"{self._timeout_text(exc)} ({self.base_url})"
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
        """A codec error leaving the client: with the request id and without the key (OA-22)."""
        if error.request_id is None and request_id:
            error.request_id = request_id
        return self._scrub(error)

    async def _json_as_updates(
        self, response: aiohttp.ClientResponse, first: bytes, request_id: str | None
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
        return [_tagged(u, request_id) for u in self._parse_body(first + rest, request_id).as_updates()]

    def _parse_body(self, raw: bytes, request_id: str | None) -> ChatResponse:
        """A whole JSON answer as a response; only typed protocol errors come out (OA-28)."""
        try:
            return decode_response(raw)
        except ProviderError as error:
            raise self._finish_error(error, request_id)  # noqa: B904 - our own error, its chain is cut


class AzureOpenAIChatClient(OpenAIChatClient):
    """Chat Completions of an Azure OpenAI deployment (OA-32).

    ``POST {endpoint}/openai/deployments/{deployment}/chat/completions?api-version=...`` with
    the ``api-key`` header (or ``Authorization: Bearer <ad_token>`` for an Entra ID token).
    ``endpoint``, ``api_key``, ``ad_token`` and ``api_version`` default to
    ``AZURE_OPENAI_ENDPOINT``, ``AZURE_OPENAI_API_KEY``, ``AZURE_OPENAI_AD_TOKEN`` and
    ``OPENAI_API_VERSION``; ``base_url`` replaces the
    deployment URL (for example ``{endpoint}/openai/v1``, where ``api_version`` is optional).
    Every other argument is the one of `OpenAIChatClient`.
    """

    def __init__(
        self,
        deployment: str,
        *,
        endpoint: str | None = None,
        api_key: str | None = None,
        api_version: str | None = None,
        ad_token: str | None = None,
        base_url: str | None = None,
        default_query: Mapping[str, str] | None = None,
        organization: str | None = None,
        project: str | None = None,
        **kwargs: Any,
    ) -> None:
        if not deployment or not isinstance(deployment, str):
            raise ValueError("AzureOpenAIChatClient needs the deployment name as its first argument")
        version = api_version or os.environ.get("OPENAI_API_VERSION") or None
        if base_url is None:
            endpoint = endpoint or os.environ.get("AZURE_OPENAI_ENDPOINT") or None
            if not endpoint:
                raise ValueError("AzureOpenAIChatClient needs endpoint= or AZURE_OPENAI_ENDPOINT")
            if version is None:
                raise ValueError("AzureOpenAIChatClient needs api_version= or OPENAI_API_VERSION")
            base_url = f"{endpoint.rstrip('/')}/openai/deployments/{deployment}"
        key = api_key if api_key is not None else os.environ.get("AZURE_OPENAI_API_KEY", "")
        self._ad_token = Secret(ad_token if ad_token is not None else os.environ.get("AZURE_OPENAI_AD_TOKEN", ""))
        query = dict(default_query or {})
        if version is not None:
            query["api-version"] = version
        self.api_version = version
        super().__init__(
            deployment,
            api_key=key,
            base_url=base_url,
            default_query=query,
            organization=organization or "",
            project=project or "",
            **kwargs,
        )

    @property
    def _secrets(self) -> tuple[Secret, ...]:
        return (self._api_key, self._url_password, self._ad_token)

    def _auth_header_name(self) -> str:
        return "Authorization" if self._ad_token else "api-key"

    def _auth_headers(self) -> dict[str, str]:
        if self._ad_token:
            return {"Authorization": f"Bearer {self._ad_token.reveal()}"}
        return {"api-key": self._api_key.reveal()} if self._api_key else {}

    def _missing_key_hint(self) -> str:
        return "no API key was configured: pass api_key= or set AZURE_OPENAI_API_KEY"


async def _keeper(session: aiohttp.ClientSession) -> AsyncGenerator[None, None]:
    """Closes ``session`` when its loop shuts down its async generators (PV-37)."""
    try:
        yield
    finally:
        if not session.closed:
            await session.close()


def _tagged(update: ChatResponseUpdate, request_id: str | None) -> ChatResponseUpdate:
    """OA-29: the ``x-request-id`` of the answer, in ``additional_properties["request_id"]``."""
    if request_id:
        update.additional_properties["request_id"] = request_id
    return update


def _decode(
    step: Callable[..., list[ChatResponseUpdate]], chunk: bytes | None
) -> tuple[list[ChatResponseUpdate], ProviderError | None]:
    """Run one decoder step; an error comes back with the updates decoded before it (PV-14)."""
    try:
        return (step(chunk) if chunk is not None else step()), None
    except (OpenAIStreamError, OpenAIProtocolError) as error:
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
