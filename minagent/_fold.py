"""The merge algorithm: updates folded into a response, one at a time (spec/types.md
TY-9 .. TY-14).

`Fold` is what ``from_updates`` runs and what a streaming model call keeps instead of
its updates (ST-14): memory grows with the response, not with the number of chunks.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from ._exceptions import ContentError
from ._types import Content, Message
from ._wire import UsageDetails, add_usage

__all__ = ["SCALARS", "Fold"]

PIECES = 256  # ST-50: a text run is joined whenever it holds this many pieces
SCALARS = (
    "response_id",
    "conversation_id",
    "model",
    "agent_id",
    "created_at",
    "finish_reason",
    "continuation_token",
)
"""The response-level fields an update may carry; the last value that is not None wins (TY-10)."""


class Fold:
    """`from_updates`, one update at a time (TY-14): the merge algorithm of TY-10 and
    TY-11.

    Theory of operation: the response under construction holds the messages so far; the
    trailing run of text contents of the last message is kept as its first content plus
    the texts that follow it (strings only), and joined when a content of another kind,
    another message or the end comes. A call's streamed argument text is kept the same
    way, as its pieces (`_Args`), joined once at the end; whether it is complete JSON is
    read from the pieces once each, when a delta repeats its id and name. A text run is
    joined when it reaches `PIECES` pieces: n chunks keep the text, not n strings
    (ST-50).
    """

    __slots__ = (
        "_args",
        "_first",
        "_kind",
        "_last",
        "_props",
        "_seen",
        "_texts",
        "_values",
        "messages",
        "response",
        "scalars",
        "usage",
    )

    def __init__(self, response: Any) -> None:
        self.response: Any = response
        self.messages: list[Message] = response.messages
        self.usage: UsageDetails | None = response.usage_details
        self.scalars = tuple(name for name in SCALARS if hasattr(response, name))
        self._first: Content | None = None  # the text run: its first content,
        self._texts: list[str] = []  # the texts of the run,
        # and their non-empty additional_properties
        self._props: list[dict[str, Any]] = []
        # (id of a message's contents, index) -> its call's text
        self._args: dict[tuple[int, int], _Args] = {}
        # The quick step's state (`add`): while a text run is open, the type of the
        # update merged last, its scalars as its type reads them, and the message it
        # went to; None when no run is open.
        self._kind: Any = None
        self._values: Any = None
        self._seen: tuple[Any, ...] = ()
        self._last: Any = None

    def add(self, update: Any) -> None:
        # The common chunk: one more text of the run, of the same message, carrying
        # nothing the response does not hold already. A chunk that repeats the ids,
        # author and scalars of the update merged last (a provider's chunks repeat their
        # response id, message id and model) changes nothing by merging them again, so
        # only its text is kept: one comparison of the scalars, no call (ST-52).
        contents = update.contents
        if len(contents) == 1 and type(update) is self._kind:
            content = contents[0]
            last = self._last
            if (
                content.type == "text"
                and not content.additional_properties
                and not update.additional_properties
                and (update.role is None or update.role == last.role)
                and (not update.message_id or update.message_id == last.message_id)
                and (not update.author_name or update.author_name == last.author_name)
                and self._values(update) == self._seen
            ):
                self._texts.append(content.text or "")
                # ST-50: the pieces joined, memory flat in the chunk count
                if len(self._texts) == PIECES:
                    self._texts[:] = ["".join(self._texts), ""]
                return
        self._add(update)

    def _add(self, update: Any) -> None:
        messages = self.messages
        last = messages[-1] if messages else None
        if (
            last is None
            or (update.role is not None and update.role != last.role)
            or (
                update.message_id
                and last.message_id
                and update.message_id != last.message_id
            )
        ):
            self._flush()
            last = Message(update.role or "assistant")
            messages.append(last)
        if update.author_name:
            last.author_name = update.author_name
        if update.message_id:
            last.message_id = update.message_id
        contents = last.contents
        for content in update.contents:
            kind = content.type
            if kind == "text":
                if self._first is None:
                    self._first = content
                    self._texts = [content.text or ""]
                    self._props = (
                        [content.additional_properties]
                        if content.additional_properties
                        else []
                    )
                else:
                    self._texts.append(content.text or "")
                    if len(self._texts) == PIECES:
                        self._texts[:] = ["".join(self._texts), ""]
                    if content.additional_properties:
                        self._props.append(content.additional_properties)
                continue
            if kind == "usage":  # not a content of the message: the run goes on
                self.usage = add_usage(self.usage, content.usage_details)
                continue
            self._flush()
            if kind == "function_call":
                self._add_call(contents, content)
            else:
                contents.append(content)
        response = self.response
        for name in self.scalars:
            value = getattr(update, name, None)
            if value is not None:
                setattr(response, name, value)
        if update.additional_properties:
            response.additional_properties.update(update.additional_properties)
        values = getattr(type(update), "_scalar_values", None)
        if self._first is None or values is None:
            self._kind = None
        else:
            self._kind, self._values, self._seen = type(update), values, values(update)
            self._last = last

    def _flush(self) -> None:
        first = self._first
        if first is None:
            return
        if len(self._texts) > 1:
            first = replace(
                first,
                text="".join(self._texts),
                additional_properties={
                    k: v for p in reversed(self._props) for k, v in p.items()
                },
            )
        self.messages[-1].contents.append(first)
        self._first, self._texts, self._props, self._kind = None, [], [], None

    def _add_call(self, contents: list[Content], delta: Content) -> None:
        """TY-10: a function_call delta continues the latest call of its id (or, without
        an id, the latest call) unless it names its function and that call is complete
        (its arguments a dict, or text holding a whole JSON value) or names another
        function: then it starts a new call."""
        call_id = delta.call_id
        at = len(contents) - 1
        while at >= 0 and not (
            contents[at].type == "function_call"
            and (not call_id or contents[at].call_id == call_id)
        ):
            at -= 1
        args = self._args.get((id(contents), at)) if at >= 0 else None
        # a call the fold did not start (the response held it already)
        if at >= 0 and args is None:
            args = self._args[id(contents), at] = _Args(contents, at, split=False)
        if args is None or (
            call_id
            and delta.name
            and contents[at].name
            and (delta.name != contents[at].name or args.complete())
        ):
            contents.append(delta)
            self._args[id(contents), len(contents) - 1] = _Args(
                contents, len(contents) - 1, split=args is not None
            )
        else:
            args.add(delta)

    def result(self) -> Any:
        """The response: the run joined, reasoning coalesced, usage summed (TY-10,
        TY-11)."""
        self._flush()
        # TY-10: each text joined once
        for args in sorted(self._args.values(), key=lambda a: -a.index):
            args.finish()
        self._args = {}
        for message in self.messages:
            message.contents = _coalesce(message.contents)
        self.response.usage_details = self.usage
        return self.response


def _coalesce(contents: list[Content]) -> list[Content]:
    """Join adjacent reasoning texts with equal or missing ids (TY-10); adjacent texts
    are already one content, `Fold` joins them as they come."""
    out: list[Content] = []
    i, n = 0, len(contents)
    while i < n:
        first = contents[i]
        j = i + 1
        if first.type == "text_reasoning":
            rid = first.id
            while (
                j < n
                and contents[j].type == "text_reasoning"
                and (contents[j].id in (None, rid) or rid is None)
            ):
                rid = rid or contents[j].id
                j += 1
            if j - i > 1:
                group = contents[i:j]
                texts = [c.text for c in group if c.text is not None]
                protected = [
                    c.protected_data for c in group if c.protected_data is not None
                ]
                first = replace(
                    first,
                    text="".join(texts) if texts else None,
                    id=rid,
                    protected_data=protected[-1] if protected else None,
                )
        out.append(first)
        i = j
    return out if len(out) != n else contents


class _Args:
    """The arguments of one call of the fold: its text as pieces, joined once at the end
    (TY-10), and how far the pieces have been read to tell whether they already hold a
    complete JSON value."""

    __slots__ = (
        "contents",
        "depth",
        "in_string",
        "index",
        "opened",
        "pieces",
        "read",
        "skip",
        "split",
    )

    def __init__(self, contents: list[Content], index: int, *, split: bool) -> None:
        # split: started by a repeated id
        self.contents, self.index, self.split = contents, index, split
        text = contents[index].arguments
        self.pieces: list[str] = [text] if isinstance(text, str) and text else []
        self.read = self.depth = 0
        self.in_string = self.opened = self.skip = False

    def add(self, delta: Content) -> None:
        call, text = self.contents[self.index], delta.arguments
        if isinstance(text, str) and not isinstance(call.arguments, dict):
            self.pieces.append(text)
        elif text:  # a dict, or text after a dict: merged now (a mix is an error)
            call = replace(call, arguments="".join(self.pieces) or call.arguments)
            self.pieces = []
            call = _merge_call(call, delta)
        if (
            (delta.name and not call.name)
            or (delta.exception and not call.exception)
            or delta.additional_properties
        ):
            call = _merge_call(call, replace(delta, arguments=None))
        if delta.call_id and not call.call_id:
            call = replace(call, call_id=delta.call_id)
        self.contents[self.index] = call

    def complete(self) -> bool:
        """Whether the arguments are a dict or text holding a whole JSON value; each
        piece is read once."""
        if isinstance(self.contents[self.index].arguments, dict):
            return True
        for text in self.pieces[self.read :]:
            skip = 0 if self.skip else -1
            for match in _STRUCTURAL.finditer(text):
                at = match.start()
                char = text[at]
                if at == skip:
                    continue
                if self.in_string:
                    skip = at + 1 if char == "\\" else skip
                    self.in_string = char != '"'
                elif char == '"':
                    self.in_string = True
                else:
                    self.depth += 1 if char in "{[" else -1
                    self.opened = True
            self.skip = skip == len(text)
        self.read = len(self.pieces)
        return self.opened and self.depth <= 0 and not self.in_string

    def finish(self) -> None:
        """The text joined into the call; a call split off a complete one that got no
        text is dropped."""
        call, text = self.contents[self.index], "".join(self.pieces)
        if self.split and not text.strip() and not isinstance(call.arguments, dict):
            del self.contents[self.index]
        elif text and call.arguments != text:
            self.contents[self.index] = replace(call, arguments=text)


_STRUCTURAL = re.compile(r'[{}\[\]"\\]')


def _merge_call(call: Content, delta: Content) -> Content:
    args: Any
    a, b = call.arguments, delta.arguments
    if a is None or a == "" or a == {}:
        args = b if b is not None else a
    elif b is None or b == "" or b == {}:
        args = a
    elif isinstance(a, str) and isinstance(b, str):
        args = a + b
    elif isinstance(a, dict) and isinstance(b, dict):
        args = {**a, **b}
    else:
        raise ContentError(
            f"cannot merge arguments of call {call.call_id!r}: {type(a).__name__} and {type(b).__name__}"
        )
    return replace(
        call,
        call_id=call.call_id or delta.call_id,
        name=call.name or delta.name,
        arguments=args,
        exception=call.exception or delta.exception,
        additional_properties={
            **delta.additional_properties,
            **call.additional_properties,
        },
    )
