"""The stores list what they hold: ``list_ids(prefix, limit)`` on the in-memory, SQLite
and plain-file session stores (spec/sessions.md SE-69)."""

from __future__ import annotations

import asyncio
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minagent import AgentSession, SessionStore
from minagent.stores.files import FileSessionStore
from minagent.stores.sqlite import SQLiteSessionStore

MAKERS: dict[str, Callable[[Path], Any]] = {
    "memory": lambda folder: SessionStore(),
    "sqlite": lambda folder: SQLiteSessionStore(folder / "s.db"),
    "files": lambda folder: FileSessionStore(folder / "files"),
}

# ids the file store keeps under readable names and under encoded ones (SE-24)
IDS = st.sampled_from(
    ["a/1", "a/2", "a/3", "ab/1", "b/1", "a", "plain-id", "a/ü 2", "x;y%", "a/%_"]
)
OPS = st.lists(st.tuples(st.sampled_from(["set", "delete"]), IDS), max_size=12)


async def _apply(store: Any, ops: list[tuple[str, str]], kind: str) -> list[str]:
    """Run the operations; the ids in the order of their last set, oldest first."""
    order: list[str] = []
    for op, key in ops:
        if op == "set":
            await store.set(key, AgentSession(session_id=key))
            if kind == "files":
                # file times are the order: make each set one tick later than the last
                path = store._session_file_path(key)
                stamp = 1_700_000_000_000_000_000 + len(order) * 1_000_000_000
                os.utime(path, ns=(stamp, stamp))
            if kind == "sqlite":
                # julianday('now') ticks in milliseconds: keep the sets apart
                await asyncio.sleep(0.003)
            if key in order:
                order.remove(key)
            order.append(key)
        else:
            await store.delete(key)
            if key in order:
                order.remove(key)
    return order


@pytest.mark.parametrize("kind", list(MAKERS))
@settings(max_examples=25, deadline=None)
@given(
    ops=OPS,
    prefix=st.sampled_from(["", "a", "a/", "ab/", "x;y%", "a/%"]),
    limit=st.integers(1, 12),
)
def test_list_ids_is_the_last_set_first(
    kind: str, ops: list[tuple[str, str]], prefix: str, limit: int
) -> None:
    """SE-69: for any sets and deletes, ``list_ids`` is the ids still stored that start
    with the prefix (matched as text: % and _ are not patterns), the last set first,
    at most ``limit``."""

    async def check() -> None:
        with tempfile.TemporaryDirectory() as folder:
            store = MAKERS[kind](Path(folder))
            order = await _apply(store, ops, kind)
            expected = [k for k in reversed(order) if k.startswith(prefix)][:limit]
            assert await store.list_ids(prefix=prefix, limit=limit) == expected

    asyncio.run(check())


@pytest.mark.parametrize("kind", list(MAKERS))
async def test_list_ids_refuses_bad_arguments(kind: str, tmp_path: Path) -> None:
    """SE-69: a limit below 1 (or not an integer) and a prefix that is not a string are
    ValueErrors."""
    store = MAKERS[kind](tmp_path)
    for limit in (0, -1, True, 1.5):
        with pytest.raises(ValueError, match="limit"):
            await store.list_ids(limit=limit)
    with pytest.raises(ValueError, match="prefix"):
        await store.list_ids(prefix=None)


async def test_the_file_store_skips_what_it_cannot_name(tmp_path: Path) -> None:
    """SE-69: the file store lists only ids it can read back from a file name: a hashed
    name (an id too long to encode), a temporary file, another format's file and a
    folder are skipped."""
    store = FileSessionStore(tmp_path)
    long_id = "ü" * 120  # its base64 is over 180 characters: stored under a hash
    await store.set(long_id, AgentSession(session_id="x"))
    await store.set("kept", AgentSession(session_id="kept"))
    (tmp_path / ".kept.json.123.tmp").write_text("{}")
    (tmp_path / "other.msgpack").write_bytes(b"")
    (tmp_path / "folder.json").mkdir()
    assert await store.get(long_id) is not None
    assert await store.list_ids() == ["kept"]
