"""The JSON form every wire type shares, and `UsageDetails` (spec/types.md TY-8, TY-13).

Every wire type is a dataclass that round-trips through plain JSON with ``to_dict()`` /
``from_dict()``; the readers here check one field each and name the path of the field they
reject, so a bad document says where it is bad.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

from ._exceptions import SerializationError

__all__ = ["UsageDetails", "add_usage"]


class _Json:
    """``to_json`` / ``from_json`` over ``to_dict`` / ``from_dict`` for every wire type (TY-13)."""

    __slots__ = ()

    def to_json(self, **dumps_kwargs: Any) -> str:
        """``json.dumps(self.to_dict(), **dumps_kwargs)``: ``indent=2`` and friends pass through."""
        return json.dumps(self.to_dict(), **dumps_kwargs)  # type: ignore[attr-defined]

    @classmethod
    def from_json(cls, text: str | bytes, /) -> Any:
        """The object `to_json` wrote; text that is not JSON is a `SerializationError`."""
        try:
            data = json.loads(text)
        except (ValueError, RecursionError) as exc:
            raise SerializationError(cls.__name__, f"not JSON: {exc}") from None
        return cls.from_dict(data)  # type: ignore[attr-defined]


# --------------------------------------------------------------------------------------------
# JSON helpers shared by every from_dict: each check names the path of the field it rejects.


def _expect_mapping(data: object, path: str) -> Mapping[str, Any]:
    if not isinstance(data, Mapping):
        raise SerializationError(path, f"expected a JSON object, got {type(data).__name__}")
    return data


def _expect_type(data: Mapping[str, Any], expected: str, path: str) -> None:
    actual = data.get("type")
    if actual != expected:
        raise SerializationError(f"{path}.type", f"expected {expected!r}, got {actual!r}")


def _get(data: Mapping[str, Any], key: str, kinds: type | tuple[type, ...], path: str) -> Any:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in _as_tuple(kinds)):
        names = " or ".join(k.__name__ for k in _as_tuple(kinds))
        raise SerializationError(f"{path}.{key}", f"expected {names}, got {type(value).__name__}")
    return value


def _as_tuple(kinds: type | tuple[type, ...]) -> tuple[type, ...]:
    return kinds if isinstance(kinds, tuple) else (kinds,)


def _extra(data: Mapping[str, Any], known: Iterable[str]) -> dict[str, Any]:
    known_set = set(known)
    return {k: v for k, v in data.items() if k not in known_set}


def _compact(pairs: Iterable[tuple[str, Any]]) -> dict[str, Any]:
    """Drop None, empty dicts and False flags: they are the defaults and stay implicit."""
    return {k: v for k, v in pairs if v is not None and v != {} and v is not False}


# --------------------------------------------------------------------------------------------


@dataclass(slots=True)
class UsageDetails(_Json):
    """Token counts of one or more model calls. ``a + b`` sums field by field (TY-13)."""

    input_token_count: int | None = None
    output_token_count: int | None = None
    total_token_count: int | None = None
    cache_read_input_token_count: int | None = None
    cache_creation_input_token_count: int | None = None
    reasoning_output_token_count: int | None = None
    additional_counts: dict[str, int] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    _COUNTS: ClassVar[tuple[str, ...]] = (
        "input_token_count",
        "output_token_count",
        "total_token_count",
        "cache_read_input_token_count",
        "cache_creation_input_token_count",
        "reasoning_output_token_count",
    )

    def __add__(self, other: UsageDetails | None) -> UsageDetails:
        if other is None:
            counts = dict(self.additional_counts)
            return replace(self, additional_counts=counts, extra=dict(self.extra))
        if not isinstance(other, UsageDetails):
            return NotImplemented
        summed = {name: _add_counts(getattr(self, name), getattr(other, name)) for name in self._COUNTS}
        extra = dict(self.additional_counts)
        for key, value in other.additional_counts.items():
            extra[key] = extra.get(key, 0) + value
        unknown = {**self.extra, **other.extra}
        return UsageDetails(**summed, additional_counts=extra, extra=unknown)

    def __radd__(self, other: None) -> UsageDetails:
        return self + None

    def __bool__(self) -> bool:
        return any(getattr(self, n) is not None for n in self._COUNTS) or bool(self.additional_counts)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "usage_details"}
        out.update(_compact((n, getattr(self, n)) for n in self._COUNTS))
        if self.additional_counts:
            out["additional_counts"] = dict(self.additional_counts)
        for key, value in self.extra.items():
            out.setdefault(key, value)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, path: str = "usage_details") -> UsageDetails:
        data = _expect_mapping(data, path)
        counts = {n: _get(data, n, int, path) for n in cls._COUNTS}
        extra = _get(data, "additional_counts", dict, path) or {}
        for key, value in extra.items():
            if not isinstance(value, int) or isinstance(value, bool):
                raise SerializationError(f"{path}.additional_counts.{key}", "expected int")
        unknown = _extra(data, ("type", *cls._COUNTS, "additional_counts"))
        return cls(**counts, additional_counts=dict(extra), extra=unknown)


def _add_counts(a: int | None, b: int | None) -> int | None:
    if a is None:
        return b
    if b is None:
        return a
    return a + b


def add_usage(a: UsageDetails | None, b: UsageDetails | None) -> UsageDetails | None:
    """Sum two optional usages; None only when both are None (TY-13)."""
    if a is None:
        return None if b is None else b + None
    return a + b
