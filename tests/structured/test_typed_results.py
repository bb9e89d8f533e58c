"""What mypy sees of a user's program: typed results (spec/structured.md SO-28,
spec/providers.md PV-22).

A program written as a user writes it is type-checked with ``mypy --strict`` and its
revealed types are compared; the same program runs, so the types describe what happens.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROGRAM = """\
import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING, reveal_type

import minagent
from minagent import Agent, NoValueError, StructuredOutputError
from minagent.testing import ScriptedChatClient

ANSWER = '{"name": "Oslo", "country": "Norway", "population": 709000}'


@dataclass
class City:
    name: str
    country: str
    population: int


async def main() -> None:
    agent = Agent(ScriptedChatClient([ANSWER, ANSWER, "hi", ANSWER, "not json"]), "You know cities.")
    response = await agent.run("Which city?", options={"response_format": City})
    reveal_type(response)
    reveal_type(response.value)
    reveal_type(response.try_value)
    stream = agent.run("Which city?", stream=True, options={"response_format": City, "temperature": 0.0})
    reveal_type(stream)
    final = await stream.get_final_response()
    reveal_type(final.value)
    plain = await agent.run("Hello")
    if TYPE_CHECKING:
        # SO-9: read at run time it raises NoValueError (no format)
        reveal_type(plain.value)
    chat = await agent.client.get_response("Which city?", options={"response_format": City})
    reveal_type(chat.value)
    # SO-9: `.value` is the class itself, so a field reads without a None check
    print(response.value.name, final.value, plain.try_value, chat.value.name)
    try:
        print(plain.value)
    except NoValueError as missing:
        print(missing.reason)
    try:
        print((await agent.run("Which city?", options={"response_format": City})).value)
    except StructuredOutputError as error:
        reveal_type(error.path)
        reveal_type(error.issues)
        reveal_type(error.text)
        print(error.path, error.issues, error.text)
    reveal_type(minagent.get_client)


asyncio.run(main())
"""

EXPECTED = [
    "minagent._responses.AgentResponse[user.City]",
    "user.City",
    "user.City | None",
    "minagent._stream.ResponseStream[minagent._responses.AgentResponseUpdate, "
    "minagent._responses.AgentResponse[user.City]]",
    "user.City",
    "Any",
    "user.City",
    "str",
    "list[tuple[str, str, fallback=minagent._validate.ValidationIssue]]",
    "str",
    "def (str, **kwargs: Any) -> minagent._clients.BaseChatClient",
]


def test_mypy_strict_reveals_the_types_a_user_reads(tmp_path: Path) -> None:
    """SO-28, PV-22: under ``mypy --strict``, a class as ``options["response_format"]``
    types ``.value`` of the awaited run, of the stream's final response and of a
    client's response as exactly that class (so ``response.value.name`` checks), and
    ``try_value`` as that class or None; without one ``.value`` is Any and raises
    `NoValueError` saying "no format"; `StructuredOutputError` declares ``path``, ``issues`` and ``text``;
    ``get_client`` returns a `BaseChatClient`. The program type-checks clean, and
    runs."""
    user = tmp_path / "user.py"
    user.write_text(PROGRAM)
    env = {**os.environ, "MYPYPATH": str(ROOT)}
    checked = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--no-incremental",
            "--python-version",
            "3.11",
            "user.py",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    revealed = re.findall(r'Revealed type is "(.*)"', checked.stdout)
    assert revealed == EXPECTED, checked.stdout
    assert "error" not in checked.stdout, checked.stdout
    ran = subprocess.run(
        [sys.executable, "user.py"], cwd=tmp_path, capture_output=True, text=True
    )
    assert ran.returncode == 0, ran.stderr
    lines = ran.stdout.splitlines()
    assert lines[0] == (
        "Oslo City(name='Oslo', country='Norway', population=709000) None Oslo"
    )
    assert lines[1] == "no format"
    assert lines[2] == "$ [] not json"


def test_mypy_catches_a_misspelt_field_of_the_value(tmp_path: Path) -> None:
    """SO-28: a typo in a field of the typed value is a mypy error, as it is with
    pydantic-ai."""
    user = tmp_path / "typo.py"
    user.write_text(
        "from dataclasses import dataclass\nfrom minagent import AgentResponse\n\n"
        "@dataclass\nclass City:\n    name: str\n\n"
        "def name_of(response: AgentResponse[City]) -> str:\n"
        "    city = response.value\n    return city.nmae if city else ''\n"
    )
    checked = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "typo.py"],
        cwd=tmp_path,
        env={**os.environ, "MYPYPATH": str(ROOT)},
        capture_output=True,
        text=True,
    )
    assert '"City" has no attribute "nmae"' in checked.stdout, checked.stdout
