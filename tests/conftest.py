"""Test harness: ``async def`` tests run in a fresh event loop, without third-party
plugins.

After each async test the loop must hold no task other than the test's own: a leaked
task is a test failure (house rule: nothing left running after a run, a failure or a
cancel).
"""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

# Property tests assert behaviour, never speed: no per-example deadline (CI machines are
# shared), and a slow data generator is not a failure.
settings.register_profile(
    "minagent", deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("minagent")


async def _run_checked(fn: Any, kwargs: dict[str, Any]) -> None:
    await fn(**kwargs)
    for _ in range(3):  # let finalisers of abandoned async generators run
        await asyncio.sleep(0)
    me = asyncio.current_task()
    leaked = [t for t in asyncio.all_tasks() if t is not me and not t.done()]
    if leaked:
        for task in leaked:
            task.cancel()
        raise AssertionError(f"test left {len(leaked)} task(s) running: {leaked!r}")


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    fn = pyfuncitem.obj
    if not inspect.iscoroutinefunction(fn):
        return None
    names = pyfuncitem._fixtureinfo.argnames
    kwargs = {name: pyfuncitem.funcargs[name] for name in names}
    asyncio.run(_run_checked(fn, kwargs))
    return True
