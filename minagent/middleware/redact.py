"""`Redact`: secrets replaced in the model's output, and input if asked
(spec/middleware-library.md).

Rules
-----
1. Output is redacted in both modes, and with ``inputs=True`` what the model receives
   too (ML-11); streamed text is held back until it can no longer start a secret of up
   to ``max_secret_length`` characters (ML-12).
2. `Redact` is plain chat middleware: it needs no hook. Around the model call it adds
   its filter to the core's ``REDACTIONS``, so a trace of that call records the output
   redacted too (OB-21).

Theory of operation
-------------------
The state of one stream is the text held back (``pending``), local to its generator: at
most ``max_secret_length - 1`` characters, flushed, redacted, when anything other than
text comes or the stream ends.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Sequence
from dataclasses import replace
from typing import Any

from .._middleware import CallNext, ChatContext, ChatMiddleware
from .._observe import REDACTIONS
from .._responses import ChatResponse, ChatResponseUpdate
from .._stream import ResponseStream
from .._types import Content, Message
from .checks import check_positive

__all__ = ["Redact"]


class Redact(ChatMiddleware):
    """Replace secrets matching ``patterns`` in model output — streamed or not — and,
    with ``inputs=True``, in what the model receives (ML-11, ML-12).

    Streaming holds back the last ``max_secret_length - 1`` characters of text until the
    next chunk shows whether they start a secret, so a secret split across chunk
    boundaries is still caught.
    """

    # Ready-made patterns (ML-11); combine them with your own: Redact([Redact.EMAIL,
    # r"acct-\d{8}"]).
    EMAIL = r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}"
    IPV4 = r"\b(?:(?:25[0-5]|2[0-4]\d|1?\d?\d)\.){3}(?:25[0-5]|2[0-4]\d|1?\d?\d)\b"
    CREDIT_CARD = r"\b(?:\d[ -]?){12,18}\d\b"
    API_KEY = (
        r"\b(?:sk-[A-Za-z0-9_-]{16,}|AKIA[0-9A-Z]{16}|gh[pousr]_[A-Za-z0-9]{36})\b"
    )

    def __init__(
        self,
        patterns: Sequence[str | re.Pattern[str]],
        *,
        replacement: str = "[REDACTED]",
        inputs: bool = False,
        max_secret_length: int = 200,
    ) -> None:
        if isinstance(patterns, str | re.Pattern) or not patterns:
            raise ValueError("Redact needs a non-empty list of patterns")
        check_positive("max_secret_length", max_secret_length, allow_none=False)
        compiled = [p if isinstance(p, re.Pattern) else re.compile(p) for p in patterns]
        self.pattern = re.compile("|".join(f"(?:{p.pattern})" for p in compiled))
        if self.pattern.search(""):
            raise ValueError("a Redact pattern matches the empty string")
        self.replacement = replacement
        self.inputs = inputs
        self.max_secret_length = max_secret_length

    def redact(self, text: str) -> str:
        return self.pattern.sub(self.replacement, text)

    def _message(self, message: Message) -> Message:
        changed = False
        contents = []
        for c in message.contents:
            if c.type == "text" and c.text:
                new = self.redact(c.text)
                if new != c.text:
                    c, changed = replace(c, text=new), True
            elif c.type == "function_result" and isinstance(c.result, str):
                new = self.redact(c.result)
                if new != c.result:
                    c, changed = replace(c, result=new), True
            contents.append(c)
        return message.with_contents(contents) if changed else message

    async def process(self, context: ChatContext, call_next: CallNext) -> None:
        if self.inputs:
            context.messages = [self._message(m) for m in context.messages]
        # OB-21: the chat span records it redacted
        token = REDACTIONS.set((*REDACTIONS.get(), self.redact))
        try:
            await call_next()
        finally:
            REDACTIONS.reset(token)
        if not context.stream:
            response: ChatResponse = context.result
            messages = [self._message(m) for m in response.messages]
            if any(
                a is not b for a, b in zip(messages, response.messages, strict=True)
            ):
                context.result = replace(response, messages=messages)
            return
        context.result = ResponseStream(
            self._redacted(context.result), finalizer=ChatResponse.from_updates
        )

    async def _redacted(
        self, stream: ResponseStream[Any, Any]
    ) -> AsyncIterator[ChatResponseUpdate]:
        pending = ""
        hold = self.max_secret_length - 1
        iterator = stream.__aiter__()
        try:
            async for update in iterator:
                contents: list[Content] = []
                for c in update.contents:
                    if c.type == "text" and c.text is not None:
                        pending += c.text
                        emitted, pending = self._safe_prefix(pending, hold)
                        if emitted:
                            contents.append(replace(c, text=emitted))
                        continue
                    # anything else ends the text run: flush it first, fully redacted
                    if pending:
                        contents.append(Content.from_text(self.redact(pending)))
                        pending = ""
                    contents.append(c)
                yield replace(update, contents=contents)
        finally:
            await iterator.aclose()
        if pending:
            yield ChatResponseUpdate(
                [Content.from_text(self.redact(pending))], "assistant"
            )

    def _safe_prefix(self, text: str, hold: int) -> tuple[str, str]:
        """Split ``text`` into a redacted part safe to send now and the rest to hold
        back (ML-12)."""
        cut = max(0, len(text) - hold)
        out: list[str] = []
        at = 0
        for match in self.pattern.finditer(text):
            if match.start() >= cut:
                break
            out.append(text[at : match.start()])
            out.append(self.replacement)
            at = match.end()
            cut = max(cut, at)
        out.append(text[at:cut])
        return "".join(out), text[cut:]
