"""Fixtures of the session tests."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest


@pytest.fixture
def no_descriptor_left() -> Iterator[None]:
    """The test closes what it opened: as many file descriptors after it as before (a
    test asks for it with ``@pytest.mark.usefixtures("no_descriptor_left")``)."""
    before = len(os.listdir("/proc/self/fd"))
    yield
    assert len(os.listdir("/proc/self/fd")) == before
