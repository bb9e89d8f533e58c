"""The connection of the native Ollama plugin (spec/ollama.md OL-21 .. OL-23,
spec/providers.md PV-38).

Rules
-----
1. This module holds only what is Ollama's about the connection: where the server is
   (``OLLAMA_HOST``, read as the official SDK reads it), the optional key of Ollama's
   hosted API (``OLLAMA_API_KEY``, sent as ``Authorization: Bearer``), the path, the
   user agent and what to say when nothing listens. Sending, retrying, timing out,
   bounding, redacting and closing are `HTTPChatClient`'s (PV-23 .. PV-40); the wire
   format is `OllamaCodec`'s.
2. It imports no network library: the default transport is ``transport_for``'s
   (aiohttp's ``minagent_http`` when it can be imported, else the standard library's,
   PV-41).

Theory of operation
-------------------
The constructor resolves the environment and hands `HTTPChatClient` an `OllamaCodec` and
a transport (``transport=``, or an aiohttp transport over ``session=``, which does not
read proxy settings from the environment). ``timeout`` defaults to 300 s: a local model
may take minutes to load (OL-22).
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

from ._codec import OllamaCodec
from ._request import parse_host
from ._stream import DEFAULT_MAX_LINE_SIZE

__all__ = ["DEFAULT_MAX_BODY_SIZE", "OllamaChatClient"]

USER_AGENT = "minagent-ollama"


class OllamaChatClient(HTTPChatClient):
    """A chat client for Ollama's native ``POST /api/chat`` (spec/ollama.md).

    ``base_url`` defaults to ``OLLAMA_HOST`` (read as the official SDK reads it), then
    ``http://127.0.0.1:11434``; ``host`` instead of ``base_url`` takes what
    ``OLLAMA_HOST`` takes (host, host:port or a URL; not both); ``api_key`` to ``OLLAMA_API_KEY`` (Ollama's hosted API;
    a local server needs none, and without a key no ``Authorization`` header is sent)
    (OL-21). ``timeout`` (seconds, None for none) bounds connecting and every wait for
    data, not a whole stream; the default is long because a local model may take minutes
    to load (OL-22). ``max_retries`` builds the `RetryPolicy` unless ``retry_policy`` is
    given. ``session``: an ``aiohttp.ClientSession`` to use (and leave open); by default
    the client creates one on first use and closes it in ``aclose()`` / ``async with``
    (PV-31, PV-37); ``transport``:
    any `Transport` instead (PV-38). ``max_body_size`` and ``max_line_size`` bound what
    the server may send (PV-36). ``sleep`` and ``rng`` replace ``asyncio.sleep`` and the
    random source of the backoff (tests, PV-32). ``options["model"]`` overrides
    ``model`` per call.
    """

    path = "/api/chat"
    api_key_env = "OLLAMA_API_KEY"
    connect_hint = (
        "is Ollama running there? Start it with `ollama serve`, "
        "or set OLLAMA_HOST / base_url to where it listens"
    )
    user_agent = USER_AGENT

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        host: str | None = None,
        timeout: float | None = 300.0,
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
        max_line_size: int = DEFAULT_MAX_LINE_SIZE,
        transport: Transport | None = None,
    ) -> None:
        # OL-21: ``host`` is the official SDK's spelling and takes what OLLAMA_HOST
        # takes; ``base_url`` is the URL as sent. Both name one setting, so giving
        # both is an error rather than a silent choice.
        if host is not None and base_url is not None:
            raise ValueError(
                "give host or base_url, not both: host takes what OLLAMA_HOST takes "
                f"(host, host:port or a URL), base_url a URL (host={host!r}, "
                f"base_url={base_url!r})"
            )
        if not base_url:
            base_url = parse_host(
                host if host is not None else os.environ.get("OLLAMA_HOST")
            )
        super().__init__(
            model,
            codec=OllamaCodec(),
            transport=transport_for(transport, session=session, trust_env=False),
            base_url=base_url,
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
