"""The flow kit's adapter for the upstream framework, `agent-framework-core` 1.23.0
(spec/conformance.md CF-7).

A test-only adapter (``minagent/`` never imports ``agent_framework``;
requirements-test.txt pins it). Run it with

    python -m minagent conformance --adapter tests.conformance.upstream_adapter:adapter

It is written the way upstream's samples and tests write code: a chat client composed
like the shipped ones (``FunctionInvocationLayer``, ``ChatMiddlewareLayer``,
``ChatTelemetryLayer``, ``BaseChatClient``) whose one hook ``_inner_get_response`` asks
the kit's world for the answer; decorated function middleware; ``FunctionTool`` with a
JSON schema; a ``ContextProvider`` subclass; and, for the inbox, upstream's own mid-run
injection (``enqueue_messages`` on the run's session, drained by
``MessageInjectionMiddleware``).

``EXPECTED`` lists every rule upstream does not hold and the decision of
spec/decisions.md that explains it; ``NOTES`` says why a feature is missing.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any, NoReturn

from agent_framework import (
    Agent,
    AgentContext,
    AgentResponse,
    AgentResponseUpdate,
    BaseChatClient,
    ChatContext,
    ChatMiddlewareLayer,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    ContextProvider,
    FunctionInvocationContext,
    FunctionInvocationLayer,
    FunctionTool,
    Message,
    MessageInjectionMiddleware,
    MiddlewareTermination,
    ResponseStream,
    agent_middleware,
    chat_middleware,
    enqueue_messages,
    function_middleware,
)
from agent_framework.observability import ChatTelemetryLayer

from minagent.conformance.flow import (
    FEATURES,
    Answer,
    Approval,
    Mw,
    Plan,
    Provider,
    Tool,
    Turn,
    TurnResult,
    World,
    approval_request,
    approval_response,
    call,
    message,
    result,
    text,
)

logging.getLogger("agent_framework").setLevel(logging.CRITICAL)

# Rule -> the decision of spec/decisions.md that explains why upstream differs (CF-7).
EXPECTED: dict[str, str] = {
    "MW-6": "design decision 5: a termination's own result counts in every layer; upstream's agent and chat "
    "pipelines ignore it",
    "MW-7": "design decision 6: no result is an empty response; upstream's run returns None (a stream: an empty "
    "list) and its tool loop fails",
    "LP-6": "design decision 9: errors say what to change; upstream answers 'Requested function not found' and "
    "'Argument parsing failed'",
    "LP-8": "design decision 8: a batch stops at the max_function_calls budget; upstream checks it after the batch",
    "LP-9": "design decision 17: tool_choice='none' runs no tool; upstream runs the calls the model emits",
    "LP-10": "design decision 16: tool_choice='required' returns after the batch; upstream calls the model again",
    "LP-T17": "design decision 16: a forced batch finishes the request; upstream calls the model again",
    "LP-T18": "design decision 16: a forced batch finishes the request; upstream calls the model again",
    "LP-11": "design decision 13: function middleware may answer a declaration-only call; upstream pauses first",
    "LP-13": "design decision 18: only the calls that need approval are asked about, by call id; upstream asks "
    "about every call, under ids of its own",
    "LP-16": "design decisions 2 and 3: an injected message stays in the transcript and the response; upstream's "
    "reaches one model call",
    "LP-17": "design decision 3: a late message gets one more call of the loop; upstream's extra call inside chat "
    "middleware replaces the answer",
    "LP-T3": "design decision 3: the steered call sends the whole transcript; upstream's sends the new message only",
    "LP-T4": "design decision 3: the steered call counts against max_iterations; upstream's is outside the loop",
    "TH-1": "design decision 2: the session's history keeps an injected message; upstream's does not",
    "LP-21": "design decision 12: function middleware's exception reaches the caller; upstream makes it an error "
    "result",
}

NOTES = {
    "transcript": "FunctionInvocationContext has no messages: a tool or function middleware cannot add to the "
    "conversation (design decision 2)",
}


# --------------------------------------------------------------------------------------------
# Neutral views


def neutral_content(content: Content) -> dict[str, Any]:
    kind = content.type
    if kind == "text":
        return text(content.text or "")
    if kind == "function_call":
        return call(
            content.call_id or "",
            content.name or "",
            content.arguments,
            user_input_request=bool(getattr(content, "user_input_request", False)),
        )
    if kind == "function_result":
        return result(
            content.call_id or "", content.result, error=content.exception is not None
        )
    if kind == "function_approval_request":
        fc = content.function_call
        return approval_request(
            content.id or "",
            fc.call_id or "" if fc else "",
            fc.name or "" if fc else "",
        )
    if kind == "function_approval_response":
        return approval_response(content.id or "", bool(content.approved))
    return {"type": kind}


def neutral_message(m: Message) -> dict[str, Any]:
    return message(m.role, [neutral_content(c) for c in m.contents])


def neutral_update(u: Any) -> dict[str, Any]:
    return message(
        u.role or "", [neutral_content(c) for c in u.contents if c.type != "usage"]
    )


def neutral_options(options: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if "tool_choice" in options:
        choice = options["tool_choice"]
        out["tool_choice"] = (
            choice.get("mode") if isinstance(choice, Mapping) else choice
        )
    if options.get("tools"):
        out["tools"] = [
            t.get("name") if isinstance(t, Mapping) else getattr(t, "name", None)
            for t in options["tools"]
        ]
    for key in ("instructions", "temperature", "metadata", "conversation_id"):
        if options.get(key) is not None:
            out[key] = options[key]
    if options.get("response_format") is not None:
        out["response_format"] = True
    return out


def _usage(usage: tuple[int, int] | None) -> dict[str, int] | None:
    return (
        None
        if usage is None
        else {"input_token_count": usage[0], "output_token_count": usage[1]}
    )


# --------------------------------------------------------------------------------------------
# The scripted model


class ScriptedModel(
    FunctionInvocationLayer, ChatMiddlewareLayer, ChatTelemetryLayer, BaseChatClient
):  # type: ignore[misc]
    OTEL_PROVIDER_NAME = "scripted"

    def __init__(self, world: World) -> None:
        config = dict(world.plan.config)
        super().__init__(function_invocation_configuration=config or None)
        self.world = world

    def _answer(
        self, messages: Sequence[Message], options: Mapping[str, Any]
    ) -> Answer:
        return self.world.answer(
            [neutral_message(m) for m in messages], neutral_options(options)
        )

    def _inner_get_response(
        self, *, messages: Any, stream: bool, options: Any, **kwargs: Any
    ) -> Any:
        if stream:
            return ResponseStream(
                self._stream(messages, options), finalizer=ChatResponse.from_updates
            )
        return self._respond(messages, options)

    async def _respond(
        self, messages: Sequence[Message], options: Mapping[str, Any]
    ) -> ChatResponse:
        answer = self._answer(messages, options)
        contents = [Content.from_text(answer.text)] if answer.text else []
        contents += [
            Content.from_function_call(c.call_id, c.name, arguments=c.arguments_json)
            for c in answer.calls
        ]
        return ChatResponse(
            messages=[Message("assistant", contents)],
            usage_details=_usage(answer.usage),
            conversation_id=answer.conversation_id,
        )

    async def _stream(
        self, messages: Sequence[Message], options: Mapping[str, Any]
    ) -> AsyncIterator[ChatResponseUpdate]:
        answer = self._answer(messages, options)
        for chunk in answer.chunks():
            if "text" in chunk:
                contents = [Content.from_text(chunk["text"])]
            elif "usage" in chunk:
                contents = [Content.from_usage(_usage(chunk["usage"]))]
            else:
                contents = [
                    Content.from_function_call(
                        chunk["call_id"] or "",
                        chunk["name"] or "",
                        arguments=chunk["arguments"],
                    )
                ]
            yield ChatResponseUpdate(
                role="assistant",
                contents=contents,
                conversation_id=answer.conversation_id,
            )


# --------------------------------------------------------------------------------------------
# Middleware, tools, providers


async def _one(update: Any) -> AsyncIterator[Any]:
    yield update


def _value(context: Any, value: str) -> Any:
    if isinstance(context, AgentContext):
        if context.stream:
            update = AgentResponseUpdate(
                role="assistant", contents=[Content.from_text(value)]
            )
            return ResponseStream(_one(update), finalizer=AgentResponse.from_updates)
        return AgentResponse(messages=[Message("assistant", [value])])
    if isinstance(context, ChatContext):
        if context.stream:
            update = ChatResponseUpdate(
                role="assistant", contents=[Content.from_text(value)]
            )
            return ResponseStream(_one(update), finalizer=ChatResponse.from_updates)
        return ChatResponse(messages=[Message("assistant", [value])])
    return value


class Ops:
    def __init__(self, context: Any) -> None:
        self.context = context

    def set_result(self, value: str) -> None:
        self.context.result = _value(self.context, value)

    def terminate(self, value: str | None) -> NoReturn:
        raise MiddlewareTermination(
            result=None if value is None else _value(self.context, value)
        )

    def set_option(self, key: str, value: Any) -> None:
        self.context.options = {**(self.context.options or {}), key: value}

    def add_message(self, value: str) -> None:
        self.context.messages = [*self.context.messages, Message("user", [value])]

    def set_arguments(self, arguments: Mapping[str, Any]) -> None:
        self.context.arguments = dict(arguments)

    def append(self, value: str) -> None:
        raise TypeError("upstream's FunctionInvocationContext has no messages")


def build_middleware(world: World, spec: Mw) -> Any:
    if spec.layer == "agent":

        @agent_middleware
        async def agent_layer(context: AgentContext, call_next: Any) -> None:
            await world.middleware(spec, Ops(context), call_next)

        return agent_layer
    if spec.layer == "chat":

        @chat_middleware
        async def chat_layer(context: ChatContext, call_next: Any) -> None:
            await world.middleware(spec, Ops(context), call_next)

        return chat_layer

    @function_middleware
    async def function_layer(
        context: FunctionInvocationContext, call_next: Any
    ) -> None:
        await world.middleware(
            spec, Ops(context), call_next, tool=context.function.name
        )

    return function_layer


def build_tool(world: World, spec: Tool) -> FunctionTool:
    async def run(**arguments: Any) -> str:
        return await world.tool(spec.name, arguments)

    return FunctionTool(
        name=spec.name,
        description=spec.name,
        func=None if spec.declaration_only else run,
        input_model=spec.parameters,
        approval_mode="always_require" if spec.approval else "never_require",
    )


class PlanProvider(ContextProvider):  # type: ignore[misc]
    def __init__(self, world: World, spec: Provider) -> None:
        super().__init__(spec.name)
        self.world = world
        self.spec = spec

    async def before_run(
        self, *, agent: Any, session: Any, context: Any, state: Any
    ) -> None:
        self.world.provider(self.spec, "before")
        if self.spec.instructions:
            context.extend_instructions(self.spec.name, self.spec.instructions)
        if self.spec.messages:
            context.extend_messages(
                self.spec.name, [Message("user", [m]) for m in self.spec.messages]
            )
        if self.spec.tools:
            context.extend_tools(
                self.spec.name, [build_tool(self.world, t) for t in self.spec.tools]
            )

    async def after_run(
        self, *, agent: Any, session: Any, context: Any, state: Any
    ) -> None:
        self.world.provider(self.spec, "after")


# --------------------------------------------------------------------------------------------
# The adapter


def _uses_inbox(plan: Plan) -> bool:
    tools = [*plan.tools, *(t for turn in plan.turns for t in turn.tools)]
    return any(a.inject for a in plan.script) or any(t.inject for t in tools)


class UpstreamAdapter:
    """Runs a plan on agent-framework-core (its report: spec/conformance.md)."""

    name = "agent-framework-core 1.23.0"
    features = frozenset(FEATURES) - set(NOTES)
    expected: Mapping[str, str] = EXPECTED
    notes: Mapping[str, str] = NOTES

    async def run(self, world: World) -> list[TurnResult]:
        plan = world.plan
        injecting = _uses_inbox(plan)
        middleware = [build_middleware(world, m) for m in plan.middleware]
        if injecting:  # upstream's mid-run injection needs a session and its middleware
            middleware.append(MessageInjectionMiddleware())
        agent = Agent(
            ScriptedModel(world),
            plan.instructions,
            tools=[build_tool(world, t) for t in plan.tools] or None,
            default_options=dict(plan.options) or None,
            context_providers=[PlanProvider(world, p) for p in plan.providers] or None,
            middleware=middleware or None,
        )
        session = agent.create_session() if plan.session or injecting else None
        previous: Any = None
        for turn in plan.turns:
            out, previous = await self.run_turn(world, agent, session, turn, previous)
            world.results.append(out)
        return world.results

    async def run_turn(
        self, world: World, agent: Any, session: Any, turn: Turn, previous: Any
    ) -> tuple[TurnResult, Any]:
        if session is not None:
            world.bind_inbox(
                lambda value: enqueue_messages(session, [Message("user", [value])])
            )
        kwargs: dict[str, Any] = {
            "session": session,
            "options": dict(turn.options) or None,
            "tools": [build_tool(world, t) for t in turn.tools] or None,
            "middleware": [build_middleware(world, m) for m in turn.middleware] or None,
        }
        out = TurnResult()
        response: Any = None
        try:
            messages = _input(turn, previous)
            if world.stream:
                stream = agent.run(messages, stream=True, **kwargs)
                world.stream_created()
                async for update in stream:
                    out.updates.append(neutral_update(update))
                response = await stream.get_final_response()
            else:
                response = await agent.run(messages, **kwargs)
            if not isinstance(response, AgentResponse):
                raise TypeError(
                    f"the run's response is {response!r}, not an AgentResponse"
                )
            out.messages = [neutral_message(m) for m in response.messages]
            usage = response.usage_details or {}
            out.usage = (
                (usage.get("input_token_count"), usage.get("output_token_count"))
                if usage
                else None
            )
            if turn.options.get("response_format") is not None:
                out.value = response.value
        except Exception as exc:
            out.error = exc
        if session is not None and world.plan.session:
            stored = session.state.get("in_memory", {}).get("messages", [])
            out.history = [neutral_message(m) for m in stored]
        return out, response


def _input(turn: Turn, previous: Any) -> list[Message]:
    messages: list[Message] = []
    for item in turn.input:
        if isinstance(item, Approval):
            requests = [] if previous is None else previous.user_input_requests
            request = next(
                r
                for r in requests
                if r.function_call and r.function_call.call_id == item.call_id
            )
            messages.append(
                Message("user", [request.to_function_approval_response(item.approved)])
            )
        else:
            messages.append(Message("user", [item]))
    return messages


def adapter() -> UpstreamAdapter:
    return UpstreamAdapter()
