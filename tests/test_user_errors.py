"""Errors that say where and what: one test per message a new user met (issue 28, item
4).

PV-45 .. PV-47 (HTTP errors, missing keys, transport codes), MCP-9 (a server that
exits), SO-11 (an answer that is not JSON), PK-14 (two copies of minagent), MW-2 (a
nested middleware list), PK-15 (no rule IDs in messages meant for users).
"""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from minagent_anthropic import AnthropicChatClient
from minagent_openai import AzureOpenAIChatClient, OpenAIChatClient

from minagent import (
    Agent,
    AuthenticationError,
    ContentError,
    Message,
    MiddlewareException,
    NotFoundError,
)
from minagent.testing import MockResponse, MockTransport, ScriptedChatClient

ROOT = Path(__file__).resolve().parent.parent


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


async def test_an_mcp_server_that_exits_shows_its_last_stderr_lines(
    tmp_path: Path,
) -> None:
    """MCP-9: a server that exits puts its exit code and its last lines of stderr into
    the MCPConnectionError, whatever logging is configured."""
    from minagent import MCPConnectionError, MCPStdioTool

    missing = tmp_path / "no_such_server.py"
    tool = MCPStdioTool("calc", sys.executable, args=[str(missing)])
    with pytest.raises(MCPConnectionError) as info:
        async with tool:
            pass
    text = str(info.value)
    assert "MCP server 'calc' exited (exit code 2); its last lines on stderr:" in text
    assert "can't open file" in text
    assert str(missing) in text


@pytest.mark.parametrize(
    ("answer", "shown"),
    [
        (
            "Sure! Here is the city you asked for: Oslo.",
            "; the answer begins 'Sure! Here is the city you asked for: Oslo.'",
        ),
        ("x" * 200, "; the answer begins '" + "x" * 80 + "...'"),
        ("   ", "; the answer is empty"),
    ],
)
def test_an_answer_that_is_not_json_shows_how_it_begins(
    answer: str, shown: str
) -> None:
    """SO-11: the decode error shows the start of what the model said (80
    characters)."""
    from dataclasses import dataclass

    from minagent.structured.format import ResponseFormat, StructuredOutputDecodeError

    @dataclass
    class City:
        name: str

    with pytest.raises(StructuredOutputDecodeError) as info:
        ResponseFormat.of(City).parse(answer)
    assert str(info.value).startswith("the answer is not valid JSON: ")
    assert str(info.value).endswith(shown)
    assert info.value.text == answer


def test_two_copies_of_minagent_are_named(tmp_path: Path) -> None:
    """PK-14: a Message of another copy of minagent is named as such, with both
    packages."""
    vendor = tmp_path / "myapp" / "_vendor"
    shutil.copytree(
        ROOT / "minagent",
        vendor / "minagent",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    (tmp_path / "myapp" / "__init__.py").write_text("")
    (vendor / "__init__.py").write_text("")
    code = (
        "import asyncio, minagent\n"
        "from minagent.testing import ScriptedChatClient\n"
        "from myapp._vendor import minagent as vendored\n"
        "client = ScriptedChatClient(['hi'])\n"
        "try:\n"
        "    asyncio.run(minagent.Agent(client).run([vendored.Message('user', ['Hi'])]))\n"
        "except minagent.ContentError as exc:\n"
        "    print(exc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == (
        "messages[0]: expected str, Content or Message, got Message of another copy of minagent "
        "(myapp._vendor.minagent, not minagent: import every minagent name from one)"
    )


def test_a_nested_middleware_list_says_so() -> None:
    """MW-2: a list inside the middleware list is named as one, with how to pass its
    items."""

    async def layer(context: Any, call_next: Any) -> None:
        await call_next()

    from minagent import chat_middleware

    inner = [chat_middleware(layer)]
    with pytest.raises(MiddlewareException) as info:
        Agent(ScriptedChatClient(["hi"]), middleware=[inner])
    assert (
        "got list; it is a list inside the middleware list: pass its items, middleware=[*a, *b]"
        in str(info.value)
    )
    with pytest.raises(ContentError, match="got int"):
        Agent(ScriptedChatClient(["hi"])).run([3])  # type: ignore[list-item]


RULE_ID = re.compile(
    r"\b(?:AG|AN|BR|CF|DU|EX|HI|HK|LP|MCP|ML|MW|OA|OB|OL|OR|PK|PV|RD|SC|SE|SO|ST|TH|TL|TY|UP)-\d+\b"
)


def _docstring_nodes(tree: ast.AST) -> set[int]:
    found: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list):
            # module, class and function docstrings, and attribute docstrings
            for statement in body:
                if isinstance(statement, ast.Expr) and isinstance(
                    statement.value, ast.Constant
                ):
                    found.add(id(statement.value))
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Attribute) and t.attr == "__doc__" for t in node.targets
        ):
            found |= {id(sub) for sub in ast.walk(node.value)}
    return found


def test_no_rule_ids_in_messages_meant_for_users() -> None:
    """PK-15: no string of minagent/ or of a plugin that is not a docstring cites a rule
    ID (the conformance kit, which reports rules to plugin authors, aside)."""
    offenders = []
    files = [
        p for p in (ROOT / "minagent").rglob("*.py") if "conformance" not in p.parts
    ]
    files += list((ROOT / "plugins").rglob("minagent_*/*.py"))
    assert len(files) > 80
    for path in files:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skip = _docstring_nodes(tree)
        for node in ast.walk(tree):
            text = (
                node.value
                if isinstance(node, ast.Constant) and id(node) not in skip
                else None
            )
            if isinstance(text, str) and RULE_ID.search(text):
                offenders.append(
                    f"{path.relative_to(ROOT)}:{node.lineno}: {text[:80]!r}"
                )
    assert offenders == []
    spec_prefixes = {
        m.group(1) for m in re.finditer(r"\*\*([A-Z]+)-\d+\*\*", _spec_text())
    }
    assert spec_prefixes <= set(
        RULE_ID.pattern.split("(?:")[1].split(")")[0].split("|")
    )


def _spec_text() -> str:
    return "".join(p.read_text(encoding="utf-8") for p in (ROOT / "spec").glob("*.md"))
