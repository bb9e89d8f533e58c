"""The JSON form every wire type shares, and `UsageDetails` (spec/types.md TY-8, TY-13).

Every wire type is a dataclass that round-trips through plain JSON with ``to_dict()`` /
``from_dict()``; the readers here check one field each and name the path of the field
they reject, so a bad document says where it is bad.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping
from dataclasses import fields, is_dataclass
from typing import Any, ClassVar, cast

from ._exceptions import SerializationError

__all__ = ["UsageDetails", "add_usage", "expect_mapping", "expect_type", "get_field"]


class _Json:
    """``to_json`` / ``from_json`` over ``to_dict`` / ``from_dict`` for every wire type
    (TY-13)."""

    __slots__ = ()

    def __deepcopy__(self, memo: dict[int, Any]) -> Any:
        """TY-17: a deep copy that keeps ``raw_representation`` (the provider's object)
        by reference."""
        new: Any = copy.copy(self)
        memo[id(self)] = new
        if isinstance(self, dict):
            new.update((k, copy.deepcopy(v, memo)) for k, v in self.items())
        # no ClassVar (TY-17, TY-60)
        names: list[str] = [f.name for f in fields(self)] if is_dataclass(self) else []
        for name in names:
            if name != "raw_representation":
                setattr(new, name, copy.deepcopy(getattr(self, name), memo))
        return new

    def to_json(self, **dumps_kwargs: Any) -> str:
        """``json.dumps(self.to_dict(), **dumps_kwargs)``: ``indent=2`` and friends pass
        through."""
        return json.dumps(self.to_dict(), **dumps_kwargs)  # type: ignore[attr-defined]

    @classmethod
    def from_json(cls, text: str | bytes, /) -> Any:
        """The object `to_json` wrote; text that is not JSON is a
        `SerializationError`."""
        try:
            data = json.loads(text)
        except (ValueError, RecursionError) as exc:
            raise SerializationError(cls.__name__, f"not JSON: {exc}") from None
        return cls.from_dict(data)  # type: ignore[attr-defined]


class _Own:
    """TY-50: a dict field that is made on first access and is then the instance's
    own."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, obj: object, owner: type | None = None) -> Any:
        return self if obj is None else obj.__dict__.setdefault(self.name, {})


# -- JSON helpers shared by every from_dict: each check names the path of the field it rejects. ----


def _expect_mapping(data: object, path: str) -> Mapping[str, Any]:
    if not isinstance(data, Mapping):
        raise SerializationError(
            path, f"expected a JSON object, got {type(data).__name__}"
        )
    return data


def _expect_type(data: Mapping[str, Any], expected: str, path: str) -> None:
    """A ``type`` other than ``expected`` is an error; none at all is upstream's form,
    accepted (TY-8)."""
    actual = data.get("type", expected)
    if actual != expected:
        raise SerializationError(
            f"{path}.type", f"expected {expected!r}, got {actual!r}"
        )


def _get(
    data: Mapping[str, Any], key: str, kinds: type | tuple[type, ...], path: str
) -> Any:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, kinds) or (
        isinstance(value, bool) and bool not in _as_tuple(kinds)
    ):
        names = " or ".join(k.__name__ for k in _as_tuple(kinds))
        raise SerializationError(
            f"{path}.{key}", f"expected {names}, got {type(value).__name__}"
        )
    return value


# for the folders' readers
expect_mapping, expect_type, get_field = _expect_mapping, _expect_type, _get


def _as_tuple(kinds: type | tuple[type, ...]) -> tuple[type, ...]:
    return kinds if isinstance(kinds, tuple) else (kinds,)


def _extra(data: Mapping[str, Any], known: Iterable[str]) -> dict[str, Any]:
    known_set = set(known)
    return {k: v for k, v in data.items() if k not in known_set}


def _compact(pairs: Iterable[tuple[str, Any]]) -> dict[str, Any]:
    """Drop None, empty dicts and False flags: they are the defaults and stay
    implicit."""
    return {k: v for k, v in pairs if v is not None and v != {} and v is not False}


_COUNTS: tuple[str, ...] = (
    "input_token_count",
    "output_token_count",
    "total_token_count",
)
_COUNTS += (
    "cache_read_input_token_count",
    "cache_creation_input_token_count",
    "reasoning_output_token_count",
)


def _is_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class UsageDetails(dict[str, Any], _Json):
    """Token counts of one or more model calls, a dict that also has the counts as
    attributes (TY-12): ``usage.input_token_count`` is
    ``usage.get("input_token_count")``; any other int key is an additional count; ``a +
    b`` sums key by key (TY-13)."""

    __slots__ = ()
    _COUNTS: ClassVar[tuple[str, ...]] = _COUNTS
    # the six counts: properties over the items, set below
    input_token_count: int | None
    output_token_count: int | None
    total_token_count: int | None
    cache_read_input_token_count: int | None
    cache_creation_input_token_count: int | None
    reasoning_output_token_count: int | None

    def __init__(
        self,
        *counts: int | None,
        additional_counts: Mapping[str, int] | None = None,
        **entries: Any,
    ) -> None:
        """``UsageDetails(input, output, total, ...)`` in `_COUNTS` order, or by name;
        other names are additional counts (upstream's form) and ``additional_counts=`` /
        ``extra=`` add theirs; None is an absent entry. One mapping (or pairs) alone is
        taken as ``dict()`` takes it (upstream's TypedDict)."""
        # TY-12: not a count
        if len(counts) == 1 and not isinstance(
            first := cast(Any, counts[0]), int | None
        ):
            counts, entries = (), {**dict(first), **entries}
        super().__init__(
            (k, v) for k, v in zip(_COUNTS, counts, strict=False) if v is not None
        )
        entries = {
            **(additional_counts or {}),
            **(entries.pop("extra", None) or {}),
            **entries,
        }
        self.update((k, v) for k, v in entries.items() if v is not None)

    @property
    def additional_counts(self) -> dict[str, int]:
        """The int entries other than the six named counts."""
        return {k: v for k, v in self.items() if k not in _COUNTS and _is_count(v)}

    @property
    def extra(self) -> dict[str, Any]:
        """Entries that are not counts (unknown JSON fields, kept for the round trip,
        TY-8)."""
        return {k: v for k, v in self.items() if k not in _COUNTS and not _is_count(v)}

    def __add__(self, other: Mapping[str, Any] | None) -> UsageDetails:
        summed = UsageDetails(**self)
        if other is None:
            return summed
        if not isinstance(other, Mapping):
            return NotImplemented
        for key, value in other.items():
            mine = summed.get(key)
            if value is None:
                continue
            summed[key] = (
                mine + value
                if _is_count(mine) and _is_count(value)
                else value
                if mine is None
                else mine
            )
        return summed

    def __radd__(self, other: Mapping[str, Any] | None) -> UsageDetails:
        return self + None if other is None else UsageDetails(**other) + self

    def __bool__(self) -> bool:
        return any(_is_count(v) for v in self.values())

    def __repr__(self) -> str:
        return f"UsageDetails({dict.__repr__(self)})"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "usage_details"}
        out.update((n, self[n]) for n in _COUNTS if self.get(n) is not None)
        if counts := self.additional_counts:
            out["additional_counts"] = counts
        for key, value in self.extra.items():
            out.setdefault(key, value)
        return out

    @classmethod
    def from_dict(
        cls, data: Mapping[str, Any], *, path: str = "usage_details"
    ) -> UsageDetails:
        data = _expect_mapping(data, path)
        counts = {n: _get(data, n, int, path) for n in _COUNTS}
        extra = _get(data, "additional_counts", dict, path) or {}
        for key, value in extra.items():
            if not _is_count(value):
                raise SerializationError(
                    f"{path}.additional_counts.{key}", "expected int"
                )
        return cls(
            **counts,
            additional_counts=extra,
            extra=_extra(data, ("type", *_COUNTS, "additional_counts")),
        )


def _count_property(name: str) -> property:
    def get(self: UsageDetails) -> int | None:
        return self.get(name)

    def set_(self: UsageDetails, value: int | None) -> None:
        if value is None:
            self.pop(name, None)
        else:
            self[name] = value

    return property(get, set_, doc=f"``usage[{name!r}]``, None when absent.")


for _name in _COUNTS:
    setattr(UsageDetails, _name, _count_property(_name))


def add_usage(a: UsageDetails | None, b: UsageDetails | None) -> UsageDetails | None:
    """Sum two optional usages; None only when both are None (TY-13)."""
    if a is None:
        return None if b is None else b + None
    return a + b
