"""Errors that say where and what (spec/providers.md PV-45 .. PV-47): one test per message
a new user met."""

from __future__ import annotations

from typing import Any

import pytest
from minagent_anthropic import AnthropicChatClient
from minagent_openai import AzureOpenAIChatClient, OpenAIChatClient

from minagent import (
    AuthenticationError,
    Message,
    NotFoundError,
)
from minagent.testing import MockResponse, MockTransport


async def _fail(client: Any) -> BaseException:
    try:
        await client.get_response([Message("user", ["Hi"])])
    except Exception as exc:
        return exc
    raise AssertionError("no error")


@pytest.mark.parametrize(
    ("make", "url", "hint"),
    [
        (
            lambda t: OpenAIChatClient(
                "gpt-4o-mini",
                base_url="http://127.0.0.1:9911",
                api_key="k",
                transport=t,
            ),
            "http://127.0.0.1:9911/chat/completions",
            "is the base URL right? an OpenAI-compatible one usually ends in /v1",
        ),
        (
            lambda t: AnthropicChatClient(
                "claude-x",
                base_url="http://127.0.0.1:9911/v1",
                api_key="k",
                transport=t,
            ),
            "http://127.0.0.1:9911/v1/v1/messages",
            "is the base URL right? Anthropic's is the server's root, without /v1",
        ),
    ],
)
async def test_a_404_names_the_url_and_the_usual_mistake(
    make: Any, url: str, hint: str
) -> None:
    """PV-45: a 404 names the method and the URL requested (its query left out) and says
    what a wrong base URL usually is; provider_message stays the provider's own."""
    transport = MockTransport.answering(MockResponse(404, b'{"detail":"Not Found"}'))
    error = await _fail(make(transport))
    assert isinstance(error, NotFoundError)
    assert f"(POST {url}; {hint})" in str(error)
    assert error.provider_message == '{"detail":"Not Found"}'


@pytest.mark.parametrize(
    "make",
    [
        lambda t: OpenAIChatClient(
            "gpt-4o-mini", api_key="", base_url="https://api.openai.com/v1", transport=t
        ),
        lambda t: AnthropicChatClient(
            "claude-x", api_key="", base_url="https://api.anthropic.com", transport=t
        ),
        lambda t: AzureOpenAIChatClient(
            "dep", endpoint="https://me.openai.azure.com", api_version="v", transport=t
        ),
    ],
)
async def test_a_hosted_endpoint_without_a_key_fails_before_sending(
    make: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PV-46: no key for a hosted service is an AuthenticationError naming the host and
    the variable, and nothing is sent; a local server without a key is sent to."""
    for variable in (
        "AZURE_OPENAI_API_KEY",
        "AZURE_OPENAI_AD_TOKEN",
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
    ):
        monkeypatch.delenv(variable, raising=False)
    transport = MockTransport.answering(MockResponse(500, b"never"))
    client = make(transport)
    error = await _fail(client)
    assert isinstance(error, AuthenticationError)
    assert f"needs an API key: pass api_key= or set {client.api_key_env}" in str(error)
    assert transport.requests == []
    local = OpenAIChatClient(
        "m",
        api_key="",
        base_url="http://127.0.0.1:1/v1",
        transport=MockTransport.answering(),
    )
    await _fail(local)
    assert len(local.transport.requests) == 1  # type: ignore[attr-defined]


def test_aiohttp_internal_codes_do_not_read_like_statuses() -> None:
    """PV-47: aiohttp's 'TransferEncodingError: 400' loses its internal code, keeps its
    words."""
    import aiohttp
    from aiohttp.http_exceptions import TransferEncodingError
    from minagent_http import transport_error

    cut = aiohttp.ClientPayloadError(
        "Response payload is not completed",
        TransferEncodingError("Not enough data to satisfy transfer length header."),
    )
    error = transport_error(cut)
    assert error.kind == "network"
    assert "400" not in error.detail
    assert error.detail == (
        "ClientPayloadError: Response payload is not completed: "
        "TransferEncodingError: Not enough data to satisfy transfer length header."
    )
