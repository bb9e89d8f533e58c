"""Test doubles: `ScriptedChatClient`, a real `BaseChatClient` that plays back a script
(spec/loop.md).

Each model call consumes one step of the script. A step is:

* a `ChatResponse`;
* a str: an assistant message with that text;
* a `Content` or a list of `Content`: one assistant message with those contents (use
  `call(...)` for function calls);
* a list of `ChatResponseUpdate`: streamed exactly as given (in non-streaming mode,
  merged with `ChatResponse.from_updates`), so chunk boundaries and argument deltas are
  under the test's control;
* an exception instance: raised by the call;
* a callable ``(messages, options) -> step``: computed at call time.

Every request is recorded in ``client.requests`` (messages and options as received,
copied). A ``response_format`` is recorded in its normalised wire form
(spec/structured.md SO-7):
``client.requests[0].options["response_format"] ==
ResponseFormat.of(MyDataclass).wire``. A call beyond the end of the script raises
`ScriptExhaustedError`; ``assert_consumed()`` fails when steps are left over.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import count
from typing import Any, TypeAlias

from .._clients import BaseChatClient
from .._responses import ChatResponse, ChatResponseUpdate
from .._tools import FunctionInvocationConfiguration
from .._types import Content, Message, UsageDetails

__all__ = [
    "Request",
    "ScriptExhaustedError",
    "ScriptedChatClient",
    "call",
    "reply",
    "text_chunks",
]

Step: TypeAlias = Any


class ScriptExhaustedError(AssertionError):
    """The client was called more often than its script allows."""


@dataclass
class Request:
    """One model call as the client received it."""

    messages: list[Message]
    options: dict[str, Any]
    stream: bool
    kwargs: dict[str, Any] = field(default_factory=dict)

    @property
    def texts(self) -> list[str]:
        """Each message as ``role: text`` — handy for assertions."""
        return [f"{m.role}: {m.text}" for m in self.messages]


_ids = count(1)


def call(
    name: str,
    arguments: Mapping[str, Any] | str | None = None,
    *,
    call_id: str | None = None,
) -> Content:
    """A function call content; arguments given as a dict are sent as a JSON string."""
    args = (
        json.dumps(dict(arguments))
        if isinstance(arguments, Mapping)
        else (arguments or "{}")
    )
    return Content.from_function_call(call_id or f"call_{next(_ids)}", name, args)


def reply(
    *contents: Content | str, usage: UsageDetails | None = None, **fields: Any
) -> ChatResponse:
    """An assistant response with these contents (and usage)."""
    return ChatResponse(
        [Message("assistant", list(contents))], usage_details=usage, **fields
    )


def text_chunks(
    *chunks: str, usage: UsageDetails | None = None
) -> list[ChatResponseUpdate]:
    """A streamed assistant text, one update per chunk."""
    updates = [
        ChatResponseUpdate([Content.from_text(chunk)], "assistant") for chunk in chunks
    ]
    if usage is not None:
        updates.append(ChatResponseUpdate([Content.from_usage(usage)]))
    return updates


class ScriptedChatClient(BaseChatClient):
    """A chat client whose answers are written in advance (see the module docstring)."""

    def __init__(
        self,
        steps: Sequence[Step] = (),
        *,
        middleware: Any = None,
        function_invocation_configuration: FunctionInvocationConfiguration
        | Mapping[str, Any]
        | None = None,
        model: str = "scripted",
    ) -> None:
        super().__init__(
            middleware=middleware,
            function_invocation_configuration=function_invocation_configuration,
        )
        self.steps: list[Step] = list(steps)
        self.position = 0
        self.model = model
        self.requests: list[Request] = []

    @property
    def unconsumed(self) -> list[Step]:
        return self.steps[self.position :]

    def assert_consumed(self) -> None:
        if self.unconsumed:
            raise AssertionError(
                f"{len(self.unconsumed)} scripted step(s) were never used: {self.unconsumed!r:.500}"
            )

    def _next(
        self,
        messages: list[Message],
        options: dict[str, Any],
        stream: bool,
        kwargs: dict[str, Any],
    ) -> Step:
        self.requests.append(
            Request(list(messages), dict(options), stream, dict(kwargs))
        )
        if self.position >= len(self.steps):
            seen = "; ".join(Request(messages, options, stream).texts)[-300:]
            raise ScriptExhaustedError(
                f"model call {self.position + 1} was not scripted (the script has {len(self.steps)} steps); "
                f"the call received: {seen}"
            )
        step = self.steps[self.position]
        self.position += 1
        if callable(step) and not isinstance(
            step, Content | ChatResponse | BaseException
        ):
            step = step(messages, options)
        if isinstance(step, BaseException):
            raise step
        return step

    async def _inner_get_response(
        self, *, messages: list[Message], options: dict[str, Any], **kwargs: Any
    ) -> ChatResponse:
        return _as_response(self._next(messages, options, False, kwargs))

    async def _inner_get_streaming_response(
        self, *, messages: list[Message], options: dict[str, Any], **kwargs: Any
    ) -> AsyncIterator[ChatResponseUpdate]:
        step = self._next(messages, options, True, kwargs)
        if _is_update_list(step):
            for update in step:
                yield update
            return
        for update in _as_response(step).as_updates():
            yield update


def _is_update_list(step: Step) -> bool:
    return (
        isinstance(step, list)
        and bool(step)
        and all(isinstance(u, ChatResponseUpdate) for u in step)
    )


def _as_response(step: Step) -> ChatResponse:
    if isinstance(step, ChatResponse):
        return step
    if isinstance(step, str | Content):
        return reply(step)
    if _is_update_list(step):
        return ChatResponse.from_updates(step)
    if isinstance(step, list) and all(isinstance(c, Content | str) for c in step):
        return reply(*step)
    raise TypeError(f"not a valid script step: {step!r:.200}")
