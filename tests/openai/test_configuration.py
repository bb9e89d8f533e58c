"""Client configuration: Azure, query strings, proxies, organization/project, request
ids, loops.

spec/providers.md OA-20, OA-29 .. OA-32, PV-37 (issue 20 items 1-3 and 6, issue 13 item
8).
"""

from __future__ import annotations

import asyncio
import gc
import socket
import warnings
from typing import Any

import pytest
from minagent_openai import AzureOpenAIChatClient, OpenAIChatClient

from minagent import Message, get_client
from tests._support.modes import get_response

from ._fake_server import FakeOpenAI, raw, replay, transcript


async def _ask(client: OpenAIChatClient, stream: bool) -> Any:
    return await get_response(client, [Message("user", ["Hi"])], stream=stream)


def _dead_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


# -- query strings (OA-30) ---------------------------------------------------------------------


async def test_default_query_and_a_base_url_query_are_both_sent(stream: bool) -> None:
    """OA-30: the base URL's query is kept; default_query is added and wins for a shared
    name."""
    async with FakeOpenAI() as server:
        server.script_text("ok")
        url = f"{server.base_url}?tenant=a&api-version=old"
        async with OpenAIChatClient(
            "m", base_url=url, default_query={"api-version": "new", "x": "1"}
        ) as client:
            response = await _ask(client, stream)
        assert response.text == "ok"
        assert server.queries == [[("tenant", "a"), ("api-version", "new"), ("x", "1")]]
        assert client.base_url == url


# -- organization, project, user agent (OA-20) ---------------------------------------------------


async def test_organization_and_project_from_arguments_and_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """OA-20 (issue 20 item 6): OpenAI-Organization / OpenAI-Project from args or
    env."""
    monkeypatch.setenv("OPENAI_ORG_ID", "org-env")
    monkeypatch.setenv("OPENAI_PROJECT_ID", "proj-env")
    async with FakeOpenAI() as server:
        server.script_text("a")
        server.script_text("b")
        server.script_text("c")
        async with server.make_client() as client:
            await _ask(client, False)
        async with server.make_client(
            organization="org-arg", project="proj-arg"
        ) as client:
            await _ask(client, False)
        monkeypatch.delenv("OPENAI_ORG_ID")
        monkeypatch.delenv("OPENAI_PROJECT_ID")
        async with server.make_client() as client:
            await _ask(client, False)
        first, second, third = server.headers
    assert (first["OpenAI-Organization"], first["OpenAI-Project"]) == (
        "org-env",
        "proj-env",
    )
    assert (second["OpenAI-Organization"], second["OpenAI-Project"]) == (
        "org-arg",
        "proj-arg",
    )
    assert "OpenAI-Organization" not in third
    assert "OpenAI-Project" not in third
    assert third["User-Agent"].startswith("minagent-openai/")


# -- request id (OA-29) --------------------------------------------------------------------------


async def test_the_request_id_is_kept_on_the_response(stream: bool) -> None:
    """OA-29 (issue 20 item 6): x-request-id in additional_properties['request_id']."""
    async with FakeOpenAI() as server:
        server.add(replay(transcript("plain_text.sse"), x_request_id="req_abc"))
        async with server.make_client() as client:
            response = await _ask(client, stream)
    assert response.additional_properties["request_id"] == "req_abc"
    assert response.response_id != "req_abc"


# -- proxies (OA-31) -----------------------------------------------------------------------------


async def test_http_proxy_from_the_environment_is_used(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """OA-31 (issue 20 item 2): HTTP_PROXY routes the request through the proxy."""
    async with FakeOpenAI() as proxy:
        proxy.script_text("via proxy")
        monkeypatch.setenv("HTTP_PROXY", proxy.base_url.removesuffix("/v1"))
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        async with OpenAIChatClient(
            "m", base_url="http://api.openai.invalid/v1", max_retries=0
        ) as client:
            response = await _ask(client, False)
        assert response.text == "via proxy"
        assert proxy.targets == ["http://api.openai.invalid/v1/chat/completions"]


@pytest.mark.parametrize("how", ["no_proxy", "trust_env_false"])
async def test_no_proxy_and_trust_env_false_go_direct(
    how: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """OA-31: NO_PROXY exempts a host; trust_env=False ignores the environment."""
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{_dead_port()}")
    kwargs: dict[str, Any] = {}
    if how == "no_proxy":
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    else:
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        kwargs["trust_env"] = False
    async with FakeOpenAI() as server:
        server.script_text("direct")
        async with server.make_client(max_retries=0, **kwargs) as client:
            response = await _ask(client, False)
    assert response.text == "direct"


# -- Azure (OA-32) -------------------------------------------------------------------------------


async def test_azure_deployment_url_api_version_and_api_key(
    stream: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """OA-32 (issue 20 item 3): deployment URL, api-version query, api-key header, env
    defaults."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-not-for-azure")
    async with FakeOpenAI() as server:
        server.script_text("azure")
        endpoint = server.base_url.removesuffix("/v1")
        monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", endpoint)
        monkeypatch.setenv("AZURE_OPENAI_API_KEY", "azure-key-0123456789")
        monkeypatch.setenv("OPENAI_API_VERSION", "2024-10-21")
        async with AzureOpenAIChatClient("gpt4o-prod") as client:
            response = await _ask(client, stream)
            assert "azure-key" not in repr(client)
        assert response.text == "azure"
        headers = server.headers[0]
        assert server.paths == ["/openai/deployments/gpt4o-prod/chat/completions"]
        assert server.queries == [[("api-version", "2024-10-21")]]
        assert headers["api-key"] == "azure-key-0123456789"
        assert "Authorization" not in headers
        assert server.requests()[0]["model"] == "gpt4o-prod"


async def test_azure_v1_base_url_and_ad_token() -> None:
    """OA-32: base_url= replaces the deployment URL (api_version optional); ad_token is
    Bearer."""
    async with FakeOpenAI() as server:
        server.script_text("v1")
        async with AzureOpenAIChatClient(
            "dep", base_url=server.base_url, ad_token="entra-token-123"
        ) as client:
            await _ask(client, False)
        assert server.queries == [[]]
        assert server.headers[0]["Authorization"] == "Bearer entra-token-123"
        assert "api-key" not in server.headers[0]


async def test_azure_ad_token_from_the_environment_wins_over_the_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """OA-32: AZURE_OPENAI_AD_TOKEN is the default ad_token, and a token wins over a
    key."""
    monkeypatch.setenv("AZURE_OPENAI_AD_TOKEN", "entra-env-0123456789")
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", "azure-key-0123456789")
    async with FakeOpenAI() as server:
        server.script_text("ok")
        async with AzureOpenAIChatClient("dep", base_url=server.base_url) as client:
            await _ask(client, False)
        assert server.headers[0]["Authorization"] == "Bearer entra-env-0123456789"
        assert "api-key" not in server.headers[0]


def test_azure_configuration_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    """OA-32: a missing endpoint or version names the argument and the variable."""
    for name in (
        "AZURE_OPENAI_ENDPOINT",
        "OPENAI_API_VERSION",
        "AZURE_OPENAI_API_KEY",
        "AZURE_OPENAI_AD_TOKEN",
    ):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ValueError, match="AZURE_OPENAI_ENDPOINT"):
        AzureOpenAIChatClient("dep", api_version="2024-10-21")
    with pytest.raises(ValueError, match="OPENAI_API_VERSION"):
        AzureOpenAIChatClient("dep", endpoint="https://x.openai.azure.com")
    with pytest.raises(ValueError, match="deployment"):
        AzureOpenAIChatClient("", endpoint="https://x", api_version="v")
    client = AzureOpenAIChatClient(
        "dep", endpoint="https://x.openai.azure.com/", api_version="2024-10-21"
    )
    assert client.base_url == "https://x.openai.azure.com/openai/deployments/dep"
    assert client.default_query == {"api-version": "2024-10-21"}


async def test_azure_401_names_the_azure_variable() -> None:
    """OA-32: without a key, a 401 says which variable to set."""
    async with FakeOpenAI() as server:
        server.add(raw(401, '{"error": {"message": "no key"}}'))
        async with AzureOpenAIChatClient(
            "d", base_url=server.base_url, api_key=""
        ) as client:
            with pytest.raises(Exception, match="AZURE_OPENAI_API_KEY"):
                await _ask(client, False)


# -- event loops (PV-37) -------------------------------------------------------------------------


def test_a_client_outlives_an_event_loop() -> None:
    """PV-37 (issue 13 item 8): one client under two asyncio.run() calls; no unclosed
    session."""

    async def main() -> None:
        async with FakeOpenAI() as server:
            server.script_text("one")
            server.script_text("two")
            client = server.make_client()

            def run_once() -> str:
                async def call() -> str:
                    return (await client.get_response([Message("user", ["Hi"])])).text

                return asyncio.run(call())

            # the server runs in this loop; each client call runs in its own loop in a
            # thread
            first = await asyncio.to_thread(run_once)
            assert client.session is not None
            assert client.session.closed  # closed when the first loop shut down
            second = await asyncio.to_thread(run_once)
            assert (first, second) == ("one", "two")
            assert client.session.closed

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        asyncio.run(main())
        gc.collect()
    assert [
        w
        for w in caught
        if "Unclosed" in str(w.message) or "unclosed" in str(w.message)
    ] == []


async def test_a_session_on_another_open_loop_is_a_clear_error() -> None:
    """PV-37: the session's loop is still open: a RuntimeError that says what to do."""
    async with FakeOpenAI() as server:
        server.script_text("one")
        client = server.make_client()
        other = asyncio.new_event_loop()
        try:
            other_answer = await asyncio.to_thread(
                other.run_until_complete, client.get_response([Message("user", ["Hi"])])
            )
            assert other_answer.text == "one"
            with pytest.raises(RuntimeError, match=r"aclose\(\)"):
                await client.get_response([Message("user", ["Hi"])])
            await asyncio.to_thread(other.run_until_complete, client.aclose())
        finally:
            other.close()
        server.script_text("two")
        async with client:
            assert (await client.get_response([Message("user", ["Hi"])])).text == "two"


def test_the_azure_entry_point() -> None:
    """OA-32, PV-22: get_client('azure_openai') builds the Azure client."""
    client = get_client(
        "azure_openai",
        deployment="d",
        endpoint="https://x",
        api_version="v",
        api_key="k",
    )
    assert isinstance(client, AzureOpenAIChatClient)


def test_a_loop_closed_without_shutting_down_its_generators() -> None:
    """PV-37: run_until_complete + close() (no shutdown_asyncgens): the next loop still
    works."""

    async def main() -> None:
        async with FakeOpenAI() as server:
            server.script_text("one")
            server.script_text("two")
            client = server.make_client()

            def bare_loop() -> str:
                loop = asyncio.new_event_loop()
                try:
                    return loop.run_until_complete(
                        client.get_response([Message("user", ["Hi"])])
                    ).text
                finally:
                    loop.close()

            def run_once() -> str:
                async def call() -> str:
                    async with client:
                        return (
                            await client.get_response([Message("user", ["Hi"])])
                        ).text

                return asyncio.run(call())

            first = await asyncio.to_thread(bare_loop)
            second = await asyncio.to_thread(run_once)
            assert (first, second) == ("one", "two")

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        asyncio.run(main())
        gc.collect()
    messages = [str(w.message) for w in caught]
    assert [
        m
        for m in messages
        if "Unclosed client session" in m or "Unclosed connector" in m
    ] == []
    assert [m for m in messages if "never awaited" in m] == []
    # The dead loop's sockets cannot be closed any more (documented in PV-37); only they
    # may warn.
    assert all(
        m.startswith(("unclosed transport", "unclosed <socket"))
        for m in messages
        if "nclosed" in m
    ), messages
