"""Tracing helpers' corners (coverage, tests only): spec/observability.md OB-16, OB-21,
OB-28."""

from __future__ import annotations

from typing import Any

from minagent import Content, UsageDetails
from minagent.tracing import genai
from minagent.tracing.safety import SECRET_TEXT, hide, secret_names, secret_values

SECRET = frozenset({"password"})


def nested(depth: int, leaf: Any) -> Any:
    value = leaf
    for _ in range(depth):
        value = {"inner": value}
    return value


def test_hide_walks_lists_and_hides_what_is_too_deep_to_walk() -> None:
    """OB-21: a secret parameter is hidden at any depth, inside lists too; a value
    nested deeper than the walk goes is hidden whole rather than risk showing a
    secret."""
    value = {
        "users": [{"name": "ann", "password": "hunter22"}, ("x", {"password": "p4ss"})]
    }
    assert hide(value, SECRET) == {
        "users": [
            {"name": "ann", "password": SECRET_TEXT},
            ["x", {"password": SECRET_TEXT}],
        ]
    }
    deep = hide(nested(200, {"password": "hunter22"}), SECRET)
    assert "hunter22" not in repr(deep)
    assert SECRET_TEXT in repr(deep)


def test_secret_values_stop_at_the_depth_limit() -> None:
    """OB-21: the secret values collected for scrubbing are those within the walked
    depth, longest first."""
    value = {
        "password": "short-one",
        "list": [{"password": "a-much-longer-one"}],
        "deep": nested(200, "x"),
    }
    assert secret_values(value, SECRET) == ["a-much-longer-one", "short-one"]


def test_a_tool_without_a_schema_has_no_secret_names() -> None:
    """OB-16: secret names come from the tool's schema; a tool with none (or not a
    mapping) has none."""

    class Bare:
        parameters = None

    assert secret_names(Bare()) == frozenset()
    assert secret_names(object()) == frozenset()


def test_connection_attributes_default_the_port_by_scheme() -> None:
    """OB-28: the server address comes from base_url; a missing or unreadable port is
    the scheme's."""

    class Client:
        def __init__(self, url: str) -> None:
            self.base_url = url

    assert genai._connection_attributes(Client("http://host:notaport/v1")) == {
        "server.address": "host",
        "server.port": 80,
    }
    assert genai._connection_attributes(Client("https://api.example.com/v1")) == {
        "server.address": "api.example.com",
        "server.port": 443,
    }


def test_tool_definitions_keep_a_hosted_tools_wire_form() -> None:
    """OB-28: a tool given as its wire form (a hosted tool) is recorded as it is."""
    assert (
        genai._tool_definitions([{"type": "web_search"}]) == '[{"type": "web_search"}]'
    )


def test_arguments_are_hidden_whatever_their_form() -> None:
    """OB-16, OB-21: recorded arguments hide the secret keys when they are a mapping
    (given as data or JSON text); anything else (not JSON, not an object) is recorded as
    [secret] whole."""
    assert genai._hide({"k": "v", "password": "x"}, SECRET) == {
        "k": "v",
        "password": SECRET_TEXT,
    }
    assert genai._hide('{"password": "x"}', SECRET) == {"password": SECRET_TEXT}
    assert genai._hide("not json", SECRET) == SECRET_TEXT
    assert genai._hide("[1]", SECRET) == SECRET_TEXT
    assert genai._parsed({"a": 1}) == {"a": 1}


def test_secret_values_of_a_call_with_unreadable_arguments_are_none() -> None:
    """OB-21: a call whose arguments cannot be parsed yields no secret values to scrub
    (nothing to match)."""

    class Tool:
        def __init__(self) -> None:
            self.parameters = {
                "type": "object",
                "properties": {"password": {"type": "string", "writeOnly": True}},
            }

    good = Content.from_function_call("c", "t", '{"password": "hunter22"}')
    bad = Content.from_function_call("c", "t", "{not json")
    assert genai._secret_values_of(good, Tool()) == ["hunter22"]
    assert genai._secret_values_of(bad, Tool()) == []


def test_usage_attributes_only_for_counts_present() -> None:
    """OB-28: token usage attributes are set for the counts the response has, and only
    those."""
    assert genai._usage_attributes(UsageDetails(output_token_count=3)) == {
        "gen_ai.usage.output_tokens": 3
    }
    assert genai._usage_attributes(None) == {}
