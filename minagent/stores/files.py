"""History and sessions in plain files, one file per session (spec/sessions.md SE-24,
SE-66, SE-67).

Rules
-----
1. Never on the event loop: every file operation runs in a worker thread (as SE-13).
2. A run's messages are appended in one write under an exclusive lock of the file, and
   read under a shared one, so several processes on one session interleave whole runs
   and a reader never sees half a run (SE-24); a session snapshot is replaced whole (a
   temporary file, then `os.replace`), so a reader sees the old snapshot or the new one.
3. A session id becomes a file name only if it is a safe one; any other id is encoded,
   so no id can name a file outside the storage directory, and a symlink, FIFO or device
   placed where a session's file belongs is refused before it is opened (SE-24, SE-66).
4. What a file holds and cannot read is a `SerializationError` naming the file, the
   session and the line (or record); an OS failure keeps its `OSError` type and says
   which session it was (SE-66).
5. A keyed run is stored once: its key travels with its first message, in the same
   write, and the look for the key and the append happen under one exclusive lock
   (SE-67).

Theory of operation
-------------------
`FileHistoryProvider` keeps each session's messages in ``<storage_path>/<name>.jsonl``,
one message (its versioned JSON, TY-8) a line, or with
``serialization_format="msgpack"`` in ``<name>.msgpack``, each message a MessagePack
record after its 4-byte big-endian length. `FileSessionStore` keeps each session as one
snapshot file, ``<name>.json`` (or ``.msgpack``):
``{"type": "session", "version": "1.0", "session_id", "service_session_id", "state"}``,
the state encoded as `AgentSession.to_dict` encodes it. A snapshot that is not JSON
(MessagePack) is moved aside to ``.<file>.<random>.corrupt`` and the read fails saying
to retry; a snapshot of another shape or version is an error that leaves the file where
it is. Locks: one `threading.Lock` per file name stripe within the process, and an OS
file lock (``fcntl.flock``; ``msvcrt.locking`` on Windows) across processes.

Run keys (SE-67): a save that names its run (``run_key=``, or ``state["run_key"]`` as a
durable run gives it) writes the key into its first message's additional properties
(``"minagent_run_key"``, taken out again by every load), so the key and the messages are
one ``write`` and no crash can leave the messages without their key. The save opens the
file for reading and appending, takes the exclusive OS lock, reads the file, and appends
only when no line holds the key: another process's save of the same run waits for the
lock and then finds the key; it decodes only the lines (records) whose bytes hold the
property's name and the key's UTF-8 bytes (or, in JSON, a backslash that could escape
them: JSON escapes no ASCII letter, MessagePack nothing), so its cost is a byte search
of the file and the decoding of the line that holds the key, if any. A keyed load stops
before the line that holds its key. A take-back (SE-20) truncates the file when the
run's messages are its end and otherwise writes the file without them to a temporary
file that replaces it; a process that then gets the lock of the replaced file sees that
the path names another file now, and opens it again.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import json
import logging
import os
import stat
import threading
import uuid
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any, ClassVar, Literal, NamedTuple

from .._exceptions import SerializationError
from .._sessions import (
    AgentSession,
    HistoryProvider,
    check_session_id,
    decode_state,
    encode_state,
)
from .._types import Message
from .memory import SessionStore, check_listing, save_stamp
from .msgpack import packb, unpackb

__all__ = ["RUN_KEY_PROPERTY", "FileHistoryProvider", "FileSessionStore"]

Format = Literal["json", "msgpack"]
_RESERVED = frozenset(
    {
        "CON",
        "PRN",
        "AUX",
        "NUL",
        *(f"{p}{n}" for p in ("COM", "LPT") for n in (*"123456789", "¹", "²", "³")),
    }
)
_ENCODED = "~session-"
_LOCKS = tuple(threading.Lock() for _ in range(64))
# SE-67: the additional property of a keyed run's first message
RUN_KEY_PROPERTY = "minagent_run_key"
# its bytes in a line or record that holds a key (no codec escapes them)
_MARK = RUN_KEY_PROPERTY.encode()
_LOGGER = logging.getLogger(__name__)


def file_stem(session_id: str) -> str:
    """SE-24: the id itself when it is a portable file name (ASCII letters, digits,
    ``.``, ``_``, ``-``; not a Windows device name, not starting with ``.``, not ending
    with ``.``), else ``~session-`` and its URL-safe base64 (or its SHA-256 when that
    would be longer than 180 characters)."""
    device = session_id.split(".", 1)[0].upper()
    if (
        session_id
        and not session_id.startswith(".")
        and not session_id.endswith((".", " "))
        and device not in _RESERVED
        and all(c.isascii() and (c.isalnum() or c in "._-") for c in session_id)
    ):
        return session_id
    encoded = _ENCODED + base64.urlsafe_b64encode(session_id.encode()).decode().rstrip(
        "="
    )
    return (
        encoded
        if len(encoded) <= 180
        else f"{_ENCODED}sha256-{hashlib.sha256(session_id.encode()).hexdigest()}"
    )


def _id_of_stem(stem: str) -> str | None:
    """SE-69: the session id a file name stands for (the inverse of `file_stem`), or
    None when the name is a hash or not one `file_stem` makes."""
    if not stem.startswith(_ENCODED):
        return stem if stem and file_stem(stem) == stem else None
    encoded = stem[len(_ENCODED) :]
    if encoded.startswith("sha256-"):
        return None
    try:
        session_id = base64.urlsafe_b64decode(
            encoded + "=" * (-len(encoded) % 4)
        ).decode()
    except (ValueError, UnicodeDecodeError):
        return None
    return session_id if file_stem(session_id) == stem else None


def _path_in(root: Path, name: str, session_id: object) -> Path:
    """SE-24, SE-66: the session's file in the directory; a symlink placed there is
    refused."""
    candidate = root / name
    path = candidate.resolve()
    if path != candidate or not path.is_relative_to(root):
        raise SerializationError(
            f"{candidate}: session {session_id!r}",
            f"Session path escaped storage directory: it is a symbolic link to '{path}'; refused",
        )
    return path


def _check_regular(path: Path, session_id: object) -> None:
    """SE-66: refuse a FIFO, socket or device where a session's file belongs, before
    opening it (a FIFO would block the read forever); a missing file or a directory is
    left to ``open``."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISREG(mode) and not stat.S_ISDIR(mode):
        raise SerializationError(
            f"{path}: session {session_id!r}", "not a regular file; refused"
        )


@contextlib.contextmanager
def _os_errors(failed: str, path: Path) -> Iterator[None]:
    """SE-66: an OS failure keeps its type (PermissionError, IsADirectoryError, ...) and
    errno, takes ``path`` as its file name, and says what ``failed``."""
    try:
        yield
    except OSError as exc:
        raise type(exc)(
            exc.errno, f"{failed}: {exc.strerror or exc}", str(path)
        ) from exc


@contextlib.contextmanager
def _os_lock(handle: IO[Any], *, exclusive: bool) -> Iterator[None]:
    """SE-24: an OS lock on an open file, held for the block, across processes."""
    try:
        import fcntl
    except ImportError:  # Windows: lock the first byte
        import msvcrt

        handle.seek(0)
        msvcrt.locking(handle.fileno(), msvcrt.LK_LOCK, 1)  # type: ignore[attr-defined]
        try:
            yield
        finally:
            handle.seek(0)  # flushes what was written, before the unlock
            msvcrt.locking(handle.fileno(), msvcrt.LK_UNLCK, 1)  # type: ignore[attr-defined]
        return
    fcntl.flock(handle.fileno(), fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
    try:
        yield
    finally:
        try:
            # SE-67: what was written is in the file before another holder reads it
            handle.flush()
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _same_file(handle: IO[Any], path: Path) -> bool:
    """SE-67: the path still names the file whose lock is held (a take-back may have
    replaced it)."""
    held = os.fstat(handle.fileno())
    try:
        now = os.stat(path)
    except FileNotFoundError:
        return False
    return (held.st_dev, held.st_ino) == (now.st_dev, now.st_ino)


@contextlib.contextmanager
def _locked(
    path: Path, session_id: object, doing: str, *, write: bool
) -> Iterator[IO[bytes] | None]:
    """The session's file, open (``a+b`` to write, ``rb`` to read, None when a read
    finds none) and locked (exclusive to write, shared to read), the one the path names
    once the lock is held (SE-67); an OS failure meanwhile says what was being done
    (SE-66)."""
    with _lock_for(path), _os_errors(f"{doing} session {session_id!r}", path):
        while True:
            _check_regular(path, session_id)
            try:
                handle = _open_private(path) if write else path.open("rb")
            except FileNotFoundError:
                if write:
                    raise
                yield None
                return
            with handle, _os_lock(handle, exclusive=write):
                if _same_file(handle, path):
                    yield handle
                    return


# SE-24: the files the stores create are the owner's alone (0600 before the umask): a
# conversation is not readable by the machine's other users; a file that exists keeps
# the mode it has
_PRIVATE = 0o600
_BINARY = getattr(os, "O_BINARY", 0)


def _open_private(path: Path) -> IO[bytes]:
    """SE-24: the session's history file open to read and append, created 0600."""
    flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | _BINARY
    return os.fdopen(os.open(path, flags, _PRIVATE), "a+b")


def _write_private(path: Path, data: bytes) -> None:
    """SE-24: a new file (a snapshot's or a take-back's temporary) holding ``data``,
    created 0600."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _BINARY
    with os.fdopen(os.open(path, flags, _PRIVATE), "wb") as handle:
        handle.write(data)


def _lock_for(path: Path) -> threading.Lock:
    return _LOCKS[hash(path) % len(_LOCKS)]


def _storage(
    path: str | os.PathLike[str], serialization_format: str
) -> tuple[Path, Path]:
    if serialization_format not in ("json", "msgpack"):
        raise ValueError("serialization_format must be 'json' or 'msgpack'")
    storage = Path(path)
    if storage.exists() and not storage.is_dir():  # SE-66: not "File exists" from mkdir
        raise NotADirectoryError(20, "storage_path is not a directory", str(storage))
    with _os_errors("cannot make the storage directory", storage):
        storage.mkdir(parents=True, exist_ok=True)
    return storage, storage.resolve()


def _dumps(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _run_key(run_key: object, state: dict[str, Any] | None) -> str | None:
    """SE-67 (as SE-40): ``run_key=``, or else ``state["run_key"]``; None when neither
    names a run."""
    key = run_key if run_key is not None else (state or {}).get("run_key")
    if key is not None and (not isinstance(key, str) or not key):
        raise ValueError(f"run_key must be a non-empty string, got {key!r}")
    return key


class _Entry(NamedTuple):
    """One stored message: its payload, where its bytes are, its line (record)
    number."""

    payload: dict[str, Any]
    start: int
    end: int
    number: int

    @property
    def run_key(self) -> Any:
        extra = self.payload.get("additional_properties")
        return extra.get(RUN_KEY_PROPERTY) if isinstance(extra, dict) else None


def _without_key(payload: dict[str, Any]) -> dict[str, Any]:
    """A message payload without the run key (SE-67); the payload itself when it has
    none."""
    extra = payload.get("additional_properties")
    if not isinstance(extra, dict) or RUN_KEY_PROPERTY not in extra:
        return payload
    rest = {k: v for k, v in extra.items() if k != RUN_KEY_PROPERTY}
    out = {k: v for k, v in payload.items() if k != "additional_properties"}
    return {**out, "additional_properties": rest} if rest else out


class FileHistoryProvider(HistoryProvider):
    """A `HistoryProvider` that appends each session's messages to a file of its own
    (SE-24); a save that names its run is stored once (SE-67)."""

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
        if serialization_format == "msgpack" and (
            dumps is not None or loads is not None
        ):
            raise ValueError(
                "Custom dumps and loads are supported only with serialization_format='json'"
            )
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
        self,
        session_id: str | None,
        *,
        state: dict[str, Any] | None = None,
        run_key: str | None = None,
        **kwargs: Any,
    ) -> list[Message]:
        """The session's messages in order; for a run that names itself, only those
        stored before its own (SE-67)."""
        path, run = self._session_file_path(session_id), _run_key(run_key, state)

        def read() -> list[Message]:
            with _locked(
                path, session_id, "FileHistoryProvider cannot read", write=False
            ) as handle:
                raw = b"" if handle is None else handle.read()
            entries = self._entries(raw, path, session_id)
            ends = [
                i for i, e in enumerate(entries) if run is not None and e.run_key == run
            ]
            return [
                self._message(e, path, session_id)
                for e in entries[: ends[0] if ends else None]
            ]

        messages = await asyncio.to_thread(read)
        if self.skip_excluded:
            messages = [
                m for m in messages if not m.additional_properties.get("_excluded")
            ]
        return messages

    async def save_messages(
        self,
        session_id: str | None,
        messages: Sequence[Message],
        *,
        state: dict[str, Any] | None = None,
        run_key: str | None = None,
        **kwargs: Any,
    ) -> None:
        """All of ``messages`` in one write after the stored ones (SE-24); nothing when
        the run ``run_key`` (or ``state["run_key"]``) names is stored already
        (SE-67)."""
        path, run = self._session_file_path(session_id), _run_key(run_key, state)
        if not messages:
            return
        data = self._encode(messages, run)  # encoded before anything is written

        def append() -> None:
            with _locked(
                path, session_id, "FileHistoryProvider cannot append to", write=True
            ) as handle:
                assert handle is not None
                if run is not None:
                    handle.seek(0)
                    if any(
                        e.run_key == run
                        for e in self._entries(handle.read(), path, session_id, key=run)
                    ):
                        return  # SE-67: this run's messages are here already
                handle.write(self._fresh_line(handle) + data)

        await asyncio.to_thread(append)

    def _fresh_line(self, handle: IO[bytes]) -> bytes:
        """SE-67: the separator a save writes before its lines: a newline when a crash
        cut the file's last JSON line short (the file does not end with one), so the
        save's first message starts a line of its own instead of extending the damaged
        one; nothing otherwise (one seek and a one-byte read per save)."""
        if self.serialization_format != "json":
            return b""
        end = handle.seek(0, os.SEEK_END)
        if end == 0:
            return b""
        handle.seek(end - 1)
        last = handle.read(1)
        handle.seek(0, os.SEEK_END)
        return b"" if last == b"\n" else b"\n"

    async def discard_messages(
        self,
        session_id: str | None,
        messages: Sequence[Message],
        *,
        state: dict[str, Any] | None = None,
        run_key: str | None = None,
        **kwargs: Any,
    ) -> None:
        """SE-20, SE-67: take back the newest stored messages equal to ``messages``
        (what this run's save wrote), with the run's key."""
        path, run = self._session_file_path(session_id), _run_key(run_key, state)
        if not messages:
            return
        wanted = [
            _without_key(e.payload)
            for e in self._entries(self._encode(messages, None), path, session_id)
        ]

        def remove() -> None:
            with _locked(
                path,
                session_id,
                "FileHistoryProvider cannot take back from",
                write=True,
            ) as handle:
                assert handle is not None
                handle.seek(0)
                raw = handle.read()
                entries = self._entries(raw, path, session_id)
                for first in range(len(entries) - len(wanted), -1, -1):
                    block = entries[first : first + len(wanted)]
                    if [_without_key(e.payload) for e in block] == wanted and (
                        run is None or block[0].run_key == run
                    ):
                        tail = block[-1].number == entries[-1].number
                        self._cut(
                            handle,
                            path,
                            raw[: block[0].start],
                            raw[block[-1].end :],
                            tail,
                        )
                        return

        await asyncio.to_thread(remove)

    async def clear(self, session_id: str | None) -> None:
        """Forget the session's messages and run keys (SE-67): the file is emptied under
        its lock."""
        path = self._session_file_path(session_id)

        def empty() -> None:
            with _locked(
                path, session_id, "FileHistoryProvider cannot clear", write=True
            ) as handle:
                assert handle is not None
                handle.truncate(0)

        await asyncio.to_thread(empty)

    @staticmethod
    def _cut(
        handle: IO[bytes], path: Path, before: bytes, after: bytes, tail: bool
    ) -> None:
        """The locked file without what lies between ``before`` and ``after``: a
        truncation when that was its end, else ``before + after`` written to a temporary
        file that replaces it (SE-67)."""
        if tail:
            handle.truncate(len(before))
            return
        temporary = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
        try:
            _write_private(temporary, before + after)
            os.replace(temporary, path)
        finally:
            temporary.unlink(missing_ok=True)

    def _encode(self, messages: Sequence[Message], run: str | None) -> bytes:
        payloads = [_without_key(m.to_dict()) for m in messages]
        if run is not None:
            first = payloads[0]
            payloads[0] = {
                **first,
                "additional_properties": {
                    **first.get("additional_properties", {}),
                    RUN_KEY_PROPERTY: run,
                },
            }
        if self.serialization_format == "json":
            return "".join(self._line(p) + "\n" for p in payloads).encode("utf-8")
        records = [packb(p) for p in payloads]
        return b"".join(len(r).to_bytes(4, "big") + r for r in records)

    def _line(self, payload: dict[str, Any]) -> str:
        text = self.dumps(payload)
        text = text.decode("utf-8") if isinstance(text, bytes) else text
        if "\n" in text or "\r" in text:
            raise ValueError(
                "FileHistoryProvider.dumps must return single-line JSON for JSON Lines storage"
            )
        return text

    def _entries(
        self, raw: bytes, path: Path, session_id: object, *, key: str | None = None
    ) -> list[_Entry]:
        """SE-66: the stored payloads, or a `SerializationError` naming the file,
        session and line; with ``key``, only those whose bytes may hold it (SE-67)."""
        if self.serialization_format == "json":
            return self._lines(raw, path, session_id, key)
        return _records(raw, path, session_id, key)

    def _lines(
        self, raw: bytes, path: Path, session_id: object, key: str | None
    ) -> list[_Entry]:
        out, at = [], 0
        # bytes: U+2028 inside a string is no line break
        for number, line in enumerate(raw.split(b"\n"), 1):
            start, at = at, at + len(line) + 1
            if not line.strip() or (
                key is not None and not _may_hold(line, key.encode(), b"\\" in line)
            ):
                continue
            where = f"{path}: session {session_id!r}, line {number}"
            try:
                payload = self.loads(line.decode("utf-8").strip())
            except (TypeError, ValueError, RecursionError) as exc:
                # SE-66: a line a crash cut short (JSON that ends before its value
                # does) is skipped, and a WARNING names the file and the line; any
                # other damage is an error
                if _cut_short(exc):
                    _LOGGER.warning(
                        "FileHistoryProvider skips history line %d of '%s' "
                        "(session %r): cut short by an interrupted write",
                        number,
                        path,
                        session_id,
                    )
                    continue
                problem = (
                    "nested too deeply"
                    if isinstance(exc, RecursionError)
                    else str(exc)[:200]
                )
                words = f"Failed to deserialize history line {number} from '{path}': {problem}"
                raise SerializationError(where, words) from None
            out.append(_entry(payload, start, min(at, len(raw)), number, where, path))
        return out

    @staticmethod
    def _message(entry: _Entry, path: Path, session_id: object) -> Message:
        where = f"{path}: session {session_id!r}, {'line' if path.suffix == '.jsonl' else 'record'} {entry.number}"
        try:
            return Message.from_dict(_without_key(entry.payload))
        except RecursionError:
            raise SerializationError(
                where, f"History record {entry.number} in '{path}' is nested too deeply"
            ) from None
        except (TypeError, ValueError) as exc:
            words = f"History record {entry.number} in '{path}' is not a valid Message payload: {exc}"
            raise SerializationError(where, words) from exc


def _cut_short(exc: BaseException) -> bool:
    """SE-66: whether a JSON line failed to decode because it ends early (a write cut
    short): the decoder ran out of text, or a string has no closing quote."""
    if not isinstance(exc, json.JSONDecodeError):
        return False
    return exc.pos >= len(exc.doc.rstrip()) or exc.msg.startswith("Unterminated string")


def _may_hold(data: bytes, key: bytes, escaped: bool) -> bool:
    """SE-67: whether a line (record) may hold the run key ``key``: its bytes hold the
    property's name, and the key's UTF-8 bytes unless an escape (JSON's backslash) could
    hide them."""
    return _MARK in data and (escaped or key in data)


def _records(
    raw: bytes, path: Path, session_id: object, key: str | None
) -> list[_Entry]:
    out, at, number = [], 0, 0
    while at < len(raw):
        number += 1
        where = f"{path}: session {session_id!r}, record {number}"
        size = int.from_bytes(raw[at : at + 4], "big")
        if at + 4 > len(raw) or at + 4 + size > len(raw) or size == 0:
            raise SerializationError(
                where,
                f"History record {number} in '{path}' is truncated (length {size})",
            )
        if key is not None and not _may_hold(
            raw[at + 4 : at + 4 + size], key.encode(), False
        ):
            at += 4 + size
            continue
        try:
            payload = unpackb(raw[at + 4 : at + 4 + size])
        except (ValueError, RecursionError) as exc:
            problem = (
                "nested too deeply"
                if isinstance(exc, RecursionError)
                else str(exc)[:200]
            )
            words = f"Failed to deserialize history record {number} from '{path}': {problem}"
            raise SerializationError(where, words) from None
        out.append(_entry(payload, at, at + 4 + size, number, where, path))
        at += 4 + size
    return out


def _entry(
    payload: Any, start: int, end: int, number: int, where: str, path: Path
) -> _Entry:
    if not isinstance(payload, dict):
        raise SerializationError(
            where,
            f"History record {number} in '{path}' did not deserialize to a mapping",
        )
    return _Entry(payload, start, end, number)


class FileSessionStore(SessionStore):
    """A `SessionStore` that keeps each session as one snapshot file, replaced whole
    (SE-24)."""

    MAX_SESSION_ID_LENGTH: ClassVar[int] = 128
    VERSION: ClassVar[str] = "1.0"

    def __init__(
        self,
        storage_path: str | os.PathLike[str],
        *,
        serialization_format: Format = "json",
    ) -> None:
        super().__init__()
        self.storage_path, self._root = _storage(storage_path, serialization_format)
        self.serialization_format = serialization_format

    def _session_file_path(self, session_id: str) -> Path:
        if len(check_session_id(session_id)) > self.MAX_SESSION_ID_LENGTH:
            raise ValueError(
                f"session_id must be at most {self.MAX_SESSION_ID_LENGTH} characters"
            )
        suffix = ".json" if self.serialization_format == "json" else ".msgpack"
        return _path_in(self._root, file_stem(session_id) + suffix, session_id)

    async def get(self, session_id: str) -> AgentSession | None:
        path = self._session_file_path(session_id)
        return await asyncio.to_thread(self._read, path, session_id)

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
        data = (
            _dumps(snapshot) if self.serialization_format == "json" else packb(snapshot)
        )
        # SE-69: the file's modification time is this set's stamp, taken in the order
        # of the calls
        stamp = save_stamp()
        await asyncio.to_thread(self._write, path, data, session_id, stamp)

    async def delete(self, session_id: str) -> None:
        path = self._session_file_path(session_id)

        def unlink() -> None:
            with (
                _lock_for(path),
                _os_errors(
                    f"FileSessionStore cannot delete session {session_id!r}", path
                ),
            ):
                _check_regular(path, session_id)
                # SE-66: not EPERM on one system and EISDIR on another
                if path.is_dir():
                    raise IsADirectoryError(21, "Is a directory", str(path))
                path.unlink(missing_ok=True)

        await asyncio.to_thread(unlink)

    async def list_ids(self, prefix: str = "", limit: int = 100) -> list[str]:
        """SE-69: the ids of the snapshot files starting with ``prefix``, the last
        modified first, at most ``limit``; a hashed file name (SE-24) is skipped."""
        check_listing(prefix, limit)
        suffix = ".json" if self.serialization_format == "json" else ".msgpack"

        def scan() -> list[str]:
            found: list[tuple[int, str]] = []
            with _os_errors("FileSessionStore cannot list its sessions", self._root):
                entries = list(os.scandir(self._root))
            for entry in entries:
                name = entry.name
                if name.startswith(".") or not name.endswith(suffix):
                    continue
                session_id = _id_of_stem(name[: -len(suffix)])
                if session_id is None or not session_id.startswith(prefix):
                    continue
                try:
                    if not entry.is_file(follow_symlinks=False):
                        continue
                    modified = entry.stat(follow_symlinks=False).st_mtime_ns
                except OSError:
                    continue  # deleted meanwhile
                found.append((modified, session_id))
            found.sort(key=lambda item: (-item[0], item[1]))
            return [session_id for _, session_id in found[:limit]]

        return await asyncio.to_thread(scan)

    @staticmethod
    def _write(path: Path, data: bytes, session_id: str, stamp: int) -> None:
        temporary = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
        with (
            _lock_for(path),
            _os_errors(f"FileSessionStore cannot write session {session_id!r}", path),
        ):
            _check_regular(path, session_id)
            try:
                _write_private(temporary, data)
                # the rename keeps it: the snapshot appears with its stamp (SE-69)
                os.utime(temporary, ns=(stamp, stamp))
                os.replace(temporary, path)
            finally:
                temporary.unlink(missing_ok=True)

    def _read(self, path: Path, session_id: str) -> AgentSession | None:
        where = f"{path}: session {session_id!r}"
        with _lock_for(path):
            with _os_errors(
                f"FileSessionStore cannot read session {session_id!r}", path
            ):
                _check_regular(path, session_id)
                try:
                    raw = path.read_bytes()
                except FileNotFoundError:
                    return None
            try:
                snapshot = (
                    json.loads(raw)
                    if self.serialization_format == "json"
                    else unpackb(raw)
                )
            except RecursionError:
                raise SerializationError(
                    where, f"Session snapshot '{path}' is nested too deeply"
                ) from None
            # UnicodeDecodeError and JSONDecodeError are ValueErrors
            except ValueError as exc:
                with _os_errors(
                    f"FileSessionStore cannot move aside session {session_id!r}", path
                ):
                    moved = self._quarantine_corrupt_snapshot(path, raw)
                done = (
                    f"quarantined to '{moved}'; retry to start a new session"
                    if moved
                    else "changed; retry"
                )
                words = f"Failed to deserialize session from '{path}' ({str(exc)[:200]}): the snapshot was {done}"
                raise SerializationError(where, words) from exc
        return self._restore(snapshot, path, where)

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

    def _restore(self, snapshot: Any, path: Path, where: str) -> AgentSession:
        if not isinstance(snapshot, dict):
            raise SerializationError(
                where,
                f"Session snapshot '{path}' has an invalid schema: not a JSON object",
            )
        if snapshot.get("version") != self.VERSION:
            raise SerializationError(
                where,
                f"Unsupported session snapshot version {snapshot.get('version')!r} in '{path}'; "
                f"expected {self.VERSION!r}",
            )
        session_id, state = snapshot.get("session_id"), snapshot.get("state")
        if (
            snapshot.get("type") != "session"
            or not isinstance(session_id, str)
            or not isinstance(state, dict)
        ):
            raise SerializationError(
                where, f"Session snapshot '{path}' has an invalid schema"
            )
        try:
            restored = decode_state(state, "state")
        except (TypeError, ValueError, AttributeError, KeyError) as exc:
            raise SerializationError(
                where, f"Failed to restore session state from '{path}': {exc}"
            ) from exc
        return AgentSession(
            session_id=session_id,
            service_session_id=snapshot.get("service_session_id"),
            state=restored,
        )
