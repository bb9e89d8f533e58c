"""Agents: `SupportsAgentRun`, `BaseAgent`, `RawAgent`, `Agent` (spec/agent.md).

Rules
-----
1. One route in both modes (AG-13): the agent middleware pipeline, then prepare, then
   ``client.get_response``, then finish; streaming is the same route, started on first
   use (AG-3).
2. The agent keeps no per-run state: everything a run holds is its `RunRequest` (TH-5).
3. The client's messages are not the agent's: a message that gets the agent's name is a
   copy (AG-7).

Theory of operation
-------------------
``Agent.run`` = agent middleware pipeline around ``RawAgent``'s core; the core is

    prepare   context providers' ``invoking`` (in order), options merged (agent
    defaults,
              provider output, run options), history + provider messages + input
    call      ``client.get_response`` with the run's chat and function middleware
    finish    author names, context providers' ``invoked`` (in reverse), then the thread

Non-streaming returns a coroutine; streaming returns a `ResponseStream` at once, and
every step above — the agent middleware too — starts only when that stream is first used
(AG-3). The streaming final response is built from the client's final `ChatResponse`,
exactly as the non-streaming one, so both modes return equal responses (AG-4). The agent
keeps no per-run state: concurrent runs with different threads cannot see each other
(TH-5).
"""

from __future__ import annotations

import asyncio
import inspect
import os
from collections.abc import (
    AsyncIterable,
    Awaitable,
    Callable,
    Generator,
    Mapping,
    Sequence,
)
from contextlib import AsyncExitStack
from typing import Any, Literal, Protocol, Self, overload, runtime_checkable

from . import _edge, _observe
from ._clients import SupportsChatGetResponse, _agent_factory, response_format
from ._compat import RUN_STREAM_HINT, reject_spellings, session_of
from ._exceptions import MiddlewareException
from ._loop import Inbox
from ._middleware import (
    AgentContext,
    CategorizedMiddleware,
    categorize_middleware,
    categorized,
    run_pipeline,
)
from ._options import FormatOptions, Options, T, merge_options
from ._responses import (
    AgentResponse,
    AgentResponseUpdate,
    ChatResponse,
    ChatResponseUpdate,
    agent_update_view,
)
from ._sessions import (
    NOTHING_PROVIDED,
    AgentSession,
    ContextProvider,
    RunRequest,
    after_run,
    before_run,
)
from ._stream import ResponseStream
from ._tools import FunctionTool
from ._toolset import ToolSet, expand_tool_sets, is_tool_set
from ._types import Message, MessageInput, normalize_messages

__all__ = ["Agent", "BaseAgent", "RawAgent", "SupportsAgentRun"]


@runtime_checkable
class SupportsAgentRun(Protocol):
    """Anything with these members is an agent; no base class needed (AG-1)."""

    id: str
    name: str | None
    description: str | None

    def run(
        self, messages: Any = None, *, thread: Any = None, **kwargs: Any
    ) -> Any: ...

    def get_new_thread(self, **kwargs: Any) -> Any: ...


class _Later:
    """An awaitable that creates its coroutine only when awaited: nothing runs before
    (AG-3). It is made once (ST-13): a second await is an error, never a second run
    of the agent."""

    __slots__ = ("_factory",)

    def __init__(self, factory: Callable[[], Awaitable[Any]] | None) -> None:
        self._factory = factory

    def __await__(self) -> Generator[Any, None, Any]:
        factory, self._factory = self._factory, None
        if factory is None:
            raise RuntimeError("the run's source was already started; it runs once")
        return factory().__await__()


class BaseAgent:
    """Identity, threads, `as_tool` and the async context-manager life cycle (AG-9)."""

    # AG-60: upstream's `Agent[OptionsT]`
    __class_getitem__ = classmethod(lambda cls, _options: cls)

    def __init__(
        self,
        *,
        id: str | None = None,
        name: str | None = None,
        description: str | None = None,
    ) -> None:
        self.id = id or os.urandom(16).hex()
        self.name = name
        self.description = description
        self._exit_stack: AsyncExitStack | None = None
        self._context_open = False  # inside `async with agent:` (AG-9)
        self._entered: set[int] = set()
        self._enter_lock = asyncio.Lock()

    def run(self, messages: Any = None, *, thread: Any = None, **kwargs: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must implement run")

    def get_new_thread(self, **kwargs: Any) -> Any:
        """A new `AgentThread` (the thread era's session, SE-9; upstream's API, through
        the edge)."""
        return _edge.current().new_thread(**kwargs)

    def run_stream(self, *args: Any, **kwargs: Any) -> Any:
        """Older upstream spelling (AG-12): an error that says to write ``run(...,
        stream=True)``."""
        raise TypeError(f"{type(self).__name__}.{RUN_STREAM_HINT}")

    def create_session(self, *, session_id: str | None = None) -> AgentSession:
        """A new session for ``run(..., session=...)`` (SE-1)."""
        return AgentSession(session_id=session_id)

    def get_session(
        self, service_session_id: str | dict[str, Any], *, session_id: str | None = None
    ) -> AgentSession:
        """A session that continues the conversation the service keeps as
        ``service_session_id`` (SE-1, SE-65)."""
        if not isinstance(service_session_id, str | dict) or not service_session_id:
            raise ValueError(
                f"service_session_id must be a non-empty string or dict, got {service_session_id!r}"
            )
        return AgentSession(
            session_id=session_id, service_session_id=service_session_id
        )

    def deserialize_thread(self, state: Any) -> Any:
        """Restore a thread from `AgentThread.serialize()` data (TH-2; upstream's API,
        through the edge)."""
        return _edge.current().restore_thread(state)

    # -- life cycle ---------------------------------------------------------------------------

    def _resources(self) -> list[Any]:
        return []

    async def __aenter__(self) -> Self:
        try:
            for resource in self._resources():
                await self._enter(resource)
        except BaseException:
            # `async with` will not call __aexit__: close what was entered
            await self.aclose()
            raise
        self._context_open = True
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close everything entered, in reverse order; idempotent (AG-9)."""
        stack, self._exit_stack = self._exit_stack, None
        self._context_open = False
        self._entered.clear()
        if stack is not None:
            await stack.aclose()

    async def _enter(self, resource: Any) -> None:
        if not (hasattr(resource, "__aenter__") and hasattr(resource, "__aexit__")):
            return
        async with self._enter_lock:
            if id(resource) in self._entered:
                return
            if self._exit_stack is None:
                self._exit_stack = AsyncExitStack()
            await self._exit_stack.enter_async_context(resource)
            self._entered.add(id(resource))

    # -- agent as an MCP server (spec/mcp.md) ---------------------------------------------------

    def as_mcp_server(
        self,
        *,
        server_name: str | None = None,
        version: str | None = None,
        instructions: str | None = None,
    ) -> Any:
        """This agent as an MCP server exposing its `as_tool()` (MCP-30); ``await
        s.run_stdio()`` serves it."""
        # loaded on first use; the server module imports upward only
        from .mcp.server import MCPServer

        return MCPServer(
            self, server_name=server_name, version=version, instructions=instructions
        )

    # -- agent as a tool ----------------------------------------------------------------------

    def as_tool(
        self,
        *,
        name: str | None = None,
        description: str | None = None,
        arg_name: str = "task",
        arg_description: str | None = None,
        stream_callback: Callable[[AgentResponseUpdate], Any] | None = None,
        approval_mode: Any = "never_require",
        propagate_session: bool = False,
    ) -> FunctionTool:
        """This agent as a tool with one required string parameter (AG-8); with
        ``propagate_session`` its run shares the calling run's session state, under a
        session of its own (AG-16)."""
        from .delegation import agent_tool  # the seam (spec/decisions.md)

        return agent_tool(
            self,
            name=name,
            description=description,
            arg_name=arg_name,
            arg_description=arg_description,
            stream_callback=stream_callback,
            approval_mode=approval_mode,
            propagate_session=propagate_session,
        )


class RawAgent(BaseAgent):
    """An agent over a chat client, without the agent middleware layer."""

    _runs_agent_middleware = False

    def __init__(
        self,
        client: SupportsChatGetResponse,
        instructions: str | None = None,
        *,
        id: str | None = None,
        name: str | None = None,
        description: str | None = None,
        tools: Any = None,
        default_options: Mapping[str, Any] | None = None,
        context_providers: ContextProvider | Sequence[ContextProvider] | None = None,
        middleware: Any = None,
        **unsupported: Any,
    ) -> None:
        # upstream's keywords: adopted (SE-60), or a TypeError that says what to write
        # (AG-12)
        if unsupported:
            context_providers, middleware = reject_spellings(
                unsupported,
                "agent",
                f"{type(self).__name__}()",
                (context_providers, middleware),
            )
        super().__init__(id=id, name=name, description=description)
        if not isinstance(client, SupportsChatGetResponse):
            raise TypeError(
                f"client must have get_response (SupportsChatGetResponse), got {type(client).__name__}"
            )
        self.client = client
        options = dict(default_options or {})
        if instructions is not None:
            options["instructions"] = instructions
        if tools is not None:
            options["tools"] = tools
        if options.get("tools") is not None:
            # TL-12: normalised once per agent
            options["tools"] = ToolSet.of(options["tools"])
        self.default_options: dict[str, Any] = {
            k: v for k, v in options.items() if v is not None
        }
        if isinstance(context_providers, ContextProvider):
            context_providers = [context_providers]
        self.context_providers: list[ContextProvider] = list(context_providers or [])
        self.middleware = middleware
        # fail now on untypable middleware; kept for the first run
        found = categorized(self, middleware)
        if found.agent and not self._runs_agent_middleware:
            raise MiddlewareException(
                f"{type(self).__name__} runs no agent middleware; use Agent for {found.agent[0]!r}"
            )

    def _resources(self) -> list[Any]:
        return [self.client, *self.default_options.get("tools", [])]

    # SO-28: a class as ``options["response_format"]`` types the answer's ``.value``.
    # The overloads name the stream mode and the options; every other keyword is the
    # implementation's.
    @overload
    def run(
        self,
        messages: MessageInput = None,
        *,
        stream: Literal[False] = False,
        options: FormatOptions[T],
        **kwargs: Any,
    ) -> Awaitable[AgentResponse[T]]: ...
    @overload
    def run(
        self,
        messages: MessageInput = None,
        *,
        stream: Literal[False] = False,
        options: Options = None,
        **kwargs: Any,
    ) -> Awaitable[AgentResponse]: ...
    @overload
    def run(
        self,
        messages: MessageInput = None,
        *,
        stream: Literal[True],
        options: FormatOptions[T],
        **kwargs: Any,
    ) -> ResponseStream[AgentResponseUpdate, AgentResponse[T]]: ...
    @overload
    def run(
        self,
        messages: MessageInput = None,
        *,
        stream: Literal[True],
        options: Options = None,
        **kwargs: Any,
    ) -> ResponseStream[AgentResponseUpdate, AgentResponse]: ...
    @overload
    def run(
        self,
        messages: MessageInput = None,
        *,
        stream: bool,
        options: Options = None,
        **kwargs: Any,
    ) -> (
        Awaitable[AgentResponse] | ResponseStream[AgentResponseUpdate, AgentResponse]
    ): ...

    def run(
        self,
        messages: MessageInput = None,
        *,
        stream: bool = False,
        thread: AgentSession | None = None,
        session: AgentSession | None = None,
        options: Mapping[str, Any] | None = None,
        tools: Any = None,
        middleware: Any = None,
        inbox: Inbox | None = None,
        function_invocation_kwargs: Mapping[str, Any] | None = None,
        client_kwargs: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> Awaitable[AgentResponse] | ResponseStream[AgentResponseUpdate, AgentResponse]:
        """Run once: an awaitable of `AgentResponse`, or a `ResponseStream` when
        ``stream=True``.

        ``kwargs`` and ``function_invocation_kwargs`` reach agent middleware and the
        tools' `FunctionInvocationContext.kwargs`; ``client_kwargs`` reach the model
        call only (AG-2).
        """
        if kwargs:
            reject_spellings(kwargs, "run", f"{type(self).__name__}.run()")
        given = (
            session_of(thread, session)
            if thread is not None or session is not None
            else None
        )
        if (
            options is not None
            and type(options) is not dict
            and not isinstance(options, Mapping)
        ):
            raise TypeError(
                f"options must be a dict of chat options, got {type(options).__name__}"
            )
        # MW-3: once per run; the agent's own list, once per agent
        found = categorized(self, self.middleware)
        found = (
            categorize_middleware(found, middleware)
            if middleware is not None
            else found
        )
        request = RunRequest(
            normalize_messages(messages),
            given,
            dict(options) if options else {},
            tools,
            kwargs,
            dict(function_invocation_kwargs) if function_invocation_kwargs else {},
            dict(client_kwargs) if client_kwargs else {},
        )
        result: (
            Awaitable[AgentResponse]
            | ResponseStream[AgentResponseUpdate, AgentResponse]
        )
        observer = _observe.OBSERVER  # OB-2: read once per run
        if not found.agent:
            result = self._core(request, found, inbox, stream)
        else:
            # OB-31: the observer may stand in for each agent middleware
            agent_layer = observer.middleware("agent", found.agent)
            if agent_layer is not found.agent:
                found = found._replace(agent=tuple(agent_layer))
            result = self._with_agent_middleware(request, found, inbox, stream)
        # OB-2: the run's wrap point
        return observer.run(self, request.messages, stream, result)

    def _with_agent_middleware(
        self,
        request: RunRequest,
        found: CategorizedMiddleware,
        inbox: Inbox | None,
        stream: bool,
    ) -> Any:
        raise MiddlewareException(
            f"{type(self).__name__} runs no agent middleware; use Agent for {found.agent[0]!r}"
        )

    def _core(
        self,
        request: RunRequest,
        found: CategorizedMiddleware,
        inbox: Inbox | None,
        stream: bool,
    ) -> Any:
        if stream:
            return self._stream(request, found, inbox)
        return self._run_once(request, found, inbox)

    async def _run_once(
        self, request: RunRequest, found: CategorizedMiddleware, inbox: Inbox | None
    ) -> AgentResponse:
        try:
            messages, options, call_kwargs = await self._prepare(request, found, inbox)
            response = await self.client.get_response(
                messages, options=options, **call_kwargs
            )
            return await self._finish(request, response)
        finally:
            # what the run holds (SE-12, AG-9)
            if request.claim is not None or request.resources is not None:
                await request.close()

    def _stream(
        self, request: RunRequest, found: CategorizedMiddleware, inbox: Inbox | None
    ) -> ResponseStream[AgentResponseUpdate, AgentResponse]:
        """The client's stream, opened on first use, each update mapped to the agent's
        view.

        The same route as non-streaming: ``client.get_response(..., stream=True)``, so a
        client that overrides ``get_response`` is honoured in both modes (AG-13).
        Nothing starts before the first pull (AG-3); closing the stream closes the
        client's; the final response is built from the client's final response (AG-4).
        """
        final: list[Callable[[], Awaitable[ChatResponse]]] = []
        agent_id, name = self.id, self.name

        async def open_chat() -> AsyncIterable[ChatResponseUpdate]:
            messages, options, call_kwargs = await self._prepare(request, found, inbox)
            chat_stream: Any = self.client.get_response(
                messages, options=options, stream=True, **call_kwargs
            )
            if not isinstance(chat_stream, ResponseStream):
                if inspect.iscoroutine(chat_stream):
                    # never awaited: close it, so no "never awaited" warning
                    chat_stream.close()
                raise TypeError(
                    f"{type(self.client).__name__}.get_response(stream=True) must return a ResponseStream, "
                    f"got {type(chat_stream).__name__}"
                )
            final.append(chat_stream.get_final_response)
            return chat_stream

        async def finalize(_updates: Sequence[AgentResponseUpdate]) -> AgentResponse:
            return await self._finish(request, await final[0]())

        stream = ResponseStream._mapping(
            _Later(open_chat), agent_update_view(agent_id, name), finalize, keep=False
        )
        return stream.with_cleanup_hook(request.close)

    async def _prepare(
        self, request: RunRequest, found: CategorizedMiddleware, inbox: Inbox | None
    ) -> tuple[list[Message], dict[str, Any], dict[str, Any]]:
        """Context providers, options assembly and the messages to send (AG-5, AG-6)."""
        thread = request.thread
        if request.thread is None and not self.context_providers:
            # no session, no providers: nobody adds or sees anything
            context = NOTHING_PROVIDED
        else:
            context = await before_run(self, request)
        provided: dict[str, Any] = {}  # what the providers add (SE-3)
        if context.instructions:
            provided["instructions"] = "\n".join(context.instructions) or None
        options = (
            merge_options(self.default_options, provided)
            if provided
            else dict(self.default_options)
        )
        run_options = request.options
        added = (
            [
                *_items(context.tools),
                *_items(run_options.get("tools")),
                *_items(request.tools),
            ]
            if context.tools or run_options.get("tools") or request.tools
            else None
        )
        if "tools" in run_options:
            run_options = {k: v for k, v in run_options.items() if k != "tools"}
        if run_options:
            options = merge_options(options, run_options)
        agent_tools: Any = self.default_options.get("tools") or ()
        # TL-12, OP-3: the run's tools, normalised once: the agent's, the providers',
        # the run's
        if added:
            options["tools"] = ToolSet.of([*agent_tools, *added], [])
        elif agent_tools:
            # the run's own list, the agent's records
            options["tools"] = ToolSet.of(agent_tools).copy()
        if options.get("tools"):
            options.setdefault("tool_choice", "auto")
            # AG-9: tools that are context managers connect on first use
            for item in options["tools"]:
                if (
                    self._context_open
                    or id(item) in self._entered
                    or any(item is t for t in agent_tools)
                ):
                    # the agent's: open until the agent's context exits
                    await self._enter(item)
                elif hasattr(item, "__aenter__") and hasattr(item, "__aexit__"):
                    await request.enter(item)  # this run's: closed when the run ends
            # MCP-20: a server's tools, once connected
            if any(is_tool_set(item) for item in options["tools"]):
                options["tools"] = ToolSet.of(expand_tool_sets(options["tools"]))
        if thread is not None and thread.service_session_id:
            # SE-65: a chat client's conversation id is a str
            if not isinstance(thread.service_session_id, str):
                reject_spellings(
                    {"service_session_id": thread.service_session_id},
                    "session",
                    type(self).__name__,
                )
            options.setdefault("conversation_id", thread.service_session_id)
        call_kwargs: dict[str, Any] = {}
        if context.middleware:
            found = categorize_middleware(found, context.get_middleware())
        # categorised once: the client takes it as it is (MW-3)
        if found.chat or found.function:
            call_kwargs["middleware"] = (
                found._replace(agent=()) if found.agent else found
            )
        if inbox is not None:
            call_kwargs["inbox"] = inbox
        if thread is not None:
            call_kwargs["session"] = thread  # LP-25: FunctionInvocationContext.session
        function_kwargs = {**request.kwargs, **request.function_kwargs}
        if function_kwargs:
            call_kwargs["function_invocation_kwargs"] = function_kwargs
        if request.client_kwargs:
            call_kwargs["client_kwargs"] = request.client_kwargs
        if context.context_messages:
            return [*context.get_messages(), *request.messages], options, call_kwargs
        # normalised for this run: the client copies it
        return request.messages, options, call_kwargs

    async def _finish(
        self, request: RunRequest, response: ChatResponse
    ) -> AgentResponse:
        """Author names, providers' invoked (reverse order), then the thread (AG-7,
        TH-3).

        The client's messages are not ours: a message that gets the agent's name is a
        copy (AG-7).
        """
        if not isinstance(response, ChatResponse):
            raise TypeError(
                f"the client returned {type(response).__name__}, not a ChatResponse"
            )
        messages = response.messages
        if self.name:
            messages = [
                _with_author(m, self.name)
                if m.role == "assistant" and m.author_name is None
                else m
                for m in messages
            ]
        result = AgentResponse.from_chat_response(response, agent_id=self.id)
        result.messages = messages
        # SO-9: a client other than a BaseChatClient attached none
        if result._format is None:
            wanted = request.options.get("response_format")
            wanted = (
                self.default_options.get("response_format")
                if wanted is None
                else wanted
            )
            if wanted is not None:
                result._format = response_format(wanted)
        if request.providers or (
            request.thread is not None and response.conversation_id
        ):
            await after_run(self, request, result, response.conversation_id)
        return result


def _items(tools: Any) -> list[Any]:
    """A tool argument as a list: None, one tool, or a sequence of tools."""
    if tools is None:
        return []
    return (
        list(tools)
        if isinstance(tools, Sequence) and not isinstance(tools, str)
        else [tools]
    )


def _with_author(message: Message, name: str) -> Message:
    copy = message.with_contents(message.contents)
    copy.author_name = name
    return copy


class Agent(RawAgent):
    """`RawAgent` with the agent middleware layer: agent-level middleware wraps
    run-level (MW-4)."""

    _runs_agent_middleware = True

    def _with_agent_middleware(
        self,
        request: RunRequest,
        found: CategorizedMiddleware,
        inbox: Inbox | None,
        stream: bool,
    ) -> Any:
        """The agent middleware pipeline around the run (MW-4); lazy when streaming
        (AG-3)."""
        context = AgentContext(
            agent=self,
            messages=request.messages,
            thread=request.thread,
            options=request.options,
            tools=request.tools,
            stream=stream,
            kwargs=request.kwargs,
            function_invocation_kwargs=request.function_kwargs,
            client_kwargs=request.client_kwargs,
        )

        async def handler(ctx: AgentContext) -> Any:
            changed = RunRequest(
                list(ctx.messages),
                ctx.thread,
                dict(ctx.options),
                ctx.tools,
                dict(ctx.kwargs),
                dict(ctx.function_invocation_kwargs),
                dict(ctx.client_kwargs),
            )
            outcome = self._core(changed, found, inbox, ctx.stream)
            return outcome if ctx.stream else await outcome

        if stream:
            return ResponseStream(
                _Later(lambda: run_pipeline(found.agent, context, handler))
            )
        return run_pipeline(found.agent, context, handler)


_agent_factory.append(Agent)  # BaseChatClient.as_agent (AG-11)
