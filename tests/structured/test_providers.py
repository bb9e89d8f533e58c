"""Each provider plugin sends exactly its documented wire field, checked on its loopback
server.

The same run (a tool round, then a JSON answer) goes through every plugin's real client
and fake server in both modes: the request bodies carry the format on every call (SO-8),
in the provider's own field (OA-8, OR-9, AN-23, OL-9), and ``value`` reads the answer
(SO-9).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from minagent_anthropic._request import output_schema

from minagent import Agent, ResponseFormat
from tests.anthropic._fake_server import FakeAnthropic
from tests.ollama._fake_server import FakeOllama
from tests.openai._fake_server import FakeOpenAI
from tests.openai_responses._fake_server import FakeResponses

from ._kinds import FORECAST, FORECAST_JSON, Forecast


def lookup(city: str) -> str:
    """The weather station of a city."""
    return f"station-{city}"


SCHEMA = ResponseFormat.of(Forecast).schema
assert SCHEMA is not None
WIRE = ResponseFormat.of(Forecast).wire

# plugin -> (fake server class, the field of a request body that carries the format, its
# value)
PLUGINS: dict[str, tuple[type[Any], Callable[[dict[str, Any]], Any], Any]] = {
    "openai": (FakeOpenAI, lambda body: body.get("response_format"), WIRE),
    "openai_responses": (
        FakeResponses,
        lambda body: body.get("text", {}).get("format"),
        {"type": "json_schema", **WIRE["json_schema"]},
    ),
    "anthropic": (
        FakeAnthropic,
        lambda body: body.get("output_config"),
        {"format": {"type": "json_schema", "schema": output_schema(SCHEMA)}},
    ),
    "ollama": (FakeOllama, lambda body: body.get("format"), SCHEMA),
}
# the other fields a format could hide in: none of them is sent
OTHER_FIELDS = ("response_format", "text", "output_config", "format")


@pytest.mark.parametrize("plugin", sorted(PLUGINS))
@pytest.mark.parametrize("with_tools", [False, True])
async def test_plugin_sends_its_native_field(
    plugin: str, stream: bool, with_tools: bool
) -> None:
    """SO-7, SO-8, SO-9, OA-8, OR-9, AN-23, AN-24, OL-9: the format in the provider's
    field on every call."""
    server_class, field_of, expected = PLUGINS[plugin]
    async with server_class() as server:
        if with_tools:
            server.script_tool_call("lookup", {"city": "Oslo"}, "call_1")
        server.script_text(json.dumps(FORECAST_JSON))
        async with server.make_client() as client:
            agent = Agent(client, tools=[lookup] if with_tools else None)
            result: Any = agent.run(
                "weather?", options={"response_format": Forecast}, stream=stream
            )
            if stream:
                async for _ in result:
                    pass
                result = await result.get_final_response()
            else:
                result = await result
        assert result.value == FORECAST
        bodies = server.requests()
        assert len(bodies) == (2 if with_tools else 1)
        own = {
            "openai": "response_format",
            "openai_responses": "text",
            "anthropic": "output_config",
            "ollama": "format",
        }[plugin]
        for body in bodies:
            assert field_of(body) == expected
            assert [f for f in OTHER_FIELDS if f in body] == [own]
        if with_tools:
            assert server.tool_results(bodies[1]) == ["station-Oslo"]


@pytest.mark.parametrize("plugin", ["openai", "openai_responses", "ollama"])
async def test_json_mode_on_the_wire(plugin: str) -> None:
    """OA-8, OR-9, OL-9: "json" is each API's JSON mode."""
    server_class, field_of, _ = PLUGINS[plugin]
    expected = {
        "openai": {"type": "json_object"},
        "openai_responses": {"type": "json_object"},
        "ollama": "json",
    }
    async with server_class() as server:
        server.script_text('{"ok": true}')
        async with server.make_client() as client:
            response = await client.get_response(
                "x", options={"response_format": "json"}
            )
        assert response.value == {"ok": True}
        assert field_of(server.requests()[0]) == expected[plugin]
