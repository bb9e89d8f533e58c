"""Small corners of the core and the providers folder (coverage, tests only).

Rules: OB-22 (observers), SC-48 (argument limits), MCP-21 (tool sets), PV-24
(redaction), PV-27 (server delay), PV-41 (transport choice), PK-9 (lazy names).
"""

from __future__ import annotations

import calendar
import importlib
import json
from typing import Any

import pytest

import minagent.providers
from minagent._observe import current, install
from minagent._toolset import expand_tool_sets
from minagent._validate import validate
from minagent.providers import default as transport_module
from minagent.providers.errors import server_delay
from minagent.providers.secrets import redact_data


def test_install_refuses_what_is_not_an_observer() -> None:
    """OB-22: install() takes an Observer (or None); anything else is a TypeError naming
    its type, and the installed observer is unchanged."""
    before = current()
    with pytest.raises(TypeError, match="takes an Observer, got str"):
        install("tracer")  # type: ignore[arg-type]
    assert current() is before


def test_an_integer_too_long_to_print_is_over_the_digit_limit() -> None:
    """SC-48: an integer beyond Python's own int-to-text limit is over the argument
    digit limit."""
    (issue,) = validate(10**5000, {})
    assert "digits" in issue.problem


def test_expand_tool_sets_without_sets_is_a_copy() -> None:
    """MCP-21: a tool list with no tool set is returned as a new list of the same
    tools."""
    tools: list[Any] = [object(), object()]
    out = expand_tool_sets(tools)
    assert out == tools
    assert out is not tools


def test_retry_after_http_date_without_zone_is_gmt() -> None:
    """PV-27: a Retry-After HTTP date is counted from now; a date with no zone (-0000)
    is GMT."""
    now = calendar.timegm((2015, 10, 21, 7, 27, 50, 0, 0, 0))
    assert (
        server_delay({"Retry-After": "Wed, 21 Oct 2015 07:28:00 -0000"}, now=now)
        == 10.0
    )
    assert (
        server_delay({"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}, now=now) == 10.0
    )


def test_redact_data_hides_what_is_nested_too_deep() -> None:
    """PV-24: the key never appears, also in data nested beyond the walk: that part is
    replaced whole."""
    value: Any = "sk-secret-value-123"
    for _ in range(150):
        value = [value]
    text = json.dumps(redact_data(value, ("sk-secret-value-123",)))
    assert "sk-secret-value-123" not in text
    assert "[nested too deep]" in text


def test_aiohttp_transport_is_none_when_the_plugin_cannot_be_imported(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """PV-41: without the minagent_http plugin (or aiohttp) there is no aiohttp
    transport: None, so the standard-library transport is used."""

    def missing(name: str, package: str | None = None) -> Any:
        raise ImportError(f"No module named {name!r}")

    monkeypatch.setattr(transport_module, "import_module", missing)
    assert transport_module.aiohttp_transport() is None
    assert type(transport_module.transport_for(None)).__name__ == "StdlibTransport"


def test_providers_unknown_name_is_an_attribute_error() -> None:
    """PK-9: the providers folder's lazy names resolve; another name is an
    AttributeError naming it."""
    with pytest.raises(AttributeError, match="nosuch"):
        minagent.providers.nosuch  # noqa: B018
    assert (
        importlib.import_module("minagent.providers").StdlibTransport.__name__
        == "StdlibTransport"
    )
