"""A2A's errors: failed runs, JSON-RPC and A2A error codes, HTTP-level refusals, and
any body or params getting a protocol answer (spec/hosting.md HS-50, HS-53 .. HS-57,
HS-64, HS-67, HS-69)."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minagent import Agent
from minagent.hosting import HostingApp
from minagent.testing import ScriptedChatClient
from tests.hosting._a2a import (
    asgi,
    rpc,
    text_message,
)

# --------------------------------------------------------------------------------------
# errors


async def test_a_failed_run_tells_no_secret(caplog: pytest.LogCaptureFixture) -> None:
    """HS-57, HS-69, HS-143: a run that raises fails its task with a fixed text; the
    exception's text reaches no client, goes to the log, and the session is not
    saved."""
    secret = "sk-SECRET-1234"
    client = ScriptedChatClient([RuntimeError(f"upstream said {secret}")])
    app = HostingApp([Agent(client, name="greeter")])
    with caplog.at_level(logging.ERROR, logger="minagent.hosting"):
        answer = await rpc(app, "greeter", "message/send", text_message("hi"))
    result = answer["result"]
    assert result["status"]["state"] == "failed"
    assert result["status"]["message"]["parts"] == [
        {"kind": "text", "text": "The agent's run failed."}
    ]
    assert secret not in json.dumps(answer)
    assert secret in caplog.text
    assert await app.conversations.get("greeter", result["contextId"]) is None


async def test_an_unexpected_error_is_an_internal_error(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """HS-69: an exception while answering a method is -32603 with no exception text;
    the exception goes to the log."""
    from minagent.hosting.a2a import A2AHost

    def broken(*args: Any) -> Any:
        raise RuntimeError("sk-SECRET-5678")

    monkeypatch.setattr(A2AHost, "_task", broken)
    app = HostingApp([Agent(ScriptedChatClient(), name="greeter")])
    with caplog.at_level(logging.ERROR, logger="minagent.hosting"):
        answer = await rpc(app, "greeter", "tasks/get", {"id": "t"})
    assert answer["error"] == {"code": -32603, "message": "internal error"}
    assert "sk-SECRET-5678" in caplog.text


async def test_json_rpc_errors() -> None:
    """HS-54, HS-50, HS-67, HS-73: malformed envelopes, unknown methods, a version
    header that does not match the method, and the parts not supported each get their
    JSON-RPC or A2A error code."""
    app = HostingApp([Agent(ScriptedChatClient(), name="greeter")])

    async def post(body: bytes, headers: Any = None) -> dict[str, Any]:
        status, data, _ = await asgi(app, "POST", "/a2a/greeter", body, headers)
        assert status == 200
        answer: dict[str, Any] = json.loads(data)
        return answer

    parse = await post(b"{not json")
    assert (parse["id"], parse["error"]["code"]) == (None, -32700)
    assert (await post(b"[" * 10_000))["error"]["code"] == -32700
    for body in (b"[]", b"3", b'{"jsonrpc": "2.0", "method": "tasks/get"}'):
        assert (await post(body))["error"]["code"] == -32600
    envelope = {"jsonrpc": "2.0", "id": "x", "method": "tasks/get", "params": {}}
    no_method = await post(json.dumps({**envelope, "method": 5}).encode())
    assert (no_method["id"], no_method["error"]["code"]) == ("x", -32600)
    wrong = await post(json.dumps({**envelope, "jsonrpc": "1.0"}).encode())
    assert (wrong["id"], wrong["error"]["code"]) == ("x", -32600)
    assert (await post(json.dumps({**envelope, "id": True}).encode()))["error"][
        "code"
    ] == -32600
    assert (await post(json.dumps({**envelope, "params": [1]}).encode()))["error"][
        "code"
    ] == -32602
    codes = {
        "SendMessages": -32601,
        "tasks/list": -32601,
        "tasks/pushNotificationConfig/set": -32003,
        "agent/getAuthenticatedExtendedCard": -32007,
        # HS-73: A2A 1.0's methods that are refused
        "ListTasks": -32004,
        "CreateTaskPushNotificationConfig": -32003,
        "ListTaskPushNotificationConfigs": -32003,
        "GetExtendedAgentCard": -32007,
    }
    for method, code in codes.items():
        assert (await rpc(app, "greeter", method, {}))["error"]["code"] == code
    tenant = await rpc(app, "greeter", "GetTask", {"id": "t", "tenant": "acme"})
    assert tenant["error"]["code"] == -32004
    v1_as_03 = await rpc(
        app, "greeter", "GetTask", {"id": "t"}, headers=[(b"a2a-version", b"0.3")]
    )
    assert v1_as_03["error"]["code"] == -32009
    v1 = await rpc(
        app, "greeter", "tasks/get", {"id": "t"}, headers=[(b"a2a-version", b"1.0")]
    )
    assert v1["error"]["code"] == -32009
    assert "1.0" in v1["error"]["message"]
    file_part = text_message("hi")
    file_part["message"]["parts"] = [
        {"kind": "file", "file": {"uri": "https://example.test/a.png"}}
    ]
    data_part = text_message("hi")
    data_part["message"]["parts"] = [{"kind": "data", "data": {"approved": True}}]
    params_codes = [
        (file_part, -32005),
        (data_part, -32005),
        (
            {
                **text_message("hi"),
                "configuration": {"acceptedOutputModes": ["image/png"]},
            },
            -32005,
        ),
        (
            {
                **text_message("hi"),
                "configuration": {"pushNotificationConfig": {"url": "x"}},
            },
            -32003,
        ),
        ({**text_message("hi"), "configuration": {"blocking": "no"}}, -32602),
        ({**text_message("hi"), "configuration": {"historyLength": -1}}, -32602),
        (text_message("hi", role="agent"), -32602),
        (text_message("hi", messageId=""), -32602),
        (text_message("hi", parts=[]), -32602),
        (text_message("hi", parts=[{"kind": "text"}]), -32602),
        (text_message("hi", kind="task"), -32602),
        ({"message": "hi"}, -32602),
        ({**text_message("hi"), "configuration": ["blocking"]}, -32602),
        (
            {**text_message("hi"), "configuration": {"acceptedOutputModes": "text"}},
            -32602,
        ),
        (
            {**text_message("hi"), "configuration": {"acceptedOutputModes": [3]}},
            -32602,
        ),
    ]
    for params, code in params_codes:
        answer = await rpc(app, "greeter", "message/stream", params)
        assert answer["error"]["code"] == code, params
        assert answer["error"]["message"]
    client = app.agents["greeter"].client  # type: ignore[attr-defined]
    assert client.requests == []
    assert app.a2a.tasks == {}


async def test_http_level_errors() -> None:
    """HS-53: an unknown agent is a 404, another method than POST a 405, a body over
    the cap a 413, each with a JSON-RPC error body."""
    app = HostingApp([Agent(ScriptedChatClient(), name="greeter")], max_body=100)
    cases = [
        ("POST", "/a2a/nobody", b"{}", 404),
        ("GET", "/a2a/nobody/.well-known/agent-card.json", b"", 404),
        ("GET", "/a2a/greeter", b"", 405),
        ("POST", "/a2a/greeter/extra", b"{}", 404),
        ("POST", "/a2a/greeter", b"x" * 500, 413),
    ]
    for method, path, body, status in cases:
        got, data, _ = await asgi(app, method, path, body)
        answer = json.loads(data)
        assert (got, answer["id"], answer["error"]["code"]) == (status, None, -32600)
    status, data, _ = await asgi(app, "GET", "/.well-known/agent-card.json")
    assert status == 200
    assert json.loads(data)["url"] == "http://example.test:8000/a2a/greeter"


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(["jsonrpc", "id", "method", "params", "message", "x"]),
            inner,
            max_size=4,
        )
    ),
    max_leaves=12,
)


@settings(max_examples=150)
@given(body=st.binary(max_size=40) | json_values.map(lambda v: json.dumps(v).encode()))
def test_any_body_gets_a_json_rpc_answer(body: bytes) -> None:
    """HS-54: whatever the body, the endpoint answers HTTP 200 with a JSON-RPC error of
    a known code (or a result), and no run starts for a malformed request."""
    client = ScriptedChatClient()
    app = HostingApp([Agent(client, name="greeter")])
    status, data, _ = asyncio.run(asgi(app, "POST", "/a2a/greeter", body))
    answer = json.loads(data)
    assert status == 200
    assert answer["jsonrpc"] == "2.0"
    assert "result" in answer or answer["error"]["code"] in {
        -32700,
        -32600,
        -32601,
        -32602,
        -32001,
        -32003,
        -32004,
        -32005,
        -32007,
    }
    assert client.requests == []


fields = st.sampled_from(
    [
        "kind",
        "role",
        "messageId",
        "parts",
        "text",
        "data",
        "taskId",
        "contextId",
        "message",
        "configuration",
        "blocking",
        "historyLength",
        "id",
        "approved",
    ]
)
params_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-2, 2)
    | st.sampled_from(["", "user", "agent", "text", "data", "file", "message", "x"]),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(fields, inner, max_size=5)
    ),
    max_leaves=16,
)


def valid_or(value: Any) -> st.SearchStrategy[Any]:
    """Mostly the valid value, so later checks are reached too."""
    return st.one_of(st.just(value), st.just(value), st.just(value), params_values)


parts = st.lists(
    st.fixed_dictionaries({"kind": st.just("text"), "text": st.text(max_size=5)})
    | st.fixed_dictionaries({"kind": st.just("data"), "data": params_values})
    | params_values,
    max_size=3,
)
message_params = st.fixed_dictionaries(
    {
        "message": st.fixed_dictionaries(
            {
                "role": valid_or("user"),
                "messageId": valid_or("m1"),
                "parts": st.one_of(parts, parts, parts, params_values),
            },
            optional={
                "kind": valid_or("message"),
                "contextId": valid_or("c1"),
            },
        )
    },
    optional={"configuration": st.dictionaries(fields, params_values, max_size=3)},
)


task_params = st.fixed_dictionaries(
    {}, optional={"id": valid_or("t1"), "historyLength": params_values}
) | st.dictionaries(fields, params_values, max_size=4)
v1_parts = st.lists(
    st.fixed_dictionaries({"text": st.text(max_size=5)})
    | st.fixed_dictionaries({"data": params_values})
    | params_values,
    max_size=3,
)
v1_message_params = st.fixed_dictionaries(
    {
        "message": st.fixed_dictionaries(
            {
                "role": valid_or("ROLE_USER"),
                "messageId": valid_or("m1"),
                "parts": st.one_of(v1_parts, v1_parts, v1_parts, params_values),
            },
            optional={"contextId": valid_or("c1"), "taskId": params_values},
        )
    },
    optional={
        "configuration": st.dictionaries(
            st.sampled_from(
                ["returnImmediately", "historyLength", "acceptedOutputModes"]
            ),
            params_values,
            max_size=3,
        ),
        "tenant": params_values,
    },
)
requests = (
    st.tuples(st.sampled_from(["message/send", "message/stream"]), message_params)
    | st.tuples(
        st.sampled_from(["tasks/get", "tasks/cancel", "tasks/resubscribe"]),
        task_params,
    )
    # HS-71: A2A 1.0's methods
    | st.tuples(
        st.sampled_from(["SendMessage", "SendStreamingMessage"]), v1_message_params
    )
    | st.tuples(
        st.sampled_from(["GetTask", "CancelTask", "SubscribeToTask"]), task_params
    )
)


@settings(max_examples=300)
@given(request=requests)
def test_any_params_get_a_protocol_answer(
    request: tuple[str, dict[str, Any]],
) -> None:
    """HS-54, HS-55, HS-64, HS-72: whatever the params of a method (0.3's or 1.0's),
    the answer is a result or a JSON-RPC error naming what was wrong — never an
    internal error."""
    method, params = request
    client = ScriptedChatClient(["fine"])
    app = HostingApp([Agent(client, name="greeter")])
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
    status, data, _ = asyncio.run(asgi(app, "POST", "/a2a/greeter", body.encode()))
    assert status == 200
    frames = [f for f in data.decode().split("\n\n") if f]
    answers = [json.loads(f.removeprefix("data: ")) for f in frames]
    for answer in answers:
        assert answer["id"] == 1
        if "error" in answer:
            assert answer["error"]["code"] != -32603
            assert answer["error"]["message"]


async def test_malformed_1_0_send_params_are_refused() -> None:
    """HS-72, HS-71, HS-55: in 1.0 a `message` that is not an object, a part that is
    none of 1.0's kinds (the error names it), a `configuration` that is not an object
    or a `returnImmediately` that is not a bool is -32602, and
    `taskPushNotificationConfig` is -32003; no run starts and no task is made."""
    client = ScriptedChatClient()
    app = HostingApp([Agent(client, name="greeter")])
    message = {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}
    odd_part = {**message, "parts": [{"text": "hi"}, {"file": {}}]}
    not_a_part = {**message, "parts": ["hi"]}
    cases: list[tuple[dict[str, Any], int, str]] = [
        ({"message": "hi"}, -32602, "params.message"),
        ({"message": odd_part}, -32602, "parts[1]"),
        ({"message": not_a_part}, -32602, "parts[0]"),
        ({"message": message, "configuration": 3}, -32602, "params.configuration"),
        (
            {"message": message, "configuration": {"returnImmediately": "yes"}},
            -32602,
            "returnImmediately",
        ),
        (
            {
                "message": message,
                "configuration": {"taskPushNotificationConfig": {"url": "x"}},
            },
            -32003,
            "push",
        ),
    ]
    for method in ("SendMessage", "SendStreamingMessage"):
        for params, code, said in cases:
            answer = await rpc(app, "greeter", method, params)
            assert answer["error"]["code"] == code, params
            assert said in answer["error"]["message"], params
    assert client.requests == []
    assert app.a2a.tasks == {}


async def test_a_body_in_chunks_and_a_client_gone_mid_body() -> None:
    """HS-53, HS-54: a body sent in several chunks is read whole; a client that
    disconnects before its body ends gets the parse error (-32700) and no run
    starts."""
    client = ScriptedChatClient(["hello"])
    app = HostingApp([Agent(client, name="greeter")])
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "message/send",
            "params": text_message("hi"),
        }
    ).encode()

    async def post(incoming: list[dict[str, Any]]) -> dict[str, Any]:
        sent: list[dict[str, Any]] = []

        async def receive() -> dict[str, Any]:
            return incoming.pop(0)

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        scope = {"type": "http", "method": "POST", "path": "/a2a/greeter"}
        await app(scope, receive, send)
        assert sent[0]["status"] == 200
        answer: dict[str, Any] = json.loads(b"".join(m.get("body", b"") for m in sent))
        return answer

    half = len(body) // 2
    gone = await post(
        [
            {"type": "http.request", "body": body[:half], "more_body": True},
            {"type": "http.disconnect"},
        ]
    )
    assert gone["error"]["code"] == -32700
    assert client.requests == []
    whole = await post(
        [
            {"type": "http.request", "body": body[:half], "more_body": True},
            {"type": "http.request", "body": body[half:], "more_body": False},
        ]
    )
    assert whole["result"]["status"]["state"] == "completed"
    assert len(client.requests) == 1
