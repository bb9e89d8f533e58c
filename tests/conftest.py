"""Test harness: ``async def`` tests run in a fresh event loop, without third-party
plugins; a test that takes ``stream`` runs in both modes.

After each async test the loop must hold no task other than the test's own: a leaked
task is a test failure (house rule: nothing left running after a run, a failure or a
cancel).

Both modes: the ``stream`` fixture below is the one way a test runs non-streaming and
streaming (ids ``non-streaming`` and ``streaming``); tests/_support/modes.py runs an
agent or a client in the mode given. tests/README.md says where a new test goes.
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


@pytest.fixture(params=[False, True], ids=["non-streaming", "streaming"])
def stream(request: pytest.FixtureRequest) -> bool:
    """Both modes: a test that takes ``stream`` runs with ``False``, then ``True``.

    The fixture is function-scoped: a hypothesis test that takes it says so with
    ``suppress_health_check=[HealthCheck.function_scoped_fixture]`` (the value is a
    bool, the same for every example).
    """
    return bool(request.param)


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
