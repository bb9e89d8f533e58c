"""The plain-file history's run keys (spec/sessions.md SE-67) where they differ from
SQLite's: the key lives in the run's first message line, a take-back in the middle of
the file replaces the file, and a writer that waited for the lock of a file replaced
meanwhile writes to the new one. What the file history shares with SQLite and Redis is
in test_run_keys.py."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pytest

from minagent import FileHistoryProvider, Message
from minagent.stores import files

FORMATS = pytest.mark.parametrize("fmt", ["json", "msgpack"])


def batch(label: str, n: int = 2) -> list[Message]:
    return [
        Message("user" if i % 2 == 0 else "assistant", [f"{label}.{i}"])
        for i in range(n)
    ]


def texts(messages: list[Message]) -> list[str]:
    return [m.text for m in messages]


def names(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


async def test_a_loaded_message_never_carries_the_run_key(tmp_path: Path) -> None:
    """SE-67: the run key is stored in the first message's line, in the same line as the
    message; a load does not return it, and a save does not write the reserved property
    from the messages it is given (the given message is not changed)."""
    history = FileHistoryProvider(tmp_path)
    given_message = Message(
        "user", ["q"], additional_properties={"minagent_run_key": "forged", "kept": 1}
    )
    await history.save_messages(
        "s", [given_message, Message("assistant", ["a"])], run_key="w:0"
    )
    lines = [
        json.loads(line) for line in (tmp_path / "s.jsonl").read_text().splitlines()
    ]
    assert [line.get("additional_properties") for line in lines] == [
        {"kept": 1, "minagent_run_key": "w:0"},
        None,
    ]
    assert given_message.additional_properties == {
        "minagent_run_key": "forged",
        "kept": 1,
    }
    loaded = await history.get_messages("s")
    assert [m.additional_properties for m in loaded] == [{"kept": 1}, {}]
    await history.save_messages("s", [given_message])
    assert [m.additional_properties for m in await history.get_messages("s")] == [
        {"kept": 1},
        {},
        {"kept": 1},
    ]
    # a key the file does not hold: all
    assert len(await history.get_messages("s", run_key="forged")) == 3


@FORMATS
async def test_a_take_back_in_the_middle_replaces_the_file_without_the_run(
    tmp_path: Path, fmt: Any
) -> None:
    """SE-67, SE-20: when another run was appended after the run taken back, the file is
    written again without the run's messages (and so without its key): the other runs
    stay, in order, and the same run saved again is appended once, at the end; at the
    end of the file a take-back truncates it, keeping the file itself."""
    history = FileHistoryProvider(tmp_path, serialization_format=fmt)
    path = tmp_path / ("s.jsonl" if fmt == "json" else "s.msgpack")
    await history.save_messages("s", batch("a"), run_key="w:0")
    await history.save_messages("s", batch("b", 3), run_key="w:1")
    await history.save_messages("s", batch("c"))
    inode = path.stat().st_ino
    await history.discard_messages("s", batch("b", 3), run_key="w:1")
    assert texts(await history.get_messages("s")) == texts(batch("a") + batch("c"))
    assert path.stat().st_ino != inode  # replaced whole
    # key gone
    assert texts(await history.get_messages("s", run_key="w:1")) == texts(
        batch("a") + batch("c")
    )
    await history.save_messages("s", batch("b", 3), run_key="w:1")
    await history.save_messages("s", batch("b", 3), run_key="w:1")
    assert texts(await history.get_messages("s")) == texts(
        batch("a") + batch("c") + batch("b", 3)
    )
    inode = path.stat().st_ino
    await history.discard_messages("s", batch("b", 3), state={"run_key": "w:1"})
    assert path.stat().st_ino == inode  # truncated in place
    assert texts(await history.get_messages("s")) == texts(batch("a") + batch("c"))
    # messages it does not hold: nothing changes
    await history.discard_messages("s", batch("z"))
    assert texts(await history.get_messages("s")) == texts(batch("a") + batch("c"))
    assert names(tmp_path) == [path.name]  # no temporary file left


@FORMATS
async def test_a_writer_that_waited_for_a_replaced_file_writes_to_the_new_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: Any
) -> None:
    """SE-67: a save that opened the session's file and then got its lock after a
    take-back of another process replaced the file writes to the file the path names now
    (its messages are not lost in the replaced one), and a keyed save looks for its key
    there."""
    history = FileHistoryProvider(tmp_path, serialization_format=fmt)
    path = tmp_path / ("s.jsonl" if fmt == "json" else "s.msgpack")
    await history.save_messages("s", batch("a"), run_key="w:0")
    real_lock = files._os_lock
    replaced = []

    @contextlib.contextmanager
    def lock_after_a_replace(handle: IO[Any], *, exclusive: bool) -> Iterator[None]:
        # another process's take-back replaces the file while this one waits
        if not replaced:
            copy = path.with_name("copy")
            copy.write_bytes(path.read_bytes())
            copy.replace(path)
            replaced.append(handle.fileno())
        with real_lock(handle, exclusive=exclusive):
            yield

    monkeypatch.setattr(files, "_os_lock", lock_after_a_replace)
    # its lock is the replaced file's: it opens the path again
    await history.save_messages("s", batch("c"))
    replaced.clear()
    # the key is in the new file too
    await history.save_messages("s", batch("b"), run_key="w:0")
    monkeypatch.undo()
    assert replaced  # the keyed save waited for a replaced file too
    assert texts(await history.get_messages("s")) == texts(batch("a") + batch("c"))


@FORMATS
async def test_a_file_removed_while_a_caller_waited_is_opened_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: Any
) -> None:
    """SE-67, SE-24: a load that got the lock of a file removed meanwhile finds no
    history (not the removed file's); a save in the same place creates the file again
    and its messages are there; a take-back of nothing changes nothing."""
    history = FileHistoryProvider(tmp_path, serialization_format=fmt)
    path = tmp_path / ("s.jsonl" if fmt == "json" else "s.msgpack")
    real_lock = files._os_lock

    @contextlib.contextmanager
    def lock_after_a_removal(handle: IO[Any], *, exclusive: bool) -> Iterator[None]:
        # another process removed the file while this one waited
        path.unlink(missing_ok=True)
        monkeypatch.setattr(files, "_os_lock", real_lock)
        with real_lock(handle, exclusive=exclusive):
            yield

    await history.save_messages("s", batch("a"))
    monkeypatch.setattr(files, "_os_lock", lock_after_a_removal)
    assert await history.get_messages("s") == []
    await history.save_messages("s", batch("b"))
    monkeypatch.setattr(files, "_os_lock", lock_after_a_removal)
    await history.save_messages("s", batch("c"))
    assert texts(await history.get_messages("s")) == texts(batch("c"))
    await history.discard_messages("s", [])
    assert texts(await history.get_messages("s")) == texts(batch("c"))


async def test_a_key_escaped_by_the_codec_is_still_found(tmp_path: Path) -> None:
    """SE-67: a key the JSON codec writes escaped (a custom `dumps` with ASCII-only
    output writes "é" as a backslash escape) is found all the same: saving its run again
    appends nothing, and a key that differs in that character appends."""
    with pytest.warns(DeprecationWarning, match="deprecated"):
        history = FileHistoryProvider(tmp_path, dumps=json.dumps)  # ensure_ascii=True
    await history.save_messages("s", batch("a"), run_key='w:\u00e9"0')
    assert "\\u00e9" in (tmp_path / "s.jsonl").read_text()
    await history.save_messages("s", batch("a"), run_key='w:\u00e9"0')
    await history.save_messages("s", batch("b"), run_key='w:e"0')
    assert texts(await history.get_messages("s")) == texts(batch("a") + batch("b"))


@FORMATS
async def test_a_save_is_in_the_file_before_its_lock_is_released(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: Any
) -> None:
    """SE-67, SE-24: when a save lets go of the file's lock its messages (and its key)
    are in the file, not in a buffer flushed later: a process that takes the lock next
    and reads finds them (else two processes could both miss a key and both append)."""
    fcntl = pytest.importorskip("fcntl")
    history = FileHistoryProvider(tmp_path, serialization_format=fmt)
    sizes: list[int] = []
    real_flock = fcntl.flock

    def flock(fd: int, operation: int) -> None:
        if operation == fcntl.LOCK_UN:
            sizes.append(os.fstat(fd).st_size)
        real_flock(fd, operation)

    monkeypatch.setattr(fcntl, "flock", flock)
    await history.save_messages("s", batch("a"), run_key="w:0")
    await history.save_messages("s", batch("b"))
    monkeypatch.undo()
    path = tmp_path / ("s.jsonl" if fmt == "json" else "s.msgpack")
    assert sizes[-1] == path.stat().st_size
    assert 0 < sizes[0] < sizes[-1]
