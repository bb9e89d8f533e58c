"""SE-24: `FileHistoryProvider`, `FileSessionStore` and their MessagePack codec at their
edges.

What the plain-file stores refuse (bad options, bad ids, files they cannot read) and how
they fail: a clear error naming the file, nothing written by a call that fails, a
corrupt snapshot moved aside only while it is the one that was read. The MessagePack
codec is checked against a real peer (msgspec, which upstream's file stores use) in both
directions.
"""

import asyncio
import json
import sys
import types
import warnings

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from minagent import Agent, AgentSession, FileHistoryProvider, FileSessionStore, Message
from minagent.stores import files
from minagent.stores.msgpack import packb, unpackb
from minagent.testing import ScriptedChatClient, reply
from tests._support.modes import run

FORMATS = pytest.mark.parametrize("fmt", ["json", "msgpack"])
# -- options -------------------------------------------------------------------------------------


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


# -- ids and paths -------------------------------------------------------------------------------


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


# -- history -------------------------------------------------------------------------------------


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


# -- session snapshots ---------------------------------------------------------------------------


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


# -- locks on Windows ----------------------------------------------------------------------------


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


# -- the MessagePack codec -----------------------------------------------------------------------

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
