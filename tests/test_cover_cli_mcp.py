"""Command-line and MCP-serving corners (coverage, tests only).

Rules: MCP-34 (mcp-serve errors), AG-15 (--session-db problems in a user's words), LP-34
(the approval record).
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from minagent import Content, _transcript
from minagent._transcript import _ISSUED, record_requests
from minagent.cli import _sqlite_problem
from minagent.mcp.server import serve_command
from minagent.stores import SQLiteSchemaError


def test_mcp_serve_on_a_busy_address_is_one_error_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """MCP-34: an --http address that cannot be bound is one `error:` line naming it,
    status 2."""
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        assert (
            serve_command("tests.mcp.plain_agent:agent", http=f"127.0.0.1:{port}") == 2
        )
    err = capsys.readouterr().err
    assert err.startswith(f"error: cannot serve at 127.0.0.1:{port}: ")
    assert err.count("\n") == 1


def test_mcp_serve_of_a_builtin_without_signature_calls_it_and_refuses_the_result(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """MCP-34: a callable whose signature cannot be read is called with no arguments;
    what it returns is not an agent, so that is one `error:` line, status 2."""
    assert serve_command("builtins:dict") == 2
    assert (
        capsys.readouterr().err
        == "error: builtins:dict is dict, not an agent (or a factory returning one)\n"
    )


def test_session_db_problems_in_a_users_words(tmp_path: Path) -> None:
    """AG-15: a --session-db that minagent cannot use is described without the path
    repeated, or with the exception's type and text when it is something else."""
    path = str(tmp_path / "s.db")
    schema = SQLiteSchemaError(f"{path}: the table 'messages' has an unexpected layout")
    assert (
        _sqlite_problem(path, schema) == "the table 'messages' has an unexpected layout"
    )
    assert _sqlite_problem(path, PermissionError("denied")) == (
        "cannot be used as minagent's session database (PermissionError: denied)"
    )


def test_approval_record_without_session_keeps_raw_arguments_and_the_newest(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """LP-34: without a session the requests are recorded in the process, the newest
    only; a call whose arguments are not a JSON object is recorded with its arguments as
    they are."""
    monkeypatch.setattr(_transcript, "_KEPT", 2)
    saved = dict(_ISSUED)
    _ISSUED.clear()
    try:
        calls = [
            Content.from_function_call(
                f"c{i}", "f", "not json" if i == 0 else f'{{"i": {i}}}'
            )
            for i in range(3)
        ]
        for i, call in enumerate(calls):
            record_requests(
                _ISSUED, [Content.from_function_approval_request(f"r{i}", call)]
            )
            if i == 0:
                assert _ISSUED["r0"] == ["f", "not json"]
        assert list(_ISSUED) == ["r1", "r2"]
        assert _ISSUED["r2"] == ["f", {"i": 2}]
    finally:
        _ISSUED.clear()
        _ISSUED.update(saved)
