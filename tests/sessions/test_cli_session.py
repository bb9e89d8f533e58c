"""`python -m minagent run --session-db FILE --session ID` (spec/sessions.md SE-18)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from minagent.cli import main
from minagent.testing import ScriptedChatClient
from tests._support.entry_points import FakeEntryPoint, fake_entry_points


def test_run_continues_a_conversation_across_invocations(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: Any
) -> None:
    """SE-18: each invocation with the same --session-db and --session sends the earlier
    turns and appends its own; another session id in the same file starts afresh;
    --session alone exits 2."""
    made: list[ScriptedChatClient] = []

    def factory(**kwargs: Any) -> ScriptedChatClient:
        def answer(messages: Any, options: Any) -> str:
            return f"I have seen {len(messages)} message(s)"

        client = ScriptedChatClient([answer], **kwargs)
        made.append(client)
        return client

    fake_entry_points(monkeypatch, FakeEntryPoint("fake", factory))
    db = str(tmp_path / "chat.db")
    outputs = []
    for prompt, session in (
        ("hello", "alice"),
        ("again", "alice"),
        ("hi", "bob"),
        ("third", "alice"),
    ):
        out = io.StringIO()
        argv = [
            "run",
            prompt,
            "--provider",
            "fake",
            "--model",
            "m",
            "--session-db",
            db,
            "--session",
            session,
        ]
        assert main(argv, out=out) == 0
        outputs.append(out.getvalue())
    assert outputs == [
        "I have seen 1 message(s)\n",
        "I have seen 3 message(s)\n",
        "I have seen 1 message(s)\n",
        "I have seen 5 message(s)\n",
    ]
    assert made[3].requests[0].texts == [
        "user: hello",
        "assistant: I have seen 1 message(s)",
        "user: again",
        "assistant: I have seen 3 message(s)",
        "user: third",
    ]
    assert (
        main(
            ["run", "x", "--provider", "fake", "--model", "m", "--session", "alice"],
            out=io.StringIO(),
        )
        == 2
    )
    assert "--session and --session-db go together" in capsys.readouterr().err
