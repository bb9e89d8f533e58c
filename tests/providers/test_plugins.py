"""Every chat plugin is a connection plus a codec over the one client (spec/providers.md
PV-38, PV-1).

Each plugin's client runs here over the in-memory transport: what it sends (URL,
headers, body) is its connection's and its codec's, and what comes back is decoded by
its codec, in both modes.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest
from minagent_anthropic import AnthropicChatClient
from minagent_ollama import OllamaChatClient
from minagent_openai import (
    AzureOpenAIChatClient,
    AzureOpenAIResponsesClient,
    OpenAIChatClient,
    OpenAIResponsesClient,
)

from minagent import Message
from minagent.providers import HTTPChatClient
from minagent.testing import MockResponse, MockTransport

PLUGINS = Path(__file__).resolve().parents[2] / "plugins"

SSE = {"content-type": "text/event-stream"}
CHAT = (
    b'data: {"id": "c1", "model": "m", "choices": [{"index": 0, "delta": {"content": "Hi"}}]}\n\n'
    b'data: {"id": "c1", "model": "m", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}\n\n'
    b"data: [DONE]\n\n"
)
CHAT_BODY = {
    "id": "c1",
    "model": "m",
    "choices": [{"index": 0, "message": {"content": "Hi"}, "finish_reason": "stop"}],
}
RESPONSE = {
    "id": "resp_1",
    "model": "m",
    "status": "completed",
    "output": [
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Hi"}],
        }
    ],
}
RESPONSES = (
    f"event: response.output_text.delta\ndata: {json.dumps({'type': 'response.output_text.delta', 'delta': 'Hi'})}\n\n"
    f"event: response.completed\ndata: {json.dumps({'type': 'response.completed', 'response': RESPONSE})}\n\n"
).encode()
MESSAGE = {
    "type": "message",
    "id": "msg_1",
    "model": "m",
    "content": [{"type": "text", "text": "Hi"}],
}
MESSAGES = (
    b'event: message_start\ndata: {"type": "message_start", '
    b'"message": {"id": "msg_1", "model": "m", "content": []}}\n\n'
    b'event: content_block_start\ndata: {"type": "content_block_start", "index": 0, '
    b'"content_block": {"type": "text", "text": ""}}\n\n'
    b'event: content_block_delta\ndata: {"type": "content_block_delta", "index": 0, '
    b'"delta": {"type": "text_delta", "text": "Hi"}}\n\n'
    b'event: message_stop\ndata: {"type": "message_stop"}\n\n'
)
OLLAMA = {
    "model": "m",
    "message": {"role": "assistant", "content": "Hi"},
    "done": True,
    "done_reason": "stop",
}

# client, constructor arguments, URL sent, the credentials' header, a whole answer, a
# stream
CASES: list[
    tuple[type[HTTPChatClient], dict[str, Any], str, tuple[str, str], Any, MockResponse]
] = [
    (
        OpenAIChatClient,
        {"model": "m", "base_url": "https://h/v1"},
        "https://h/v1/chat/completions",
        ("authorization", "Bearer sk-plugin-key"),
        CHAT_BODY,
        MockResponse(200, CHAT, headers=SSE),
    ),
    (
        AzureOpenAIChatClient,
        {"deployment": "dep", "endpoint": "https://az", "api_version": "2024-10-21"},
        "https://az/openai/deployments/dep/chat/completions?api-version=2024-10-21",
        ("api-key", "sk-plugin-key"),
        CHAT_BODY,
        MockResponse(200, CHAT, headers=SSE),
    ),
    (
        OpenAIResponsesClient,
        {"model": "m", "base_url": "https://h/v1"},
        "https://h/v1/responses",
        ("authorization", "Bearer sk-plugin-key"),
        RESPONSE,
        MockResponse(200, RESPONSES, headers=SSE),
    ),
    (
        AzureOpenAIResponsesClient,
        {"deployment": "dep", "endpoint": "https://az"},
        "https://az/openai/v1/responses",
        ("api-key", "sk-plugin-key"),
        RESPONSE,
        MockResponse(200, RESPONSES, headers=SSE),
    ),
    (
        AnthropicChatClient,
        {"model": "m", "base_url": "https://h"},
        "https://h/v1/messages",
        ("x-api-key", "sk-plugin-key"),
        MESSAGE,
        MockResponse(200, MESSAGES, headers=SSE),
    ),
    (
        OllamaChatClient,
        {"model": "m", "base_url": "http://h:11434"},
        "http://h:11434/api/chat",
        ("authorization", "Bearer sk-plugin-key"),
        OLLAMA,
        MockResponse(
            200,
            json.dumps(OLLAMA).encode() + b"\n",
            headers={"content-type": "application/x-ndjson"},
        ),
    ),
]


@pytest.mark.parametrize(
    ("cls", "kwargs", "url", "credentials", "whole", "stream"), CASES, ids=lambda c: ""
)
async def test_every_plugin_over_the_in_memory_transport(
    cls: type[HTTPChatClient],
    kwargs: dict[str, Any],
    url: str,
    credentials: tuple[str, str],
    whole: Any,
    stream: MockResponse,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """PV-38: each plugin's client is its connection (URL, credentials) and its codec
    over HTTPChatClient, and sends through any Transport given as ``transport=`` (never
    with ``session=``); both modes decode through the plugin's codec."""
    monkeypatch.delenv("OPENAI_API_VERSION", raising=False)
    transport = MockTransport.answering(MockResponse.json(whole), stream)
    client = cls(**kwargs, api_key="sk-plugin-key", transport=transport)
    assert isinstance(client, HTTPChatClient)
    async with client:
        response = await client.get_response([Message("user", ["Hello"])])
        streamed = client.get_response([Message("user", ["Hello"])], stream=True)
        texts = [u.text async for u in streamed]
    assert response.text == "Hi"
    assert "".join(texts) == "Hi"
    assert [r.url for r in transport.requests] == [url, url]
    for request in transport.requests:
        headers = {k.lower(): v for k, v in request.headers.items()}
        assert headers[credentials[0]] == credentials[1]
        assert json.loads(request.body)
    assert [(r.released, r.closed) for r in transport.responses] == [
        (True, False),
        (True, False),
    ]
    assert transport.aclosed == 1
    with pytest.raises(ValueError, match="not both"):
        cls(**kwargs, api_key="k", transport=transport, session=object())  # type: ignore[arg-type]


def test_no_provider_module_imports_aiohttp() -> None:
    """PV-1, PV-39, PV-41: no module of a chat provider plugin imports aiohttp, even
    lazily (only for type checkers, under ``TYPE_CHECKING``, the type of ``session=``):
    minagent_http is the only one that does; the MCP client sends through it too."""
    modules = [
        *PLUGINS.glob("openai/minagent_openai/*.py"),
        *PLUGINS.glob("anthropic/minagent_anthropic/*.py"),
    ]
    modules += [
        *PLUGINS.glob("ollama/minagent_ollama/*.py"),
        PLUGINS / "mcp-http/minagent_mcp_http/_client.py",
    ]
    assert len(modules) > 20
    for path in modules:
        imported: set[str] = set()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for block in [
            n
            for n in ast.walk(tree)
            if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING"
        ]:
            block.body = []  # never runs
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                imported |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                imported.add(node.module.split(".")[0])
        assert "aiohttp" not in imported, path
    http = (PLUGINS / "http/minagent_http/_aiohttp.py").read_text(encoding="utf-8")
    assert "import aiohttp" in http
