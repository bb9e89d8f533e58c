"""History processing: `HistoryTrimmer`, `Summarizer`, `clean_cut`
(spec/middleware-library.md, ML-9, ML-10).

Rules
-----
1. Messages are cut only where no function call is parted from its result (`clean_cut`).
2. System messages are always kept; only the model call's messages change, never the
   run's transcript.

Theory of operation
-------------------
`Summarizer` keeps one cache per instance: the summary of a list of messages, keyed by
their JSON form, so the same older turns are summarised once however many calls send
them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from .._types import Message
from ..hooks import Handler, HookMiddleware, ModelRequest
from .checks import check_positive

__all__ = ["HistoryTrimmer", "Summarizer", "approx_tokens", "clean_cut"]


def approx_tokens(message: Message) -> int:
    """A rough token count: four characters per token, plus four per message (ML-9's
    default counter)."""
    size = 0
    for c in message.contents:
        if c.text:
            size += len(c.text)
        elif c.type in ("function_call", "function_result"):
            payload = c.arguments if c.type == "function_call" else c.result
            size += len(
                payload
                if isinstance(payload, str)
                else json.dumps(payload, default=str)
            )
    return 4 + size // 4


def _answers(messages: Sequence[Message]) -> list[set[str]]:
    return [
        {c.call_id or "" for c in m.contents if c.type == "function_result"}
        for m in messages
    ]


def _calls(messages: Sequence[Message]) -> list[set[str]]:
    return [
        {
            c.call_id or ""
            for c in m.contents
            if c.type == "function_call" and not c.informational_only
        }
        for m in messages
    ]


def _clean_cut(messages: Sequence[Message], cut: int) -> bool:
    """Keeping ``messages[cut:]`` splits no call from its result (ML-9)."""
    before = set().union(*_calls(messages[:cut])) if cut else set()
    after_answers = (
        set().union(*_answers(messages[cut:])) if cut < len(messages) else set()
    )
    after_calls = set().union(*_calls(messages[cut:])) if cut < len(messages) else set()
    before_answers = set().union(*_answers(messages[:cut])) if cut else set()
    return not (before & after_answers) and not (after_calls & before_answers)


def clean_cut(messages: Sequence[Message], wanted: int) -> int:
    """The cut nearest ``wanted`` that keeps call/result pairs together: forward (keep
    fewer) when that leaves something, else backward (keep more) (ML-9)."""
    for cut in range(wanted, len(messages)):
        if _clean_cut(messages, cut):
            return cut
    for cut in range(wanted, 0, -1):
        if _clean_cut(messages, cut):
            return cut
    return 0  # keeping everything is always clean


def _split_system(messages: Sequence[Message]) -> tuple[list[Message], list[Message]]:
    return [m for m in messages if m.role == "system"], [
        m for m in messages if m.role != "system"
    ]


class HistoryTrimmer(HookMiddleware):
    """Send each model call only the last messages: ``max_messages`` and/or
    ``max_tokens`` (ML-9)."""

    def __init__(
        self,
        *,
        max_messages: int | None = None,
        max_tokens: int | None = None,
        counter: Callable[[Message], int] = approx_tokens,
    ) -> None:
        check_positive("max_messages", max_messages)
        check_positive("max_tokens", max_tokens)
        if max_messages is None and max_tokens is None:
            raise ValueError("HistoryTrimmer needs max_messages or max_tokens")
        self.max_messages = max_messages
        self.max_tokens = max_tokens
        self.counter = counter

    @property
    def history_window(self) -> int | None:
        """SE-23: at most this many stored messages reach a model call, so a history
        provider that reads it (`SQLiteHistoryProvider`) loads no more; None when only
        ``max_tokens`` bounds it."""
        return self.max_messages

    def trim(self, messages: Sequence[Message]) -> list[Message]:
        system, rest = _split_system(messages)
        wanted = 0
        if self.max_messages is not None:
            wanted = max(wanted, len(rest) - self.max_messages)
        if self.max_tokens is not None:
            budget = self.max_tokens - sum(self.counter(m) for m in system)
            total, cut = 0, len(rest)
            while cut > 0 and total + self.counter(rest[cut - 1]) <= budget:
                cut -= 1
                total += self.counter(rest[cut])
            wanted = max(wanted, cut)
        if wanted == 0:
            return list(messages)
        # never nothing: at least the last clean suffix
        cut = clean_cut(rest, min(wanted, len(rest) - 1))
        return [*system, *rest[cut:]]

    def wrap_model_call(self, request: ModelRequest, handler: Handler) -> Any:
        trimmed = self.trim(request.messages)
        if len(trimmed) == len(request.messages):
            return handler(request)
        return handler(request.override(messages=trimmed))


class Summarizer(HookMiddleware):
    """Replace older turns by a summary written by ``client`` once there are more than
    ``trigger_messages`` messages, keeping the last ``keep_last`` (ML-10)."""

    PROMPT = (
        "Summarize the conversation below for the assistant who continues it. Keep facts, decisions, "
        "open questions and tool results that matter. Answer with the summary only.\n\n"
    )
    PREFIX = "Summary of the earlier conversation:\n"

    def __init__(
        self,
        client: Any,
        *,
        trigger_messages: int = 40,
        keep_last: int = 10,
        prompt: str | None = None,
    ) -> None:
        check_positive("trigger_messages", trigger_messages, allow_none=False)
        check_positive("keep_last", keep_last, allow_none=False, minimum=0)
        if keep_last >= trigger_messages:
            raise ValueError("keep_last must be smaller than trigger_messages")
        if not callable(getattr(client, "get_response", None)):
            raise TypeError(
                f"Summarizer needs a chat client, got {type(client).__name__}"
            )
        self.client = client
        self.trigger_messages = trigger_messages
        self.keep_last = keep_last
        self.prompt = self.PROMPT if prompt is None else prompt
        self._cache: dict[str, str] = {}

    async def summarize(self, messages: Sequence[Message]) -> str:
        key = json.dumps([m.to_dict() for m in messages], sort_keys=True, default=str)
        if key not in self._cache:
            lines = [f"{m.role}: {_describe(m)}" for m in messages]
            # A separate, non-streaming request: its tokens never reach the run's stream
            # (pain point 3).
            response = await self.client.get_response(
                [Message("user", [self.prompt + "\n".join(lines)])]
            )
            self._cache[key] = response.text
        return self._cache[key]

    async def wrap_model_call(self, request: ModelRequest, handler: Handler) -> Any:
        system, rest = _split_system(request.messages)
        if len(rest) <= self.trigger_messages:
            return await handler(request)
        cut = clean_cut(rest, len(rest) - self.keep_last)
        if cut == 0:
            return await handler(request)
        summary = await self.summarize(rest[:cut])
        note = Message("user", [self.PREFIX + summary])
        return await handler(request.override(messages=[*system, note, *rest[cut:]]))


def _describe(message: Message) -> str:
    parts = []
    for c in message.contents:
        if c.type == "text" and c.text:
            parts.append(c.text)
        elif c.type == "function_call":
            parts.append(
                f"[called {c.name}({c.arguments if isinstance(c.arguments, str) else json.dumps(c.arguments)})]"
            )
        elif c.type == "function_result":
            parts.append(
                f"[result: {c.result if isinstance(c.result, str) else json.dumps(c.result, default=str)}]"
            )
    return " ".join(parts)
