"""The connection of the Gemini API plugin (spec/gemini.md GM-22 .. GM-24,
spec/providers.md PV-38).

Rules
-----
1. This module holds only what is Gemini's about the connection: the key from
   ``GOOGLE_API_KEY`` or ``GEMINI_API_KEY`` (the first wins when both are set, as in
   the official SDK) sent as ``x-goog-api-key``, ``GOOGLE_GEMINI_BASE_URL``, the API
   version, and the URL of each call: the model's resource name and the method, with
   ``alt=sse`` when streaming. Sending, retrying, timing out, bounding, redacting and
   closing are `HTTPChatClient`'s (PV-23 .. PV-40); the wire format is `GeminiCodec`'s.
2. It imports no network library: the default transport is ``transport_for``'s
   (aiohttp's ``minagent_http`` when it can be imported, else the standard library's,
   PV-41).

Theory of operation
-------------------
`HTTPChatClient` sends every call to one ``path`` and query. Gemini's URL names the
method, which differs between the two modes (``:generateContent``,
``:streamGenerateContent?alt=sse``). The mode of the call being sent is held in a
context variable set around each attempt (``_attempt``), which ``path`` and ``_query``
read: a context variable, so that calls running at the same time in other tasks never
see each other's mode.
"""

from __future__ import annotations

import contextvars
import os
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from ._minagent import (
    DEFAULT_MAX_BODY_SIZE,
    FunctionInvocationConfiguration,
    HTTPChatClient,
    Response,
    RetryPolicy,
    SupportsRandom,
    Transport,
    transport_for,
)

if TYPE_CHECKING:
    from aiohttp import ClientSession

from ._codec import GeminiCodec
from ._request import model_path
from ._stream import DEFAULT_MAX_LINE_SIZE

__all__ = ["API_VERSION", "DEFAULT_BASE_URL", "GeminiChatClient"]

DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com"
API_VERSION = "v1"  # the official SDK's default since 3.0
USER_AGENT = "minagent-gemini"
# the official SDK's order: GOOGLE_API_KEY wins when both are set
KEY_ENVIRONMENT = ("GOOGLE_API_KEY", "GEMINI_API_KEY")

# True while a streaming call's attempt is being sent (see the module)
_STREAMING: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "minagent_gemini_streaming", default=False
)


class GeminiChatClient(HTTPChatClient):
    """A chat client for the Gemini API's ``generateContent`` and
    ``streamGenerateContent`` (``alt=sse``).

    ``model`` is a model name (``gemini-2.5-flash``) or a resource name
    (``models/...``, ``tunedModels/...``). ``api_key`` defaults to ``GOOGLE_API_KEY``,
    then ``GEMINI_API_KEY``; ``base_url`` to ``GOOGLE_GEMINI_BASE_URL``, then
    ``https://generativelanguage.googleapis.com`` (the server's root: the API version is
    ``api_version``, default ``v1``, the official SDK's; ``v1beta`` for preview
    features). ``timeout`` (seconds, None for none) bounds
    connecting and every wait for data, not a whole stream. ``max_retries`` builds the
    `RetryPolicy` unless ``retry_policy`` is given. ``session``: an
    ``aiohttp.ClientSession`` to use (and leave open); ``transport``: any `Transport`
    instead (PV-38). ``sleep`` and ``rng`` replace ``asyncio.sleep`` and the random
    source of the backoff (tests, PV-32). ``max_body_size`` (bytes) and
    ``max_line_size`` (characters) bound what the server may send (PV-36).
    """

    api_key_env = "GOOGLE_API_KEY or GEMINI_API_KEY"
    # PV-45
    not_found_hint = (
        "is the model name right, and the base URL the server's root (without /v1)?"
    )
    hosted = ("generativelanguage.googleapis.com",)  # PV-46: no key, no request
    user_agent = USER_AGENT

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        api_version: str = API_VERSION,
        timeout: float | None = 600.0,
        max_retries: int = 2,
        middleware: Any = None,
        function_invocation_configuration: FunctionInvocationConfiguration
        | None = None,
        session: ClientSession | None = None,
        retry_policy: RetryPolicy | None = None,
        default_headers: Mapping[str, str] | None = None,
        sleep: Callable[[float], Awaitable[object]] | None = None,
        rng: SupportsRandom | None = None,
        max_body_size: int = DEFAULT_MAX_BODY_SIZE,
        max_line_size: int | None = DEFAULT_MAX_LINE_SIZE,
        transport: Transport | None = None,
    ) -> None:
        self.model_path = model_path(model)
        if (
            not isinstance(api_version, str)
            or not api_version
            or not api_version.replace(".", "").replace("_", "").isalnum()
        ):
            raise ValueError(
                f"api_version must be a version name such as 'v1', got {api_version!r}"
            )
        self.api_version = api_version
        if api_key is None:
            api_key = next(
                (os.environ[name] for name in KEY_ENVIRONMENT if os.environ.get(name)),
                "",
            )
        super().__init__(
            model,
            codec=GeminiCodec(),
            transport=transport_for(transport, session=session, trust_env=False),
            base_url=base_url
            or os.environ.get("GOOGLE_GEMINI_BASE_URL")
            or DEFAULT_BASE_URL,
            api_key=api_key,
            timeout=timeout,
            max_retries=max_retries,
            retry_policy=retry_policy,
            default_headers=default_headers,
            sleep=sleep,
            rng=rng,
            max_body_size=max_body_size,
            max_line_size=max_line_size,
            middleware=middleware,
            function_invocation_configuration=function_invocation_configuration,
        )

    # GM-22: the URL of a call, by mode (see the module). `HTTPChatClient` declares
    # ``path`` a class variable, one path for every call; here it depends on the call
    # being sent, hence a property and the override the type checker is told about.
    @property
    def path(self) -> str:  # type: ignore[override]
        method = "streamGenerateContent" if _STREAMING.get() else "generateContent"
        return f"/{self.api_version}/{self.model_path}:{method}"

    def _query(self) -> list[tuple[str, str]]:
        query = super()._query()
        if _STREAMING.get():
            query = [(k, v) for k, v in query if k != "alt"] + [("alt", "sse")]
        return query

    async def _attempt(self, body: bytes, *, stream: bool) -> tuple[Response, bytes]:
        token = _STREAMING.set(stream)
        try:
            return await super()._attempt(body, stream=stream)
        finally:
            _STREAMING.reset(token)

    def _auth_headers(self) -> dict[str, str]:
        """The key as ``x-goog-api-key`` (GM-23), never in the URL."""
        return {"x-goog-api-key": self._api_key.reveal()} if self._api_key else {}
