"""Redact first, then cut: a key cut by the 500-character bound of a plain-text error
body never leaks, with any of the four HTTP clients, in either mode (PV-24, PV-48)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aiohttp import web

from minagent import Message, ProviderError
from minagent.providers.secrets import redact_data

from ..anthropic._fake_server import FakeAnthropic
from ..ollama._fake_server import FakeOllama
from ..openai._fake_server import FakeOpenAI
from ..openai_responses._fake_server import FakeResponses

KEY = "sk-proj-A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8S9t"  # 47 characters
SERVERS = {
    "openai": FakeOpenAI,
    "responses": FakeResponses,
    "anthropic": FakeAnthropic,
    "ollama": FakeOllama,
}


def plain_error(before: int) -> Any:
    """HTTP 400 with a plain-text body whose key starts after ``before`` characters."""

    async def handler(
        server: Any, request: web.Request, _body: dict[str, Any]
    ) -> web.StreamResponse:
        text = "x" * (before - 1) + " " + KEY + " and more text after the key"
        return web.Response(status=400, text=text, content_type="text/plain")

    return handler


def texts_of(error: BaseException) -> list[str]:
    return [
        str(error),
        repr(error),
        *map(str, error.args),
        *(str(v) for v in vars(error).values()),
    ]


def leaked(texts: list[str]) -> list[str]:
    """Every piece of the key of 8 characters or more found in ``texts``."""
    pieces = {KEY[i : i + 8] for i in range(len(KEY) - 7)}
    return sorted({p for p in pieces for t in texts if p in t})


async def ask(client: Any, stream: bool) -> None:
    if stream:
        async for _ in client.get_response([Message("user", ["hi"])], stream=True):
            pass
    else:
        await client.get_response([Message("user", ["hi"])])


@pytest.mark.parametrize("provider", sorted(SERVERS))
@pytest.mark.parametrize("before", [456, 470, 492, 499])
async def test_a_key_cut_by_the_bound_of_an_error_body_never_leaks(
    provider: str, stream: bool, before: int
) -> None:
    """PV-48, PV-24: the error body is redacted before the codec cuts it to 500
    characters, so the part of the key before the cut is not in the error either; the
    text around it is."""
    async with SERVERS[provider]() as server:
        server.add(plain_error(before))
        async with server.make_client(api_key=KEY, max_retries=0) as client:
            with pytest.raises(ProviderError) as info:
                await ask(client, stream)
    assert info.value.status == 400
    assert leaked(texts_of(info.value)) == []
    assert "x" * 100 in str(info.value)


def test_redact_data_hides_what_is_nested_too_deep() -> None:
    """PV-24: the key never appears, also in data nested beyond the walk: that part is
    replaced whole."""
    value: Any = "sk-secret-value-123"
    for _ in range(150):
        value = [value]
    text = json.dumps(redact_data(value, ("sk-secret-value-123",)))
    assert "sk-secret-value-123" not in text
    assert "[nested too deep]" in text
