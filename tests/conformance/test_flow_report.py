"""The flow kit's verdicts, report and command (spec/conformance.md CF-1, CF-2, CF-4,
CF-6)."""

from __future__ import annotations

import asyncio
import io
import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import pytest

from minagent import CallNext, ChatContext, chat_middleware
from minagent._validate import validate
from minagent.conformance import flow_run
from minagent.conformance.flow import FEATURES, Answer, Mw, Plan, TurnResult, World
from minagent.conformance.flow_broken import BREAKS, BrokenAdapter
from minagent.conformance.flow_minagent import MinagentAdapter, Ops
from minagent.conformance.flow_report import (
    Report,
    command,
    load_adapter,
    render,
    run_report,
)
from minagent.conformance.flow_run import Expect, Scenario, run_kit

ROOT = Path(__file__).resolve().parents[2]


def schema() -> dict[str, Any]:
    """The JSON report's schema, as spec/conformance.md gives it."""
    page = (ROOT / "spec" / "conformance.md").read_text(encoding="utf-8")
    block = (
        page.split("## The JSON report", 1)[1].split("```json", 1)[1].split("```", 1)[0]
    )
    loaded: dict[str, Any] = json.loads(block)
    return loaded


class Lacking(MinagentAdapter):
    """minagent, claiming to offer none of the optional features."""

    name = "minagent without features"
    features = frozenset()
    notes: Mapping[str, str] = {"inbox": "no inbox here"}


class Expecting(BrokenAdapter):
    """The broken adapter, listing its breaks' rules as expected, and one rule it
    holds."""

    expected: Mapping[str, str] = {
        **{r: "known" for rules in BREAKS.values() for r in rules},
        "OP-1": "known",
    }


def python_m_minagent(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "minagent", *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        check=False,
    )


# --------------------------------------------------------------------------------------------
# The JSON report


async def test_reports_validate_against_the_schema_of_the_spec_page() -> None:
    """CF-6: the JSON report of a clean run, of a broken adapter and of one lacking
    features each validate against the schema spec/conformance.md gives, with minagent's
    own validator; the schema is not vacuous."""
    the_schema = schema()
    for adapter in (MinagentAdapter(), BrokenAdapter(), Lacking()):
        data = (await run_report(adapter, factory="x:y", examples=3)).to_json()
        assert validate(json.loads(json.dumps(data)), the_schema) == [], adapter.name
    data = (await run_report(BrokenAdapter(), examples=2)).to_json()
    assert data["summary"]["unexpected"] == len(data["unexpected"]) > 0
    broken = [r for r in data["rules"] if r["verdict"] == "differs"]
    assert broken
    assert all(
        r["observation"]["expected"] != r["observation"]["observed"] for r in broken
    )
    assert validate(
        {**data, "rules": [{**data["rules"][0], "verdict": "maybe"}]}, the_schema
    )
    assert validate({k: v for k, v in data.items() if k != "stale"}, the_schema)


async def test_a_report_is_the_same_for_the_same_seed() -> None:
    """CF-3, CF-6: two runs with one seed give the same report, but for the seconds."""
    first, second = (
        (await run_report(MinagentAdapter(), seed=3, examples=4)).to_json(),
        (await run_report(MinagentAdapter(), seed=3, examples=4)).to_json(),
    )
    first.pop("seconds")
    second.pop("seconds")
    assert first == second


# --------------------------------------------------------------------------------------------
# Verdicts


async def test_a_missing_feature_makes_its_rules_not_applicable_with_the_reason() -> (
    None
):
    """CF-2: a rule whose every scenario needs a feature the adapter lacks is not
    applicable, with the feature and the adapter's note; a rule some scenario checks
    without it still holds."""
    report = await run_report(Lacking(), examples=2)
    verdicts = dict(report.rules.items())
    assert verdicts["LP-15"].verdict == "not applicable"
    assert verdicts["LP-15"].reason == "needs transcript"
    assert verdicts["LP-16"].reason == "needs inbox: no inbox here"
    assert verdicts["LP-14"].verdict == "not applicable"
    assert verdicts["LP-13"].verdict == "not applicable"
    assert verdicts["MW-T1"].verdict == "holds"
    assert verdicts["TH-1"].verdict == "not applicable"
    missing = report.to_json()["adapter"]["missing"]
    assert set(missing) == set(FEATURES)
    assert missing["inbox"] == "no inbox here"
    assert missing["transcript"] == FEATURES["transcript"]
    assert (
        "| LP-16 | not applicable | 0 | needs inbox: no inbox here |"
        in report.to_markdown()
    )


class _Failing(MinagentAdapter):
    name = "failing"

    async def run(self, world: World) -> list[TurnResult]:
        raise RuntimeError("the adapter broke")


class _Slow(MinagentAdapter):
    name = "slow"

    async def run(self, world: World) -> list[TurnResult]:
        await asyncio.sleep(5)
        return []  # pragma: no cover - cancelled first


class _Silent(MinagentAdapter):
    name = "silent"

    async def run(self, world: World) -> list[TurnResult]:
        return []


async def test_an_adapter_that_fails_or_hangs_is_a_difference_of_the_first_rule(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """CF-2: a run that raises out of the adapter, or takes too long, is a difference of
    the scenario's first rule, and the kit goes on."""
    scenario = Scenario(
        "s", Plan(script=(Answer("a"),)), ("MW-T1", "MW-T2"), lambda w, e: None
    )
    table, _ = await run_kit(_Failing(), [scenario])
    assert set(table) == {"MW-T1"}
    assert table["MW-T1"].verdict == "differs"
    assert (table["MW-T1"].observation or {})[
        "observed"
    ] == "RuntimeError: the adapter broke"
    monkeypatch.setattr(flow_run, "TIMEOUT", 0.05)
    table, _ = await run_kit(_Slow(), [scenario])
    assert (table["MW-T1"].observation or {})["observed"] == "timed out"


async def test_an_observation_the_check_cannot_read_is_a_difference() -> None:
    """CF-2: a check that cannot read what the adapter reported is a difference of the
    first rule; an adapter that reports no run shows as a run that raised."""

    def needs_a_request(world: World, expect: Expect) -> None:
        expect.equal("MW-T1", "first request", world.requests[0].messages, [])

    def reads_the_response(world: World, expect: Expect) -> None:
        expect.response("MW-T1", world, [])

    plan = Plan(script=(Answer("a"),))
    table, _ = await run_kit(
        _Silent(), [Scenario("s", plan, ("MW-T1",), needs_a_request)]
    )
    assert (table["MW-T1"].observation or {})[
        "check"
    ] == "MW-T1: the observation can be read"
    table, _ = await run_kit(
        _Silent(), [Scenario("s", plan, ("MW-T1",), reads_the_response)]
    )
    observed = (table["MW-T1"].observation or {})["observed"]
    assert observed == "the run raised RuntimeError: the adapter reported no turn"


async def test_a_difference_in_one_mode_only_is_a_difference_of_its_rule_and_of_parity() -> (
    None
):
    """CF-2, LP-2: a check that holds in one mode and not the other makes its rule
    differ in that mode only, and LP-2 differ too, both naming the rule and the mode;
    without LP-2 among the selected rules the rule alone differs."""

    def streaming_differs(world: World, expect: Expect) -> None:
        expect.equal("MW-T1", "mode", world.stream, False)

    scenario = Scenario("s", Plan(script=(Answer("a"),)), ("MW-T1",), streaming_differs)
    table, _ = await run_kit(MinagentAdapter(), [scenario])
    note = "MW-T1 holds non-streaming but not streaming"
    for rule in ("MW-T1", "LP-2"):
        assert table[rule].verdict == "differs"
        assert table[rule].modes == {"streaming"}
        observation = table[rule].observation or {}
        assert observation["note"] == note
        assert observation["mode"] == "streaming"
        assert observation["check"] == "MW-T1: mode"
    assert table["MW-T1"].only == "streaming"
    assert table["LP-2"].only is None
    table, _ = await run_kit(MinagentAdapter(), [scenario], patterns=["MW-*"])
    assert set(table) == {"MW-T1"}
    assert table["MW-T1"].verdict == "differs"
    assert table["MW-T1"].modes == {"streaming"}
    assert table["MW-T1"].only == "streaming"


async def test_a_difference_in_both_modes_or_a_one_mode_scenario_is_not_mode_specific() -> (
    None
):
    """CF-2: a rule that differs in both modes, or in the only mode its scenarios run,
    is not reported as one mode's difference, and LP-2 is not involved."""

    def always_differs(world: World, expect: Expect) -> None:
        expect.equal("MW-T1", "mode", world.stream, None)

    plan = Plan(script=(Answer("a"),))
    both = Scenario("both", plan, ("MW-T1",), always_differs)
    table, _ = await run_kit(MinagentAdapter(), [both])
    assert set(table) == {"MW-T1"}
    assert table["MW-T1"].modes == {"non-streaming", "streaming"}
    assert table["MW-T1"].only is None
    one = Scenario("one", plan, ("MW-T1",), always_differs, modes=(True,))
    table, _ = await run_kit(MinagentAdapter(), [one])
    assert table["MW-T1"].modes == {"streaming"}
    assert table["MW-T1"].only is None


class ShortCircuitStillCallsTheModel(MinagentAdapter):
    """A broken minagent (the newcomer's break, spec/conformance.md CF-2): a chat
    middleware that sets a result without calling ``call_next`` still has the model
    called after it, when not streaming (a streaming model call nobody reads is never
    made); the middleware's result is kept."""

    name = "minagent whose chat short-circuit still calls the model"

    def middleware(self, world: World, spec: Mw) -> Any:
        if spec.layer != "chat":
            return super().middleware(world, spec)

        @chat_middleware
        async def chat_layer(context: ChatContext, call_next: CallNext) -> None:
            called: list[bool] = []

            async def counted() -> None:
                called.append(True)
                await call_next()

            await world.middleware(spec, Ops(context), counted)
            if not called and not context.stream and context.result is not None:
                kept = context.result
                await call_next()
                context.result = kept

        return chat_layer


async def test_the_rule_a_break_breaks_shows_it_in_its_own_row() -> None:
    """CF-2, MW-T2: a chat short-circuit that still calls the model (not streaming) is
    shown in MW-T2's row as a non-streaming difference with the extra model call, not
    only under LP-2; the JSON entry lists the mode."""
    report = await run_report(ShortCircuitStillCallsTheModel())
    mw_t2 = report.rules["MW-T2"]
    assert mw_t2.verdict == "differs"
    assert mw_t2.modes == {"non-streaming"}
    observation = mw_t2.observation or {}
    assert observation["scenario"] == "MW-T2 chat: B sets a result"
    assert observation["expected"] == ["A>", "B>", "B<", "A<"]
    assert "model" in observation["observed"]
    assert report.rules["LP-2"].verdict == "differs"
    assert "MW-T2" in report.unexpected
    markdown = report.to_markdown()
    row = next(line for line in markdown.splitlines() if line.startswith("| MW-T2 |"))
    assert row.startswith("| MW-T2 | **differs (non-streaming only, unexpected)** |")
    assert "MW-T2 holds streaming but not non-streaming" in row
    entry = next(r for r in report.to_json()["rules"] if r["rule"] == "MW-T2")
    assert entry["verdict"] == "differs"
    assert entry["modes"] == ["non-streaming"]
    assert validate(report.to_json(), schema()) == []


# --------------------------------------------------------------------------------------------
# The command


def test_the_command_prints_a_row_per_rule_and_writes_json(tmp_path: Path) -> None:
    """CF-4, CF-6: `python -m minagent conformance` prints one Markdown row per selected
    rule and writes the JSON report; exit status 0 when every difference is expected."""
    out = tmp_path / "report.json"
    done = python_m_minagent(
        "conformance",
        "--adapter",
        "minagent",
        "--rules",
        "MW-T*,LP-T1",
        "--json",
        str(out),
    )
    assert done.returncode == 0, done.stderr
    rows = re.findall(r"^\| ([A-Z]{2}-[A-Z]?\d+) \| (\w[\w ]*) \|", done.stdout, re.M)
    assert rows == [("LP-T1", "holds")] + [(f"MW-T{n}", "holds") for n in range(1, 8)]
    data = json.loads(out.read_text(encoding="utf-8"))
    assert validate(data, schema()) == []
    assert data["adapter"]["factory"] == "minagent"
    assert data["summary"]["holds"] == 8
    assert done.stderr == ""  # not a terminal: no progress


def test_the_command_fails_on_an_unexpected_difference() -> None:
    """CF-4: a difference the adapter does not expect is exit status 1, shown as
    unexpected."""
    done = python_m_minagent(
        "conformance", "--adapter", "broken", "--rules", "LP-3", "--examples", "0"
    )
    assert done.returncode == 1
    assert "| LP-3 | **differs (unexpected)** |" in done.stdout


def test_the_command_runs_upstreams_adapter_from_a_checkout() -> None:
    """CF-4, CF-7: the upstream adapter loads by module:factory; its differences are
    expected (exit 0)."""
    done = python_m_minagent(
        "conformance",
        "--adapter",
        "tests.conformance.upstream_adapter:adapter",
        "--rules",
        "MW-*",
        "--examples",
        "2",
    )
    assert done.returncode == 0, done.stderr
    assert "| MW-6 | differs | " in done.stdout
    assert "design decision 5" in done.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--adapter", "no_such_module:adapter"], "cannot load no_such_module:adapter"),
        (
            ["--adapter", "minagent.conformance.flow:World"],
            "flow:World() failed: TypeError",
        ),
        (["--adapter", "minagent.conformance.flow:FEATURES"], "is not an adapter"),
        (["--adapter", "minagent.conformance.flow"], "must be module:factory"),
        (
            ["--adapter", "minagent", "--rules", "XX-*"],
            "no scenario checks a rule matching",
        ),
        (["--adapter", "minagent", "--examples", "-1"], "--examples must be >= 0"),
    ],
)
def test_usage_errors_exit_2(args: list[str], message: str) -> None:
    """CF-4: an adapter that cannot be loaded, a pattern no scenario matches, a negative
    example count."""
    out, err = io.StringIO(), io.StringIO()
    from minagent.cli import main

    sys_err = sys.stderr
    sys.stderr = err
    try:
        status = main(["conformance", *args], out)
    finally:
        sys.stderr = sys_err
    assert status == 2
    assert message in err.getvalue()
    assert out.getvalue() == ""


# --------------------------------------------------------------------------------------------
# An adapter that escapes: real runs of the command against adapters written to files

ESCAPING_ADAPTER = """
import asyncio
import sys

from minagent.conformance.flow_minagent import MinagentAdapter


class Escaping(MinagentAdapter):
    name = "escaping"

    async def run(self, world):
        # the non-streaming runs are minagent's own: the kit goes on after an escape
        if not world.stream:
            return await super().run(world)
        await asyncio.sleep(0)
        {escape}


adapter = Escaping()
"""


def run_adapter_file(
    tmp_path: Path, source: str, *args: str
) -> subprocess.CompletedProcess[str]:
    """``python -m minagent conformance`` against ``source`` written to a module of
    ``tmp_path``."""
    (tmp_path / "escaping_adapter.py").write_text(source, encoding="utf-8")
    paths = [str(tmp_path), str(ROOT), os.environ.get("PYTHONPATH", "")]
    return subprocess.run(
        [sys.executable, "-m", "minagent", "conformance", *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p)},
        check=False,
    )


@pytest.mark.parametrize(
    ("escape", "observed"),
    [
        ("sys.exit(0)", "SystemExit: 0"),
        ("raise KeyboardInterrupt", "KeyboardInterrupt"),
        ("raise GeneratorExit", "GeneratorExit"),
        ("raise asyncio.CancelledError", "CancelledError"),
    ],
    ids=["sys.exit", "KeyboardInterrupt", "GeneratorExit", "CancelledError"],
)
def test_an_adapter_that_escapes_fails_its_report(
    tmp_path: Path, escape: str, observed: str
) -> None:
    """CF-4, CF-2: `sys.exit(0)`, `KeyboardInterrupt`, `GeneratorExit` or a stray
    `CancelledError` out of an adapter's run is a difference of the scenario's first
    rule: the command prints the whole report, naming what escaped, and exits 1 — never
    0, never a traceback."""
    done = run_adapter_file(
        tmp_path,
        ESCAPING_ADAPTER.format(escape=escape),
        "--adapter",
        "escaping_adapter:adapter",
        "--rules",
        "MW-T1,LP-T1",
        "--examples",
        "0",
    )
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr, done.stderr
    rows = dict(
        re.findall(r"^\| ([A-Z]{2}-[A-Z]?\d+) \| ([^|]+) \|", done.stdout, re.M)
    )
    assert rows == {
        "LP-T1": "**differs (streaming only, unexpected)**",
        "MW-T1": "**differs (streaming only, unexpected)**",
    }
    assert (
        f'the adapter runs the plan: expected `"no error"`, observed `"{observed}"`'
        in done.stdout
    )


@pytest.mark.parametrize(
    ("source", "message"),
    [
        (
            "import sys\nsys.exit(0)\n",
            "error: cannot load escaping_adapter:adapter: SystemExit: 0",
        ),
        (
            "import sys\ndef adapter():\n    sys.exit(0)\n",
            "error: escaping_adapter:adapter() failed: SystemExit: 0",
        ),
        (
            "raise GeneratorExit('at import')\n",
            "error: cannot load escaping_adapter:adapter: GeneratorExit: at import",
        ),
        (
            "raise RuntimeError('no model here')\n",
            "error: cannot load escaping_adapter:adapter: RuntimeError: no model here",
        ),
    ],
    ids=["exit-at-import", "exit-in-factory", "generator-exit-at-import", "error"],
)
def test_an_adapter_that_escapes_while_loading_cannot_be_loaded(
    tmp_path: Path, source: str, message: str
) -> None:
    """CF-4: a module or factory that exits (or fails) while the adapter is loaded is
    an adapter that cannot be loaded: one `error:` line, status 2."""
    done = run_adapter_file(tmp_path, source, "--adapter", "escaping_adapter:adapter")
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stderr.splitlines() == [message]
    assert done.stdout == ""


def test_adapter_code_ending_the_event_loop_fails_the_command(tmp_path: Path) -> None:
    """CF-4: adapter code that ends the event loop outside a run (`sys.exit(0)` in a
    callback it scheduled) is one `error:` line and status 1, not the adapter's 0."""
    source = ESCAPING_ADAPTER.format(
        escape="asyncio.get_running_loop().call_soon(sys.exit, 0)\n"
        "        await asyncio.sleep(1)"
    )
    done = run_adapter_file(
        tmp_path,
        source,
        "--adapter",
        "escaping_adapter:adapter",
        "--rules",
        "MW-T1",
    )
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert done.stderr.splitlines() == [
        "error: the adapter escaping_adapter:adapter ended the kit before its report "
        "was complete (SystemExit: 0)"
    ]


def test_ctrl_c_still_interrupts_the_kit(tmp_path: Path) -> None:
    """CF-4, AG-15: the kit catches what an adapter raises, not the user's Ctrl-C:
    SIGINT while an adapter runs ends the command with `error: interrupted` and status
    130, no report and no traceback."""
    source = ESCAPING_ADAPTER.format(
        escape="print('waiting', file=sys.stderr, flush=True)\n"
        "        await asyncio.Event().wait()"
    )
    (tmp_path / "escaping_adapter.py").write_text(source, encoding="utf-8")
    paths = [str(tmp_path), str(ROOT), os.environ.get("PYTHONPATH", "")]
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "minagent",
            "conformance",
            "--adapter",
            "escaping_adapter:adapter",
            "--rules",
            "MW-T1",
        ],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        assert process.stderr.readline() == "waiting\n"
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:  # pragma: no cover - only when the test failed
            process.kill()
            process.communicate(timeout=60)
    assert process.returncode == 130, err
    assert [line for line in err.splitlines() if line] == ["error: interrupted"]
    assert out == ""


class _Counting(MinagentAdapter):
    """minagent, counting the runs it is given."""

    name = "counting"
    runs: ClassVar[list[bool]] = []

    async def run(self, world: World) -> list[TurnResult]:
        self.runs.append(world.stream)
        return await super().run(world)


@pytest.mark.parametrize(
    ("where", "problem"),
    [
        ("{tmp}", "it is a folder, not a file"),
        ("{tmp}/nowhere/report.json", "its folder '{tmp}/nowhere' does not exist"),
        ("{tmp}/notes.txt/report.json", "'{tmp}/notes.txt' is not a folder"),
    ],
    ids=["a-folder", "a-missing-folder", "a-file-as-folder"],
)
def test_a_json_path_that_cannot_be_written_is_a_usage_error_before_the_run(
    tmp_path: Path, where: str, problem: str
) -> None:
    """CF-4: `--json` at a folder, in a folder that does not exist, or under a file is
    one `error:` line and status 2 (not 1), found before any scenario runs."""
    (tmp_path / "notes.txt").write_text("mine\n")
    path = where.format(tmp=tmp_path)
    out, err = io.StringIO(), io.StringIO()
    _Counting.runs.clear()
    status = command(
        "tests.conformance.test_flow_report:_Counting",
        rules="LP-T1",
        json_path=path,
        out=out,
        err=err,
    )
    assert status == 2
    assert err.getvalue() == f"error: --json {path}: {problem.format(tmp=tmp_path)}\n"
    assert out.getvalue() == ""
    assert _Counting.runs == []
    assert (tmp_path / "notes.txt").read_text() == "mine\n"


def test_a_json_path_at_a_folder_exits_2_from_the_command_line(tmp_path: Path) -> None:
    """CF-4: `python -m minagent conformance --json FOLDER` exits 2 with one `error:`
    line and no report."""
    done = python_m_minagent(
        "conformance", "--adapter", "minagent", "--json", str(tmp_path)
    )
    assert done.returncode == 2
    assert done.stderr == f"error: --json {tmp_path}: it is a folder, not a file\n"
    assert done.stdout == ""


class _RemovesTheReportsFolder(MinagentAdapter):
    """minagent, removing the folder the JSON report was to be written to while the
    kit runs (the path changed since it was checked)."""

    name = "removing"
    folder: Path | None = None

    async def run(self, world: World) -> list[TurnResult]:
        if self.folder is not None and self.folder.exists():
            (self.folder / "report.json").unlink(missing_ok=True)
            self.folder.rmdir()
        return await super().run(world)


def test_a_report_that_cannot_be_written_after_the_run_is_one_error_line(
    tmp_path: Path,
) -> None:
    """CF-4: a report that cannot be written once the run is over is one `error:` line
    and status 2, after the Markdown report."""
    folder = tmp_path / "reports"
    folder.mkdir()
    _RemovesTheReportsFolder.folder = folder
    out, err = io.StringIO(), io.StringIO()
    try:
        status = command(
            "tests.conformance.test_flow_report:_RemovesTheReportsFolder",
            rules="LP-T1",
            json_path=str(folder / "report.json"),
            out=out,
            err=err,
        )
    finally:
        _RemovesTheReportsFolder.folder = None
    assert status == 2
    assert err.getvalue() == (
        f"error: --json {folder}/report.json: it cannot be written "
        "(No such file or directory)\n"
    )
    assert "| LP-T1 | holds |" in out.getvalue()


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_goes_to_a_terminal_only(tmp_path: Path) -> None:
    """CF-4: progress is written to stderr when it is a terminal, and erased at the
    end."""
    out, err = io.StringIO(), _Terminal()
    assert command("minagent", rules="LP-T1,LP-T2", out=out, err=err) == 0
    assert "[1/4] LP-T1 answered, room (non-streaming)" in err.getvalue()
    assert err.getvalue().endswith("\r\033[K")
    assert "| LP-T2 | holds |" in out.getvalue()


def test_expected_differences_pass_and_stale_ones_are_listed() -> None:
    """CF-4, CF-6: an adapter that expects its differences exits 0; an expected
    difference that did not occur is listed as stale."""
    report = asyncio.run(run_report(Expecting(), examples=2))
    assert report.unexpected == []
    assert report.stale == ["OP-1"]
    assert "Expected to differ but held: OP-1." in report.to_markdown()
    assert "| LP-3 | differs | " in report.to_markdown()


def test_load_adapter_takes_an_instance_a_factory_or_an_alias() -> None:
    """CF-4: ``module:attribute`` names an adapter or a callable returning one; aliases
    name the shipped."""
    assert load_adapter("minagent").name == "minagent"
    assert isinstance(
        load_adapter("minagent.conformance.flow_minagent:MinagentAdapter"),
        MinagentAdapter,
    )
    assert load_adapter("broken").name.startswith("broken minagent")
    assert isinstance(Report, type)


def test_render_shows_neutral_messages_compactly() -> None:
    """CF-4: the Markdown report shows messages as role: contents, everything else as
    JSON."""
    from minagent.conformance.flow import (
        approval_request,
        approval_response,
        call,
        message,
        result,
        text,
    )

    messages = [
        message(
            "assistant",
            [text("hi"), call("c1", "f", {"a": 1}, user_input_request=True)],
        ),
        message(
            "tool",
            [result("c1", "boom", error=True), approval_request("r1", "c1", "f")],
        ),
        message("user", [approval_response("r1", False), {"type": "usage"}]),
    ]
    assert render(messages) == (
        'assistant: "hi", call c1 f({"a": 1}) (user input) · tool: c1→"boom" (error), approve? c1 f [id r1]'
        " · user: rejected r1, usage"
    )
    assert (
        render([messages[:1], []])
        == '[assistant: "hi", call c1 f({"a": 1}) (user input)] ; [(none)]'
    )
    assert render({"n": 1}) == '{"n": 1}'


def test_a_middleware_description_runs_the_same_on_every_adapter() -> None:
    """CF-1: the world runs a neutral middleware's description: its events, and ``only``
    limiting a function middleware to one tool's calls."""
    world = World(Plan(script=()), stream=False)
    calls: list[str] = []

    class Ops:
        def __getattr__(self, name: str) -> Any:
            return lambda *args: calls.append(name)

    async def call_next() -> None:
        calls.append("next")

    asyncio.run(
        world.middleware(Mw("M", "function", only="g"), Ops(), call_next, tool="f")
    )
    assert world.events == []
    assert calls == ["next"]
    spec = Mw(
        "M",
        "chat",
        option=("temperature", 1),
        add_message="x",
        result="r",
        when="before",
        calls=2,
    )
    asyncio.run(world.middleware(spec, Ops(), call_next))
    assert world.events == ["M>", "M<"]
    assert calls == ["next", "set_option", "add_message", "set_result", "next", "next"]


def test_the_world_refuses_what_the_adapter_did_not_give_it() -> None:
    """CF-1: the world fails loudly when a plan needs what the adapter did not provide
    (an inbox, a way to append), when the model is called beyond the script, and when a
    scripted answer fails; a tool waiting for another that never starts says so in its
    result."""
    from minagent.conformance.flow import ModelFailure, ScriptExhausted, Tool

    tools = (Tool("a", append="x"), Tool("w", wait_for="never"))
    world = World(Plan(script=(Answer(fail="down"),), tools=tools), stream=False)
    with pytest.raises(RuntimeError, match="bound no inbox"):
        world.inject("hello")
    with pytest.raises(RuntimeError, match="gave no way to"):
        asyncio.run(world.tool("a", {}))
    with pytest.raises(ModelFailure, match="down"):
        world.answer([], {})
    with pytest.raises(ScriptExhausted, match="model call 2 was not scripted"):
        world.answer([], {})
    with pytest.raises(KeyError, match="the plan has no tool 'z'"):
        asyncio.run(world.tool("z", {}))
    assert asyncio.run(world.tool("w", {})) == "never did not start while w ran"
    assert world.arguments == [("a", {}), ("w", {})]


def test_the_kits_own_tool_failures_print_no_warnings() -> None:
    """CF-4, OB-30: the scenarios' deliberate tool failures print no WARNING lines while
    the command runs (70 did), and the filter is gone after the command."""
    done = python_m_minagent("conformance", "--adapter", "minagent", "--rules", "LP-*")
    assert done.returncode == 0, done.stderr
    assert "raised" not in done.stderr
    import logging

    from minagent.conformance.flow_report import _tool_failures_quiet

    logger = logging.getLogger("minagent.client")
    with _tool_failures_quiet():
        assert len(logger.filters) == 1
        kept = logging.LogRecord(
            "minagent.client", logging.WARNING, "", 0, "x", (), None
        )
        assert logger.filters[0].filter(kept)  # type: ignore[union-attr]
    assert logger.filters == []
