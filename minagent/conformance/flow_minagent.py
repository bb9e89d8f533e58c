"""The flow kit's adapter for minagent itself (spec/conformance.md CF-1, CF-5).

``python -m minagent conformance --adapter minagent.conformance.flow_minagent:adapter``
runs the kit against this tree's minagent; every rule must hold (CF-5). It is also the
example of an adapter: a scripted chat client that asks ``world.answer``, tools that
call ``world.tool``, middleware that calls ``world.middleware`` with the context's
operations, context providers that call ``world.provider``, and a loop over the plan's
turns.

Rules
-----
1. Built from public names only, the way a user writes minagent code (``Agent``,
   ``@agent_middleware``, ``FunctionTool``, ``ContextProvider``, ``Inbox``).
2. Everything the framework returns is reported neutrally (`minagent.conformance.flow`);
   the adapter decides nothing the kit checks.
"""

from __future__ import annotations

import importlib.util
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any, NoReturn

from .. import (
    Agent,
    AgentContext,
    AgentResponse,
    AgentResponseUpdate,
    AgentSession,
    BaseChatClient,
    CallNext,
    ChatContext,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    ContextProvider,
    FunctionInvocationContext,
    FunctionTool,
    Inbox,
    Message,
    MiddlewareTermination,
    ResponseStream,
    SessionContext,
    UsageDetails,
    agent_middleware,
    chat_middleware,
    function_middleware,
)
from .flow import (
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

__all__ = [
    "MinagentAdapter",
    "adapter",
    "neutral_content",
    "neutral_message",
    "neutral_options",
]


# --------------------------------------------------------------------------------------------
# Neutral views of minagent's objects


def neutral_content(content: Content) -> dict[str, Any]:
    kind = content.type
    if kind == "text":
        return text(content.text or "")
    if kind == "function_call":
        return call(
            content.call_id or "",
            content.name or "",
            content.arguments,
            user_input_request=content.user_input_request,
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


def neutral_update(u: ChatResponseUpdate | AgentResponseUpdate) -> dict[str, Any]:
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


def _usage(usage: tuple[int, int] | None) -> UsageDetails | None:
    return (
        None
        if usage is None
        else UsageDetails(input_token_count=usage[0], output_token_count=usage[1])
    )


# --------------------------------------------------------------------------------------------
# The scripted model


class ScriptedModel(BaseChatClient):
    """A chat client whose answers are the plan's script, asked of the world call by
    call."""

    def __init__(self, world: World) -> None:
        super().__init__(
            function_invocation_configuration=dict(world.plan.config) or None
        )
        self.world = world

    def _answer(
        self, messages: Sequence[Message], options: Mapping[str, Any]
    ) -> Answer:
        return self.world.answer(
            [neutral_message(m) for m in messages], neutral_options(options)
        )

    async def _inner_get_response(
        self, *, messages: list[Message], options: dict[str, Any], **kwargs: Any
    ) -> ChatResponse:
        answer = self._answer(messages, options)
        contents = [Content.from_text(answer.text)] if answer.text else []
        contents += [
            Content.from_function_call(c.call_id, c.name, c.arguments_json)
            for c in answer.calls
        ]
        return ChatResponse(
            [Message("assistant", contents)],
            usage_details=_usage(answer.usage),
            conversation_id=answer.conversation_id,
        )

    async def _inner_get_streaming_response(
        self, *, messages: list[Message], options: dict[str, Any], **kwargs: Any
    ) -> AsyncIterator[ChatResponseUpdate]:
        answer = self._answer(messages, options)
        for chunk in answer.chunks():
            if "text" in chunk:
                contents = [Content.from_text(chunk["text"])]
            elif "usage" in chunk:
                contents = [
                    Content.from_usage(_usage(chunk["usage"]) or UsageDetails())
                ]
            else:
                contents = [
                    Content.from_function_call(
                        chunk["call_id"] or "", chunk["name"], chunk["arguments"]
                    )
                ]
            yield ChatResponseUpdate(
                contents, "assistant", conversation_id=answer.conversation_id
            )


# --------------------------------------------------------------------------------------------
# Middleware, tools, providers


async def _one(update: Any) -> AsyncIterator[Any]:
    yield update


def _agent_result(value: str, stream: bool) -> Any:
    if stream:
        return ResponseStream(
            _one(AgentResponseUpdate([Content.from_text(value)], "assistant")),
            finalizer=AgentResponse.from_updates,
        )
    return AgentResponse([Message("assistant", [value])])


def _chat_result(value: str, stream: bool) -> Any:
    if stream:
        return ResponseStream(
            _one(ChatResponseUpdate([Content.from_text(value)], "assistant")),
            finalizer=ChatResponse.from_updates,
        )
    return ChatResponse([Message("assistant", [value])])


class Ops:
    """The operations `World.middleware` needs, on one context of any layer."""

    def __init__(
        self, context: AgentContext | ChatContext | FunctionInvocationContext
    ) -> None:
        self.context = context

    def _value(self, value: str) -> Any:
        c = self.context
        if isinstance(c, AgentContext):
            return _agent_result(value, c.stream)
        if isinstance(c, ChatContext):
            return _chat_result(value, c.stream)
        return value

    def set_result(self, value: str) -> None:
        self.context.result = self._value(value)

    def terminate(self, value: str | None) -> NoReturn:
        raise MiddlewareTermination(
            result=None if value is None else self._value(value)
        )

    def set_option(self, key: str, value: Any) -> None:
        c = self.context
        if isinstance(c, FunctionInvocationContext):
            raise TypeError("a function middleware has no options")
        c.options = {**c.options, key: value}

    def add_message(self, value: str) -> None:
        c = self.context
        if isinstance(c, FunctionInvocationContext):
            raise TypeError("a function middleware adds messages with append")
        c.messages = [*c.messages, Message("user", [value])]

    def set_arguments(self, arguments: Mapping[str, Any]) -> None:
        c = self.context
        if not isinstance(c, FunctionInvocationContext):
            raise TypeError("only a function middleware has arguments")
        c.arguments = dict(arguments)

    def append(self, value: str) -> None:
        c = self.context
        if not isinstance(c, FunctionInvocationContext) or c.messages is None:
            raise TypeError("only a function middleware in the loop has the transcript")
        c.messages.append(Message("user", [value]))


def build_middleware(world: World, spec: Mw) -> Any:
    """``spec`` as minagent middleware of its layer (a decorated function)."""
    if spec.layer == "agent":

        @agent_middleware
        async def agent_layer(context: AgentContext, call_next: CallNext) -> None:
            await world.middleware(spec, Ops(context), call_next)

        return agent_layer
    if spec.layer == "chat":

        @chat_middleware
        async def chat_layer(context: ChatContext, call_next: CallNext) -> None:
            await world.middleware(spec, Ops(context), call_next)

        return chat_layer

    @function_middleware
    async def function_layer(
        context: FunctionInvocationContext, call_next: CallNext
    ) -> None:
        await world.middleware(
            spec, Ops(context), call_next, tool=context.function.name
        )

    return function_layer


def build_tool(world: World, spec: Tool) -> FunctionTool:
    async def run(ctx: FunctionInvocationContext, **arguments: Any) -> str:
        transcript = ctx.messages if ctx is not None else None
        append = (
            None
            if transcript is None
            else (lambda value: transcript.append(Message("user", [value])))
        )
        return await world.tool(spec.name, arguments, append)

    return FunctionTool(
        name=spec.name,
        func=None if spec.declaration_only else run,
        parameters=spec.parameters,
        approval_mode="always_require" if spec.approval else "never_require",
    )


class PlanProvider(ContextProvider):
    """A context provider of the plan (SE-3): adds its instructions, messages and
    tools."""

    def __init__(self, world: World, spec: Provider) -> None:
        super().__init__(spec.name)
        self.world = world
        self.spec = spec

    async def before_run(
        self,
        *,
        agent: Any,
        session: AgentSession,
        context: SessionContext,
        state: dict[str, Any],
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
        self,
        *,
        agent: Any,
        session: AgentSession,
        context: SessionContext,
        state: dict[str, Any],
    ) -> None:
        self.world.provider(self.spec, "after")


# --------------------------------------------------------------------------------------------
# The adapter


def _has_folder(name: str) -> bool:
    """Whether this copy of minagent has the optional folder ``name`` (a vendored core
    may have only the kit's folders beside it, PK-2)."""
    return (
        importlib.util.find_spec(f"{__package__.rpartition('.')[0]}.{name}") is not None
    )


_WITHOUT_STRUCTURED = (
    "this copy of minagent has no structured/ folder (copy it to check)"
)


class MinagentAdapter:
    """Runs a plan on minagent (CF-5: every rule holds). In a copy of the core without
    the optional ``structured/`` folder, structured output is a feature it lacks, so
    those rules are not applicable (PK-2)."""

    name = "minagent"
    features = (
        frozenset(FEATURES)
        if _has_folder("structured")
        else frozenset(FEATURES) - {"structured"}
    )
    expected: Mapping[str, str] = {}
    notes: Mapping[str, str] = (
        {} if _has_folder("structured") else {"structured": _WITHOUT_STRUCTURED}
    )

    def build(self, world: World) -> Agent:
        plan: Plan = world.plan
        return Agent(
            self.model(world),
            plan.instructions,
            tools=[build_tool(world, t) for t in plan.tools] or None,
            default_options=dict(plan.options) or None,
            context_providers=[PlanProvider(world, p) for p in plan.providers] or None,
            middleware=self.middleware_list(world, plan.middleware),
        )

    def model(self, world: World) -> BaseChatClient:
        return ScriptedModel(world)

    def middleware(self, world: World, spec: Mw) -> Any:
        """``spec`` as minagent middleware; None leaves it out."""
        return build_middleware(world, spec)

    def middleware_list(self, world: World, specs: Sequence[Mw]) -> list[Any] | None:
        built = [self.middleware(world, m) for m in specs]
        return [m for m in built if m is not None] or None

    async def run(self, world: World) -> list[TurnResult]:
        agent = self.build(world)
        session = agent.create_session() if world.plan.session else None
        previous: Any = None
        for turn in world.plan.turns:
            outcome = await self.run_turn(world, agent, session, turn, previous)
            previous = outcome[1]
            world.results.append(outcome[0])
        return world.results

    async def run_turn(
        self,
        world: World,
        agent: Agent,
        session: AgentSession | None,
        turn: Turn,
        previous: Any,
    ) -> tuple[TurnResult, Any]:
        inbox = Inbox()
        world.bind_inbox(inbox.put)
        kwargs: dict[str, Any] = {
            "session": session,
            "options": dict(turn.options) or None,
            "tools": [build_tool(world, t) for t in turn.tools] or None,
            "middleware": self.middleware_list(world, turn.middleware),
            "inbox": inbox,
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
            out.messages = [neutral_message(m) for m in response.messages]
            usage = response.usage_details
            out.usage = (
                None
                if usage is None
                else (usage.input_token_count, usage.output_token_count)
            )
            out.value = response.try_value
        except Exception as exc:
            out.error = exc
        if session is not None:
            stored = session.state.get("in_memory", {}).get("messages", [])
            out.history = [neutral_message(m) for m in stored]
        return out, response


def _input(turn: Turn, previous: Any) -> list[Message]:
    """The turn's input; an `Approval` answers the previous response's request of that
    call."""
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


def adapter() -> MinagentAdapter:
    """The factory ``--adapter minagent.conformance.flow_minagent:adapter`` names."""
    return MinagentAdapter()
