"""Plugin discovery without installed plugins: entry points a test makes up (PV-22), for
the command line's tests and the session options of ``run``."""

from __future__ import annotations

from typing import Any

import pytest

import minagent.providers.registry as plugins


class FakeEntryPoint:
    def __init__(self, name: str, target: Any) -> None:
        self.name = name
        self.target = target
        self.loads = 0

    def load(self) -> Any:
        self.loads += 1
        return self.target


def fake_entry_points(
    monkeypatch: pytest.MonkeyPatch, *eps: FakeEntryPoint
) -> list[str]:
    groups: list[str] = []

    def entry_points(*, group: str) -> list[FakeEntryPoint]:
        groups.append(group)
        return list(eps) if group == "minagent.clients" else []

    monkeypatch.setattr(plugins, "entry_points", entry_points)
    return groups
