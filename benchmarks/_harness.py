"""The measuring harness shared by every benchmark script (standard library only).

A benchmark is a `Bench`: ``prepare(n)`` builds what ``n`` operations need (scripts, threads,
counters) outside the clock, ``run(n)`` performs the ``n`` operations under the clock, and
``check(n)`` asserts afterwards that exactly the right work was done (tool calls, final texts),
so a broken implementation fails loudly instead of looking fast.

How one benchmark is measured (`measure`):

1. **Warm-up and calibration.** One operation is run and checked (first-call costs: imports,
   caches, lazy initialisation), then a second timed operation sets the batch size ``n`` so
   that one repetition lasts about ``target_ns``; one full batch is then run and thrown away.
2. **Timing pass.** ``repeat`` repetitions of ``n`` operations; each gives one sample, the
   wall-clock time per operation (``time.perf_counter_ns``). The reported figure is the
   **median** sample, which ignores a repetition disturbed by another process on the machine.
   The process CPU time of each repetition (``time.process_time_ns``) is recorded beside it:
   on a busy machine it is the steadier figure, since time spent waiting for a core is not in
   it (the event loop never sleeps in these scenarios, so wall and CPU agree on a quiet one).
3. **Memory pass**, separate so that tracing never slows the timed code: one more operation
   under ``tracemalloc``; the figure is the peak of traced memory above what was traced when
   the operation started (the working set of one operation, its result included).

Garbage collection: ``gc.collect()`` runs before every repetition (and before the memory pass),
so no repetition pays for the garbage of the previous one. During a repetition the collector
stays **enabled** by default: an implementation that creates reference cycles pays for their
collection, as it would in production. ``gc_enabled=False`` (``run.py --gc-off``) disables it
inside the timed batches only, for a quieter, allocation-only comparison.
"""

from __future__ import annotations

import gc
import statistics
import time
import tracemalloc
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["Bench", "Result", "derive_per_iteration", "measure", "measure_all"]


class Bench:
    """One benchmark: a named operation with untimed setup and an untimed correctness check."""

    scenario = "?"  # "S1", "M0 empty", ...
    impl = "?"  # "minagent", "floor", a peer's name
    max_ops = 100_000  # upper bound on the batch size

    def prepare(self, n: int) -> None:
        """Build what ``n`` operations need (outside the clock)."""

    async def run(self, n: int) -> None:
        """Perform ``n`` operations (under the clock)."""
        raise NotImplementedError

    def check(self, n: int) -> None:
        """Assert that the last ``run(n)`` did exactly the expected work."""


@dataclass
class Result:
    scenario: str
    impl: str
    ns_per_op: float  # median over repetitions, wall clock
    samples: list[float] = field(default_factory=list)  # ns per op, one per repetition
    cpu_ns_per_op: float = 0.0  # median over repetitions, process CPU time
    cpu_samples: list[float] = field(default_factory=list)
    ops_per_rep: int = 0
    peak_bytes: int | None = None
    per_iteration: bool = False  # a derived per-iteration figure, not a measured scenario
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def spread(self) -> float:
        """Half the inter-quartile range of the samples, relative to the median (noise)."""
        if len(self.samples) < 3 or not self.ns_per_op:
            return 0.0
        q1, _, q3 = statistics.quantiles(self.samples, n=4, method="inclusive")
        return (q3 - q1) / 2 / self.ns_per_op


async def _timed(bench: Bench, n: int, gc_enabled: bool) -> tuple[int, int]:
    """Wall and CPU nanoseconds of ``run(n)``, between an untimed prepare and check."""
    bench.prepare(n)
    gc.collect()
    if not gc_enabled:
        gc.disable()
    try:
        cpu = time.process_time_ns()
        start = time.perf_counter_ns()
        await bench.run(n)
        elapsed = time.perf_counter_ns() - start
        cpu = time.process_time_ns() - cpu
    finally:
        gc.enable()
    bench.check(n)
    return elapsed, cpu


async def _peak_bytes(bench: Bench) -> int:
    bench.prepare(1)
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        await bench.run(1)
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    bench.check(1)
    return max(peak, 0)


async def measure(bench: Bench, *, repeat: int, target_ns: int, gc_enabled: bool = True, memory: bool = True) -> Result:
    """Warm up, calibrate, time ``repeat`` batches, then measure memory (module docstring)."""
    await _timed(bench, 1, gc_enabled)  # warm-up, checked
    one = max((await _timed(bench, 1, gc_enabled))[0], 1)
    n = max(1, min(bench.max_ops, target_ns // one))
    if n > 1:  # calibrate on a small batch: one operation alone overstates the cost per op
        probe = max(1, min(n, 10))
        per_op = max((await _timed(bench, probe, gc_enabled))[0] // probe, 1)
        n = max(1, min(bench.max_ops, target_ns // per_op))
    await _timed(bench, n, gc_enabled)  # warm-up at full batch size, thrown away
    timings = [await _timed(bench, n, gc_enabled) for _ in range(repeat)]
    samples = [wall / n for wall, _ in timings]
    cpu_samples = [cpu / n for _, cpu in timings]
    peak = await _peak_bytes(bench) if memory else None
    return Result(
        bench.scenario,
        bench.impl,
        statistics.median(samples),
        samples=samples,
        cpu_ns_per_op=statistics.median(cpu_samples),
        cpu_samples=cpu_samples,
        ops_per_rep=n,
        peak_bytes=peak,
    )


async def measure_all(
    benches: list[Bench],
    *,
    repeat: int,
    target_ns: int,
    gc_enabled: bool = True,
    on_error: Any = None,
) -> list[Result]:
    """Measure each bench; a failing one is reported through ``on_error(bench, exc)``."""
    results = []
    for bench in benches:
        try:
            results.append(await measure(bench, repeat=repeat, target_ns=target_ns, gc_enabled=gc_enabled))
        except Exception as exc:
            if on_error is None:
                raise
            on_error(bench, exc)
    return results


def derive_per_iteration(results: list[Result], turns: int, impl: str) -> Result | None:
    """Cost of one tool-loop iteration (model turn + tool call): the slope between S2 with
    ``turns`` iterations and S2 with one, ``(S2 - S2x1) / (turns - 1)``."""
    by = {r.scenario: r for r in results if r.impl == impl}
    full, one = by.get("S2"), by.get("S2x1")
    if full is None or one is None:
        return None
    steps = turns - 1
    samples = [(a - b) / steps for a, b in zip(full.samples, one.samples, strict=False)]
    cpu = [(a - b) / steps for a, b in zip(full.cpu_samples, one.cpu_samples, strict=False)]
    return Result(
        "S2/iter",
        impl,
        (full.ns_per_op - one.ns_per_op) / steps,
        samples=samples,
        cpu_ns_per_op=(full.cpu_ns_per_op - one.cpu_ns_per_op) / steps,
        cpu_samples=cpu,
        per_iteration=True,
        note=f"(S2 - S2x1) / {turns - 1}",
    )
