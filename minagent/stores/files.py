"""History and sessions in plain files, one file per session (spec/sessions.md SE-19 .. SE-23).

Rules
-----
1. Never on the event loop: every file operation runs in a worker thread (as SE-13).
2. A run's messages are appended in one write under an exclusive lock of the file, and read under
   a shared one, so several processes on one session interleave whole runs and a reader never sees
   half a run (SE-20); a session snapshot is replaced whole (a temporary file, then `os.replace`),
   so a reader sees the old snapshot or the new one (SE-22).
3. A session id becomes a file name only if it is a safe one (SE-19); any other id is encoded, so
   no id can name a file outside the storage directory.

Theory of operation
-------------------
`FileHistoryProvider` keeps each session's messages in ``<storage_path>/<name>.jsonl``, one message
(its versioned JSON, TY-8) a line, or with ``serialization_format="msgpack"`` in
``<name>.msgpack``, each message a MessagePack record after its 4-byte big-endian length.
`FileSessionStore` keeps each session as one snapshot file, ``<name>.json`` (or ``.msgpack``):
``{"type": "session", "version": "1.0", "session_id", "service_session_id", "state"}``, the state
encoded as `AgentSession.to_dict` encodes it. A snapshot that is not JSON (MessagePack) is moved
aside to ``.<file>.<random>.corrupt`` and the read fails saying to retry; a snapshot of another
shape or version is an error that leaves the file where it is. Locks: one `threading.Lock` per file
name stripe within the process, and an OS file lock (``fcntl.flock``; ``msvcrt.locking`` on
Windows) across processes.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import json
import os
import threading
import uuid
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any, ClassVar, Literal

from .._sessions import AgentSession, HistoryProvider, check_session_id, decode_state, encode_state
from .._types import Message
from .memory import SessionStore
from .msgpack import packb, unpackb

__all__ = ["FileHistoryProvider", "FileSessionStore"]

Format = Literal["json", "msgpack"]
_RESERVED = frozenset(
    {"CON", "PRN", "AUX", "NUL", *(f"{p}{n}" for p in ("COM", "LPT") for n in (*"123456789", "¹", "²", "³"))}
)
_ENCODED = "~session-"
_LOCKS = tuple(threading.Lock() for _ in range(64))


def file_stem(session_id: str) -> str:
    """SE-19: the id itself when it is a portable file name (ASCII letters, digits, ``.``, ``_``, ``-``;
    not a Windows device name, not starting with ``.``, not ending with ``.``), else ``~session-``
    and its URL-safe base64 (or its SHA-256 when that would be longer than 180 characters)."""
    device = session_id.split(".", 1)[0].upper()
    if (
        session_id
        and not session_id.startswith(".")
        and not session_id.endswith((".", " "))
        and device not in _RESERVED
        and all(c.isascii() and (c.isalnum() or c in "._-") for c in session_id)
    ):
        return session_id
    encoded = _ENCODED + base64.urlsafe_b64encode(session_id.encode()).decode().rstrip("=")
    return encoded if len(encoded) <= 180 else f"{_ENCODED}sha256-{hashlib.sha256(session_id.encode()).hexdigest()}"


def _path_in(root: Path, name: str, session_id: object) -> Path:
    candidate = root / name
    path = candidate.resolve()
    if path != candidate or not path.is_relative_to(root):
        raise ValueError(f"Session path escaped storage directory: {session_id!r}")
    return path


@contextlib.contextmanager
def _os_lock(handle: IO[Any], *, exclusive: bool) -> Iterator[None]:
    """SE-20: an OS lock on an open file, held for the block, across processes."""
    try:
        import fcntl
    except ImportError:  # Windows: lock the first byte
        import msvcrt

        handle.seek(0)
        msvcrt.locking(handle.fileno(), msvcrt.LK_LOCK, 1)  # type: ignore[attr-defined]
        try:
            yield
        finally:
            handle.seek(0)
            msvcrt.locking(handle.fileno(), msvcrt.LK_UNLCK, 1)  # type: ignore[attr-defined]
        return
    fcntl.flock(handle.fileno(), fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
    try:
        yield
    finally:
        fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _lock_for(path: Path) -> threading.Lock:
    return _LOCKS[hash(path) % len(_LOCKS)]


def _storage(path: str | os.PathLike[str], serialization_format: str) -> tuple[Path, Path]:
    if serialization_format not in ("json", "msgpack"):
        raise ValueError("serialization_format must be 'json' or 'msgpack'")
    storage = Path(path)
    storage.mkdir(parents=True, exist_ok=True)
    return storage, storage.resolve()


def _dumps(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


class FileHistoryProvider(HistoryProvider):
    """A `HistoryProvider` that appends each session's messages to a file of its own (SE-20)."""

    DEFAULT_SOURCE_ID: ClassVar[str] = "file_history"
    DEFAULT_SESSION_FILE_STEM: ClassVar[str] = "default"

    def __init__(
        self,
        storage_path: str | os.PathLike[str],
        *,
        source_id: str = DEFAULT_SOURCE_ID,
        load_messages: bool = True,
        store_inputs: bool = True,
        store_context_messages: bool = False,
        store_context_from: set[str] | None = None,
        store_outputs: bool = True,
        skip_excluded: bool = False,
        serialization_format: Format = "json",
        dumps: Callable[[Any], str | bytes] | None = None,
        loads: Callable[[str | bytes], Any] | None = None,
    ) -> None:
        if serialization_format == "msgpack" and (dumps is not None or loads is not None):
            raise ValueError("Custom dumps and loads are supported only with serialization_format='json'")
        if dumps is not None or loads is not None:
            warnings.warn(
                "FileHistoryProvider(dumps=, loads=) are deprecated (as upstream's): omit them to use the "
                "built-in codec of serialization_format",
                DeprecationWarning,
                stacklevel=2,
            )
        super().__init__(
            source_id,
            load_messages=load_messages,
            store_inputs=store_inputs,
            store_context_messages=store_context_messages,
            store_context_from=store_context_from,
            store_outputs=store_outputs,
        )
        self.storage_path, self._root = _storage(storage_path, serialization_format)
        self.serialization_format = serialization_format
        self.skip_excluded = skip_excluded
        self.dumps: Callable[[Any], str | bytes] = dumps or _dumps
        self.loads: Callable[[str | bytes], Any] = loads or json.loads

    def _session_file_path(self, session_id: str | None) -> Path:
        suffix = ".jsonl" if self.serialization_format == "json" else ".msgpack"
        stem = file_stem(session_id or self.DEFAULT_SESSION_FILE_STEM)
        return _path_in(self._root, stem + suffix, session_id)

    async def get_messages(
        self, session_id: str | None, *, state: dict[str, Any] | None = None, **kwargs: Any
    ) -> list[Message]:
        path = self._session_file_path(session_id)
        messages = await asyncio.to_thread(self._read, path)
        if self.skip_excluded:
            messages = [m for m in messages if not m.additional_properties.get("_excluded")]
        return messages

    async def save_messages(
        self,
        session_id: str | None,
        messages: Sequence[Message],
        *,
        state: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        if not messages:
            return
        path = self._session_file_path(session_id)
        if self.serialization_format == "json":
            data: str | bytes = "".join(self._line(m) + "\n" for m in messages)  # encoded before anything is written
        else:
            records = [packb(m.to_dict()) for m in messages]
            data = b"".join(len(r).to_bytes(4, "big") + r for r in records)
        await asyncio.to_thread(self._append, path, data)

    def _line(self, message: Message) -> str:
        text = self.dumps(message.to_dict())
        text = text.decode("utf-8") if isinstance(text, bytes) else text
        if "\n" in text or "\r" in text:
            raise ValueError("FileHistoryProvider.dumps must return single-line JSON for JSON Lines storage")
        return text

    def _append(self, path: Path, data: str | bytes) -> None:
        with _lock_for(path):
            if isinstance(data, str):
                with path.open("a", encoding="utf-8") as text, _os_lock(text, exclusive=True):
                    text.write(data)
            else:
                with path.open("ab") as binary, _os_lock(binary, exclusive=True):
                    binary.write(data)

    def _read(self, path: Path) -> list[Message]:
        with _lock_for(path):
            try:
                handle = path.open("rb")
            except FileNotFoundError:
                return []
            with handle, _os_lock(handle, exclusive=False):
                raw = handle.read()
        return self._lines(raw, path) if self.serialization_format == "json" else self._records(raw, path)

    def _lines(self, raw: bytes, path: Path) -> list[Message]:
        out = []
        for number, line in enumerate(raw.decode("utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                payload = self.loads(line.strip())
            except (TypeError, ValueError) as exc:
                raise ValueError(f"Failed to deserialize history line {number} from '{path}': {exc}") from exc
            out.append(_message(payload, number, path))
        return out

    @staticmethod
    def _records(raw: bytes, path: Path) -> list[Message]:
        out, at, number = [], 0, 0
        while at < len(raw):
            number += 1
            size = int.from_bytes(raw[at : at + 4], "big")
            if at + 4 > len(raw) or at + 4 + size > len(raw) or size == 0:
                raise ValueError(f"History record {number} in '{path}' is truncated (length {size})")
            try:
                payload = unpackb(raw[at + 4 : at + 4 + size])
            except ValueError as exc:
                raise ValueError(f"Failed to deserialize history record {number} from '{path}': {exc}") from exc
            out.append(_message(payload, number, path))
            at += 4 + size
        return out


def _message(payload: Any, number: int, path: Path) -> Message:
    if not isinstance(payload, dict):
        raise ValueError(f"History record {number} in '{path}' did not deserialize to a mapping")
    try:
        return Message.from_dict(payload)
    except ValueError as exc:
        raise ValueError(f"History record {number} in '{path}' is not a valid Message payload: {exc}") from exc


class FileSessionStore(SessionStore):
    """A `SessionStore` that keeps each session as one snapshot file, replaced whole (SE-22)."""

    MAX_SESSION_ID_LENGTH: ClassVar[int] = 128
    VERSION: ClassVar[str] = "1.0"

    def __init__(self, storage_path: str | os.PathLike[str], *, serialization_format: Format = "json") -> None:
        super().__init__()
        self.storage_path, self._root = _storage(storage_path, serialization_format)
        self.serialization_format = serialization_format

    def _session_file_path(self, session_id: str) -> Path:
        if len(check_session_id(session_id)) > self.MAX_SESSION_ID_LENGTH:
            raise ValueError(f"session_id must be at most {self.MAX_SESSION_ID_LENGTH} characters")
        suffix = ".json" if self.serialization_format == "json" else ".msgpack"
        return _path_in(self._root, file_stem(session_id) + suffix, session_id)

    async def get(self, session_id: str) -> AgentSession | None:
        path = self._session_file_path(session_id)
        return await asyncio.to_thread(self._read, path)

    async def set(self, session_id: str, session: AgentSession) -> None:
        path = self._session_file_path(session_id)
        if type(session) is not AgentSession:
            raise TypeError(
                "FileSessionStore stores AgentSession instances only; a subclass needs a SessionStore of its own"
            )
        snapshot = {
            "type": "session",
            "version": self.VERSION,
            "session_id": session.session_id,
            "service_session_id": session.service_session_id,
            "state": encode_state(session.state),
        }
        data = _dumps(snapshot) if self.serialization_format == "json" else packb(snapshot)
        await asyncio.to_thread(self._write, path, data)

    async def delete(self, session_id: str) -> None:
        path = self._session_file_path(session_id)

        def unlink() -> None:
            with _lock_for(path):
                path.unlink(missing_ok=True)

        await asyncio.to_thread(unlink)

    @staticmethod
    def _write(path: Path, data: bytes) -> None:
        temporary = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
        with _lock_for(path):
            try:
                temporary.write_bytes(data)
                os.replace(temporary, path)
            finally:
                temporary.unlink(missing_ok=True)

    def _read(self, path: Path) -> AgentSession | None:
        with _lock_for(path):
            try:
                raw = path.read_bytes()
            except FileNotFoundError:
                return None
            try:
                snapshot = json.loads(raw) if self.serialization_format == "json" else unpackb(raw)
            except (ValueError, UnicodeDecodeError) as exc:
                moved = self._quarantine_corrupt_snapshot(path, raw)
                where = f"quarantined to '{moved}'; retry to start a new session" if moved else "changed; retry"
                raise ValueError(f"Failed to deserialize session from '{path}': the snapshot was {where}") from exc
        return self._restore(snapshot, path)

    @staticmethod
    def _quarantine_corrupt_snapshot(path: Path, raw: bytes) -> Path | None:
        """SE-22: move an unchanged corrupt snapshot aside, so a retry starts afresh."""
        try:
            if path.read_bytes() != raw:
                return None
        except FileNotFoundError:
            return None
        moved = path.with_name(f".{path.name}.{uuid.uuid4().hex}.corrupt")
        os.replace(path, moved)
        return moved

    def _restore(self, snapshot: Any, path: Path) -> AgentSession:
        if not isinstance(snapshot, dict):
            raise ValueError(f"Session snapshot '{path}' has an invalid schema: not a JSON object")
        if snapshot.get("version") != self.VERSION:
            raise ValueError(
                f"Unsupported session snapshot version {snapshot.get('version')!r} in '{path}'; "
                f"expected {self.VERSION!r}"
            )
        session_id, state = snapshot.get("session_id"), snapshot.get("state")
        if snapshot.get("type") != "session" or not isinstance(session_id, str) or not isinstance(state, dict):
            raise ValueError(f"Session snapshot '{path}' has an invalid schema")
        try:
            restored = decode_state(state, "state")
        except (TypeError, ValueError, AttributeError, KeyError) as exc:
            raise ValueError(f"Failed to restore session state from '{path}': {exc}") from exc
        return AgentSession(
            session_id=session_id, service_session_id=snapshot.get("service_session_id"), state=restored
        )
