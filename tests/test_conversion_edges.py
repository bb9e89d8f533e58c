"""Edge paths of argument conversion (SC-52, SC-53) and of the argument limits
(SC-48..SC-50)."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import sys
from collections.abc import Mapping
from typing import Any, TypedDict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minagent import ArgumentConversionError, ArgumentLimits, set_argument_limits, tool
from minagent._convert import ArgumentConverter
from minagent._validate import argument_limits, check_limits, validate


@dataclasses.dataclass
class Point:
    x: int
    y: int

    def __post_init__(self) -> None:
        if self.x < 0:
            raise ValueError("x must not be negative")


def target(
    when: datetime.date,
    pair: tuple[int, str],
    point: Point,
    either: int | str,
    tags: frozenset[str],
    ratio: float,
    flag: bool,
    *rest: Any,
    **extra: Any,
) -> None:
    """A function whose parameters exercise the converters."""


class Callable_:
    def __call__(self, count: int) -> int:
        return count


def test_conversion_of_each_kind_and_its_failures() -> None:
    """SC-52, SC-53: values of every kind convert; a mismatch is an
    ArgumentConversionError naming the parameter and the path, never another
    exception."""
    convert = ArgumentConverter(target).convert
    ok = convert(
        {
            "when": "2026-11-24",
            "pair": [1, "a"],
            "point": {"x": 1, "y": 2},
            "either": "s",
            "tags": ["a", "b"],
            "ratio": 2,
            "flag": True,
        }
    )
    assert ok["when"] == datetime.date(2026, 11, 24)
    assert ok["pair"] == (1, "a")
    assert ok["point"] == Point(1, 2)
    assert ok["tags"] == frozenset({"a", "b"})
    assert ok["ratio"] == 2.0
    assert ok["flag"] is True
    bad: list[tuple[str, Any, str]] = [
        ("when", "not a date", "ISO 8601"),
        ("pair", [1, "a", 3], "2 items"),
        ("point", [1, 2], "object"),
        ("point", {"x": -1, "y": 0}, "failed"),
        ("either", 1.5, "union"),
    ]
    for name, value, says in bad:
        with pytest.raises(ArgumentConversionError, match=says) as raised:
            convert({name: value})
        assert name in str(raised.value)
    assert ArgumentConverter(Callable_()).convert({"count": 3.0}) == {"count": 3}


def test_limits_reject_long_names_strange_keys_and_huge_ints() -> None:
    """SC-48, SC-50: a property name over the string limit, non-JSON keys and values, an
    integer beyond the digit limit; set_argument_limits takes only ArgumentLimits."""
    small = ArgumentLimits(max_string_chars=4, max_integer_digits=5)
    assert [i.problem for i in check_limits({"abcdefgh": 1}, small)] == [
        "a property name is longer than 4 characters"
    ]
    # a non-str key: the full walk decides (nothing breaks a limit)
    assert check_limits({1: "x"}, small) == []
    assert check_limits({"a": object()}, small) == []  # not JSON, but no limit broken
    huge = (
        10 ** (sys.get_int_max_str_digits() + 10)
        if sys.get_int_max_str_digits()
        else 10**6000
    )
    assert (
        check_limits({"n": huge}, small)[0].problem
        == "expected an integer of at most 5 digits"
    )
    with pytest.raises(TypeError, match="ArgumentLimits"):
        set_argument_limits({"max_depth": 3})  # type: ignore[arg-type]
    previous = set_argument_limits(max_depth=7)
    try:
        assert argument_limits().max_depth == 7
    finally:
        set_argument_limits(previous)
    assert argument_limits() == previous


def test_structured_output_edges() -> None:
    """SO-1, SO-11, SO-12: a format's repr; a pydantic-style class whose
    model_json_schema() is not a dict is a TypeError naming it; an answer with a
    5000-digit integer is a decode error, not a crash; a trailing comma gives one
    position on every Python version."""
    from minagent import (
        ChatResponse,
        Message,
        ResponseFormat,
        StructuredOutputDecodeError,
    )

    fmt = ResponseFormat.of(
        {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
    )
    assert repr(fmt).startswith("ResponseFormat(")

    class Odd:
        @classmethod
        def model_json_schema(cls) -> Any:
            return ["not", "a", "dict"]

        @classmethod
        def model_validate_json(cls, text: str) -> Any:
            return text

    with pytest.raises(TypeError, match="model_json_schema"):
        ResponseFormat.of(Odd)
    response = ChatResponse([Message("assistant", ['{"a": ' + "9" * 5000 + "}"])])
    response._format = fmt  # what get_response attaches (SO-9)
    with pytest.raises(StructuredOutputDecodeError, match="not valid JSON"):
        _ = response.value
    trailing = ChatResponse([Message("assistant", ['{"a": 1,}'])])
    trailing._format = fmt
    with pytest.raises(StructuredOutputDecodeError) as raised:
        _ = trailing.value
    assert raised.value.position == 8


class _Point(TypedDict):
    x: int


def test_a_typeddict_union_member_takes_only_its_own_keys() -> None:
    """SC-52: in a union, a TypedDict member takes an object of its own keys with its
    required keys; an object of other keys goes on to the next member (found by
    hypothesis: `{"": []}` stayed a list under `list[str | TD | Mapping[str,
    set[str]]]`)."""
    seen: list[object] = []

    @tool
    def take(items: list[str | _Point | Mapping[str, set[str]]]) -> str:
        """Take."""
        seen.append(items)
        return "ok"

    asyncio.run(take.invoke({"items": [{"": ["a"]}, {"x": 1}, "s"]}))
    assert seen == [[{"": {"a"}}, {"x": 1}, "s"]]


@settings(max_examples=300, deadline=None)
@given(
    n=st.one_of(
        st.integers(-(10**6), 10**6),
        st.integers(10**300, 10**330),
        st.integers(-(10**330), -(10**300)),
    ),
    a=st.integers(1, 99),
    p=st.integers(0, 3),
)
def test_an_integer_is_a_multiple_of_a_decimal_exactly(n: int, a: int, p: int) -> None:
    """SC-45: an integer value against a decimal `multipleOf` is checked exactly, the
    divisor read as the decimal it is written as: n is a multiple of a/10**p exactly
    when n * 10**p is one of a, also for integers too large for a float (10**309 and
    0.5)."""
    divisor = float(f"{a}e-{p}")
    problems = validate(n, {"type": "integer", "multipleOf": divisor})
    assert (problems == []) == (n * 10**p % a == 0)
    if problems:
        assert problems[0].problem.startswith(f"expected a multiple of {divisor}")


def test_the_digit_limit_cannot_exceed_what_can_be_written_back() -> None:
    """SC-48: a digit limit above CPython's int-from-string limit is a ValueError naming
    both, so every accepted integer can be written back as JSON text; with that limit
    off (0) it is accepted."""
    saved = sys.get_int_max_str_digits()
    try:
        sys.set_int_max_str_digits(4300)
        assert ArgumentLimits(max_integer_digits=4300).max_integer_digits == 4300
        with pytest.raises(
            ValueError,
            match=r"max_integer_digits must be <= 4300, CPython's int limit, got 5000",
        ):
            ArgumentLimits(max_integer_digits=5000)
        sys.set_int_max_str_digits(0)
        assert ArgumentLimits(max_integer_digits=5000).max_integer_digits == 5000
    finally:
        sys.set_int_max_str_digits(saved)
