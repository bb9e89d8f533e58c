"""The run's transcript: the messages the next model call receives (spec/loop.md LP-14,
LP-19, LP-26 .. LP-28, LP-34).

Rules
-----
1. The transcript is the one writer of what the conversation holds during a request: the
   messages, the messages this request added, the part a service already holds
   (``sent``), the call ids of the run (LP-26), the repairs made on the way in (LP-27)
   and whether the history is known to be valid (LP-28). Nothing else appends to these
   lists or sets these fields.
2. Nothing enters that cannot be sent: a model response is taken in as a repaired copy
   (LP-27), with repeated call ids renamed (LP-26); the provider's own objects are never
   changed.
3. The history is checked before a model call unless it is known valid; only the loop's
   own appends (a response's calls, then their results) keep a valid history valid. A
   session remembers the last history found valid; a prefix shared with it is not
   checked again (SE-51).
4. An approval is trusted only through the record of what a run asked (LP-34), never for
   itself.
5. A tool or function middleware reads a message the request was given only as the run's
   own copy, put in its place the first time (SE-53, `lend`).

Theory of operation
-------------------
``messages`` is the live list: `FunctionInvocationContext.messages` reads it (through
the call runner's views) and the next model call receives ``messages[sent:]``. ``new``
holds what this request added, in order: it becomes the response (design decision 7).
``valid`` starts true when the given messages hold no call, result or approval (HI-1); a
foreign message with one of those, a result inside a model response, or a chat
middleware that looked at the messages makes it unknown. A conversation that holds
answered approval requests is ``resuming``: `resume` takes the approval contents out and
names the batches to run, each placed right after its calls' message. An approval
authorises a call only when the loop itself asked it (LP-34): the requests a pause
surfaces are recorded — in the session's state, else in this module's registry of the
process (the newest `_KEPT`) — as the call's name and arguments, and an answer runs the
call only when its request is recorded for that very call; a recorded request is used
once.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from operator import is_
from typing import Any, NamedTuple

from ._history import is_valid_history, own_copy, repair_history
from ._responses import ChatResponse
from ._types import Content, Message

__all__ = [
    "PAIRED_KINDS",
    "Transcript",
    "Waiting",
    "approval_record",
    "hosted",
    "record_requests",
    "sendable_text",
]

APPROVAL_KINDS = ("function_approval_request", "function_approval_response")
PAIRED_KINDS = frozenset({"function_call", "function_result", *APPROVAL_KINDS})


def hosted(c: Content) -> bool:
    """LP-31: an approval of a tool the service runs (its call names a
    ``server_label``): passed through."""
    return c.function_call is not None and bool(
        c.function_call.additional_properties.get("server_label")
    )


# LP-34: a session's asked approvals, request id -> [name, arguments]
RECORD_KEY = "minagent.approval_requests"
# LP-34: the same for runs without a session, the newest _KEPT
_ISSUED: dict[str, list[Any]] = {}
_KEPT = 10_000


def approval_record(session: Any) -> dict[str, list[Any]]:
    """LP-34: where the approvals a run asks are recorded: its session's state, else the
    process's."""
    state = getattr(session, "state", None)
    return state.setdefault(RECORD_KEY, {}) if isinstance(state, dict) else _ISSUED


def _shape(call: Content) -> list[Any]:
    try:
        return [call.name, call.parse_arguments()]
    except ValueError:  # arguments that are not a JSON object: compared as they are
        return [call.name, call.arguments]


# LP-34: a paused batch's call that needs no approval is recorded under this prefix and
# its call id, so that only the calls the run paused ride along with an approval
RIDER = "rider:"


def record_requests(
    record: dict[str, list[Any]],
    requests: Sequence[Content],
    riders: Sequence[Content] = (),
) -> None:
    """LP-34: the requests a pause surfaced, each with its call's name and arguments,
    and the batch's calls that need no approval (``riders``), with theirs."""
    if record is not _ISSUED:
        record.clear()  # a session has one batch waiting: the latest
    asked = [
        r
        for r in requests
        if r.type == "function_approval_request" and r.function_call and not hosted(r)
    ]
    record.update(
        (r.id or "", _shape(r.function_call))
        for r in asked
        if r.function_call is not None
    )
    record.update((RIDER + (c.call_id or ""), _shape(c)) for c in riders)
    while len(_ISSUED) > _KEPT:
        _ISSUED.pop(next(iter(_ISSUED)), None)


def _approved_calls(
    requests: Sequence[Content],
    calls: Sequence[Content],
    decisions: Mapping[str, bool],
    record: dict[str, list[Any]] | None,
) -> list[Content] | None:
    """LP-14, LP-34: the calls of one paused message that an approval answers, each
    call object once. Without a ``record`` an approved request answers the calls with
    its call id; with one, an approval counts only when this run (or its session)
    recorded the request, and only for one call whose name and arguments are those it
    asked about. None: with a record, none of the message's requests was recorded."""
    approved: list[Content] = []
    found = record is None
    for request in requests:
        call = request.function_call
        if call is None:
            continue
        asked = None if record is None else record.pop(request.id or "", None)
        found = found or asked is not None
        if not decisions.get(request.id or ""):
            continue
        for candidate in calls:
            if candidate.call_id != call.call_id or any(
                candidate is a for a in approved
            ):
                continue
            if record is None or asked == _shape(candidate):
                approved.append(candidate)
                # LP-34: one approval runs one call
                if record is not None:
                    break
    return approved if found else None


class Waiting(NamedTuple):
    """A batch that waited for the caller's approval (LP-14)."""

    holder: Message  # the message holding the calls
    calls: list[Content]  # the batch's calls still without a result, in order
    runnable: list[Content]  # the approved calls and those that need no approval
    rejected: set[str | None]  # the call ids the caller rejected (or left unanswered)


def _foreign(messages: Sequence[Message], own: Sequence[Message]) -> dict[int, Message]:
    """SE-53: the messages of ``messages`` that are not in ``own``, by id."""
    mine = {id(m) for m in own}
    return {id(m): m for m in messages if id(m) not in mine}


class Transcript:
    """The messages of one request and what is known about them (see the module
    docstring)."""

    __slots__ = (
        "borrowed",
        "call_ids",
        "distinct",
        "messages",
        "new",
        "resuming",
        "sent",
        "session",
        "valid",
    )

    def __init__(self, messages: Sequence[Message], session: Any = None) -> None:
        self.messages: list[Message] = list(messages)
        # SE-53: the messages the request was given (a session's stored history, the
        # caller's input), lent to tools and function middleware as copies: by id, made
        # when a tool first reads the transcript (every message then that the loop did
        # not append; `resume` makes it at once), so a run that shows no tool the
        # transcript keeps no second list of it
        self.borrowed: dict[int, Message] | None = None
        self.new: list[Message] = []
        # with a conversation_id, messages[:sent] is already held by the service (LP-19)
        self.sent = 0
        self.call_ids: set[str | None] = set()  # LP-26: the call ids of the run so far
        # the given messages hold approval requests or answers (LP-14)
        self.resuming = False
        paired, approvals, calls = False, False, 0
        for m in self.messages:
            for c in m.contents:
                kind = c.type
                if kind == "function_call":
                    self.call_ids.add(c.call_id)
                    paired, calls = True, calls + 1
                elif kind in PAIRED_KINDS:
                    paired, approvals = True, approvals or kind in APPROVAL_KINDS
                    self.resuming = self.resuming or (
                        kind in APPROVAL_KINDS and not hosted(c)
                    )
        # LP-28: a history without calls and results is valid (HI-1)
        self.valid = not paired
        # SE-51
        self.session, self.distinct = (
            session,
            calls == len(self.call_ids) and not approvals,
        )

    # -- appending -------------------------------------------------------------------------------

    def take(self, response: ChatResponse) -> ChatResponse:
        """A model response into the transcript: repaired (LP-27), its repeated call ids
        renamed (LP-26), appended. Returns the response as the transcript holds it."""
        response = self._checked(response)
        self.append(*response.messages)
        return response

    def append(self, *messages: Message) -> None:
        """The loop's own messages: a response's, or the tool message answering its
        calls."""
        self.messages.extend(messages)
        self.new.extend(messages)

    def append_foreign(self, messages: Sequence[Message]) -> None:
        """Messages the loop did not make (the inbox, a tool's or middleware's): a call
        or a result among them makes the history unknown again (LP-28)."""
        if any(c.type in PAIRED_KINDS for m in messages for c in m.contents):
            self.valid = self.distinct = False
        self.append(*messages)

    def replace(self, old: Message, new: Message) -> None:
        self.distinct = False
        for messages in (self.messages, self.new):
            for i, m in enumerate(messages):
                if m is old:
                    messages[i] = new

    def holding(self, content: Content, *, new_only: bool = False) -> Message:
        """The message that holds ``content`` (the latest one)."""
        for m in reversed(self.new if new_only else self.messages):
            if any(c is content for c in m.contents):
                return m
        raise LookupError(
            "internal error: the call is not in the transcript"
        )  # pragma: no cover

    def lend(self, at: int) -> Message:
        """``messages[at]`` for a tool or function middleware (SE-53): a message the
        request was given is replaced, the first time, by a copy of the run's own, so an
        edit reaches the rest of the request (design decision 2) but never the store or
        the caller."""
        message = self.messages[at]
        borrowed = self.borrowed
        if borrowed is None:
            borrowed = self.borrowed = _foreign(self.messages, self.new)
        if borrowed.get(id(message)) is message:
            message = self.messages[at] = own_copy(message)
        return message

    # -- sending ---------------------------------------------------------------------------------

    def mark_sent(self) -> None:
        """The service holds the conversation so far (LP-19): later calls send only what
        follows."""
        self.sent = len(self.messages)

    def outgoing(self) -> list[Message]:
        """The messages the next model call receives."""
        return self.messages[self.sent :]

    def sendable(self, messages: list[Message], *, as_recorded: bool) -> list[Message]:
        """LP-28, HI-1: ``messages`` as a valid history (a call without its result gets
        one, an orphan result is dropped). ``as_recorded``: they are this transcript's,
        unseen by middleware."""
        if self.valid and as_recorded:
            return messages
        known: Sequence[Message] = (
            getattr(self.session, "_checked", ())
            if as_recorded and self.distinct
            else ()
        )
        shared = min(len(known), len(messages))
        # the prefix shared
        same = next((i for i in range(shared) if known[i] is not messages[i]), shared)
        # the prefix holds every answer to its calls
        closed = same == len(known) or known[same].role != "tool"
        checked = (
            messages
            if same and closed and is_valid_history(messages[same:])
            else repair_history(messages)
        )
        self.valid = (
            as_recorded
            and len(checked) == len(messages)
            and all(map(is_, checked, messages))
        )
        if self.valid and self.distinct and hasattr(self.session, "_checked"):
            self.session._checked = list(messages)
        return checked

    # -- approvals -------------------------------------------------------------------------------

    def resume(
        self,
        record: dict[str, list[Any]] | None,
        approval_names: frozenset[str] | set[str] = frozenset(),
    ) -> list[Waiting]:
        """LP-14: take every approval request and answer out of the transcript (a
        request whose call appears nowhere stands for its call) and name the batches
        that waited, in order. With a ``record`` an approval counts only for the call
        its recorded request asked about, once (LP-34), and a message none of whose
        requests was recorded runs nothing. A call of a tool in ``approval_names`` runs
        only on an approval of its own request (LP-13)."""
        decisions = {
            c.id: bool(c.approved)
            for m in self.messages
            for c in m.contents
            if c.type == "function_approval_response"
            and c.id is not None
            and not hosted(c)
        }
        answered = {
            c.call_id
            for m in self.messages
            for c in m.contents
            if c.type == "function_result"
        }
        present = {
            c.call_id
            for m in self.messages
            for c in m.contents
            if c.type == "function_call"
        }
        cleaned: list[Message] = []
        made: list[Message] = []  # the run's own holders of the waiting calls
        waiting: list[Waiting] = []
        for m in self.messages:
            if not any(c.type in APPROVAL_KINDS and not hosted(c) for c in m.contents):
                cleaned.append(m)
                continue
            kept = [c for c in m.contents if c.type not in APPROVAL_KINDS or hosted(c)]
            requests = [
                c
                for c in m.contents
                if c.type == "function_approval_request"
                and c.function_call
                and c.function_call.call_id not in answered
                and not hosted(c)
            ]
            # only the request came back (no thread): its call takes its place
            for request in requests:
                call = request.function_call
                if call is not None and call.call_id not in present:
                    kept.append(call)
                    present.add(call.call_id)
            if kept:
                # SE-53: the run's own copy, its contents too: the batch that runs its
                # calls shows it to tools, and the given message may be a stored one
                m = own_copy(m.with_contents(kept))
                kept = m.contents
                cleaned.append(m)
                made.append(m)
            if requests:
                calls = [
                    c
                    for c in kept
                    if c.type == "function_call" and c.call_id not in answered
                ]
                runnable = _approved_calls(requests, calls, decisions, record)
                # LP-13: a call with no request of its own rides along only when its
                # tool needs no approval, and only in a pause this loop recorded
                # (with a record, a message whose requests were never recorded is
                # not a pause: nothing in it runs, LP-34), and only when the pause
                # recorded that call, with its name and arguments, once (LP-34)
                needs = {r.function_call.call_id for r in requests if r.function_call}
                recorded = record is None or runnable is not None
                chosen = runnable or []
                runnable = [
                    c
                    for c in calls
                    if any(c is a for a in chosen)
                    or (
                        recorded
                        and c.call_id not in needs
                        and c.name not in approval_names
                        and (
                            record is None
                            or record.pop(RIDER + (c.call_id or ""), None) == _shape(c)
                        )
                    )
                ]
                rejected = {
                    c.call_id for c in calls if not any(c is r for r in runnable)
                }
                waiting.append(Waiting(m, calls, runnable, rejected))
        self.messages[:] = cleaned
        # SE-53: the given messages, now: a batch runs inside `after`, which holds the
        # messages after its calls' message out of the list
        self.borrowed = _foreign(cleaned, made)
        self.call_ids |= {
            c.call_id for m in cleaned for c in m.contents if c.type == "function_call"
        }
        return waiting

    @contextmanager
    def after(self, holder: Message) -> Iterator[None]:
        """Appends inside the block land right after ``holder`` (a resumed batch's
        results follow its calls, LP-14); the messages after it follow them again."""
        at = (
            self.messages.index(holder) + 1
            if holder in self.messages
            else len(self.messages)
        )
        self.sent = min(self.sent, at)
        tail = self.messages[at:]
        del self.messages[at:]
        try:
            yield
        finally:
            self.messages.extend(tail)

    # -- LP-26, LP-27 ----------------------------------------------------------------------------

    def _checked(self, response: ChatResponse) -> ChatResponse:
        """The response as the transcript takes it, in one pass; the response itself
        when nothing changes. Every text, arguments and result string repaired (LP-27);
        a call whose id an earlier call of the response or of the run already has gets
        ``<id>~<n>`` (LP-26); a result in the response makes the history unknown
        (LP-28)."""
        seen = self.call_ids
        messages: list[Message] | None = None
        for i, m in enumerate(response.messages):
            contents: list[Content] | None = None
            for k, c in enumerate(m.contents):
                new = c
                text, arguments, result = c.text, c.arguments, c.result
                if not (
                    (text is None or text.isascii())
                    and (type(arguments) is not str or arguments.isascii())
                    and (type(result) is not str or result.isascii())
                ):
                    new = _sendable_content(c)
                kind = new.type
                if (
                    kind == "function_call"
                    and not new.informational_only
                    and new.call_id is not None
                ):
                    if new.call_id in seen:
                        n = 2
                        while f"{new.call_id}~{n}" in seen:
                            n += 1
                        new = replace(new, call_id=f"{new.call_id}~{n}")
                    seen.add(new.call_id)
                elif kind == "function_result":
                    self.valid = False
                elif kind in APPROVAL_KINDS:
                    # SE-51: an approval's call may stay unanswered
                    self.distinct = False
                if new is not c:
                    if contents is None:
                        contents = list(m.contents)
                    contents[k] = new
            if contents is not None:
                if messages is None:
                    messages = list(response.messages)
                messages[i] = m.with_contents(contents)
        return response if messages is None else replace(response, messages=messages)


def _sendable_content(c: Content) -> Content:
    changes: dict[str, Any] = {}
    for name in ("text", "arguments", "result"):
        if (
            isinstance(value := getattr(c, name), str)
            and (fixed := sendable_text(value)) is not value
        ):
            changes[name] = fixed
    return replace(c, **changes) if changes else c


def sendable_text(text: str) -> str:
    """LP-27: ``text`` with surrogate pairs joined and lone surrogates replaced by
    U+FFFD, so it can be encoded as UTF-8 (JSON escapes such as ``"\\ud83d"`` decode to
    lone surrogates)."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text
