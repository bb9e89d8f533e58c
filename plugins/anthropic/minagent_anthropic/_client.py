"""The connection of the Anthropic Messages API plugin (spec/anthropic.md AN-19 ..
AN-21, spec/providers.md PV-38).

Rules
-----
1. This module holds only what is Anthropic's about the connection:
   ``ANTHROPIC_API_KEY`` sent as ``x-api-key`` (never as ``Authorization``),
   ``ANTHROPIC_BASE_URL`` (default without ``/v1``, as in the official SDK), the path,
   the user agent, and the API version and ``max_tokens`` the codec is built with.
   Sending, retrying (429 and 529 among the retried statuses, AN-20), timing out,
   bounding, redacting and closing are `HTTPChatClient`'s (PV-23 .. PV-40); the wire
   format is `MessagesCodec`'s.
2. It imports no network library: the default transport is ``transport_for``'s
   (aiohttp's ``minagent_http`` when it can be imported, else the standard library's,
   PV-41).

Theory of operation
-------------------
The constructor resolves the environment and hands `HTTPChatClient` a `MessagesCodec`
and a transport (``transport=``, or an aiohttp transport over ``session=``, which does
not read proxy settings from the environment).
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from ._minagent import (
    DEFAULT_MAX_BODY_SIZE,
    FunctionInvocationConfiguration,
    HTTPChatClient,
    RetryPolicy,
    SupportsRandom,
    Transport,
    transport_for,
)

if TYPE_CHECKING:
    from aiohttp import ClientSession

from ._codec import MessagesCodec
from ._request import API_VERSION, DEFAULT_MAX_TOKENS
from ._stream import DEFAULT_MAX_LINE_SIZE

__all__ = ["DEFAULT_BASE_URL", "DEFAULT_MAX_BODY_SIZE", "AnthropicChatClient"]

DEFAULT_BASE_URL = "https://api.anthropic.com"
USER_AGENT = "minagent-anthropic"


class AnthropicChatClient(HTTPChatClient):
    """A chat client for ``POST /v1/messages`` of the Anthropic Messages API.

    ``api_key`` and ``base_url`` default to ``ANTHROPIC_API_KEY`` and
    ``ANTHROPIC_BASE_URL`` (then ``https://api.anthropic.com``, without ``/v1`` as in
    the official SDK). ``anthropic_version`` is the API version sent (default the
    current ``2026-10-21``; pass ``"2023-06-01"`` to use temperature / top_p / top_k on
    models that accept them). ``max_tokens`` is sent when a call's options name none
    (the API requires it). ``timeout`` (seconds, None for none) bounds connecting and
    every wait for data, not a whole stream. ``max_retries`` builds the `RetryPolicy`
    unless ``retry_policy`` is given. ``session``: an ``aiohttp.ClientSession`` to use
    (and leave open); by default the client creates one on first use and closes it in
    ``aclose()`` / ``async with`` (PV-31); ``transport``: any `Transport` instead
    (PV-38). ``sleep`` and ``rng`` replace ``asyncio.sleep`` and the random source of
    the backoff (tests, PV-32). ``max_body_size`` (bytes) and ``max_line_size``
    (characters) bound what the server may send (PV-36).
    """

    path = "/v1/messages"
    api_key_env = "ANTHROPIC_API_KEY"
    # PV-45
    not_found_hint = (
        "is the base URL right? Anthropic's is the server's root, without /v1"
    )
    hosted = ("api.anthropic.com",)  # PV-46: no key, no request
    user_agent = USER_AGENT

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
        function_invocation_configuration: FunctionInvocationConfiguration
        | None = None,
        session: ClientSession | None = None,
        retry_policy: RetryPolicy | None = None,
        default_headers: Mapping[str, str] | None = None,
        anthropic_version: str = API_VERSION,
        sleep: Callable[[float], Awaitable[object]] | None = None,
        rng: SupportsRandom | None = None,
        max_body_size: int = DEFAULT_MAX_BODY_SIZE,
        max_line_size: int | None = DEFAULT_MAX_LINE_SIZE,
        transport: Transport | None = None,
    ) -> None:
        if (
            not isinstance(max_tokens, int)
            or isinstance(max_tokens, bool)
            or max_tokens < 1
        ):
            raise ValueError(f"max_tokens must be a positive int, got {max_tokens!r}")
        self.max_tokens = max_tokens
        self.anthropic_version = anthropic_version
        super().__init__(
            model,
            codec=MessagesCodec(max_tokens=max_tokens, api_version=anthropic_version),
            transport=transport_for(transport, session=session, trust_env=False),
            base_url=base_url
            or os.environ.get("ANTHROPIC_BASE_URL")
            or DEFAULT_BASE_URL,
            api_key=api_key
            if api_key is not None
            else os.environ.get(self.api_key_env, ""),
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

    def _auth_headers(self) -> dict[str, str]:
        """The key as ``x-api-key`` (AN-19)."""
        return {"x-api-key": self._api_key.reveal()} if self._api_key else {}
