"""The plain-file stores, `FileHistoryProvider` and `FileSessionStore`, and their
MessagePack codec (spec/sessions.md SE-24, SE-66, SE-22).

What they refuse (bad options, bad ids, files they cannot read) and how they fail: what
a file holds and cannot read is a `SerializationError` naming the file, the session and
the line or record; a link, FIFO or device where a session's file belongs is refused
before it is opened; an OS failure keeps its `OSError` type and says which store could
not do what to which session; nothing is written by a call that fails, and a corrupt
snapshot is moved aside only while it is the one that was read. The MessagePack codec is
checked against a real peer (msgspec, which upstream's file stores use) both ways."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import os
import pickle
import shutil
import sys
import tempfile
import threading
import types
import warnings
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minagent import (
    Agent,
    AgentSession,
    FileHistoryProvider,
    FileSessionStore,
    Message,
    SerializationError,
)
from minagent.stores import files
from minagent.stores.msgpack import packb, unpackb
from minagent.testing import ScriptedChatClient, reply
from tests._support.modes import run

FORMATS = pytest.mark.parametrize("fmt", ["json", "msgpack"])
DEEP = 200_000  # deeper than any parser follows


def history_file(root: Path, session_id: str, fmt: str) -> Path:
    return root / (session_id + (".jsonl" if fmt == "json" else ".msgpack"))


def snapshot_file(root: Path, session_id: str, fmt: str) -> Path:
    return root / (session_id + (".json" if fmt == "json" else ".msgpack"))


def record(payload: bytes) -> bytes:
    return len(payload).to_bytes(4, "big") + payload


GOOD = Message("user", ["a"])


@pytest.mark.parametrize(
    ("line", "words"),
    [
        (b"{nope", "Failed to deserialize history line 2 from '{path}': Expecting"),
        (
            b'{"text": "\xff\xfe"}',
            "Failed to deserialize history line 2 from '{path}': 'utf-8' codec can't decode",
        ),
        (
            b"[" * DEEP + b"]" * DEEP,
            "Failed to deserialize history line 2 from '{path}': nested too deeply",
        ),
        (b"[1]", "History record 2 in '{path}' did not deserialize to a mapping"),
        (
            b'{"type": "message", "role": 5}',
            "History record 2 in '{path}' is not a valid Message payload: ",
        ),
    ],
    ids=["not-json", "not-utf8", "too-deep", "not-a-mapping", "not-a-message"],
)
async def test_a_json_history_line_it_cannot_read_is_a_serialization_error(
    tmp_path: Path, line: bytes, words: str
) -> None:
    """SE-66, SE-22: a JSON-lines history line that is not JSON, not in utf-8, nested
    too deeply, not a mapping or not a message fails the load with a SerializationError
    (a ValueError) whose path names the file, the session and the line, keeping
    upstream's words; the file is unchanged."""
    history = FileHistoryProvider(tmp_path)
    await history.save_messages("s", [GOOD])
    path = history_file(tmp_path, "s", "json")
    path.write_bytes(path.read_bytes() + line + b"\n")
    before = path.read_bytes()
    with pytest.raises(SerializationError) as caught:
        await history.get_messages("s")
    assert isinstance(caught.value, ValueError)
    assert caught.value.path == f"{path}: session 's', line 2"
    assert str(caught.value).startswith(f"{path}: session 's', line 2: ")
    assert words.format(path=path) in caught.value.problem
    assert path.read_bytes() == before


@pytest.mark.parametrize(
    ("tail", "words"),
    [
        (
            b"\x00\x00\x00\x05\x81",
            "History record 2 in '{path}' is truncated (length 5)",
        ),
        (
            record(b"\xc1"),
            "Failed to deserialize history record 2 from '{path}': unsupported MessagePack type 0xc1",
        ),
        (
            record(b"\x91" * DEEP + b"\x01"),
            "Failed to deserialize history record 2 from '{path}': nested too deeply",
        ),
        (
            record(b"\x01"),
            "History record 2 in '{path}' did not deserialize to a mapping",
        ),
        (
            record(packb({"type": "message", "role": 5})),
            "History record 2 in '{path}' is not a valid Message payload",
        ),
    ],
    ids=["truncated", "not-msgpack", "too-deep", "not-a-mapping", "not-a-message"],
)
async def test_a_msgpack_history_record_it_cannot_read_is_a_serialization_error(
    tmp_path: Path, tail: bytes, words: str
) -> None:
    """SE-66, SE-22: a MessagePack record cut short, not MessagePack, nested too deeply,
    not a mapping or not a message is a SerializationError naming the file, the session
    and the record."""
    history = FileHistoryProvider(tmp_path, serialization_format="msgpack")
    await history.save_messages("s", [GOOD])
    path = history_file(tmp_path, "s", "msgpack")
    path.write_bytes(path.read_bytes() + tail)
    with pytest.raises(SerializationError) as caught:
        await history.get_messages("s")
    assert caught.value.path == f"{path}: session 's', record 2"
    assert words.format(path=path) in caught.value.problem


@FORMATS
async def test_a_snapshot_it_cannot_read_is_a_serialization_error(
    tmp_path: Path, fmt: str
) -> None:
    """SE-66, SE-22: a snapshot that is not JSON (MessagePack) is a SerializationError
    naming the file and the session, saying where it was moved; one nested too deeply,
    or of another shape, is a SerializationError that leaves the file where it is."""
    store = FileSessionStore(tmp_path, serialization_format=fmt)
    path = snapshot_file(tmp_path, "s", fmt)
    path.write_bytes(b"\xc1\xff not a snapshot")
    with pytest.raises(
        SerializationError, match=r"quarantined to .*retry to start a new session"
    ) as caught:
        await store.get("s")
    assert caught.value.path == f"{path}: session 's'"
    assert await store.get("s") is None
    deep = b"[" * DEEP + b"]" * DEEP if fmt == "json" else b"\x91" * DEEP + b"\x01"
    for data, words in (
        (deep, "is nested too deeply"),
        (b"[1, 2]" if fmt == "json" else packb([1, 2]), "schema"),
    ):
        path.write_bytes(data)
        with pytest.raises(SerializationError, match=words) as caught:
            await store.get("s")
        assert caught.value.path == f"{path}: session 's'"
        assert path.read_bytes() == data


@settings(max_examples=30, deadline=None)
@given(
    text=st.text(
        alphabet=st.sampled_from('a\u2028\u2029\x85\x1c\x1d\x1e\x0b\x0c\r\n\t "\\é'),
        max_size=12,
    )
)
def test_text_with_any_line_break_reads_back_whole(text: str) -> None:
    """SE-66: a history is split at newline bytes only, so a message whose text holds
    U+2028, U+0085 or another character str.splitlines() breaks at reads back whole, in
    both formats."""

    async def round_trip(fmt: str) -> list[str]:
        with tempfile.TemporaryDirectory() as root:
            history = FileHistoryProvider(root, serialization_format=fmt)  # type: ignore[arg-type]
            await history.save_messages(
                "s", [Message("user", [text]), Message("assistant", ["ok"])]
            )
            return [m.text for m in await history.get_messages("s")]

    for fmt in ("json", "msgpack"):
        assert asyncio.run(round_trip(fmt)) == [text, "ok"]


# -- files that are not files ---------------------------------------------------------------------


@FORMATS
async def test_a_symlink_where_a_session_file_belongs_is_a_serialization_error(
    tmp_path: Path, fmt: str
) -> None:
    """SE-66, SE-24: a symbolic link placed where a session's file belongs is refused,
    not followed, as a SerializationError naming it, by every call of both stores."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "target").write_bytes(b"")
    root = tmp_path / "root"
    history = FileHistoryProvider(root, serialization_format=fmt)
    store = FileSessionStore(root, serialization_format=fmt)
    history_file(root, "s", fmt).symlink_to(outside / "target")
    snapshot_file(root, "t", fmt).symlink_to(outside / "target")
    calls: list[Awaitable[Any]] = [
        history.get_messages("s"),
        history.save_messages("s", [GOOD]),
        history.discard_messages("s", [GOOD]),
        history.clear("s"),
        store.get("t"),
        store.set("t", AgentSession(session_id="t")),
        store.delete("t"),
    ]
    for call in calls:
        with pytest.raises(
            SerializationError, match="escaped storage directory: it is a symbolic link"
        ) as caught:
            await call
        assert caught.value.path.startswith(str(root))
    assert (outside / "target").read_bytes() == b""
    assert history_file(root, "s", fmt).is_symlink()
    assert snapshot_file(root, "t", fmt).is_symlink()


@pytest.mark.parametrize("serialization_format", ["json", "msgpack"])
async def test_file_history_and_sessions(tmp_path, serialization_format, stream):
    """SE-24: `FileHistoryProvider` appends a session's messages to one file and reads
    them back; `FileSessionStore` keeps a session's state in one snapshot; an unsafe id
    stays in the directory."""
    from minagent import Agent, AgentSession, FileHistoryProvider, FileSessionStore
    from minagent.testing import ScriptedChatClient, reply

    history = FileHistoryProvider(
        tmp_path / "h", serialization_format=serialization_format
    )
    agent = Agent(
        ScriptedChatClient([reply("one"), reply("two")]), context_providers=[history]
    )
    session = AgentSession(session_id="../escape")
    for text in ("first", "second"):
        if stream:
            async for _ in agent.run(text, session=session, stream=True):
                pass
        else:
            await agent.run(text, session=session)
    stored = await history.get_messages("../escape")
    assert [m.text for m in stored] == ["first", "one", "second", "two"]
    assert all(
        p.resolve().is_relative_to((tmp_path / "h").resolve())
        for p in (tmp_path / "h").rglob("*")
    )
    assert not (tmp_path / "escape.jsonl").exists()
    store = FileSessionStore(tmp_path / "s", serialization_format=serialization_format)
    session.state["n"] = 3
    await store.set("../escape", session)
    restored = await store.get("../escape")
    assert restored.session_id == "../escape"
    assert restored.state["n"] == 3
    await store.delete("../escape")
    assert await store.get("../escape") is None


_WRITER = """
import asyncio, sys
from minagent import FileHistoryProvider, Message

async def main(root, fmt, worker):
    history = FileHistoryProvider(root, serialization_format=fmt)
    for run in range(15):
        texts = [f"{worker}-{run}-{part}" + "x" * 3000 for part in range(3)]
        await history.save_messages("shared", [Message("user", [t]) for t in texts])

asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3]))
"""


@pytest.mark.parametrize("serialization_format", ["json", "msgpack"])
def test_file_history_across_processes(tmp_path, serialization_format):
    """SE-24: processes appending to one session's file at once interleave whole runs:
    every run's messages are read back together, in order, none lost or torn."""
    import subprocess
    import sys

    from minagent import FileHistoryProvider

    workers = [
        subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(tmp_path), serialization_format, str(w)]
        )
        for w in range(4)
    ]
    assert [w.wait(timeout=120) for w in workers] == [0, 0, 0, 0]
    history = FileHistoryProvider(tmp_path, serialization_format=serialization_format)
    texts = [m.text.rstrip("x") for m in asyncio.run(history.get_messages("shared"))]
    assert len(texts) == 4 * 15 * 3
    runs = [texts[i : i + 3] for i in range(0, len(texts), 3)]
    assert all(len({t.rsplit("-", 1)[0] for t in run}) == 1 for run in runs)
    assert all([t.rsplit("-", 1)[1] for t in run] == ["0", "1", "2"] for run in runs)


def test_an_unknown_format_is_refused(tmp_path):
    """SE-24: the format is "json" or "msgpack"; anything else is a ValueError, and no
    directory is made."""
    for make in (FileHistoryProvider, FileSessionStore):
        with pytest.raises(
            ValueError, match="serialization_format must be 'json' or 'msgpack'"
        ):
            make(tmp_path / "d", serialization_format="yaml")
    assert not (tmp_path / "d").exists()


def test_custom_codec_is_json_only_and_deprecated(tmp_path):
    """SE-24: upstream's `dumps=`/`loads=` work with JSON only (with MessagePack they
    are a ValueError) and are deprecated; given, they write and read the lines."""
    with pytest.raises(ValueError, match="only with serialization_format='json'"):
        FileHistoryProvider(tmp_path, serialization_format="msgpack", dumps=json.dumps)
    with pytest.raises(ValueError, match="only with serialization_format='json'"):
        FileHistoryProvider(tmp_path, serialization_format="msgpack", loads=json.loads)
    with pytest.warns(DeprecationWarning, match="deprecated"):
        FileHistoryProvider(tmp_path, loads=json.loads)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        seen = []
        history = FileHistoryProvider(
            tmp_path,
            # bytes are taken as UTF-8
            dumps=lambda value: json.dumps(value).encode("utf-8"),
            loads=lambda line: seen.append(line) or json.loads(line),
        )
    asyncio.run(history.save_messages("s", [Message("user", ["héllo"])]))
    assert [m.text for m in asyncio.run(history.get_messages("s"))] == ["héllo"]
    assert len(seen) == 1


async def test_multiline_dumps_fails_before_anything_is_written(tmp_path):
    """SE-24, SE-20: a run is one JSON line per message; a `dumps` that writes several
    lines fails the save, and nothing of the run is written."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        history = FileHistoryProvider(
            tmp_path, dumps=lambda value: json.dumps(value, indent=1)
        )
    with pytest.raises(ValueError, match="single-line JSON"):
        await history.save_messages(
            "s", [Message("user", ["a"]), Message("assistant", ["b"])]
        )
    assert list(tmp_path.iterdir()) == []


@FORMATS
async def test_a_symlink_out_of_the_directory_is_refused(tmp_path, fmt):
    """SE-24: no session names a file outside the directory, not even through a symlink
    placed there."""
    outside = tmp_path / "outside"
    outside.mkdir()
    root = tmp_path / "root"
    history = FileHistoryProvider(root, serialization_format=fmt)
    store = FileSessionStore(root, serialization_format=fmt)
    (root / ("s.jsonl" if fmt == "json" else "s.msgpack")).symlink_to(
        outside / "stolen"
    )
    (root / ("t.json" if fmt == "json" else "t.msgpack")).symlink_to(
        outside / "stolen2"
    )
    with pytest.raises(ValueError, match="escaped storage directory"):
        await history.save_messages("s", [Message("user", ["x"])])
    with pytest.raises(ValueError, match="escaped storage directory"):
        await store.set("t", AgentSession(session_id="t"))
    assert list(outside.iterdir()) == []


async def test_session_store_ids_are_bounded_and_sessions_exact(tmp_path):
    """SE-24: a session id is a non-empty string of at most 128 characters, and the
    store keeps `AgentSession`s (a subclass is refused, as it would not come back as
    itself)."""
    store = FileSessionStore(tmp_path)
    await store.set("x" * 128, AgentSession(session_id="x" * 128))
    assert (await store.get("x" * 128)).session_id == "x" * 128
    with pytest.raises(ValueError, match="at most 128 characters"):
        await store.get("x" * 129)
    with pytest.raises(ValueError, match="non-empty string"):
        await store.get("")

    class Mine(AgentSession):
        pass

    with pytest.raises(TypeError, match="AgentSession instances only"):
        await store.set("m", Mine(session_id="m"))
    assert not list(tmp_path.glob("m.*"))


@FORMATS
async def test_skip_excluded_leaves_out_excluded_messages(tmp_path, fmt, stream):
    """SE-24: with `skip_excluded=True` (upstream's option) a load leaves out the
    messages whose `additional_properties["_excluded"]` is true; without it they load; a
    save of nothing writes no file."""
    history = FileHistoryProvider(
        tmp_path, serialization_format=fmt, skip_excluded=True
    )
    await history.save_messages("s", [])
    assert list(tmp_path.iterdir()) == []
    hidden = Message("user", ["hidden"], additional_properties={"_excluded": True})
    await history.save_messages("s", [hidden, Message("assistant", ["shown"])])
    client = ScriptedChatClient([reply("ok")])
    await run(
        Agent(client, context_providers=[history]),
        "next",
        stream=stream,
        session=AgentSession(session_id="s"),
    )
    assert client.requests[0].texts == ["assistant: shown", "user: next"]
    everything = FileHistoryProvider(tmp_path, serialization_format=fmt)
    assert [m.text for m in await everything.get_messages("s")] == [
        "hidden",
        "shown",
        "next",
        "ok",
    ]


async def test_json_history_skips_blank_lines_and_names_a_bad_line(tmp_path):
    """SE-24, SE-22: blank lines in a JSON-lines history are nothing; a line that is not
    JSON, not an object, or not a message fails the load naming the line and the
    file."""
    history = FileHistoryProvider(tmp_path)
    await history.save_messages("s", [Message("user", ["a"])])
    path = tmp_path / "s.jsonl"
    path.write_text(path.read_text() + "\n   \n")
    assert [m.text for m in await history.get_messages("s")] == ["a"]
    good = path.read_text().rstrip("\n ")
    for bad, words in (
        ("{nope", "Failed to deserialize history line 3"),
        ("[1]", "record 3 .* did not deserialize to a mapping"),
    ):
        path.write_text(good + "\n\n" + bad + "\n")
        with pytest.raises(ValueError, match=words) as caught:
            await history.get_messages("s")
        assert str(path) in str(caught.value)
    path.write_text(json.dumps({"type": "message", "role": 5, "contents": []}) + "\n")
    with pytest.raises(
        ValueError, match=r"History record 1 .* is not a valid Message payload"
    ):
        await history.get_messages("s")


async def test_msgpack_history_names_a_truncated_or_bad_record(tmp_path):
    """SE-24, SE-22: MessagePack records are each a 4-byte length and the record; a
    record cut short, of length 0, or not MessagePack fails the load naming the record
    and the file."""
    history = FileHistoryProvider(tmp_path, serialization_format="msgpack")
    await history.save_messages(
        "s", [Message("user", ["a"]), Message("assistant", ["b"])]
    )
    path = tmp_path / "s.msgpack"
    good = path.read_bytes()
    for tail, words in (
        (b"\x00\x00", "History record 3 .* is truncated"),
        (b"\x00\x00\x00\x05\x81", "History record 3 .* is truncated \\(length 5\\)"),
        (b"\x00\x00\x00\x00", "History record 3 .* is truncated \\(length 0\\)"),
        (b"\x00\x00\x00\x01\xc1", "Failed to deserialize history record 3"),
        (
            b"\x00\x00\x00\x01\x01",
            "History record 3 .* did not deserialize to a mapping",
        ),
    ):
        path.write_bytes(good + tail)
        with pytest.raises(ValueError, match=words) as caught:
            await history.get_messages("s")
        assert str(path) in str(caught.value)


def _snapshot_path(root, session_id, fmt):
    return root / (session_id + (".json" if fmt == "json" else ".msgpack"))


@FORMATS
async def test_a_corrupt_snapshot_is_moved_aside_and_a_retry_starts_afresh(
    tmp_path, fmt
):
    """SE-24, SE-22: a snapshot that cannot be decoded is moved aside (its bytes kept)
    and the read fails saying so; the next read finds no session."""
    store = FileSessionStore(tmp_path, serialization_format=fmt)
    path = _snapshot_path(tmp_path, "s", fmt)
    path.write_bytes(b"\xc1\xff not a snapshot")
    with pytest.raises(
        ValueError, match=r"quarantined to .*retry to start a new session"
    ) as caught:
        await store.get("s")
    assert str(path) in str(caught.value)
    assert not path.exists()
    (moved,) = tmp_path.glob(f".{path.name}.*.corrupt")
    assert moved.read_bytes() == b"\xc1\xff not a snapshot"
    assert await store.get("s") is None


@pytest.mark.parametrize("change", ["rewritten", "deleted"])
async def test_a_snapshot_changed_while_read_is_left_alone(
    tmp_path, monkeypatch, change
):
    """SE-24, SE-22: when another process replaces or deletes the snapshot between the
    read and the decision to move it aside, nothing is moved: the read fails saying to
    retry, and the retry reads what is there now."""
    store = FileSessionStore(tmp_path, serialization_format="msgpack")
    path = _snapshot_path(tmp_path, "s", "msgpack")
    path.write_bytes(b"\xc1")
    good = packb(
        {
            "type": "session",
            "version": "1.0",
            "session_id": "s",
            "service_session_id": None,
            "state": {},
        }
    )

    def racing_unpackb(raw):
        if change == "rewritten":
            path.write_bytes(good)
        else:
            path.unlink()
        raise ValueError("unsupported MessagePack type 0xc1")

    monkeypatch.setattr(files, "unpackb", racing_unpackb)
    with pytest.raises(ValueError, match="the snapshot was changed; retry"):
        await store.get("s")
    monkeypatch.undo()
    assert not list(tmp_path.glob("*.corrupt"))
    restored = await store.get("s")
    assert (restored.session_id if restored else None) == (
        "s" if change == "rewritten" else None
    )


@FORMATS
@pytest.mark.parametrize(
    ("snapshot", "words"),
    [
        ([1, 2], "invalid schema: not a JSON object"),
        (
            {"type": "session", "version": "2.0", "session_id": "s", "state": {}},
            "Unsupported session snapshot version",
        ),
        (
            {"type": "thread", "version": "1.0", "session_id": "s", "state": {}},
            "invalid schema",
        ),
        (
            {"type": "session", "version": "1.0", "session_id": 7, "state": {}},
            "invalid schema",
        ),
        (
            {"type": "session", "version": "1.0", "session_id": "s", "state": []},
            "invalid schema",
        ),
        (
            {
                "type": "session",
                "version": "1.0",
                "session_id": "s",
                "state": {"m": {"type": "message", "role": 5}},
            },
            "Failed to restore session state",
        ),
    ],
    ids=["not-an-object", "version", "type", "id", "state", "message"],
)
async def test_a_snapshot_of_another_shape_is_an_error_that_keeps_the_file(
    tmp_path, fmt, snapshot, words
):
    """SE-24, SE-22: a snapshot that decodes but is not a version-1.0 session (its state
    a mapping whose messages `from_dict` takes) fails the read naming the file, and the
    file stays where it is."""
    store = FileSessionStore(tmp_path, serialization_format=fmt)
    path = _snapshot_path(tmp_path, "s", fmt)
    data = json.dumps(snapshot).encode() if fmt == "json" else packb(snapshot)
    path.write_bytes(data)
    with pytest.raises(ValueError, match=words) as caught:
        await store.get("s")
    assert str(path) in str(caught.value)
    assert path.read_bytes() == data


@FORMATS
async def test_without_fcntl_the_first_byte_is_locked_with_msvcrt(
    tmp_path, monkeypatch, fmt
):
    """SE-24: where `fcntl` is missing (Windows) a history file is locked through
    `msvcrt.locking` on its first byte for the append or the read, and unlocked after
    it."""
    calls = []
    msvcrt = types.ModuleType("msvcrt")
    msvcrt.LK_LOCK, msvcrt.LK_UNLCK = 1, 0
    msvcrt.locking = lambda fd, mode, n: calls.append(
        ("lock" if mode == 1 else "unlock", n)
    )
    monkeypatch.setitem(sys.modules, "fcntl", None)
    monkeypatch.setitem(sys.modules, "msvcrt", msvcrt)
    history = FileHistoryProvider(tmp_path, serialization_format=fmt)
    await history.save_messages(
        "s", [Message("user", ["a"]), Message("assistant", ["b"])]
    )
    assert calls == [("lock", 1), ("unlock", 1)]
    assert [m.text for m in await history.get_messages("s")] == ["a", "b"]
    assert calls == [("lock", 1), ("unlock", 1)] * 2


json_like = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(1 << 63), max_value=(1 << 64) - 1)
    | st.floats(allow_nan=False)
    | st.text()
    | st.binary(),
    lambda inner: (
        st.lists(inner, max_size=20)
        | st.dictionaries(st.text(max_size=5), inner, max_size=20)
    ),
    max_leaves=40,
)


@given(json_like)
def test_msgpack_round_trips_and_agrees_with_a_real_peer(value):
    """SE-24: the MessagePack codec writes what msgspec (upstream's codec) reads as the
    same value, and reads back what either writes."""
    data = packb(value)
    assert unpackb(data) == value
    assert msgspec.msgpack.decode(data) == value
    assert unpackb(msgspec.msgpack.encode(value)) == value


@pytest.mark.parametrize(
    "value",
    [
        "s" * 40,
        "s" * 300,
        b"b" * 300,
        b"b" * 70000,
        "s" * 70000,
        list(range(70000)),
        {str(i): i for i in range(70000)},
        1 << 40,
        -(1 << 40),
        -200,
        1.5,
        True,
        False,
    ],
    ids=[
        "str8",
        "str16",
        "bin16",
        "bin32",
        "str32",
        "array32",
        "map32",
        "uint64",
        "int64",
        "int16",
        "f64",
        "t",
        "f",
    ],
)
def test_msgpack_writes_the_shortest_form_a_peer_writes(value):
    """SE-24: each value is written in its shortest MessagePack form, byte for byte what
    msgspec writes."""
    assert packb(value) == msgspec.msgpack.encode(value)
    assert unpackb(packb(value)) == value


def test_msgpack_reads_other_sizes_and_refuses_bad_data():
    """SE-24: a longer form than needed (another writer's) and a 32-bit float read back;
    unknown type codes, truncated data, trailing bytes and values it cannot write are
    clear errors."""
    assert unpackb(b"\xca\x3f\xc0\x00\x00") == 1.5  # float 32
    assert unpackb(b"\xcd\x00\x05") == 5  # uint 16 for a small value
    assert unpackb(b"\xd2\xff\xff\xff\xfe") == -2  # int 32
    assert unpackb(b"\xda\x00\x02hi") == "hi"  # str 16 for a short string
    assert unpackb(b"\xde\x00\x01\xa1k\xc0") == {"k": None}  # map 16
    with pytest.raises(ValueError, match="unsupported MessagePack type 0xc1"):
        unpackb(b"\xc1")
    with pytest.raises(ValueError, match="truncated"):
        unpackb(b"\xa5abc")
    with pytest.raises(ValueError, match="truncated"):
        unpackb(b"")
    with pytest.raises(ValueError, match="2 extra bytes"):
        unpackb(b"\xc0\xc0\xc0")
    with pytest.raises(TypeError, match="cannot write set as MessagePack"):
        packb({"k": {1, 2}})


@FORMATS
async def test_a_fifo_where_a_session_file_belongs_is_refused_before_it_is_opened(
    tmp_path: Path, fmt: str
) -> None:
    """SE-66: a FIFO where a session's file belongs is a SerializationError ("not a
    regular file"), raised before it is opened, so the call never blocks on it. (A
    writer opens the FIFO after a while, so a store that did open it would return
    instead of hanging the test.)"""
    history = FileHistoryProvider(tmp_path, serialization_format=fmt)
    store = FileSessionStore(tmp_path, serialization_format=fmt)
    fifos = [history_file(tmp_path, "s", fmt), snapshot_file(tmp_path, "t", fmt)]
    for fifo in fifos:
        os.mkfifo(fifo)
    done = threading.Event()

    def unblock() -> None:
        while not done.wait(2.0):
            for fifo in fifos:
                with contextlib.suppress(OSError):
                    os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))

    helper = threading.Thread(target=unblock, daemon=True)
    helper.start()
    try:
        for call, fifo in (
            (history.get_messages("s"), fifos[0]),
            (history.save_messages("s", [GOOD]), fifos[0]),
            (store.get("t"), fifos[1]),
            (store.set("t", AgentSession(session_id="t")), fifos[1]),
        ):
            with pytest.raises(
                SerializationError, match="not a regular file; refused"
            ) as caught:
                await call
            assert caught.value.path.startswith(str(fifo))
    finally:
        done.set()
        helper.join()


def _history_calls(
    history: FileHistoryProvider,
) -> dict[str, Callable[[], Awaitable[Any]]]:
    return {
        "read": lambda: history.get_messages("s"),
        "append to": lambda: history.save_messages("s", [GOOD]),
        "take back from": lambda: history.discard_messages("s", [GOOD]),
        "clear": lambda: history.clear("s"),
    }


def _store_calls(store: FileSessionStore) -> dict[str, Callable[[], Awaitable[Any]]]:
    return {
        "read": lambda: store.get("t"),
        "write": lambda: store.set("t", AgentSession(session_id="t")),
        "delete": lambda: store.delete("t"),
    }


@FORMATS
async def test_a_directory_where_a_session_file_belongs_is_an_is_a_directory_error(
    tmp_path: Path, fmt: str
) -> None:
    """SE-66: a directory where a session's file belongs is an IsADirectoryError (errno
    EISDIR) whose filename is that path and whose message says which store could not do
    what to which session; the directory is left as it was."""
    history = FileHistoryProvider(tmp_path, serialization_format=fmt)
    store = FileSessionStore(tmp_path, serialization_format=fmt)
    cases = [
        (
            "FileHistoryProvider",
            "s",
            history_file(tmp_path, "s", fmt),
            _history_calls(history),
        )
    ]
    cases.append(
        (
            "FileSessionStore",
            "t",
            snapshot_file(tmp_path, "t", fmt),
            _store_calls(store),
        )
    )
    for owner, session_id, path, calls in cases:
        path.mkdir()
        (path / "inside").write_text("kept")
        for doing, call in calls.items():
            with pytest.raises(IsADirectoryError) as caught:
                await call()
            assert caught.value.errno == errno.EISDIR
            assert caught.value.filename == str(path)
            assert caught.value.strerror.startswith(
                f"{owner} cannot {doing} session {session_id!r}: "
            )
            assert isinstance(caught.value.__cause__, OSError)
        assert [p.name for p in path.iterdir()] == ["inside"]


def test_a_storage_path_that_is_a_file_is_a_not_a_directory_error(
    tmp_path: Path,
) -> None:
    """SE-66: a storage_path that is a file, or under one, is a NotADirectoryError
    naming it (not mkdir's "File exists"), for both stores."""
    path = tmp_path / "plain"
    path.write_text("x")
    for make in (FileHistoryProvider, FileSessionStore):
        with pytest.raises(NotADirectoryError) as caught:
            make(path)
        assert caught.value.filename == str(path)
        assert "storage_path is not a directory" in str(caught.value)
        with pytest.raises(NotADirectoryError) as caught:
            make(path / "sub")
        assert caught.value.filename == str(path / "sub")
        assert caught.value.strerror.startswith("cannot make the storage directory: ")
    assert path.read_text() == "x"


def _outcomes(root: str, fmt: str) -> list[tuple[str, int | None, str | None, str]]:
    """Every call of both stores on ``root``, each failure as (type, errno, filename,
    strerror)."""

    async def calls() -> list[tuple[str, int | None, str | None, str]]:
        history = FileHistoryProvider(root, serialization_format=fmt)  # type: ignore[arg-type]
        store = FileSessionStore(root, serialization_format=fmt)  # type: ignore[arg-type]
        out = []
        for call in [*_history_calls(history).values(), *_store_calls(store).values()]:
            try:
                await call()
                out.append(("no error", None, None, ""))
            except OSError as exc:
                out.append(
                    (type(exc).__name__, exc.errno, exc.filename, exc.strerror or "")
                )
        return out

    return asyncio.run(calls())


def _unprivileged(work: Callable[[], Any]) -> Any:
    """``work()`` as a user the files' modes keep out: as root (whom modes do not stop)
    in a forked child that becomes nobody (65534), else here."""
    if os.geteuid() != 0:
        return work()
    read, write = os.pipe()
    with warnings.catch_warnings():
        # fork with threads: the child only runs `work`
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            os.close(read)
            os.setgid(65534)
            os.setuid(65534)
            try:
                result = work()
            except BaseException as exc:
                result = ("the child failed", repr(exc))
            os.write(write, pickle.dumps(result))
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        data = pipe.read()
    os.waitpid(pid, 0)
    return pickle.loads(data)


@FORMATS
def test_a_file_it_may_not_touch_is_a_permission_error_naming_the_session(
    fmt: str,
) -> None:
    """SE-66: files the process may not read or write (mode 0o000, as another user; a
    directory it may not write in) are a PermissionError (EACCES) from every call, whose
    filename is the session's file and whose message says which store could not do what
    to which session; nothing changes."""
    root = Path(tempfile.mkdtemp())
    try:
        root.chmod(0o755)
        asyncio.run(
            FileHistoryProvider(root, serialization_format=fmt).save_messages(
                "s", [GOOD]
            )
        )
        asyncio.run(
            FileSessionStore(root, serialization_format=fmt).set(
                "t", AgentSession(session_id="t")
            )
        )
        files = {p: p.read_bytes() for p in root.iterdir()}
        for path in files:
            path.chmod(0o000)
        if os.geteuid() != 0:
            root.chmod(0o555)
        outcomes = _unprivileged(lambda: _outcomes(str(root), fmt))
        root.chmod(0o755)
        doing = [
            "read",
            "append to",
            "take back from",
            "clear",
            "read",
            "write",
            "delete",
        ]
        owners = ["FileHistoryProvider"] * 4 + ["FileSessionStore"] * 3
        paths = [history_file(root, "s", fmt)] * 4 + [snapshot_file(root, "t", fmt)] * 3
        sessions = ["s"] * 4 + ["t"] * 3
        assert [o[:3] for o in outcomes] == [
            ("PermissionError", errno.EACCES, str(p)) for p in paths
        ]
        for (*_, strerror), owner, what, session_id in zip(
            outcomes, owners, doing, sessions, strict=True
        ):
            assert strerror.startswith(
                f"{owner} cannot {what} session {session_id!r}: "
            )
        assert {p: p.read_bytes() for p in root.iterdir()} == files
    finally:
        root.chmod(0o755)
        shutil.rmtree(root)


async def test_a_storage_directory_removed_later_is_a_file_not_found_error(
    tmp_path: Path,
) -> None:
    """SE-66: when the storage directory is gone after the store was made, a save is a
    FileNotFoundError naming the session's file and saying what failed, a load finds
    nothing."""
    root = tmp_path / "gone"
    history = FileHistoryProvider(root)
    root.rmdir()
    with pytest.raises(FileNotFoundError) as caught:
        await history.save_messages("s", [GOOD])
    assert caught.value.filename == str(root / "s.jsonl")
    assert caught.value.strerror.startswith(
        "FileHistoryProvider cannot append to session 's': "
    )
    assert await history.get_messages("s") == []


async def test_a_message_from_dict_cannot_follow_is_a_serialization_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SE-66, SE-22: should `Message.from_dict` hit the recursion limit on a stored line
    (fault injected), the load is a SerializationError naming the line, never a
    RecursionError."""
    history = FileHistoryProvider(tmp_path)
    await history.save_messages("s", [GOOD])

    def too_deep(data: Any, **kwargs: Any) -> Message:
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(Message, "from_dict", too_deep)
    with pytest.raises(
        SerializationError, match=r"History record 1 in .* is nested too deeply"
    ) as caught:
        await history.get_messages("s")
    assert caught.value.path == f"{tmp_path / 's.jsonl'}: session 's', line 1"


@FORMATS
async def test_a_keyed_save_decodes_only_the_lines_that_may_hold_a_key(
    tmp_path: Path, fmt: Any
) -> None:
    """SE-67, SE-66: a keyed save looks for its key only in the lines (records) whose
    bytes may hold it (the run-key property's name and the key): one of those it cannot
    decode fails the save, naming it, and writes nothing; another damaged line does not
    stop it (a load still names it)."""
    history = FileHistoryProvider(tmp_path, serialization_format=fmt)
    await history.save_messages("s", [GOOD], run_key="w:0")
    path = history_file(tmp_path, "s", fmt)
    good = path.read_bytes()
    damaged = (
        b'{"additional_properties": {"minagent_run_key": "w:1"}} trailing'
        if fmt == "json"
        else b"\xc1minagent_run_key w:1"
    )
    path.write_bytes(good + (damaged + b"\n" if fmt == "json" else record(damaged)))
    with pytest.raises(SerializationError) as caught:
        await history.save_messages("s", [GOOD], run_key="w:1")
    assert (
        caught.value.path
        == f"{path}: session 's', {'line' if fmt == 'json' else 'record'} 2"
    )
    assert path.read_bytes() == good + (
        damaged + b"\n" if fmt == "json" else record(damaged)
    )
    other = b"{nope" if fmt == "json" else b"\xc1"
    path.write_bytes(good + (other + b"\n" if fmt == "json" else record(other)))
    # the key is in line 1: nothing appended
    await history.save_messages("s", [GOOD], run_key="w:0")
    await history.save_messages("s", [Message("user", ["new"])], run_key="w:1")
    assert path.read_bytes().startswith(
        good + (other + b"\n" if fmt == "json" else record(other))
    )
    assert len(path.read_bytes()) > len(good) + len(other) + 4
    with pytest.raises(SerializationError) as caught:
        await history.get_messages("s")
    assert (
        caught.value.path
        == f"{path}: session 's', {'line' if fmt == 'json' else 'record'} 2"
    )


async def test_save_after_a_cut_line_starts_a_fresh_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """SE-67, SE-66: a history file whose last line a crash cut short: the next save
    starts a fresh line (its messages read back whole), and the load skips the cut line
    with a WARNING naming the file and the line."""
    history = FileHistoryProvider(storage_path=tmp_path)
    await history.save_messages("s", [Message("user", ["first"])])
    path = history_file(tmp_path, "s", "json")
    with path.open("ab") as handle:
        handle.write(b'{"role": "assistant", "contents": [{"type": "te')
    await history.save_messages("s", [Message("user", ["next"])])
    with caplog.at_level("WARNING", logger="minagent.stores.files"):
        loaded = await history.get_messages("s")
    assert [m.text for m in loaded] == ["first", "next"]
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warned) == 1
    assert str(path) in warned[0]
    assert "line 2" in warned[0]
    assert path.read_bytes().endswith(b"\n")


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX file modes")
async def test_files_the_stores_create_are_the_owners_alone(tmp_path: Path) -> None:
    """SE-24: a history file and a snapshot the file stores create are 0600 under the
    usual umask (022), not readable by the machine's other users."""
    old = os.umask(0o022)
    try:
        history = FileHistoryProvider(storage_path=tmp_path / "h")
        await history.save_messages("s", [Message("user", ["private"])])
        store = FileSessionStore(tmp_path / "snap")
        await store.set("t", AgentSession(session_id="t"))
    finally:
        os.umask(old)
    created = [*(tmp_path / "h").iterdir(), *(tmp_path / "snap").iterdir()]
    assert len(created) == 2
    assert {oct(p.stat().st_mode & 0o777) for p in created} == {oct(0o600)}
