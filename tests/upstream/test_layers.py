"""Upstream's provider class bases (spec/upstream.md UP-1 .. UP-4): a class with its own
``get_response`` behind a layer, the streaming forms its model call may return, a
layered client with no model call at all, layer keywords; providers written for
upstream, their finalizers included (spec/providers.md PV-60)."""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterable, AsyncIterator, Sequence
from typing import Any

import pytest

from minagent import (
    Agent,
    AgentSession,
    BaseChatClient,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    Message,
    ResponseStream,
    chat_middleware,
    function_middleware,
    tool,
)
from minagent.upstream import (
    ChatMiddlewareLayer,
    ChatTelemetryLayer,
    FunctionInvocationLayer,
    adapt_single_hook,
)
from tests._support.modes import get_response, run


def _update(text: str) -> ChatResponseUpdate:
    return ChatResponseUpdate(contents=[Content.from_text(text)], role="assistant")


class _Plain:
    """An async iterable of updates with no ``aclose`` (not a generator)."""

    def __init__(self, texts: list[str]) -> None:
        self._items = [_update(t) for t in texts]

    def __aiter__(self) -> _Plain:
        return self

    async def __anext__(self) -> ChatResponseUpdate:
        if not self._items:
            raise StopAsyncIteration
        return self._items.pop(0)


async def _gen(texts: list[str]) -> AsyncIterator[ChatResponseUpdate]:
    for text in texts:
        yield _update(text)


class _Backend:
    """A class with its own ``get_response`` (not a minagent client); ``form`` picks
    what it returns when streaming."""

    form = "generator"

    def __init__(self) -> None:
        self.calls: list[tuple[list[str], bool]] = []

    def get_response(
        self, messages: Any, *, stream: bool = False, options: Any = None, **kwargs: Any
    ) -> Any:
        self.calls.append(([m.text for m in messages], stream))
        texts = ["an", "swer"]
        if not stream:
            if self.form == "sync":
                return ChatResponse(messages=[Message("assistant", ["answer"])])

            async def whole() -> ChatResponse:
                return ChatResponse(messages=[Message("assistant", ["answer"])])

            return whole()
        if self.form == "generator":
            return _gen(texts)
        if self.form == "plain":
            return _Plain(texts)
        if self.form == "awaitable":

            async def later() -> AsyncIterator[ChatResponseUpdate]:
                return _gen(texts)

            return later()
        if self.form == "response":
            return ChatResponse(messages=[Message("assistant", ["answer"])])
        return {"text": "answer"}  # a dict is not a stream


@pytest.mark.parametrize(
    "layer", [FunctionInvocationLayer, ChatMiddlewareLayer, ChatTelemetryLayer]
)
@pytest.mark.parametrize("form", ["generator", "plain", "awaitable", "response"])
async def test_get_response_behind_a_layer_is_the_model_call(
    layer: type, form: str, stream: bool
) -> None:
    """UP-2: a class with its own ``get_response`` behind a layer is that layer's model
    call, in both modes; streaming, it may give a stream of updates (a generator or any
    async iterable), an awaitable of one, or a whole response. UP-1: each layer
    subscripted is the layer itself."""
    assert layer[dict] is layer

    class Client(layer[dict], BaseChatClient, _Backend):  # type: ignore[misc]
        pass

    client = Client()
    client.form = form if stream else "async"
    if stream:
        updates = client.get_response("question", stream=True)
        texts = [u.text async for u in updates]
        assert "".join(texts) == "answer"
        response = await updates.get_final_response()
    else:
        response = await client.get_response("question")
    assert response.text == "answer"
    assert client.calls == [(["question"], stream)]


async def test_a_synchronous_get_response_behind_a_layer() -> None:
    """UP-2: the model call behind a layer may return the response itself, not an
    awaitable."""

    class Client(FunctionInvocationLayer, BaseChatClient, _Backend):
        pass

    client = Client()
    client.form = "sync"
    assert (await client.get_response("q")).text == "answer"


async def test_a_streaming_model_call_that_gives_no_updates_is_a_type_error() -> None:
    """UP-2: streaming, the model call must give updates; a dict is a `TypeError` naming
    its type."""

    class Client(ChatMiddlewareLayer, BaseChatClient, _Backend):
        pass

    client = Client()
    client.form = "dict"
    with pytest.raises(TypeError, match="async iterable of updates, got dict"):
        async for _ in client.get_response("q", stream=True):
            pass


async def test_a_layered_client_with_no_model_call_says_so(stream: bool) -> None:
    """UP-1: a layer over `BaseChatClient` with neither a hook nor a ``get_response``
    behind it is a `BaseChatClient` without a provider: the call says the hook is
    missing, in both modes."""

    class Bare(FunctionInvocationLayer, BaseChatClient):
        pass

    async def call() -> None:
        if stream:
            async for _ in Bare().get_response("q", stream=True):
                pass
        else:
            await Bare().get_response("q")

    with pytest.raises(
        NotImplementedError, match="Bare must implement _inner_get_response"
    ):
        await call()


async def test_single_hook_with_its_own_streaming_hook_keeps_it() -> None:
    """UP-2: a class with upstream's one hook that also writes minagent's streaming hook
    keeps its streaming hook; the one hook serves the non-streaming call."""

    class Provider(BaseChatClient):
        async def _inner_get_response(
            self, *, messages: Any, stream: bool, options: Any, **kwargs: Any
        ) -> Any:
            return ChatResponse(messages=[Message("assistant", ["whole"])])

        async def _inner_get_streaming_response(
            self, *, messages: Any, options: Any, **kwargs: Any
        ) -> AsyncIterator[ChatResponseUpdate]:
            yield _update("own stream")

    client = Provider()
    assert (await client.get_response("q")).text == "whole"
    assert (
        "".join([u.text async for u in client.get_response("q", stream=True)])
        == "own stream"
    )


def test_adapting_a_class_leaves_what_needs_no_adapting() -> None:
    """UP-2: only upstream's one hook (it takes ``stream``) is adapted, once: a class
    without a hook, with minagent's hook, with a hook whose signature cannot be read, or
    already adapted is left as it is."""

    class NoHook:
        pass

    class TwoHooks:
        async def _inner_get_response(self, *, messages: Any, options: Any) -> Any:
            return None

    class Unreadable:
        def __call__(self, *args: Any, **kwargs: Any) -> Any:
            return None

        __signature__ = "not a signature"

    class Opaque:
        _inner_get_response = Unreadable()

    class OneHook:
        async def _inner_get_response(
            self, *, messages: Any, stream: bool, options: Any
        ) -> Any:
            return None

    for cls in (NoHook, TwoHooks, Opaque):
        before = dict(vars(cls))
        adapt_single_hook(cls)
        assert dict(vars(cls)) == before
    adapt_single_hook(OneHook)
    adapted = vars(OneHook)["_inner_get_response"]
    assert "stream" in inspect.signature(adapted).parameters
    assert "_inner_get_streaming_response" in vars(OneHook)
    adapt_single_hook(OneHook)
    assert vars(OneHook)["_inner_get_response"] is adapted


async def test_minagents_own_hook_on_the_layers_streams(stream: bool) -> None:
    """UP-1: the layers add nothing a `BaseChatClient` lacks: a provider on them with
    minagent's non-streaming hook only is driven in both modes, streaming its response
    as updates (LP-2)."""

    class Provider(ChatTelemetryLayer, FunctionInvocationLayer, BaseChatClient):
        async def _inner_get_response(
            self, *, messages: Any, options: Any, **kwargs: Any
        ) -> ChatResponse:
            return ChatResponse(
                messages=[Message("assistant", [f"echo {messages[-1].text}"])]
            )

    client = Provider()
    if stream:
        updates = [u async for u in client.get_response("hi", stream=True)]
        assert [u.text for u in updates] == ["echo hi"]
    else:
        assert (await client.get_response("hi")).text == "echo hi"


async def run_or_get_response(target, *args, stream, **kwargs):
    """An agent's run or a client's get_response, in either mode, to its final
    response."""
    if hasattr(target, "run"):
        return await run(target, *args, stream=stream, **kwargs)
    return await get_response(target, *args, stream=stream, **kwargs)


calls_made = []


@tool
def get_weather(location):
    """Get the weather for a location."""
    calls_made.append(location)
    return f"Sunny in {location}."


def upstream_provider(*bases):
    class UpstreamStyleClient(*bases):
        """A provider as upstream's users write one: one hook, `stream` a keyword."""

        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.seen = []

        def _inner_get_response(self, *, messages, stream, options, **kwargs):
            self.seen.append((stream, [m.text for m in messages]))
            asked = any(
                c.type == "function_result" for m in messages for c in m.contents
            )
            contents = (
                [Content.from_text("Sunny, says the tool.")]
                if asked
                else [
                    Content.from_function_call(
                        "c1", "get_weather", '{"location": "Oslo"}'
                    )
                ]
            )
            if stream:

                async def updates():
                    for content in contents:
                        yield ChatResponseUpdate(contents=[content], role="assistant")

                return ResponseStream(updates(), finalizer=ChatResponse.from_updates)

            async def whole():
                return ChatResponse(messages=[Message("assistant", contents)])

            return whole()

    return UpstreamStyleClient


BASES = [
    (BaseChatClient,),
    (FunctionInvocationLayer, BaseChatClient),
    (ChatMiddlewareLayer, FunctionInvocationLayer, ChatTelemetryLayer, BaseChatClient),
]


@pytest.mark.parametrize(
    "bases", BASES, ids=["BaseChatClient", "tool layer", "all layers"]
)
async def test_a_single_hook_provider_runs_under_agent_run(stream, bases):
    """UP-1, UP-2: a provider with upstream's single hook, on upstream's class bases,
    drives `Agent.run` in both modes: the tool loop runs and the hook is called with
    `stream` set."""
    calls_made.clear()
    client = upstream_provider(*bases)()
    response = await run_or_get_response(
        Agent(client, tools=[get_weather]), "weather in Oslo?", stream=stream
    )
    assert response.text == "Sunny, says the tool."
    assert calls_made == ["Oslo"]
    assert [s for s, _ in client.seen] == [stream, stream]


@pytest.mark.parametrize("agent_run", [True, False], ids=["agent", "client"])
async def test_leaving_a_stream_early_closes_the_single_hooks_stream_at_once(
    agent_run: bool,
) -> None:
    """UP-2, LP-22: leaving a stream early closes the stream that a provider with
    upstream's one hook returned before ``aclose()`` returns, not later, when the event
    loop collects it."""
    closed: list[str] = []

    class Provider(BaseChatClient):
        def _inner_get_response(
            self, *, messages: Any, stream: bool, options: Any, **kwargs: Any
        ) -> Any:
            async def updates() -> Any:
                try:
                    for text in ["a", "b", "c"]:
                        yield ChatResponseUpdate([text], "assistant")
                finally:
                    closed.append("closed")

            return updates()

    stream = (
        Agent(Provider()).run("hi", stream=True)
        if agent_run
        else Provider().get_response("hi", stream=True)
    )
    async for update in stream:
        assert update.text == "a"
        break
    await stream.aclose()
    assert closed == ["closed"]


def test_layer_keywords_go_down_the_mro():
    """UP-4: a layered client's keywords the layers do not take reach the provider's own
    base; with none to take them, an unknown keyword is a `TypeError` naming it."""
    from minagent import BaseChatClient
    from minagent.upstream import FunctionInvocationLayer

    class Transport:
        def __init__(self, *, api_key):
            self.api_key = api_key

    class Keyed(FunctionInvocationLayer, BaseChatClient, Transport):
        pass

    class Bare(FunctionInvocationLayer, BaseChatClient):
        pass

    assert Keyed(api_key="k").api_key == "k"
    with pytest.raises(TypeError, match="unexpected keyword argument 'bogus'"):
        Bare(bogus=1)


# ---------------------------------------------------------------------------------------------
# Written as users write it: no annotations where users write none, upstream's
# spellings.


async def test_layer_middleware_attributes(stream):
    """UP-3: a layered client's `middleware=` splits into its `chat_middleware` and
    `function_middleware` attributes, and both run."""
    seen = []

    @chat_middleware
    async def chat_mw(context, call_next):
        seen.append("chat")
        await call_next()

    @function_middleware
    async def func_mw(context, call_next):
        seen.append("function")
        await call_next()

    client = upstream_provider(
        FunctionInvocationLayer, ChatMiddlewareLayer, BaseChatClient
    )(middleware=[chat_mw, func_mw])
    assert client.chat_middleware == [chat_mw]
    assert client.function_middleware == [func_mw]
    await run_or_get_response(
        Agent(client, tools=[get_weather]), "weather?", stream=stream
    )
    assert seen == ["chat", "function", "chat"]


# ---------------------------------------------------------------------------------------------
# A provider written for upstream whose stream has a finalizer (spec/providers.md PV-60).


class FinalizingClient(BaseChatClient):
    """Upstream's single hook; the conversation id is known only to the stream's
    finalizer."""

    def __init__(self) -> None:
        super().__init__()
        self.finalized = False

    def _inner_get_response(
        self,
        *,
        messages: Sequence[Message],
        stream: bool,
        options: dict[str, Any],
        **kw: Any,
    ):  # type: ignore[no-untyped-def]
        async def updates() -> AsyncIterable[ChatResponseUpdate]:
            yield ChatResponseUpdate([Content.from_text("Hel")], "assistant")
            yield ChatResponseUpdate([Content.from_text("lo")], "assistant")

        def finalize(got: Sequence[ChatResponseUpdate]) -> ChatResponse:
            self.finalized = True
            response = ChatResponse.from_updates(got)
            response.conversation_id = "conv-9"
            response.response_id = "resp-9"
            return response

        return ResponseStream(updates(), finalizer=finalize)


async def test_a_finalizers_ids_reach_the_response_and_the_session() -> None:
    """PV-60: the finalizer's conversation and response ids reach the final response
    and, through it, the session; the text is unchanged."""
    agent = Agent(FinalizingClient())
    session = AgentSession()
    stream = agent.run("Hi", session=session, stream=True)
    texts = [update.text async for update in stream]
    final = await stream.get_final_response()
    assert "".join(texts) == "Hello"
    assert final.text == "Hello"
    assert session.service_session_id == "conv-9"
    direct = (
        await FinalizingClient().get_response("Hi", stream=True).get_final_response()
    )
    assert direct.conversation_id == "conv-9"
    assert direct.response_id == "resp-9"


async def test_a_stream_left_early_does_not_run_the_finalizer() -> None:
    """PV-60: leaving early reads no final response from the provider."""
    client = FinalizingClient()
    stream = client.get_response("Hi", stream=True)
    async for _ in stream:
        break
    await stream.aclose()
    assert not client.finalized
    whole = FinalizingClient()
    await whole.get_response("Hi", stream=True).get_final_response()
    assert whole.finalized
