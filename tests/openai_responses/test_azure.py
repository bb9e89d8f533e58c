"""The Responses API of Azure OpenAI (spec/openai-responses.md, OR-23), over the
loopback server and side by side with the official SDK's ``AsyncAzureOpenAI``."""

from __future__ import annotations

from typing import Any

import openai
import pytest
from minagent_openai import AzureOpenAIResponsesClient

from minagent import Message, get_client
from tests._support.modes import get_response

from ._fake_server import FakeResponses

AZURE_VARS = (
    "AZURE_OPENAI_ENDPOINT",
    "AZURE_OPENAI_API_KEY",
    "OPENAI_API_VERSION",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
)


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in AZURE_VARS:
        monkeypatch.delenv(name, raising=False)


async def _ask(client: AzureOpenAIResponsesClient, stream: bool) -> str:
    messages = [Message("user", ["Hi"])]
    async with client:
        return str((await get_response(client, messages, stream=stream)).text)


async def test_v1_api(stream: bool) -> None:
    """OR-23: without api_version, POST {endpoint}/openai/v1/responses with the api-key
    header; the deployment is the body's model."""
    async with FakeResponses() as server:
        server.script_text("Hello from Azure.")
        client = AzureOpenAIResponsesClient(
            "my-deployment", endpoint=server.root + "/", api_key="az-key"
        )
        assert await _ask(client, stream) == "Hello from Azure."
        assert server.paths == ["/openai/v1/responses"]
        assert server.queries == [{}]
        headers = server.headers[0]
        assert headers["api-key"] == "az-key"
        assert "Authorization" not in headers
        assert server.requests()[0]["model"] == "my-deployment"


async def test_versioned_api_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """OR-23: endpoint, key and version from the environment; api-version in the
    query."""
    async with FakeResponses() as server:
        monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", server.root)
        monkeypatch.setenv("AZURE_OPENAI_API_KEY", "env-key")
        monkeypatch.setenv("OPENAI_API_VERSION", "2025-04-01-preview")
        server.script_text("ok")
        assert await _ask(AzureOpenAIResponsesClient("dep"), False) == "ok"
        assert server.paths == ["/openai/responses"]
        assert server.queries == [{"api-version": "2025-04-01-preview"}]
        assert server.headers[0]["api-key"] == "env-key"


async def test_entra_token_and_base_url() -> None:
    """OR-23: ad_token is sent as a bearer token; base_url replaces the computed URL."""
    async with FakeResponses() as server:
        server.script_text("ok")
        client = AzureOpenAIResponsesClient(
            "dep", base_url=f"{server.root}/openai/v1", ad_token="entra-token"
        )
        assert await _ask(client, False) == "ok"
        assert server.paths == ["/openai/v1/responses"]
        assert server.headers[0]["Authorization"] == "Bearer entra-token"
        assert "api-key" not in server.headers[0]


def test_missing_endpoint_and_entry_point() -> None:
    """OR-23: no endpoint is a ValueError naming the variable; the entry point builds
    the client."""
    with pytest.raises(ValueError, match="AZURE_OPENAI_ENDPOINT"):
        AzureOpenAIResponsesClient("dep", api_key="k")
    key = "azure-secret-key-123"
    client = get_client(
        "azure_openai_responses",
        deployment="dep",
        endpoint="https://x.openai.azure.com",
        api_key=key,
    )
    assert isinstance(client, AzureOpenAIResponsesClient)
    assert client.base_url == "https://x.openai.azure.com/openai/v1"
    assert key not in repr(client)
    assert "api_key='***'" in repr(client)


async def test_same_request_as_the_azure_sdk() -> None:
    """OR-23, OR-22: the same call through our client and AsyncAzureOpenAI reaches the
    same path, query, key header and body."""
    version = "2025-04-01-preview"
    async with FakeResponses() as server:
        server.script_text("ok")
        server.script_text("ok")
        ours = AzureOpenAIResponsesClient(
            "dep", endpoint=server.root, api_key="az-key", api_version=version
        )
        async with ours:
            await ours.get_response(
                [Message("user", ["Hi"])], options={"temperature": 0.5}
            )
        sdk = openai.AsyncAzureOpenAI(
            azure_endpoint=server.root,
            api_key="az-key",
            api_version=version,
            max_retries=0,
        )
        async with sdk:
            await sdk.responses.create(
                model="dep",
                input=[
                    {
                        "type": "message",
                        "role": "user",
                        "content": [{"type": "input_text", "text": "Hi"}],
                    }
                ],
                temperature=0.5,
            )
        first, second = server.requests()
        assert first == second
        assert server.paths[0] == server.paths[1] == "/openai/responses"
        assert server.queries[0] == server.queries[1] == {"api-version": version}
        headers: list[dict[str, Any]] = server.headers
        assert headers[0]["api-key"] == headers[1]["api-key"] == "az-key"
