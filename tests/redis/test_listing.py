"""`RedisSessionStore.list_ids` against a real redis-server (spec/redis.md RD-11,
spec/sessions.md SE-69): the index kept by ``set`` and ``delete``, expiry and pruning,
stores under different prefixes, and the errors of listing."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from minagent import AgentSession, Message, SerializationError
from tests._support.redis_server import SERVER, RedisServer

pytest.importorskip("redis.asyncio")
minagent_redis = pytest.importorskip("minagent_redis")
RedisHistoryProvider = minagent_redis.RedisHistoryProvider
RedisSessionStore = minagent_redis.RedisSessionStore

pytestmark = pytest.mark.skipif(
    SERVER is None,
    reason="needs redis-server on PATH (Debian: apt-get install -y redis-server)",
)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RedisServer]:
    instance = RedisServer(tmp_path)
    instance.start()
    try:
        yield instance
    finally:
        instance.stop()


def _session(session_id: str) -> AgentSession:
    return AgentSession(session_id=session_id)


async def _gone(admin: Any, key: str) -> None:
    """Wait until Redis has expired ``key`` (set to expire in a millisecond)."""
    for _ in range(500):
        if not await admin.exists(key):
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"{key} did not expire")


async def test_set_and_delete_keep_the_index(server: RedisServer) -> None:
    """RD-11: ``set`` adds the id to the sorted set ``{key_prefix}session-index`` with
    a stamp above every earlier one, a second ``set`` moves it to the front, ``delete``
    removes it with the session; a server that forgot the set script (restarted, or
    SCRIPT FLUSH) is given it again."""
    store = RedisSessionStore(url=server.url, key_prefix="p:")
    admin = store.redis
    try:
        for session_id in ("a", "b", "c"):
            await store.set(session_id, _session(session_id))
        await store.set("a", _session("a"))
        assert await store.list_ids() == ["a", "c", "b"]
        scored = await admin.zrevrange("p:session-index", 0, -1, withscores=True)
        assert [member for member, _ in scored] == [b"a", b"c", b"b"]
        assert await admin.get("p:session-stamp") == b"4"
        await store.delete("c")
        assert await admin.zscore("p:session-index", "c") is None
        assert not await admin.exists("p:session:c")
        assert await store.list_ids() == ["a", "b"]
        # deleting what is not there changes nothing
        await store.delete("zz")
        assert await store.list_ids() == ["a", "b"]
        await admin.script_flush()
        await store.set("b", _session("b"))
        assert await store.list_ids() == ["b", "a"]
    finally:
        await store.aclose()


async def test_expired_sessions_are_skipped_and_pruned(server: RedisServer) -> None:
    """RD-11: with ``ttl``, a session whose key expired is not listed and its index
    entry is removed by the listing; one deleted by hand likewise; the index and the
    counter expire with the last ``set`` (their TTL is renewed by each)."""
    store = RedisSessionStore(url=server.url, ttl=60)
    admin = store.redis
    try:
        for session_id in ("a", "b", "c", "d"):
            await store.set(session_id, _session(session_id))
        for key in ("minagent:session-index", "minagent:session-stamp"):
            assert 0 < await admin.ttl(key) <= 60
        await admin.pexpire("minagent:session:b", 1)
        await _gone(admin, "minagent:session:b")
        await admin.delete("minagent:session:d")
        assert await store.list_ids() == ["c", "a"]
        members = await admin.zrange("minagent:session-index", 0, -1)
        assert sorted(members) == [b"a", b"c"]
        # set again, an expired id is listed again, first
        await store.set("b", _session("b"))
        assert await store.list_ids() == ["b", "c", "a"]
    finally:
        await store.aclose()


async def test_a_pruned_entry_set_again_meanwhile_is_kept(server: RedisServer) -> None:
    """RD-11: the listing removes an entry only while its session is still gone: when
    the session is there again by the time it removes, the entry stays."""
    store = RedisSessionStore(url=server.url)
    admin = store.redis
    try:
        await store.set("a", _session("a"))
        await store.set("b", _session("b"))
        await admin.delete("minagent:session:a")
        # the listing saw "a" gone; before its removal, "a" is set again
        await store.set("a", _session("a"))
        await store._prune(["a"])
        assert await admin.zscore("minagent:session-index", "a") is not None
        await store._prune(["a", "b"])
        assert await admin.zcard("minagent:session-index") == 2
        assert await store.list_ids() == ["a", "b"]
    finally:
        await store.aclose()


async def test_listing_reads_no_session_and_pages_through_the_index(
    server: RedisServer,
) -> None:
    """RD-11, SE-69: listing loads no session (one that cannot be read is listed all
    the same); a prefix that only the oldest ids match is found past the first pages;
    gone entries on several pages are skipped; ``limit`` counts what is listed."""
    store = RedisSessionStore(url=server.url)
    admin = store.redis
    try:
        await store.set("old/1", _session("old/1"))
        await store.set("old/2", _session("old/2"))
        for n in range(450):
            await store.set(f"new/{n}", _session("x"))
        # every third new one gone (by hand): spread over the pages
        await admin.delete(*[f"minagent:session:new/{n}" for n in range(0, 450, 3)])
        await admin.set("minagent:session:old/2", b"not json")
        with pytest.raises(SerializationError):
            await store.get("old/2")
        assert await store.list_ids(prefix="old/") == ["old/2", "old/1"]
        kept = [f"new/{n}" for n in reversed(range(450)) if n % 3]
        assert await store.list_ids(prefix="new/", limit=1000) == kept
        assert await store.list_ids(limit=250) == kept[:250]
        assert await store.list_ids(limit=1000) == [*kept, "old/2", "old/1"]
        assert await admin.zcard("minagent:session-index") == len(kept) + 2
    finally:
        await store.aclose()


async def test_stores_under_other_prefixes_never_list_each_others_ids(
    server: RedisServer,
) -> None:
    """RD-11: the index lives under the store's ``key_prefix``: two stores on one
    database with different prefixes list only their own ids, and a delete in one
    leaves the other's entry; the index's name is no key of a RedisHistoryProvider
    under the same prefix (one whose source id is ``session-index`` included)."""
    one = RedisSessionStore(url=server.url, key_prefix="one:")
    two = RedisSessionStore(url=server.url, key_prefix="two:")
    history = RedisHistoryProvider("session-index", url=server.url, key_prefix="one:")
    try:
        await one.set("shared", _session("shared"))
        await one.set("first", _session("first"))
        await two.set("second", _session("second"))
        await two.set("shared", _session("shared"))
        await history.save_messages("shared", [Message("user", ["hi"])])
        assert await one.list_ids() == ["first", "shared"]
        assert await two.list_ids() == ["shared", "second"]
        await one.delete("shared")
        assert await one.list_ids() == ["first"]
        assert await two.list_ids() == ["shared", "second"]
        assert [m.text for m in await history.get_messages("shared")] == ["hi"]
    finally:
        for closing in (one, two, history):
            await closing.aclose()


async def test_sessions_saved_before_the_index_are_not_listed(
    server: RedisServer,
) -> None:
    """RD-11: a session stored without an index entry (by an earlier version of the
    plugin) is readable but not listed until it is set again."""
    store = RedisSessionStore(url=server.url)
    try:
        data = json.dumps(_session("legacy").to_dict())
        await store.redis.set("minagent:session:legacy", data)
        await store.set("new", _session("new"))
        assert await store.get("legacy") is not None
        assert await store.list_ids() == ["new"]
        await store.set("legacy", _session("legacy"))
        assert await store.list_ids() == ["legacy", "new"]
    finally:
        await store.aclose()


async def test_the_errors_of_listing(server: RedisServer) -> None:
    """RD-11, RD-7, RD-10, RD-4: an index key of another type, or an id in it that is
    not valid text, is a SerializationError naming the index; an ACL that denies the keys is
    a RedisCommandError "NOPERM" naming the index; an unreachable Redis is
    RedisUnavailableError; on a read-only replica the listing answers (without the gone
    entries) though it cannot remove them."""
    store = RedisSessionStore(url=server.url)
    admin = store.redis
    limited = RedisSessionStore(url=f"redis://limited:secret@127.0.0.1:{server.port}/0")
    nowhere = RedisSessionStore(url="redis://127.0.0.1:1/0")
    try:
        await store.set("a", _session("a"))
        await store.set("b", _session("b"))
        await admin.execute_command(
            "ACL", "SETUSER", "limited", "on", ">secret", "~other:*", "+@all"
        )
        with pytest.raises(minagent_redis.RedisCommandError) as caught:
            await limited.list_ids()
        assert (caught.value.code, caught.value.key) == (
            "NOPERM",
            "minagent:session-index",
        )
        with pytest.raises(minagent_redis.RedisUnavailableError):
            await nowhere.list_ids()

        await admin.delete("minagent:session:a")
        await admin.execute_command("REPLICAOF", "127.0.0.1", "1")
        try:
            assert await store.list_ids() == ["b"]
        finally:
            await admin.execute_command("REPLICAOF", "NO", "ONE")
        # the removal was refused there: the entry is still in the index
        assert await admin.zscore("minagent:session-index", "a") is not None

        await admin.zadd("minagent:session-index", {b"\xff": 99})
        with pytest.raises(SerializationError, match=r"^minagent:session-index"):
            await store.list_ids()
        await admin.delete("minagent:session-index")
        await admin.set("minagent:session-index", "a string")
        with pytest.raises(SerializationError, match=r"^minagent:session-index"):
            await store.list_ids()
    finally:
        for closing in (store, limited, nowhere):
            await closing.aclose()
