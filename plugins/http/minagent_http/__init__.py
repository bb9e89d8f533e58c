"""minagent-http: the aiohttp transport of `minagent.providers.HTTPChatClient`
(spec/providers.md).

`AiohttpTransport` is the one module that imports aiohttp for the chat providers: the
OpenAI (Chat Completions, Responses, Azure), Anthropic and Ollama plugins all send
through it. ``transport_for`` is what their constructors call with their ``session=`` /
``transport=`` / ``trust_env=`` arguments; ``ClientSession`` is the type ``session=``
takes.
"""

from ._aiohttp import (
    EXCEPTIONS,
    AiohttpTransport,
    ClientSession,
    transport_error,
    transport_for,
)

__all__ = [
    "EXCEPTIONS",
    "AiohttpTransport",
    "ClientSession",
    "transport_error",
    "transport_for",
]
