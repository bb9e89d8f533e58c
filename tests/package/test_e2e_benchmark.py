"""benchmarks/e2e.py, the turn over real sockets (issue 41 item 3): minagent's side of
its equivalence check runs against the loopback server on both transports, and the
check catches every way a turn can differ. Counted, never timed: no figure is looked at.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks"
sys.path.insert(0, str(BENCH))

import e2e  # noqa: E402


def _transports() -> list[Any]:
    aiohttp = importlib.util.find_spec("aiohttp") is not None
    return [
        "minagent-stdlib",
        pytest.param(
            "minagent-aiohttp",
            marks=pytest.mark.skipif(not aiohttp, reason="aiohttp is not installed"),
        ),
    ]


@pytest.mark.parametrize("framework", _transports())
def test_the_check_passes_for_minagent_on_each_transport(framework: str) -> None:
    """PK-20: `e2e.py --check` runs one turn of minagent over real sockets: two requests
    to the loopback server, the tool's result sent back under the call's id, the answer
    streamed, 500 chunks written and 500 read, the final text their concatenation; the
    table shows it and the exit status is 0."""
    env = {
        key: value for key, value in os.environ.items() if "PROXY" not in key.upper()
    }
    command = [
        sys.executable,
        str(BENCH / "e2e.py"),
        "--check",
        "--frameworks",
        framework,
    ]
    done = subprocess.run(
        command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr
    request = "POST /v1/chat/completions stream"
    row = (
        f"| {framework} | {request} [user] + {request} [user,assistant(tool_calls),tool] "
        f"| yes | {e2e.weather(e2e.CITY)} | 500 / 500 | = the chunks |"
    )
    assert row in done.stdout.splitlines(), done.stdout
    assert "ok: 0 differences in 1 client runs" in done.stdout
    assert "Traceback" not in done.stderr


def _served(turn: str) -> dict[str, Any]:
    """What the server records of a turn done right (built by its own recorder)."""
    recorder = e2e.Recorder()
    tool = {"type": "function", "function": {"name": e2e.TOOL, "parameters": {}}}
    user = {"role": "user", "content": e2e.prompt(turn)}
    call = {
        "id": e2e.call_id(turn),
        "type": "function",
        "function": {"name": e2e.TOOL, "arguments": e2e.ARGUMENTS},
    }
    first = {"model": e2e.MODEL, "messages": [user], "tools": [tool], "stream": True}
    second = {
        **first,
        "messages": [
            user,
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {
                "role": "tool",
                "tool_call_id": e2e.call_id(turn),
                "content": e2e.weather(e2e.CITY),
            },
        ],
    }
    for body in (first, second):
        answer = recorder.answer("POST", e2e.PATH, json.dumps(body).encode())
        assert answer.startswith(b"HTTP/1.1 200 OK")
    assert recorder.unmatched == 0
    return recorder.turns[turn]


def _good_read() -> e2e.Read:
    return e2e.Read(e2e.CHUNKS, e2e.ANSWER, e2e.ANSWER)


def test_a_turn_done_right_has_no_problem() -> None:
    """PK-20: the check's expectation is what a turn done right produces."""
    assert e2e.problems("t1", _served("t1"), _good_read()) == []


def test_the_answer_is_500_chunks_whose_text_is_the_answer() -> None:
    """PK-20: the server's streamed answer is 500 SSE events of text, then the finish and
    `[DONE]`, one HTTP chunk each; their text is the expected answer."""
    texts = []
    events = 0
    for line in e2e.TEXT_BODY.split(b"\r\n"):
        if line.startswith(b"data: "):
            events += 1
            delta = json.loads(line[6:])["choices"][0]["delta"]
            if "content" in delta:
                texts.append(delta["content"])
    assert len(texts) == e2e.CHUNKS
    assert events == e2e.CHUNKS + 1
    assert "".join(texts) == e2e.ANSWER
    assert e2e.DONE.endswith(b"data: [DONE]\n\n\r\n")


def _mutated(change: str) -> tuple[dict[str, Any] | None, e2e.Read]:
    record = copy.deepcopy(_served("t1"))
    read = _good_read()
    second = record["requests"][1]
    if change == "no request":
        return None, read
    if change == "a third request":
        record["requests"].append(copy.deepcopy(second))
    elif change == "one request":
        del record["requests"][1]
    elif change == "no tool result":
        second["roles"].remove("tool")
        second["tool_results"] = []
    elif change == "another call id":
        second["call_ids"][1] = "call_other"
    elif change == "another tool result":
        second["tool_results"] = ["Rain"]
    elif change == "answer not streamed":
        second["stream"] = False
    elif change == "another path":
        record["requests"][0]["path"] = "/v1/responses"
    elif change == "tool not offered":
        record["requests"][0]["tools"] = []
    elif change == "499 chunks written":
        record["chunks_written"] = e2e.CHUNKS - 1
    elif change == "499 chunks read":
        read = e2e.Read(e2e.CHUNKS - 1, e2e.ANSWER, e2e.ANSWER)
    elif change == "chunks read differ":
        read = e2e.Read(e2e.CHUNKS, e2e.ANSWER[:-1], e2e.ANSWER)
    elif change == "final text differs":
        read = e2e.Read(e2e.CHUNKS, e2e.ANSWER, e2e.ANSWER + "!")
    else:
        raise AssertionError(change)
    return record, read


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ("no request", "the server saw no request"),
        ("a third request", "3 requests, expected 2"),
        ("one request", "1 requests, expected 2"),
        ("no tool result", "request 2 roles"),
        ("another call id", "request 2 call_ids"),
        ("another tool result", "request 2 tool_results"),
        ("answer not streamed", "request 2 stream"),
        ("another path", "request 1 path"),
        ("tool not offered", "request 1 tools"),
        ("499 chunks written", "499 chunks written, expected 500"),
        ("499 chunks read", "499 chunks read, expected 500"),
        ("chunks read differ", "the chunks read are not the answer written"),
        ("final text differs", "the final text is not the concatenation"),
    ],
)
def test_the_check_names_each_way_a_turn_differs(change: str, said: str) -> None:
    """PK-20: every difference from the expected turn — the number of requests, the
    messages, the call id, the tool result, the stream flag, the path, the tool offered,
    the chunks written and read, the final text — is a problem naming the turn."""
    record, read = _mutated(change)
    found = e2e.problems("t1", record, read)
    assert found, change
    assert all(p.startswith("turn t1: ") for p in found)
    assert any(said in p for p in found), found


def test_a_tool_result_sent_as_a_json_string_is_the_same_result() -> None:
    """PK-20: a framework that JSON-quotes the tool's text result sends the same result."""
    record = copy.deepcopy(_served("t1"))
    record["requests"][1]["tool_results"] = [json.dumps(e2e.weather(e2e.CITY))]
    assert e2e.problems("t1", record, _good_read()) == []


def test_a_request_that_is_not_a_turn_is_counted_and_refused() -> None:
    """PK-20: a request the server cannot place in a turn is answered 400 and counted,
    so the harness reports it."""
    recorder = e2e.Recorder()
    answer = recorder.answer("POST", e2e.PATH, b'{"messages": [{"role": "user"}]}')
    assert answer.startswith(b"HTTP/1.1 400")
    assert recorder.unmatched == 1
    assert recorder.turns == {}


def test_a_framework_that_cannot_be_imported_is_skipped_saying_why(
    tmp_path: Path,
) -> None:
    """PK-20: a peer whose interpreter is missing is skipped with the reason, and the
    frameworks that can run still run and are checked."""
    missing = tmp_path / "no-python"
    env = {
        key: value for key, value in os.environ.items() if "PROXY" not in key.upper()
    }
    command = [
        sys.executable,
        str(BENCH / "e2e.py"),
        "--check",
        "--frameworks",
        "minagent-stdlib,pydantic-ai",
        "--peers-python",
        str(missing),
    ]
    done = subprocess.run(
        command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"pydantic-ai: skipped (no interpreter {missing})" in done.stdout
    assert "| minagent-stdlib | " in done.stdout
    assert "| pydantic-ai" not in done.stdout
    assert "ok: 0 differences in 1 client runs" in done.stdout
