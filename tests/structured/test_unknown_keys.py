"""A dataclass, a TypedDict and a pydantic model treat keys they do not declare alike
(spec/structured.md SO-29)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, TypedDict

import pydantic
import pytest
from hypothesis import given
from hypothesis import strategies as st

from minagent import Agent
from minagent.structured.format import ResponseFormat, StructuredOutputValidationError
from minagent.testing import ScriptedChatClient


@dataclass
class Mayor:
    name: str


@dataclass
class City:
    name: str
    country: str
    population: int
    mayor: Mayor | None = None


class CityDict(TypedDict):
    name: str
    country: str
    population: int


class CityModel(pydantic.BaseModel):
    name: str
    country: str
    population: int


ANSWER = {
    "name": "Oslo",
    "country": "Norway",
    "population": 709000,
    "mayor": None,
    "climate": "cold",
}


async def test_the_same_answer_with_an_unknown_key_is_accepted_by_all_three(
    stream: bool,
) -> None:
    """SO-29: the trial's answer (an extra "climate") is read by a dataclass, a
    TypedDict and a pydantic model alike, through a run in both modes; the extra key is
    dropped."""
    values = []
    for target in (City, CityDict, CityModel):
        agent = Agent(ScriptedChatClient([json.dumps(ANSWER)]))
        options = {"response_format": target}
        if stream:
            response = await agent.run(
                "Which city?", stream=True, options=options
            ).get_final_response()
        else:
            response = await agent.run("Which city?", options=options)
        values.append(response.value)
    assert values[0] == City("Oslo", "Norway", 709000)
    assert values[1] == {"name": "Oslo", "country": "Norway", "population": 709000}
    assert values[2] == CityModel(name="Oslo", country="Norway", population=709000)


def test_nested_unknown_keys_are_ignored_and_known_ones_still_checked() -> None:
    """SO-29: unknown keys are ignored at every level; a declared key of the wrong type,
    or a missing one, is still an error; the schema sent to the model still forbids
    extra keys."""
    fmt = ResponseFormat.of(City)
    answer = {**ANSWER, "mayor": {"name": "Anne", "party": "x"}}
    assert fmt.parse(json.dumps(answer)) == City(
        "Oslo", "Norway", 709000, Mayor("Anne")
    )
    with pytest.raises(StructuredOutputValidationError) as info:
        fmt.parse(json.dumps({**ANSWER, "population": "many"}))
    assert info.value.path == "$.population"
    with pytest.raises(StructuredOutputValidationError) as info:
        fmt.parse(json.dumps({"name": "Oslo", "mayor": None, "climate": "cold"}))
    assert "required property is missing" in str(info.value)
    assert fmt.wire["json_schema"]["schema"]["additionalProperties"] is False


def test_a_json_schema_dict_keeps_its_own_word() -> None:
    """SO-29, SO-13: a JSON schema dict given as the format is checked as written: its
    ``additionalProperties: false`` still rejects an unknown key."""
    schema = {
        "type": "object",
        "properties": {"name": {"type": "string"}},
        "required": ["name"],
        "additionalProperties": False,
    }
    with pytest.raises(StructuredOutputValidationError, match="unexpected property"):
        ResponseFormat.of(schema).parse(json.dumps({"name": "Oslo", "climate": "cold"}))


@given(
    extra=st.dictionaries(
        st.text(min_size=1, max_size=8).filter(
            lambda k: k not in ("name", "country", "population", "mayor")
        ),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.text(max_size=5),
            lambda c: st.lists(c, max_size=3),
        ),
        max_size=4,
    )
)
def test_any_unknown_keys_change_nothing(extra: dict[str, Any]) -> None:
    """SO-29: whatever keys the class does not declare are added, a dataclass, a
    TypedDict and a pydantic model read the same value as without them."""
    base = {"name": "Oslo", "country": "Norway", "population": 709000}
    text = json.dumps({**base, "mayor": None, **extra})
    assert ResponseFormat.of(City).parse(text) == City("Oslo", "Norway", 709000)
    assert ResponseFormat.of(CityDict).parse(text) == base
    assert ResponseFormat.of(CityModel).parse(text) == CityModel(
        name="Oslo", country="Norway", population=709000
    )
