"""The strict schema of a pydantic model is what the official openai SDK sends for it
(SO-5)."""

from __future__ import annotations

import datetime
import enum
from typing import Literal

import pydantic
import pytest
from minagent_openai import build_request
from openai.lib._parsing._completions import type_to_response_format_param

from minagent import ResponseFormat

from ._kinds import ForecastModel


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Inner(pydantic.BaseModel):
    a: int = 3
    b: str | None = None


class Outer(pydantic.BaseModel):
    x: int
    inner: Inner
    items: list[Inner] = []
    colour: Colour = Colour.RED
    kind: Literal["a", "b"] = "a"
    when: datetime.datetime | None = None
    tags: dict[str, int] = {}


class Tree(pydantic.BaseModel):
    label: str
    children: list[Tree] = []


class Empty(pydantic.BaseModel):
    pass


@pytest.mark.parametrize("model", [ForecastModel, Inner, Outer, Tree, Empty])
def test_same_wire_form_as_the_openai_sdk(model: type[pydantic.BaseModel]) -> None:
    """SO-5, SO-15, SO-3, OA-8: ResponseFormat.of(Model).wire equals the SDK's
    response_format for Model."""
    expected = type_to_response_format_param(model)
    assert ResponseFormat.of(model).wire == expected
    body = build_request(
        [], {"response_format": model}, model="gpt-4o-mini", stream=False
    )
    assert body["response_format"] == expected
