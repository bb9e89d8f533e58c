"""get_client with a keyword the provider's client does not take (PV-22)."""

from __future__ import annotations

from typing import Any

import pytest

import minagent.providers.registry as plugins
from minagent import BaseChatClient
from tests._support.entry_points import FakeEntryPoint, fake_entry_points


class KeywordClient(BaseChatClient):
    def __init__(self, model: str, *, base_url: str = "", timeout: float = 1.0) -> None:
        super().__init__()
        self.model = model


def test_unknown_keyword_names_the_keywords_the_client_takes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """PV-22: an unknown keyword is a TypeError naming the provider, the keyword and
    every keyword the client takes, not the bare ``__init__`` TypeError."""
    fake_entry_points(monkeypatch, FakeEntryPoint("toy", KeywordClient))
    kwargs: dict[str, Any] = {"model": "m", "hots": "x"}
    with pytest.raises(TypeError) as caught:
        plugins.get_client("toy", **kwargs)
    message = str(caught.value)
    assert "'toy'" in message
    assert "'hots'" in message
    for name in ("model", "base_url", "timeout"):
        assert name in message


def test_a_type_error_inside_the_client_is_not_rewritten(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """PV-22: a TypeError the client raises for a keyword it does take passes
    unchanged."""

    def factory(*, model: str) -> BaseChatClient:
        raise TypeError("model must be a string")

    fake_entry_points(monkeypatch, FakeEntryPoint("toy", factory))
    with pytest.raises(TypeError, match=r"^model must be a string$"):
        plugins.get_client("toy", model="m")
