"""benchmarks/hosted_agui.py, the hosted AG-UI turn under load (issue 41 item 4), on the
minagent side only (agent-framework's side needs the peer's environment): at a small
scale it runs on the dev server and on uvicorn in real processes, every turn passes its
check and the figures are printed; and the check catches what it is there to catch.
Never a timed assertion: the figures are only looked for, not judged."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minagent.hosting.server import serve

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks"
sys.path.insert(0, str(BENCH))

import agui_minagent_app  # noqa: E402
import agui_turn  # noqa: E402
import hosted_agui  # noqa: E402

FIGURE = r"\d+(\.\d+)?"
PAIR = rf"{FIGURE} / {FIGURE}"

Events = list[dict[str, Any]]


def test_a_small_run_on_minagents_servers_checks_every_turn() -> None:
    """HS-80, HS-86, HS-130, HS-136: 5 concurrent streaming clients x 2 turns (and the
    warm-up's 5) on ``python -m minagent serve`` and on uvicorn with one worker: every
    turn's stream is the whole turn in AG-UI order, with the tool's result and the 500
    chunks; the run prints its figures as a table and exits 0."""
    command = [
        sys.executable,
        str(BENCH / "hosted_agui.py"),
        "--clients",
        "5",
        "--turns",
        "2",
        "--server",
        "dev",
        "--server",
        "uvicorn",
    ]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stdout + done.stderr
    for server in ("dev", "uvicorn"):
        assert f"{server}: checked 15 turns (5 warm-up): 0 failed: ok" in done.stdout
    for name in (
        r"minagent, dev server \(`minagent serve`\)",
        "minagent, uvicorn 1 worker",
    ):
        # the turn is 516 events on minagent: RUN_STARTED, 8 step events, 3 of the
        # call, its result, 502 of the text, RUN_FINISHED
        pattern = (
            rf"\| {name} \| 5 x 2 \| {FIGURE} \| {PAIR} \| {PAIR} \| {FIGURE} "
            rf"\| {FIGURE} \| 516 \| 0 \|"
        )
        assert re.search(pattern, done.stdout), (name, done.stdout)
    assert "agent-framework" not in done.stdout
    assert "Traceback" not in done.stderr


async def _turn_events(thread_id: str, run_id: str) -> Events:
    """One turn's events as the dev server streams them, read by the load client."""
    server = await serve(agui_minagent_app.app, "127.0.0.1", 0)
    try:
        port = int(server.sockets[0].getsockname()[1])
        events, turn = await hosted_agui.read_turn(port, thread_id, run_id)
    finally:
        server.close()
        await server.wait_closed()
    assert 0 < turn.first_event <= turn.total
    assert turn.events == len(events)
    return events


def _index(events: Events, kind: str, nth: int = 0) -> int:
    return [i for i, e in enumerate(events) if e["type"] == kind][nth]


def _drop(kind: str, nth: int = 0) -> Callable[[Events], None]:
    def change(events: Events) -> None:
        del events[_index(events, kind, nth)]

    return change


def _swap_chunks(events: Events) -> None:
    first = _index(events, "TEXT_MESSAGE_CONTENT", 10)
    events[first], events[first + 1] = events[first + 1], events[first]


def _content_before_start(events: Events) -> None:
    events.insert(
        _index(events, "TEXT_MESSAGE_START"),
        events.pop(_index(events, "TEXT_MESSAGE_CONTENT")),
    )


def _text_before_result(events: Events) -> None:
    start = _index(events, "TEXT_MESSAGE_START")
    content = _index(events, "TEXT_MESSAGE_CONTENT")
    text = [events.pop(content), events.pop(start)][::-1]
    at = _index(events, "TOOL_CALL_RESULT")
    events[at:at] = text


def _set(kind: str, **fields: Any) -> Callable[[Events], None]:
    def change(events: Events) -> None:
        events[_index(events, kind)].update(fields)

    return change


def _run_error(events: Events) -> None:
    events.insert(-1, {"type": "RUN_ERROR", "message": "x", "code": "run_failed"})


def _result_twice(events: Events) -> None:
    at = _index(events, "TOOL_CALL_RESULT")
    events.insert(at, dict(events[at]))


BROKEN: dict[str, tuple[Callable[[Events], None], str]] = {
    "no RUN_FINISHED": (_drop("RUN_FINISHED"), "RUN_FINISHED is not once"),
    "no RUN_STARTED": (_drop("RUN_STARTED"), "RUN_STARTED is not once"),
    "another thread": (_set("RUN_STARTED", threadId="other"), "another run"),
    "a RUN_ERROR": (_run_error, "RUN_ERROR"),
    "no tool result": (_drop("TOOL_CALL_RESULT"), "result is None"),
    "a wrong result": (_set("TOOL_CALL_RESULT", content="6"), "result is '6'"),
    "a result twice": (_result_twice, "out of turn"),
    "the call not ended": (_drop("TOOL_CALL_END"), "out of turn"),
    "other arguments": (_set("TOOL_CALL_ARGS", delta='{"a": 1}'), "the call is"),
    "another tool": (_set("TOOL_CALL_START", toolCallName="mul"), "the call is"),
    "a lost chunk": (_drop("TEXT_MESSAGE_CONTENT", 7), "499 text deltas"),
    "reordered chunks": (_swap_chunks, "not the 500 chunks"),
    "a changed chunk": (_set("TEXT_MESSAGE_CONTENT", delta="x"), "not the 500"),
    "content before start": (_content_before_start, "not open"),
    "the text not ended": (_drop("TEXT_MESSAGE_END"), "left open"),
    "text before the result": (_text_before_result, "before the tool's result"),
}


async def test_the_turn_check_passes_the_served_turn() -> None:
    """HS-80, HS-86: the load client's check passes a turn as the dev server streams it
    (RUN_STARTED .. RUN_FINISHED, the call's events, its result, the text in 500
    chunks), and only for the thread and run it asked for."""
    thread = f"thread-{uuid.uuid4().hex}"
    events = await _turn_events(thread, "run-1")
    hosted_agui.check_turn(events, thread, "run-1")
    with pytest.raises(hosted_agui.TurnError, match="RUN_STARTED names another run"):
        hosted_agui.check_turn(events, "another thread", "run-1")


@pytest.mark.parametrize(("change", "message"), BROKEN.values(), ids=BROKEN.keys())
async def test_the_turn_check_catches_each_defect(
    change: Callable[[Events], None], message: str
) -> None:
    """HS-80, HS-86: each defect a server could bring to the served turn (a missing or
    misplaced event, a wrong call or result, a lost, changed or reordered chunk) is a
    `TurnError` saying what."""
    # a new thread: the application keeps every thread it served (HS-84)
    thread = f"thread-{uuid.uuid4().hex}"
    events = await _turn_events(thread, "run-1")
    change(events)
    with pytest.raises(hosted_agui.TurnError, match=re.escape(message)):
        hosted_agui.check_turn(events, thread, "run-1")


EVENT = st.fixed_dictionaries(
    {"type": st.sampled_from(["RUN_STARTED", "TEXT_MESSAGE_CONTENT"])},
    optional={"delta": st.text(max_size=20)},
)


async def _pieces(data: bytes, cuts: list[int]) -> AsyncIterator[bytes]:
    start = 0
    for cut in [*sorted(set(cuts)), len(data)]:
        if cut > start:
            yield data[start:cut]
            start = cut
        await asyncio.sleep(0)


async def _read(data: bytes, cuts: list[int]) -> Events:
    return [event async for event in hosted_agui.sse_events(_pieces(data, cuts))]


@given(
    frames=st.lists(
        st.tuples(
            EVENT,
            st.sampled_from([b"\n", b"\r\n", b"\r"]),
            st.booleans(),  # a comment (agent-framework's keep-alive) before it
        ),
        max_size=8,
    ),
    cuts=st.lists(st.integers(min_value=0, max_value=2000), max_size=12),
)
def test_server_sent_events_are_read_whatever_the_line_ends_and_pieces(
    frames: list[tuple[dict[str, Any], bytes, bool]], cuts: list[int]
) -> None:
    """HS-80: every ``data:`` event of an SSE body is read as its JSON object, whatever
    the line ending (LF as minagent frames them, CR LF, CR), however the body is cut
    into pieces (a CR LF split between two included), and comments are skipped."""
    body = b""
    for event, end, comment in frames:
        if comment:
            body += b": keepalive" + end + end
        body += b"data: " + json.dumps(event).encode() + end + end
    read = asyncio.run(_read(body, [c for c in cuts if c < len(body)]))
    assert read == [event for event, _, _ in frames]


async def test_a_stream_that_ends_inside_an_event_is_a_turn_error() -> None:
    """HS-80: a stream cut before an event's blank line is not read as a whole event."""
    with pytest.raises(hosted_agui.TurnError, match="inside an event"):
        await _read(b'data: {"type": "RUN_STARTED"}\n\ndata: {"type": "RUN_', [])
    assert agui_turn.ANSWER.count(" ") == agui_turn.CHUNKS
