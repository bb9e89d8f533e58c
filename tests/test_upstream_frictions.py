"""Frictions that upstream users met (the examples engineer's list): each now works or
says what to write instead."""

from __future__ import annotations

import re
from typing import Any, Generic, TypeVar

import pytest

import minagent
from minagent import Agent, BaseAgent, ChatOptions, RawAgent
from minagent.testing import ScriptedChatClient

OptionsT = TypeVar("OptionsT")


def test_agent_generics_are_subscriptable() -> None:
    """AG-60: ``Agent[OptionsT]`` and friends are the classes themselves; subclasses
    written for upstream (generic in their options) work."""
    assert Agent[ChatOptions] is Agent
    assert RawAgent[dict[str, Any]] is RawAgent
    assert BaseAgent[Any] is BaseAgent

    class MyAgent(Agent[OptionsT], Generic[OptionsT]):
        pass

    agent: MyAgent[ChatOptions] = MyAgent(ScriptedChatClient(["hi"]), name="mine")
    assert isinstance(agent, Agent)
    assert agent.name == "mine"


@pytest.mark.parametrize(
    ("key", "value"),
    [("instructions", "be brief"), ("temperature", 0.2), ("model", "m")],
)
async def test_chat_options_as_get_response_keywords_are_refused(
    stream: bool, key: str, value: Any
) -> None:
    """OP-60: never silently sent along; the error says to write ``options={...}``; the
    same option in ``options`` is honoured."""
    client = ScriptedChatClient(["hi", "hi"])
    with pytest.raises(
        TypeError,
        match=rf"got {key}=: chat options go in options=\{{'{key}': \.\.\.\}}",
    ):
        client.get_response("x", stream=stream, **{key: value})
    response = client.get_response("x", stream=stream, options={key: value})
    final = await (response.get_final_response() if stream else response)
    assert final.text == "hi"
    assert client.requests[-1].options[key] == value
    assert key not in client.requests[-1].kwargs


async def test_other_get_response_keywords_still_reach_the_provider() -> None:
    """OP-60: a keyword that is not a chat option is the provider's (LP-25)."""
    client = ScriptedChatClient(["hi"])
    await client.get_response("x", trace_id="t-1")
    assert client.requests[-1].kwargs["trace_id"] == "t-1"


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("ChatMessageStore", "InMemoryHistoryProvider"),
        ("ChatMessageStoreProtocol", "HistoryProvider subclass"),
        ("AggregateContextProvider", "context_providers=[a, b]"),
        ("ChatAgent", "Agent (ChatAgent was renamed Agent)"),
        ("ChatMessage", "Message (ChatMessage was renamed"),
        ("AgentRunResponse", "AgentResponse (AgentRunResponse was renamed"),
        ("ai_function", "tool (@ai_function was renamed @tool)"),
        ("TextContent", "Content.from_text"),
    ],
)
def test_upstream_names_say_what_to_use(name: str, words: str) -> None:
    """SE-64: ``minagent.<upstream name>`` is an AttributeError that says what to use
    instead."""
    with pytest.raises(
        AttributeError, match=f"no attribute '{name}': use .*{re.escape(words)}"
    ):
        getattr(minagent, name)
    with pytest.raises(ImportError, match=name):
        exec(f"from minagent import {name}", {})


def test_other_missing_names_keep_pythons_message() -> None:
    """SE-64: a name that is nobody's, or a dunder, gets the plain message."""
    with pytest.raises(
        AttributeError, match=r"^module 'minagent' has no attribute 'no_such_name'$"
    ):
        minagent.no_such_name  # noqa: B018
    assert not hasattr(minagent, "__wrapped__")


@pytest.mark.parametrize(
    ("attribute", "words"),
    [
        ("message_store", "thread.messages"),
        ("chat_message_store", "thread.messages"),
        ("context_provider", "context_providers=[...]"),
        ("is_initialized", "always ready"),
        ("on_new_messages", "HistoryProvider"),
        ("update_from_thread_state", "deserialize_thread"),
    ],
)
def test_thread_era_attributes_say_what_to_use(attribute: str, words: str) -> None:
    """SE-64: a thread's attributes of the thread era say what became of them."""
    thread = Agent(ScriptedChatClient([])).get_new_thread()
    with pytest.raises(
        AttributeError,
        match=f"AgentThread.{attribute} is upstream's thread-era API: .*",
    ):
        getattr(thread, attribute)
    with pytest.raises(AttributeError) as info:
        getattr(thread, attribute)
    assert words in str(info.value)
    with pytest.raises(
        AttributeError,
        match=r"'AgentThread' object has no attribute 'nothing_like_it'$",
    ):
        thread.nothing_like_it  # noqa: B018


@pytest.mark.parametrize(
    ("key", "words"),
    [
        ("max_duration_seconds", "asyncio.timeout(seconds)"),
        ("allow_concurrent_invocation", "sequential=True"),
    ],
)
def test_upstreams_configuration_keys_say_what_to_write(key: str, words: str) -> None:
    """LP-60: in a dict, by item or by attribute: the LP-24 error with the field list
    and the hint; the configuration keeps its values."""
    client = ScriptedChatClient([])
    with pytest.raises(KeyError) as by_dict:
        ScriptedChatClient([], function_invocation_configuration={key: 1})
    config = client.function_invocation_configuration
    with pytest.raises(KeyError) as by_item:
        config[key] = 1
    with pytest.raises(AttributeError) as by_attribute:
        setattr(config, key, 1)
    for info in (by_dict, by_item, by_attribute):
        message = str(info.value)
        assert f"has no field '{key}'" in message
        assert "max_iterations" in message
        assert f"{key} is upstream's: " in message
        assert words in message
    assert config.max_iterations == 40
    with pytest.raises(KeyError) as other:
        config["no_such_key"] = 1
    assert "upstream's" not in str(other.value)
