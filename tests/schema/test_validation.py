"""Validating a value against a JSON schema: issues and their paths, each keyword
(spec/schema.md SC-25 .. SC-42, SC-45, SC-47)."""

from __future__ import annotations

from typing import (
    Any,
    Literal,
)

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minagent._validate import (
    ValidationIssue,
    describe_issues,
    validate,
)
from tests.schema import _fixtures as fx
from tests.schema._strategies import (
    Box,
    Movie,
    describe_value,
    params,
    paths,
    prop,
)

# --------------------------------------------------------------------------- helpers


def problems(instance: Any, schema: dict[str, Any]) -> list[str]:
    return [str(issue) for issue in validate(instance, schema)]


# --------------------------------------------------------------------------- validation


WEATHER = params(fx.get_weather)


def test_all_issues_are_reported_with_paths() -> None:
    """SC-25: every issue, not only the first; [] when valid; str is "path: problem"."""
    assert validate({"city": "Oslo"}, WEATHER) == []
    issues = validate({"units": "kelvin", "days": 3}, WEATHER)
    assert [str(issue) for issue in issues] == [
        "$.city: required property is missing (expected string)",
        '$.units: expected one of: "metric", "imperial"; got string "kelvin"',
        "$.days: unexpected property; allowed properties: city, units",
    ]
    assert issues[0] == ValidationIssue(
        "$.city", "required property is missing (expected string)"
    )


def test_paths_name_properties_and_indexes() -> None:
    """SC-25: `.name`, `["odd name"]` and `[i]` segments from the root `$`."""
    schema = {
        "type": "object",
        "properties": {
            "items": {
                "type": "array",
                "items": {"type": "object", "properties": {"qty": {"type": "integer"}}},
            },
            "odd name": {"type": "string"},
        },
    }
    instance = {"items": [{"qty": 1}, {"qty": 2}, {"qty": "3"}], "odd name": 4}
    assert paths(validate(instance, schema)) == ["$.items[2].qty", '$["odd name"]']
    assert paths(validate("x", {"type": "integer"})) == ["$"]


@pytest.mark.parametrize(
    ("value", "described"),
    [
        (None, "null"),
        (True, "boolean true"),
        (3, "integer 3"),
        (2.5, "number 2.5"),
        ("hi", 'string "hi"'),
        ([1, 2], "array [1, 2]"),
        ({"a": 1}, 'object {"a": 1}'),
        (b"x", "bytes b'x'"),
        ("é\n", 'string "é\\n"'),
    ],
)
def test_given_values_are_described_as_json(value: Any, described: str) -> None:
    """SC-26: the JSON type and the JSON text of the given value (repr when not
    JSON)."""
    assert problems(value, {"enum": ["Q"]}) == [f'$: expected "Q"; got {described}']


def test_long_values_are_cut_to_sixty_characters() -> None:
    """SC-26: the rendered value is cut and ends in "..."; the problem is one line."""
    (issue,) = validate("a" * 100 + "\nb", {"type": "integer"})
    rendered = issue.problem.split("got string ", 1)[1]
    assert len(rendered) == 60
    assert rendered == '"' + "a" * 56 + "..."
    assert "\n" not in issue.problem


def test_boolean_schemas() -> None:
    """SC-27: true and {} accept everything; false accepts nothing."""
    for value in (None, 1, "x", [1], {"a": 1}):
        assert validate(value, {}) == []
        assert validate({"v": value}, {"properties": {"v": True}}) == []
    assert problems({"v": 1}, {"properties": {"v": False}}) == [
        "$.v: no value is allowed here; got integer 1"
    ]


@pytest.mark.parametrize(
    ("type_", "accepted", "rejected"),
    [
        ("integer", [0, -3, 2**70, 3.0], [True, 2.5, "1", None, [1]]),
        ("number", [0, 2.5, -1e300], [False, "1.0", None]),
        ("boolean", [True, False], [0, 1, "true", None]),
        ("null", [None], [0, "", False, []]),
        ("string", ["", "x"], [1, None, ["x"]]),
        ("array", [[], [1], (1, 2)], [{}, "ab", None]),
        ("object", [{}, {"a": 1}], [[], "x", None]),
    ],
)
def test_type_keyword(type_: str, accepted: list[Any], rejected: list[Any]) -> None:
    """SC-28: integer and number never accept bool; integer accepts integral floats."""
    for value in accepted:
        assert validate(value, {"type": type_}) == [], value
    for value in rejected:
        assert problems(value, {"type": type_}) == [
            f"$: expected {type_}; got {describe_value(value)}"
        ], value


def test_type_list_and_single_issue_on_type_mismatch() -> None:
    """SC-28: a list of types; a wrong type gives one issue (naming enum values when
    present)."""
    schema = {"type": ["string", "null"], "minLength": 2, "enum": ["ab", None]}
    assert validate(None, schema) == []
    assert problems(5, {"type": ["string", "null"]}) == [
        "$: expected one of: string, null; got integer 5"
    ]
    assert problems(5, schema) == ['$: expected one of: "ab", null; got integer 5']
    assert problems("a", schema) == [
        '$: expected one of: "ab", null; got string "a"',
        "$: expected at least 2 characters; got 1",
    ]


def test_enum_and_const_use_json_equality() -> None:
    """SC-29: true is not 1, 1 equals 1.0, containers compare element-wise."""
    assert validate(1.0, {"enum": [1, 2]}) == []
    assert problems(True, {"enum": [1, 2]}) == [
        "$: expected one of: 1, 2; got boolean true"
    ]
    assert problems(1, {"enum": [True]}) == ["$: expected true; got integer 1"]
    assert validate([1, {"a": None}], {"enum": [[1.0, {"a": None}]]}) == []
    assert problems([1, 2], {"enum": [[2, 1]]}) == [
        "$: expected [2, 1]; got array [1, 2]"
    ]
    assert validate({"a": 1, "b": 2}, {"const": {"b": 2, "a": 1}}) == []
    assert problems({"a": 1}, {"const": {"a": 1, "b": 2}}) == [
        '$: expected {"a": 1, "b": 2}; got object {"a": 1}'
    ]
    assert problems(6, {"const": 5}) == ["$: expected 5; got integer 6"]
    assert problems(0, {"const": False}) == ["$: expected false; got integer 0"]


def test_long_enums_are_listed_up_to_fifty_values() -> None:
    """SC-29: at most 50 allowed values, then the number left out."""
    (issue,) = validate(-1, {"enum": list(range(60))})
    assert issue.problem.startswith("expected one of: 0, 1, 2,")
    assert ", 49, ... (10 more); got integer -1" in issue.problem


def test_required_and_properties() -> None:
    """SC-30: each missing required property is named, with what it expects when
    known."""
    schema = {
        "type": "object",
        "properties": {
            "a": {"type": "integer"},
            "b": {},
            "c": {"anyOf": [{"type": "string"}]},
        },
        "required": ["a", "b", "c", "d"],
    }
    assert problems({}, schema) == [
        "$.a: required property is missing (expected integer)",
        "$.b: required property is missing",
        "$.c: required property is missing (expected string)",
        "$.d: required property is missing",
    ]
    assert problems({"a": "1", "b": 1, "c": "", "d": 0}, schema) == [
        '$.a: expected integer; got string "1"'
    ]


def test_additional_properties() -> None:
    """SC-31: false names the property and lists the allowed ones; a schema checks
    extras."""
    closed = {"properties": {"a": {}, "b": {}}, "additionalProperties": False}
    assert problems({"a": 1, "z": 2, "y": 3}, closed) == [
        "$.z: unexpected property; allowed properties: a, b",
        "$.y: unexpected property; allowed properties: a, b",
    ]
    assert problems({"x": 1}, {"additionalProperties": False}) == [
        "$.x: unexpected property; no properties are allowed"
    ]
    typed = {"properties": {"a": {}}, "additionalProperties": {"type": "integer"}}
    assert problems({"a": "ok", "n": 1, "m": "no"}, typed) == [
        '$.m: expected integer; got string "no"'
    ]
    assert validate({"anything": [1]}, {"properties": {"a": {"type": "integer"}}}) == []


def test_items_and_prefix_items() -> None:
    """SC-32: prefixItems first, items for the rest; the draft-7 list form too."""
    schema = {
        "prefixItems": [{"type": "string"}, {"type": "integer"}],
        "items": {"type": "null"},
    }
    assert validate(["a", 1, None, None], schema) == []
    assert paths(validate([1, "a", 0], schema)) == ["$[0]", "$[1]", "$[2]"]
    assert paths(validate(["a", 1, 2], {"prefixItems": [{"type": "string"}]})) == []
    closed = {"prefixItems": [{"type": "string"}], "items": False}
    assert problems(["a", 1], closed) == [
        "$[1]: no value is allowed here; got integer 1"
    ]
    draft7 = {"items": [{"type": "string"}], "additionalItems": {"type": "integer"}}
    assert validate(["a", 1, 2], draft7) == []
    assert paths(validate([1, "b"], draft7)) == ["$[0]", "$[1]"]


def test_min_max_and_unique_items() -> None:
    """SC-33: counts and duplicates (JSON equality) at the array's path."""
    schema = {"minItems": 2, "maxItems": 3, "uniqueItems": True}
    assert validate([1, 2], schema) == []
    assert problems([1], schema) == ["$: expected at least 2 items; got 1"]
    assert problems([1, 2, 3, 4], schema) == ["$: expected at most 3 items; got 4"]
    assert problems(
        [1, True, 1.0, {"a": [1]}, {"a": [1.0]}], {"uniqueItems": True}
    ) == [
        "$: expected unique items; items [0] and [2] are equal",
        "$: expected unique items; items [3] and [4] are equal",
    ]
    assert validate([1, 1], {"uniqueItems": False}) == []


def test_unique_items_compares_non_json_values_by_identity() -> None:
    """SC-33: uniqueItems reports a repeated element naming both indexes; a value that
    is not JSON is equal only to itself."""
    same = object()
    (issue,) = validate([same, same], {"uniqueItems": True})
    assert "[0] and [1]" in issue.problem
    assert validate([object(), object()], {"uniqueItems": True}) == []


def test_any_of_reports_one_useful_issue() -> None:
    """SC-34: the closest alternative of the right JSON type explains, else a summary of
    all."""
    optional_int = prop(int | None)
    assert validate(None, optional_int) == []
    assert problems("x", optional_int) == [
        '$: expected one of: integer, null; got string "x"'
    ]
    point = {
        "type": "object",
        "properties": {"x": {"type": "number"}},
        "required": ["x"],
        "additionalProperties": False,
    }
    assert problems({"y": 1}, {"anyOf": [point, {"type": "null"}]}) == [
        "$.x: required property is missing (expected number)",
        "$.y: unexpected property; allowed properties: x",
    ]
    choice = prop(Literal["a", "b"] | int)
    assert problems("c", choice) == ['$: expected one of: "a", "b"; got string "c"']
    assert problems(2.5, choice) == [
        '$: expected one of: "a", "b", integer; got number 2.5'
    ]
    referenced = {
        "$defs": {"n": {"type": "integer"}},
        "anyOf": [{"$ref": "#/$defs/n"}, {"type": "null"}],
    }
    assert problems("x", referenced) == [
        '$: expected one of: integer, null; got string "x"'
    ]
    two_arrays = prop(list[int] | list[str])
    assert problems([1, "a"], two_arrays) == ['$[1]: expected integer; got string "a"']
    assert problems(["a", 2, 3], two_arrays) == [
        '$[0]: expected integer; got string "a"'
    ]
    assert problems(["a", "b", 3], two_arrays) == [
        "$[2]: expected string; got integer 3"
    ]
    shapes = prop(Movie | Box)
    assert problems({"title": "Up", "year": "2009"}, shapes) == [
        '$.year: expected integer; got string "2009"'
    ]


def test_one_of() -> None:
    """SC-35: exactly one alternative must pass."""
    schema = {"oneOf": [{"type": "integer"}, {"type": "number"}, {"type": "string"}]}
    assert validate(2.5, schema) == []
    assert validate("s", schema) == []
    assert problems(3, schema) == [
        "$: expected exactly one alternative to match; alternatives 0, 1 match"
    ]
    assert problems(None, schema) == [
        "$: expected one of: integer, number, string; got null"
    ]


def test_all_of() -> None:
    """SC-36: the issues of every alternative."""
    schema = {"allOf": [{"type": "integer"}, {"minimum": 10}, {"maximum": 5}]}
    assert problems(7, schema) == [
        "$: expected a number >= 10; got integer 7",
        "$: expected a number <= 5; got integer 7",
    ]


def test_ref_resolves_defs_definitions_and_root() -> None:
    """SC-37: #/$defs, #/definitions, # and escaped pointers; siblings of $ref apply."""
    schema = {
        "$defs": {"pos": {"type": "integer", "minimum": 1}, "a/b": {"type": "string"}},
        "definitions": {"name": {"type": "string"}},
        "properties": {
            "n": {"$ref": "#/$defs/pos", "maximum": 3},
            "s": {"$ref": "#/definitions/name"},
            "e": {"$ref": "#/$defs/a~1b"},
            "self": {"$ref": "#"},
        },
    }
    assert validate({"n": 2, "s": "x", "e": "y", "self": {"n": 3}}, schema) == []
    assert problems({"n": 0, "s": 1, "e": 2, "self": {"n": 4}}, schema) == [
        "$.n: expected a number >= 1; got integer 0",
        "$.s: expected string; got integer 1",
        "$.e: expected string; got integer 2",
        "$.self.n: expected a number <= 3; got integer 4",
    ]


@pytest.mark.parametrize(
    "schema",
    [
        {"$ref": "#/$defs/missing"},
        {"$ref": "other.json#/x"},
        {
            "$ref": "#/$defs/a",
            "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}},
        },
        {"$defs": {"a": 5}, "$ref": "#/$defs/a"},
    ],
)
def test_bad_refs_raise_value_error(schema: dict[str, Any]) -> None:
    """SC-37, SC-41: unresolvable references and reference cycles are schema errors."""
    with pytest.raises(ValueError, match=r"\$ref"):
        validate(1, schema)


@pytest.mark.parametrize(
    ("keyword", "limit", "passing", "failing", "symbol"),
    [
        ("minimum", 1, [1, 2.5], [0, 0.5], ">="),
        ("maximum", 1, [1, -3], [2, 1.5], "<="),
        ("exclusiveMinimum", 1, [1.5, 2], [1, 0], ">"),
        ("exclusiveMaximum", 1, [0.5, 0], [1, 2], "<"),
    ],
)
def test_numeric_bounds(
    keyword: str, limit: int, passing: list[float], failing: list[float], symbol: str
) -> None:
    """SC-38: minimum, maximum, exclusiveMinimum, exclusiveMaximum."""
    for value in passing:
        assert validate(value, {keyword: limit}) == []
    for value in failing:
        assert problems(value, {keyword: limit}) == [
            f"$: expected a number {symbol} 1; got {describe_value(value)}"
        ]


def test_string_length_and_pattern() -> None:
    """SC-39: code-point lengths; pattern uses re.search."""
    assert validate("日本", {"minLength": 2, "maxLength": 2}) == []
    assert problems("a", {"minLength": 2}) == [
        "$: expected at least 2 characters; got 1"
    ]
    assert problems("abc", {"maxLength": 2}) == [
        "$: expected at most 2 characters; got 3"
    ]
    assert validate("xx-12-yy", {"pattern": r"\d+"}) == []
    assert problems("A1", {"pattern": "^[a-z]+$"}) == [
        '$: expected a string matching "^[a-z]+$"; got string "A1"'
    ]


def test_keywords_apply_only_to_their_kind_of_value() -> None:
    """SC-40: each value breaks the keywords of its own kind only; unknown keywords are
    ignored."""
    by_kind = {
        "number": {"minimum": 5, "exclusiveMaximum": 0},
        "string": {"minLength": 5, "pattern": "^z"},
        "array": {"minItems": 5, "items": False, "uniqueItems": True},
        "object": {
            "required": ["a"],
            "properties": {"b": False},
            "additionalProperties": False,
        },
    }
    samples = {"number": 1, "string": "a", "array": [1, 1], "object": {"b": 1}}
    for kind, value in samples.items():
        assert validate(value, by_kind[kind]) != []
        for other, keywords in by_kind.items():
            if other != kind:
                assert validate(value, keywords) == [], (value, keywords)
    for value in (None, True):
        for keywords in by_kind.values():
            assert validate(value, keywords) == []
    unknown = {
        "format": "email",
        "x-vendor": {"type": "string"},
        "title": "T",
        "examples": [1],
    }
    for value in (None, 1, "x", [1], {"a": 1}):
        assert validate(value, unknown) == []


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "text"},
        {"type": ["string", "float"]},
        {"pattern": "("},
        {"properties": {"a": 1}},
    ],
)
def test_invalid_schemas_raise_value_error(schema: dict[str, Any]) -> None:
    """SC-41: an unknown type name, a bad pattern or a non-schema is a ValueError."""
    with pytest.raises(ValueError, match=r"schema|type|pattern"):
        validate({"a": "x"} if "properties" in schema else "x", schema)


def test_describe_issues_is_one_line_per_issue() -> None:
    """SC-42: str(issue) per line, in order; "" for no issues."""
    issues = validate({"units": "kelvin"}, WEATHER)
    text = describe_issues(issues)
    assert text.splitlines() == [str(issue) for issue in issues]
    assert text == (
        "$.city: required property is missing (expected string)\n"
        '$.units: expected one of: "metric", "imperial"; got string "kelvin"'
    )
    assert describe_issues([]) == ""


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


def test_multiple_of_that_is_not_positive_is_not_applied() -> None:
    """SC-45: multipleOf is a positive number; a zero or negative one constrains
    nothing."""
    assert validate(5, {"multipleOf": 0}) == []
    assert validate(5, {"multipleOf": -2}) == []
    assert validate(5, {"multipleOf": 2}) != []


# ---------------------------------------------------------------------------------------------
# Written as users write it: no annotations where users write none, upstream's
# spellings.


def test_multiple_of_and_property_counts_are_validated():
    """SC-45: multipleOf and min/maxProperties are enforced with a clear problem."""
    from minagent._validate import validate

    assert [i.problem for i in validate(7, {"type": "integer", "multipleOf": 5})] == [
        "expected a multiple of 5; got integer 7"
    ]
    assert validate(10, {"type": "integer", "multipleOf": 5}) == []
    assert validate(0.3, {"type": "number", "multipleOf": 0.1}) == []
    assert [
        i.problem for i in validate({}, {"type": "object", "minProperties": 1})
    ] == ["expected at least 1 properties; got 0"]
