"""Middleware categorisation and schema metadata corners (coverage, tests only). Rules:
MW-60, SC-44."""

from __future__ import annotations

from typing import Annotated, Any

import pytest

from minagent import Agent, MiddlewareException, tool
from minagent.testing import ScriptedChatClient


def test_a_builtin_without_a_signature_is_not_middleware() -> None:
    """MW-60: a callable whose parameters cannot be read (a builtin such as max) is
    refused with the 'must have at least 2 parameters' error naming it."""
    with pytest.raises(
        MiddlewareException, match="middleware max must have at least 2 parameters"
    ):
        Agent(ScriptedChatClient(["x"]), middleware=[max])


class Meta:
    """A metadata item read by duck typing (what pydantic's Field carries), without
    pydantic."""

    def __init__(self, **attributes: Any) -> None:
        self.__dict__.update(attributes)


def test_metadata_default_becomes_the_schema_default_and_the_parameter_stays_required() -> (
    None
):
    """SC-44: a metadata item's `default` becomes "default"; the parameter stays
    required (the function gives no default); its `description` is the property's
    description."""

    @tool
    def count(n: Annotated[int, Meta(default=3, description="how many")]) -> int:
        """Count."""
        return n

    assert count.parameters["properties"]["n"] == {
        "type": "integer",
        "description": "how many",
        "default": 3,
    }
    assert count.parameters["required"] == ["n"]
