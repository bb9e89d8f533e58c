"""A recording tracer for the observability tests (OB-1): every span with its parent,
attributes, errors and how many times it ended."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import Any


class RecordedSpan:
    def __init__(
        self,
        tracer: RecordingTracer,
        name: str,
        attributes: Mapping[str, Any],
        parent: Any,
    ) -> None:
        self.tracer = tracer
        self.name = name
        self.attributes = dict(attributes)
        self.parent = parent
        self.errors: list[BaseException] = []
        self.ended = 0

    def set_attributes(self, attributes: Mapping[str, Any]) -> None:
        assert self.ended == 0, f"attributes set on ended span {self.name}"
        self.attributes.update(attributes)

    def record_error(self, error: BaseException) -> None:
        self.errors.append(error)

    def end(self) -> None:
        self.ended += 1
        self.tracer.order.append(("end", self.name))

    def __repr__(self) -> str:
        return f"<span {self.name}>"


class RecordingTracer:
    def __init__(self) -> None:
        self.spans: list[RecordedSpan] = []
        self.order: list[tuple[str, str]] = []
        self.active: list[RecordedSpan] = []
        self.active_at_activate: list[list[RecordedSpan]] = []

    def start_span(
        self, name: str, attributes: Mapping[str, Any], parent: Any
    ) -> RecordedSpan:
        span = RecordedSpan(self, name, attributes, parent)
        self.spans.append(span)
        self.order.append(("start", name))
        return span

    @contextlib.contextmanager
    def activate(self, span: Any) -> Iterator[None]:
        self.active.append(span)
        try:
            yield
        finally:
            self.active.pop()

    def tree(self) -> list[tuple[str, str | None]]:
        """(span name, parent name) in start order."""
        return [
            (s.name, s.parent.name if s.parent is not None else None)
            for s in self.spans
        ]

    def named(self, prefix: str) -> list[RecordedSpan]:
        return [s for s in self.spans if s.name.startswith(prefix)]
