"""The flow kit's report and command (spec/conformance.md CF-3 .. CF-6).

    python -m minagent conformance --adapter module:factory [--rules MW-*,LP-*] [--json FILE]
                                   [--seed N] [--examples N]

Loads the adapter (``module:factory``: an adapter, or a callable that returns one), runs
every scenario — the fixed ones and ``--examples`` drawn from each generated family with
``--seed`` — and prints one Markdown table row per rule: holds, differs or not
applicable, with the first differing observation and the adapter's explanation.
``--json`` writes the same report as JSON (its schema is in spec/conformance.md).
Progress goes to stderr when stderr is a terminal.

Rules
-----
1. Exit status: 0 when every difference is one the adapter expects, 1 when any is not
   or when adapter code ended the kit before the report was complete, 2 for a usage
   error (an adapter that cannot be loaded, an unknown rule pattern, a ``--json`` path
   that cannot be written), found before any scenario runs (CF-4).
2. The report holds only JSON data: the same run gives the same report but for
   ``seconds``.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import json
import logging
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from .. import __version__
from . import flow_agent, flow_loop, flow_middleware
from .flow import FEATURES, FlowAdapter
from .flow_run import Family, RandomDraw, RuleVerdict, Scenario, run_kit, select

__all__ = [
    "ALIASES",
    "EXAMPLES",
    "FAMILIES",
    "SEED",
    "Report",
    "command",
    "generated",
    "load_adapter",
    "main",
    "output_problem",
    "render",
    "run_report",
    "scenarios",
]

SEED = 29
EXAMPLES = 25
FAMILIES: Mapping[str, Family] = {
    "chains": flow_middleware.chains,
    "rounds": flow_loop.rounds,
    "chunkings": flow_agent.chunkings,
}
ALIASES = {
    "minagent": "minagent.conformance.flow_minagent:adapter",
    "broken": "minagent.conformance.flow_broken:adapter",
}


def generated(seed: int = SEED, examples: int = EXAMPLES) -> list[Scenario]:
    """``examples`` scenarios of each family, each drawn from its own seeded generator
    (CF-3)."""
    import random

    return [
        family(RandomDraw(random.Random(f"{seed}:{name}:{i}")), f"{name}#{i}")
        for name, family in FAMILIES.items()
        for i in range(examples)
    ]


def scenarios(seed: int = SEED, examples: int = EXAMPLES) -> list[Scenario]:
    """Every scenario of the kit: the fixed ones, then the generated ones."""
    fixed = [
        *flow_middleware.scenarios(),
        *flow_loop.scenarios(),
        *flow_agent.scenarios(),
    ]
    return [*fixed, *generated(seed, examples)]


class AdapterError(Exception):
    """``--adapter`` names nothing that can be loaded as an adapter."""


def load_adapter(spec: str) -> FlowAdapter:
    """``module:attribute`` (or an alias): an adapter, or a callable returning one."""
    spec = ALIASES.get(spec, spec)
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise AdapterError(
            f"--adapter must be module:factory (or one of {', '.join(ALIASES)}), got {spec!r}"
        )
    # CF-4: a module that fails to import, or ends the process while it imports
    # (`sys.exit()` at its top level), is an adapter that cannot be loaded
    try:
        target: Any = getattr(importlib.import_module(module_name), attribute)
    except (Exception, SystemExit, GeneratorExit) as exc:
        raise AdapterError(f"cannot load {spec}: {type(exc).__name__}: {exc}") from exc
    if isinstance(target, type) or (
        not isinstance(target, FlowAdapter) and callable(target)
    ):
        try:
            target = target()
        except (Exception, SystemExit, GeneratorExit) as exc:
            raise AdapterError(f"{spec}() failed: {type(exc).__name__}: {exc}") from exc
    if not isinstance(target, FlowAdapter):
        raise AdapterError(
            f"{spec} is not an adapter (name, features, expected, async run(world))"
        )
    return target


@dataclass
class Report:
    """One run of the kit against one adapter (CF-6)."""

    adapter: FlowAdapter
    factory: str
    seed: int
    examples: int
    runs: int
    seconds: float
    rules: dict[str, RuleVerdict]

    @property
    def unexpected(self) -> list[str]:
        return [
            r
            for r, v in self.rules.items()
            if v.verdict == "differs" and r not in self.adapter.expected
        ]

    @property
    def stale(self) -> list[str]:
        """Differences the adapter expects that did not occur (among the rules run)."""
        return [
            r
            for r in self.adapter.expected
            if r in self.rules and self.rules[r].verdict != "differs"
        ]

    def count(self, verdict: str) -> int:
        return sum(1 for v in self.rules.values() if v.verdict == verdict)

    def to_json(self) -> dict[str, Any]:
        notes: Mapping[str, str] = getattr(self.adapter, "notes", {}) or {}
        return {
            "kit": "minagent flow conformance",
            "minagent": __version__,
            "adapter": {
                "name": self.adapter.name,
                "factory": self.factory,
                "features": sorted(self.adapter.features),
                "missing": {
                    f: notes.get(f, FEATURES[f])
                    for f in sorted(set(FEATURES) - self.adapter.features)
                },
            },
            "seed": self.seed,
            "examples": self.examples,
            "runs": self.runs,
            "seconds": round(self.seconds, 3),
            "summary": {
                "holds": self.count("holds"),
                "differs": self.count("differs"),
                "not applicable": self.count("not applicable"),
                "unexpected": len(self.unexpected),
            },
            "rules": [
                {
                    "rule": v.rule,
                    "verdict": v.verdict,
                    "checks": v.checks,
                    "modes": sorted(v.modes),
                    "observation": v.observation,
                    "expected": v.expected,
                    "reason": v.reason,
                }
                for v in self.rules.values()
            ],
            "unexpected": self.unexpected,
            "stale": self.stale,
        }

    def to_markdown(self) -> str:
        lines = [
            f"# Flow conformance: {self.adapter.name}",
            "",
            f"minagent {__version__} kit; seed {self.seed}, {self.examples} examples per generated family; "
            f"{self.runs} runs in {self.seconds:.2f} s.",
            "",
            f"**{self.count('holds')} hold, {self.count('differs')} differ ({len(self.unexpected)} unexpected), "
            f"{self.count('not applicable')} not applicable.**",
            "",
            "| rule | verdict | checks | first differing observation, and why |",
            "|---|---|---:|---|",
        ]
        for v in self.rules.values():
            # CF-2: a rule that differs in one mode only says which
            marks = [] if v.only is None else [f"{v.only} only"]
            if v.verdict == "differs" and not v.expected:
                marks.append("unexpected")
            shown = f"{v.verdict} ({', '.join(marks)})" if marks else v.verdict
            if "unexpected" in marks:
                shown = f"**{shown}**"
            lines.append(f"| {v.rule} | {shown} | {v.checks} | {_why(v)} |")
        if self.stale:
            lines += ["", f"Expected to differ but held: {', '.join(self.stale)}."]
        return "\n".join(lines) + "\n"


def _why(v: RuleVerdict) -> str:
    if v.verdict == "not applicable":
        return _cell(v.reason or "")
    if v.observation is None:
        return ""
    o = v.observation
    seen = f"expected {_short(o['expected'])}, observed {_short(o['observed'])}"
    text = f"{o['scenario']} ({o['mode']}): {o['check']}: {seen}"
    if o.get("note"):
        text = f"{o['note']}: {text}"
    if v.expected:
        text += f". {v.expected}"
    return _cell(text)


def _short(value: Any, limit: int = 240) -> str:
    text = render(value)
    return f"`{text if len(text) <= limit else text[: limit - 3] + '...'}`"


def render(value: Any) -> str:
    """A neutral value, compactly: messages as ``role: item, item · role: ...``, the
    rest as JSON."""
    if _is_messages(value):
        return (
            " · ".join(
                f"{m['role']}: {', '.join(_content(c) for c in m['contents'])}"
                for m in value
            )
            or "(none)"
        )
    if isinstance(value, list) and value and all(_is_messages(v) for v in value):
        return " ; ".join(f"[{render(v)}]" for v in value)
    return json.dumps(value, ensure_ascii=False)


def _is_messages(value: Any) -> bool:
    return isinstance(value, list) and all(
        isinstance(m, dict) and "role" in m and "contents" in m for m in value
    )


def _content(c: Mapping[str, Any]) -> str:
    kind = c.get("type")
    if kind == "text":
        return json.dumps(c.get("text"), ensure_ascii=False)
    if kind == "function_call":
        args = c.get("arguments") or ""
        pending = " (user input)" if c.get("user_input_request") else ""
        return f"call {c.get('call_id')} {c.get('name')}({json.dumps(args) if args else ''}){pending}"
    if kind == "function_result":
        flag = " (error)" if c.get("error") else ""
        return f"{c.get('call_id')}→{json.dumps(c.get('result'), ensure_ascii=False)}{flag}"
    if kind == "function_approval_request":
        return f"approve? {c.get('call_id')} {c.get('name')}" + (
            f" [id {c['id']}]" if "id" in c else ""
        )
    if kind == "function_approval_response":
        return f"{'approved' if c.get('approved') else 'rejected'} {c.get('id')}"
    return str(kind)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


async def run_report(
    adapter: FlowAdapter,
    *,
    factory: str = "",
    patterns: Sequence[str] | None = None,
    seed: int = SEED,
    examples: int = EXAMPLES,
    progress: Callable[[int, int, str], None] | None = None,
) -> Report:
    chosen = scenarios(seed, examples)
    runs = sum(len(s.modes) for s in chosen if select(s.rules, patterns))
    rules, seconds = await run_kit(
        adapter, chosen, patterns=patterns, progress=progress
    )
    return Report(adapter, factory, seed, examples, runs, seconds, rules)


def command(
    adapter_spec: str,
    *,
    rules: str | None = None,
    json_path: str | None = None,
    seed: int = SEED,
    examples: int = EXAMPLES,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """``python -m minagent conformance`` (rule 1)."""
    out = out or sys.stdout
    err = err or sys.stderr
    try:
        adapter = load_adapter(adapter_spec)
    except AdapterError as exc:
        print(f"error: {exc}", file=err)
        return 2
    patterns = [p.strip() for p in rules.split(",") if p.strip()] if rules else None
    if patterns and not any(select(s.rules, patterns) for s in scenarios(seed, 1)):
        print(f"error: no scenario checks a rule matching {rules!r}", file=err)
        return 2
    if examples < 0:
        print("error: --examples must be >= 0", file=err)
        return 2
    problem = None if json_path is None else output_problem(json_path)
    if problem is not None:
        print(f"error: --json {json_path}: {problem}", file=err)
        return 2
    progress = _progress(err) if err.isatty() else None
    # CF-4: the kit catches what the adapter's runs raise (flow_run rule 5); what is
    # left is adapter code run outside them (a callback it scheduled) ending the event
    # loop with `sys.exit()`: a failed report, never the adapter's exit status
    try:
        with _tool_failures_quiet():
            report = asyncio.run(
                run_report(
                    adapter,
                    factory=adapter_spec,
                    patterns=patterns,
                    seed=seed,
                    examples=examples,
                    progress=progress,
                )
            )
    except SystemExit as exc:
        print(
            f"error: the adapter {adapter_spec} ended the kit before its report was "
            f"complete (SystemExit: {exc.code})",
            file=err,
        )
        return 1
    if progress is not None:
        print("\r\033[K", end="", file=err, flush=True)
    out.write(report.to_markdown())
    if json_path is not None:
        try:
            Path(json_path).write_text(
                json.dumps(report.to_json(), indent=2) + "\n", encoding="utf-8"
            )
        # checked before the run; what is left is a full disk, or a path changed since
        except OSError as exc:
            problem = exc.strerror or type(exc).__name__
            print(
                f"error: --json {json_path}: it cannot be written ({problem})", file=err
            )
            return 2
    return 1 if report.unexpected else 0


def output_problem(path: str) -> str | None:
    """Why a file cannot be written at ``path``, in a user's words; None when it can:
    the JSON report (CF-4), and the command line's trace files (AG-15), which
    `minagent.cli` checks with this function (the kit does not import the command
    line)."""
    target = Path(path)
    if target.is_dir():
        return "it is a folder, not a file"
    folder = target.parent
    if not folder.exists():
        return f"its folder {str(folder)!r} does not exist"
    if not folder.is_dir():
        return f"{str(folder)!r} is not a folder"
    # Permissions alone do not say it (root may write anywhere, a read-only file
    # system refuses everyone): open the file the way it will be written, without
    # changing it, and remove it again when it did not exist.
    existed = target.exists()
    try:
        with target.open("a", encoding="utf-8"):
            pass
        if not existed:
            target.unlink()
    except OSError as exc:
        return f"it cannot be written ({exc.strerror or type(exc).__name__})"
    return None


def _progress(err: TextIO) -> Callable[[int, int, str], None]:
    def show(done: int, total: int, label: str) -> None:
        print(f"\r\033[K[{done}/{total}] {label[:70]}", end="", file=err, flush=True)

    return show


class _NoToolFailures(logging.Filter):
    """Drops the OB-30 WARNING of a failing tool."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (
            record.levelno == logging.WARNING
            and str(record.msg).startswith("Function %r raised")
        )


@contextlib.contextmanager
def _tool_failures_quiet() -> Iterator[None]:
    """CF-4: the kit's scenarios make tools fail on purpose; the OB-30 WARNING each
    failure logs is not part of the report, so it is not printed while the kit runs.
    Every other record passes."""
    quiet = _NoToolFailures()
    logger = logging.getLogger("minagent.client")
    logger.addFilter(quiet)
    try:
        yield
    finally:
        logger.removeFilter(quiet)


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    """``python -m minagent conformance ARGS`` (the command line hands the arguments
    over)."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m minagent conformance", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--adapter",
        required=True,
        help="module:factory of the adapter (or: minagent, broken)",
    )
    parser.add_argument(
        "--rules", default=None, help="comma-separated rule patterns, e.g. MW-*,LP-T*"
    )
    parser.add_argument(
        "--json", default=None, metavar="FILE", help="also write the report as JSON"
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=SEED,
        help=f"seed of the generated scenarios (default {SEED})",
    )
    parser.add_argument(
        "--examples",
        type=int,
        default=EXAMPLES,
        help=f"examples per family (default {EXAMPLES})",
    )
    args = parser.parse_args(argv)
    return command(
        args.adapter,
        rules=args.rules,
        json_path=args.json,
        seed=args.seed,
        examples=args.examples,
        out=out,
    )


if (
    __name__ == "__main__"
):  # pragma: no cover - exercised through python -m minagent conformance
    raise SystemExit(main())
