"""OpenTelemetry GenAI spans through a tiny tracer protocol (spec/observability.md).

Rules
-----
1. Tracing is an observer of the route (`minagent._observe`): it wraps the agent run,
   the model-call leaf and a tool call's execution; the route itself never asks whether
   it is traced.
2. Observers never change the observed: a span is started and ended around what runs,
   the same values and exceptions pass through.
3. Contents (messages, arguments, results) are recorded only with
   ``record_content=True``, and never the values of secret parameters, at any depth
   (OB-6, OB-16), nor what `Redact` took out of the model's output, nor a tool's
   exception text without ``record_content=True`` (OB-21).
4. A tracer that raises never fails the run: every call into it is guarded
   (``safety.Guard``), the first failure logged, the rest of the run traced as well as
   the tracer allows (OB-22).

Theory of operation
-------------------
``set_tracer(tracer)`` installs a `GenAIObserver` for that tracer (``None`` installs the
core's default, which observes nothing). Its wrap points start these spans:

    wrap point        span                       starts / ends the agent run
    ``invoke_agent {name}``    when the run starts / when it returns, fails,
                                                 or its stream ends or is closed
    the model call    ``chat {model}``           before the provider is called / when
    its
                                                 response arrives or its stream ends or
                                                 closes
    a tool call       ``execute_tool {name}``    before the call is checked / when its
    result
                                                 is made

Nesting (OB-3) uses a context variable, ``_CURRENT``: the agent's span is current while
the run works (around the whole coroutine, or around every pull of its stream, so
nothing leaks into the caller's context between pulls), and a tool's span is current
while the tool runs, so a chat or tool span's parent is the run's span and an agent run
as a tool nests under ``execute_tool``. The parent is handed to ``start_span``
explicitly; ``Tracer.activate(span)`` is entered only around a tool's execution, so a
tracing library's own notion of "current" (OpenTelemetry's context) follows into the
tool and the tool's own spans nest under ``execute_tool`` (OB-4). The loop's notes
(model turn, step, injected messages) become events on the current span (OB-11).

Attributes use the OpenTelemetry GenAI semantic-convention names (OB-5).
"""

from __future__ import annotations

import contextvars
import json
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol, TypeVar, cast, runtime_checkable

from .._observe import (
    REDACTIONS,
    ASGIApp,
    ModelCall,
    Observer,
    ToolInvoke,
    current,
    install,
)
from .._responses import ChatResponse
from .._stream import ResponseStream
from .._toolset import tool_specs
from .._types import Content, Message
from .._wire import UsageDetails
from .safety import (
    SECRET_TEXT,
    Guard,
    hide,
    real_span,
    scrub,
    secret_names,
    secret_values,
)

__all__ = [
    "SECRET_TEXT",
    "GenAIObserver",
    "RecordedToolError",
    "Span",
    "Tracer",
    "current_span",
    "error_type",
    "get_tracer",
    "records_content",
    "set_tracer",
]

T = TypeVar("T")


@runtime_checkable
class Span(Protocol):
    """One span of a `Tracer` (OB-1)."""

    def set_attributes(self, attributes: Mapping[str, Any]) -> None: ...

    def record_error(self, error: BaseException) -> None: ...

    def end(self) -> None: ...


@runtime_checkable
class Tracer(Protocol):
    """What tracing calls to trace a run (OB-1).

    ``start_span`` starts a span named ``name`` under ``parent`` (None: whatever the
    tracer itself considers current) with the given attributes. ``activate(span)`` is a
    context manager that makes the span current for the tracer's own library while a
    tool runs (OB-4)."""

    def start_span(
        self, name: str, attributes: Mapping[str, Any], parent: Span | None
    ) -> Span: ...

    def activate(self, span: Span) -> AbstractContextManager[Any]: ...


_CURRENT: contextvars.ContextVar[Span | None] = contextvars.ContextVar(
    "minagent_span", default=None
)
_RAISED: contextvars.ContextVar[list[BaseException] | None] = contextvars.ContextVar(
    "minagent_raised", default=None
)

# The OpenTelemetry GenAI semantic-convention names (OB-5).
OPERATION = "gen_ai.operation.name"
AGENT_NAME = "gen_ai.agent.name"
AGENT_ID = "gen_ai.agent.id"
AGENT_DESCRIPTION = "gen_ai.agent.description"
REQUEST_MODEL = "gen_ai.request.model"
RESPONSE_ID = "gen_ai.response.id"
RESPONSE_MODEL = "gen_ai.response.model"
FINISH_REASONS = "gen_ai.response.finish_reasons"
INPUT_TOKENS = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
TOOL_NAME = "gen_ai.tool.name"
TOOL_CALL_ID = "gen_ai.tool.call.id"
TOOL_DESCRIPTION = "gen_ai.tool.description"
TOOL_TYPE = "gen_ai.tool.type"
TOOL_ARGUMENTS = "gen_ai.tool.call.arguments"
TOOL_RESULT = "gen_ai.tool.call.result"
INPUT_MESSAGES = "gen_ai.input.messages"
OUTPUT_MESSAGES = "gen_ai.output.messages"
CONVERSATION_ID = "gen_ai.conversation.id"
PROVIDER_NAME = "gen_ai.provider.name"
SERVER_ADDRESS = "server.address"
SERVER_PORT = "server.port"
TOOL_DEFINITIONS = "gen_ai.tool.definitions"
ERROR_TYPE = "error.type"
# The OpenTelemetry HTTP server conventions (spec/hosting.md HS-181).
HTTP_METHOD = "http.request.method"
HTTP_METHOD_ORIGINAL = "http.request.method_original"
HTTP_ROUTE = "http.route"
HTTP_STATUS = "http.response.status_code"
URL_PATH = "url.path"
URL_SCHEME = "url.scheme"
NETWORK_PROTOCOL_VERSION = "network.protocol.version"
CLIENT_ADDRESS = "client.address"
CLIENT_PORT = "client.port"
HTTP_METHODS = frozenset(
    {"CONNECT", "DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT", "TRACE"}
)
# request parameters: option key -> attribute
REQUEST_PARAMETERS = {
    "temperature": "gen_ai.request.temperature",
    "top_p": "gen_ai.request.top_p",
    "max_tokens": "gen_ai.request.max_tokens",
    "frequency_penalty": "gen_ai.request.frequency_penalty",
    "presence_penalty": "gen_ai.request.presence_penalty",
    "seed": "gen_ai.request.seed",
    "stop": "gen_ai.request.stop_sequences",
}
Redactions = tuple[Callable[[str], str], ...]


class RecordedToolError(Exception):
    """What a span records of a tool's exception when its text may hold a secret
    (OB-21): the text without the call's secret values, or with ``record_content=False``
    only the exception's type. ``error_type`` names the tool's own exception class, as
    `error_type()` reports it."""

    def __init__(self, message: str, error_type: str) -> None:
        super().__init__(message)
        self.error_type = error_type


def set_tracer(tracer: Tracer | None, *, record_content: bool = False) -> None:
    """Trace every run from now on with ``tracer`` (None: stop tracing) (OB-1, OB-6).

    ``record_content=True`` also records message contents and tool arguments and
    results."""
    if tracer is not None and not isinstance(tracer, Tracer):
        raise TypeError(
            f"set_tracer() takes a Tracer (start_span(name, attributes, parent) and activate(span)), "
            f"got {type(tracer).__name__}"
        )
    if not isinstance(record_content, bool):
        raise TypeError(
            f"record_content must be a bool, got {type(record_content).__name__}"
        )
    install(GenAIObserver(tracer, record_content) if tracer is not None else None)


def get_tracer() -> Tracer | None:
    """The tracer in use, or None."""
    observer = current()
    return observer.tracer if isinstance(observer, GenAIObserver) else None


def records_content() -> bool:
    """Whether the tracer in use records contents (``set_tracer(...,
    record_content=True)``, OB-6)."""
    observer = current()
    return isinstance(observer, GenAIObserver) and observer.record_content


def current_span() -> Span | None:
    """The span of the agent run or tool call this code runs in, or None (OB-3)."""
    return cast(Span | None, real_span(_CURRENT.get()))


def error_type(error: BaseException) -> str:
    """OB-7: ``error.type`` is the exception's class, qualified by its module unless
    built in (for a `RecordedToolError`, the class of the exception it stands for)."""
    if isinstance(error, RecordedToolError):
        return error.error_type
    cls = type(error)
    return (
        cls.__qualname__
        if cls.__module__ == "builtins"
        else f"{cls.__module__}.{cls.__qualname__}"
    )


class GenAIObserver(Observer):
    """The route's wrap points as OpenTelemetry GenAI spans of ``tracer`` (see the
    module docstring)."""

    def __init__(self, tracer: Tracer, record_content: bool = False) -> None:
        self.tracer = tracer
        self.record_content = record_content
        self._guard = Guard(tracer)  # OB-22: every call into the tracer

    def _start(self, name: str, attributes: dict[str, Any]) -> Span:
        return cast(Span, self._guard.start(name, attributes, _CURRENT.get()))

    def _fail(
        self, span: Span, error: BaseException, recorded: BaseException | None = None
    ) -> None:
        """Record ``error`` on ``span`` (``recorded`` in its place when given, OB-21);
        closing a stream early (GeneratorExit) is not an error."""
        if not isinstance(error, GeneratorExit):
            self._guard.set(span, {ERROR_TYPE: error_type(error)})
            self._guard.record(span, recorded if recorded is not None else error)

    def _event(self, name: str, attributes: Mapping[str, Any]) -> None:
        """OB-11: a loop event on the current span, for spans that have ``add_event``
        (OpenTelemetry's do)."""
        self._guard.event(_CURRENT.get(), name, attributes)

    # -- notes (OB-11) --------------------------------------------------------------------------

    def model_turn(self, number: int, tool_choice: Any, last: bool) -> None:
        choice = (
            tool_choice.get("mode") if isinstance(tool_choice, Mapping) else tool_choice
        )
        self._event(
            "minagent.model_call",
            {"number": number, "tool_choice": str(choice or "auto"), "last": last},
        )

    def step(self, outcome: str, next_step: str) -> None:
        self._event("minagent.step", {"outcome": outcome, "next": next_step})

    def injected(self, count: int) -> None:
        self._event("minagent.injected", {"messages": count})

    def tool_raised(self, error: BaseException) -> None:
        errors = _RAISED.get()
        if errors is not None:
            errors.append(error)

    # -- attributes -----------------------------------------------------------------------------

    def _response_attributes(
        self, response: Any, tools: Any = None, redactions: Redactions = ()
    ) -> dict[str, Any]:
        """Attributes of a finished ChatResponse or AgentResponse (OB-5)."""
        out = _usage_attributes(getattr(response, "usage_details", None))
        if (response_id := getattr(response, "response_id", None)) is not None:
            out[RESPONSE_ID] = str(response_id)
        if (model := getattr(response, "model", None)) is not None:
            out[RESPONSE_MODEL] = str(model)
        if (reason := getattr(response, "finish_reason", None)) is not None:
            out[FINISH_REASONS] = [str(reason)]
        if (conversation := getattr(response, "conversation_id", None)) is not None:
            out[CONVERSATION_ID] = str(conversation)
        if self.record_content:
            out[OUTPUT_MESSAGES] = _messages_json(
                getattr(response, "messages", []), tools, redactions
            )
        return out

    # -- invoke_agent ---------------------------------------------------------------------------

    def run(self, agent: Any, messages: Sequence[Any], stream: bool, result: T) -> T:
        """The run ``result`` (a coroutine, or a ResponseStream when streaming) inside
        an ``invoke_agent`` span that starts when the run starts (OB-8)."""
        name = getattr(agent, "name", None)
        attributes: dict[str, Any] = {
            OPERATION: "invoke_agent",
            AGENT_ID: str(agent.id),
        }
        if name:
            attributes[AGENT_NAME] = str(name)
        if description := getattr(agent, "description", None):
            attributes[AGENT_DESCRIPTION] = str(description)
        defaults = getattr(agent, "default_options", {})
        if model := defaults.get("model"):
            attributes[REQUEST_MODEL] = str(model)
        tools = defaults.get("tools")
        attributes.update(_connection_attributes(getattr(agent, "client", None)))
        if definitions := _tool_definitions(tools):
            attributes[TOOL_DEFINITIONS] = definitions
        if self.record_content:
            attributes[INPUT_MESSAGES] = _messages_json(messages, tools)
        span_name = f"invoke_agent {name}" if name else "invoke_agent"
        if stream:
            run = cast(ResponseStream[Any, Any], result)
            pulls = self._agent_pulls(span_name, attributes, run, tools)
            return cast(T, ResponseStream.of_run(pulls, run.get_final_response))
        return cast(
            T,
            self._agent_run(span_name, attributes, cast(Awaitable[Any], result), tools),
        )

    async def _agent_run(
        self, name: str, attributes: dict[str, Any], run: Awaitable[Any], tools: Any
    ) -> Any:
        span = self._start(name, attributes)
        token = _CURRENT.set(span)
        try:
            response = await run
            self._guard.set(span, self._response_attributes(response, tools))
            return response
        except BaseException as exc:
            self._fail(span, exc)
            raise
        finally:
            _CURRENT.reset(token)
            self._guard.end(span)

    async def _agent_pulls(
        self,
        name: str,
        attributes: dict[str, Any],
        stream: ResponseStream[Any, Any],
        tools: Any,
    ) -> AsyncGenerator[Any]:
        """The run's stream, each pull (and the final response) with the run's span
        current."""
        span = self._start(name, attributes)
        iterator = aiter(stream)
        try:
            while True:
                token = _CURRENT.set(span)
                try:
                    update = await anext(iterator)
                except StopAsyncIteration:
                    break
                finally:
                    _CURRENT.reset(token)
                yield update
            token = _CURRENT.set(span)
            try:
                self._guard.set(
                    span,
                    self._response_attributes(await stream.get_final_response(), tools),
                )
            finally:
                _CURRENT.reset(token)
        except BaseException as exc:
            self._fail(span, exc)
            raise
        finally:
            try:
                if (close := getattr(iterator, "aclose", None)) is not None:
                    await close()
            finally:
                self._guard.end(span)

    # -- the HTTP server span (spec/hosting.md HS-180 .. HS-186) -----------------------------------

    def request(
        self, scope: Mapping[str, Any], route: str | None, app: ASGIApp
    ) -> ASGIApp:
        """The ASGI callable ``app`` answering one request inside a server span, named
        and described by the OpenTelemetry HTTP server conventions (HS-181), current
        (and activated) while the request is answered, ended when the answer has been
        sent (HS-182)."""

        async def traced(scope: Any, receive: Any, send: Any) -> None:
            await self._serve(scope, route, app, receive, send)

        return traced

    async def _serve(
        self,
        scope: Mapping[str, Any],
        route: str | None,
        app: ASGIApp,
        receive: Any,
        send: Any,
    ) -> None:
        name, attributes = _server_attributes(scope, route)
        span = self._start(name, attributes)
        status: list[int] = []

        async def observed(message: dict[str, Any]) -> None:
            # HS-181: the status as the response starts; the message passes unchanged
            if message.get("type") == "http.response.start" and not status:
                code = message.get("status")
                if isinstance(code, int):
                    status.append(code)
                    self._guard.set(span, {HTTP_STATUS: code})
            await send(message)

        token = _CURRENT.set(span)
        try:
            with self._guard.activate(span):
                await app(scope, receive, observed)
            # HS-183: a 5xx answer is an error of the server's, named by its status
            if status and status[0] >= 500:
                self._guard.set(span, {ERROR_TYPE: str(status[0])})
        except BaseException as exc:
            self._fail(span, exc)
            raise
        finally:
            _CURRENT.reset(token)
            self._guard.end(span)

    # -- chat -----------------------------------------------------------------------------------

    def _chat_attributes(
        self, client: Any, options: Mapping[str, Any], messages: Sequence[Message]
    ) -> tuple[str, dict[str, Any]]:
        model = (
            options.get("model")
            or getattr(client, "model", None)
            or getattr(client, "model_id", None)
        )
        attributes: dict[str, Any] = {OPERATION: "chat"}
        if model:
            attributes[REQUEST_MODEL] = str(model)
        attributes.update(_connection_attributes(client))
        if definitions := _tool_definitions(options.get("tools")):
            attributes[TOOL_DEFINITIONS] = definitions
        for key, attribute in REQUEST_PARAMETERS.items():
            value = options.get(key)
            if value is not None:
                attributes[attribute] = (
                    [value] if key == "stop" and isinstance(value, str) else value
                )
        if conversation := options.get("conversation_id"):
            attributes[CONVERSATION_ID] = str(conversation)
        if self.record_content:
            attributes[INPUT_MESSAGES] = _messages_json(messages, options.get("tools"))
        return (f"chat {model}" if model else "chat"), attributes

    def model_call(self, call: ModelCall) -> ModelCall:
        """The model-call leaf inside a ``chat {model}`` span (OB-9); streaming: a
        stream whose span ends when the provider's stream ends or is closed."""

        def traced(
            client: Any,
            messages: list[Any],
            options: dict[str, Any],
            kwargs: dict[str, Any],
            stream: bool,
        ) -> Any:
            name, attributes = self._chat_attributes(client, options, messages)
            span = self._start(name, attributes)
            tools = options.get("tools")
            # OB-21: what the chat middleware around this call takes out
            redactions = REDACTIONS.get()
            try:
                result = call(client, messages, options, kwargs, stream)
            except BaseException as exc:
                self._fail(span, exc)
                self._guard.end(span)
                raise
            if stream:
                inner = cast(ResponseStream[Any, ChatResponse], result)
                updates = self._chat_updates(span, inner, tools, redactions)
                return ResponseStream.of_run(updates, inner.get_final_response)
            return self._chat_response(
                span, cast(Awaitable[ChatResponse], result), tools, redactions
            )

        return traced

    async def _chat_response(
        self,
        span: Span,
        response: Awaitable[ChatResponse],
        tools: Any,
        redactions: Redactions,
    ) -> ChatResponse:
        try:
            result = await response
            self._guard.set(span, self._response_attributes(result, tools, redactions))
            return result
        except BaseException as exc:
            self._fail(span, exc)
            raise
        finally:
            self._guard.end(span)

    async def _chat_updates(
        self,
        span: Span,
        updates: ResponseStream[Any, ChatResponse],
        tools: Any,
        redactions: Redactions,
    ) -> AsyncGenerator[Any]:
        """The provider's updates, passed on; the span records the folded response at
        the end (OB-9)."""
        try:
            async for update in updates:
                yield update
            final = await updates.get_final_response()
            self._guard.set(span, self._response_attributes(final, tools, redactions))
        except BaseException as exc:
            self._fail(span, exc)
            raise
        finally:
            try:
                await updates.aclose()
            finally:
                self._guard.end(span)

    # -- execute_tool ---------------------------------------------------------------------------

    def tool_call(self, invoke: ToolInvoke, lookup: Callable[[Any], Any]) -> ToolInvoke:
        """One tool call inside an ``execute_tool {name}`` span, current (and activated)
        while the call runs (OB-10)."""

        async def traced(call: Content, view: Any) -> tuple[Any, bool]:
            return await self._trace_tool(invoke, call, view, lookup(call))

        return traced

    async def _trace_tool(
        self, invoke: ToolInvoke, call: Content, view: Any, tool: Any
    ) -> tuple[Any, bool]:
        name = call.name or ""
        attributes: dict[str, Any] = {
            OPERATION: "execute_tool",
            TOOL_NAME: name,
            TOOL_CALL_ID: call.call_id or "",
            TOOL_TYPE: "function",
        }
        if description := getattr(tool, "description", None):
            attributes[TOOL_DESCRIPTION] = str(description)
        if self.record_content and call.arguments is not None:
            attributes[TOOL_ARGUMENTS] = _arguments_text(call, tool)
        span = self._start(f"execute_tool {name}", attributes)
        token, raised = _CURRENT.set(span), _RAISED.set([])
        try:
            with self._guard.activate(span):
                outcome = await invoke(call, view)
            result, errors = outcome[0], _RAISED.get()
            if errors:  # the tool raised: its call got an error result (LP-6)
                self._fail(span, errors[-1], self._recordable(errors[-1], call, tool))
            elif isinstance(result, Content) and result.exception is not None:
                self._guard.set(
                    span, {ERROR_TYPE: _result_error_type(result.exception)}
                )
            if isinstance(result, Content) and self.record_content:
                value = result.result
                text = (
                    value if isinstance(value, str) else json.dumps(value, default=str)
                )
                # OB-21
                self._guard.set(
                    span, {TOOL_RESULT: scrub(text, _secret_values_of(call, tool))}
                )
            return outcome
        except BaseException as exc:
            self._fail(span, exc)
            raise
        finally:
            _RAISED.reset(raised)
            _CURRENT.reset(token)
            self._guard.end(span)

    def _recordable(
        self, error: BaseException, call: Content, tool: Any
    ) -> BaseException:
        """OB-21: a tool's exception as its span may record it: without
        ``record_content`` its type only (its text can quote the arguments); with it,
        its text without the call's secret values."""
        kind = error_type(error)
        if not self.record_content:
            return RecordedToolError(
                f"{kind} (its message is recorded only with record_content=True)", kind
            )
        text = str(error)
        clean = scrub(text, _secret_values_of(call, tool))
        return error if clean == text else RecordedToolError(clean, kind)


def _server_attributes(
    scope: Mapping[str, Any], route: str | None
) -> tuple[str, dict[str, Any]]:
    """HS-181: the server span's name and its attributes at start, by the OpenTelemetry
    HTTP server conventions. No header value is recorded but ``Host`` (HS-184)."""
    original = str(scope.get("method", ""))
    method = original if original in HTTP_METHODS else "_OTHER"
    root = str(scope.get("root_path", "") or "")
    attributes: dict[str, Any] = {
        HTTP_METHOD: method,
        URL_PATH: root + str(scope.get("path", "")),
        URL_SCHEME: str(scope.get("scheme", "http")),
    }
    if method == "_OTHER":
        attributes[HTTP_METHOD_ORIGINAL] = original
    if route is not None:
        attributes[HTTP_ROUTE] = root + route
    if version := scope.get("http_version"):
        attributes[NETWORK_PROTOCOL_VERSION] = str(version)
    address, port = _server_address(scope)
    if address:
        attributes[SERVER_ADDRESS] = address
    if port is not None:
        attributes[SERVER_PORT] = port
    client = scope.get("client")
    if isinstance(client, list | tuple) and len(client) == 2 and client[0]:
        attributes[CLIENT_ADDRESS] = str(client[0])
        if isinstance(client[1], int):
            attributes[CLIENT_PORT] = client[1]
    shown = "HTTP" if method == "_OTHER" else method
    return (f"{shown} {root}{route}" if route is not None else shown), attributes


def _server_address(scope: Mapping[str, Any]) -> tuple[str | None, int | None]:
    """HS-181: the server's name and port as the client addressed it (the ``Host``
    header), else the socket the server listens on (the scope's ``server``)."""
    from urllib.parse import urlsplit

    for key, value in scope.get("headers", ()) or ():
        if bytes(key).lower() == b"host":
            host = bytes(value).decode("latin-1").strip()
            try:
                parts = urlsplit(f"//{host}")
                port = parts.port
            except ValueError:
                break
            if parts.hostname:
                return parts.hostname, port
            break
    server = scope.get("server")
    if isinstance(server, list | tuple) and len(server) == 2 and server[0]:
        port = server[1] if isinstance(server[1], int) else None
        return str(server[0]), port
    return None, None


def _connection_attributes(client: Any) -> dict[str, Any]:
    """OB-28: the provider's name (``provider_name``, else its codec's ``provider``) and
    the server's address and port (from ``base_url``; the scheme's port when the URL has
    none)."""
    out: dict[str, Any] = {}
    provider = getattr(client, "provider_name", None) or getattr(
        getattr(client, "codec", None), "provider", None
    )
    if provider:
        out[PROVIDER_NAME] = str(provider)
    base_url = getattr(client, "base_url", None)
    if isinstance(base_url, str) and "://" in base_url:
        from urllib.parse import urlsplit

        parts = urlsplit(base_url)
        if parts.hostname:
            out[SERVER_ADDRESS] = parts.hostname
            try:
                port = parts.port
            except ValueError:
                port = None
            out[SERVER_PORT] = port or (443 if parts.scheme == "https" else 80)
    return out


def _tool_definitions(tools: Any) -> str | None:
    """OB-28: the function tools offered, as the conventions' JSON list of ``{"type":
    "function", "name", "description", "parameters"}``; a provider's own declarations as
    they are."""
    if not tools:
        return None
    definitions: list[Any] = []
    for spec in tool_specs(tools if isinstance(tools, list | tuple) else [tools]):
        if spec.name is None or spec.wire is not None:
            definitions.append(dict(spec.wire or spec.declaration or {}))
            continue
        definition: dict[str, Any] = {"type": "function", "name": spec.name}
        if spec.description:
            definition["description"] = spec.description
        if spec.parameters is not None:
            definition["parameters"] = spec.parameters
        definitions.append(definition)
    return (
        json.dumps(definitions, ensure_ascii=False, default=str)
        if definitions
        else None
    )


def _messages_json(
    messages: Sequence[Message], tools: Any = None, redactions: Redactions = ()
) -> str:
    """The messages as recorded (OB-6): arguments of secret parameters in calls
    replaced, at any depth (OB-16); text and results through the chat middleware's
    redactions (OB-21)."""
    data = [m.to_dict() for m in messages]
    secrets = {getattr(t, "name", None): secret_names(t) for t in tools or ()}
    if any(secrets.values()):
        # call id -> its secret values, taken out of its result (OB-21)
        values: dict[Any, list[str]] = {}
        for message in data:
            for content in message.get("contents", ()):
                hidden = (
                    secrets.get(content.get("name"))
                    if content.get("type") == "function_call"
                    else None
                )
                if hidden:
                    values[content.get("call_id")] = secret_values(
                        _parsed(content.get("arguments")), hidden
                    )
                    content["arguments"] = _hide(content.get("arguments"), hidden)
                elif content.get("type") == "function_result" and values.get(
                    content.get("call_id")
                ):
                    for key in ("result", "exception"):
                        if isinstance(content.get(key), str):
                            content[key] = scrub(
                                content[key], values[content.get("call_id")]
                            )
    if redactions:
        for message in data:
            for content in message.get("contents", ()):
                for key in ("text", "result"):
                    if isinstance(content.get(key), str):
                        content[key] = _redacted(content[key], redactions)
    return json.dumps(data, ensure_ascii=False, default=str)


def _redacted(text: str, redactions: Redactions) -> str:
    for redact in redactions:
        text = redact(text)
    return text


def _parsed(arguments: Any) -> Any:
    if isinstance(arguments, str):
        try:
            return json.loads(arguments)
        except (ValueError, RecursionError):
            return None
    return arguments


def _hide(arguments: Any, secret: frozenset[str]) -> Any:
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except (ValueError, RecursionError):
            return SECRET_TEXT
    if not isinstance(arguments, Mapping):
        return SECRET_TEXT
    return hide(arguments, secret)


def _secret_values_of(call: Content, tool: Any) -> list[str]:
    """The call's values of the tool's secret parameters, at any depth (OB-21)."""
    names = secret_names(tool)
    if not names:
        return []
    try:
        arguments = call.parse_arguments() or {}
    except Exception:
        return []
    return secret_values(arguments, names)


def _usage_attributes(usage: UsageDetails | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if usage is not None:
        if usage.input_token_count is not None:
            out[INPUT_TOKENS] = usage.input_token_count
        if usage.output_token_count is not None:
            out[OUTPUT_TOKENS] = usage.output_token_count
    return out


def _arguments_text(call: Content, tool: Any) -> str:
    """The call's arguments as recorded (OB-6), values of secret parameters replaced at
    any depth (OB-16)."""
    secret = secret_names(tool)
    arguments = call.arguments
    if not secret:
        return (
            arguments
            if isinstance(arguments, str)
            else json.dumps(arguments, default=str)
        )
    try:
        parsed = call.parse_arguments() or {}
    except Exception:
        # unparsable arguments of a tool with secrets: nothing of them is shown
        return SECRET_TEXT
    return json.dumps(hide(parsed, secret), default=str)


def _result_error_type(exception: str) -> str:
    """OB-7: an error result the runner made without an exception: a low-cardinality
    kind."""
    if exception.startswith("unknown function"):
        return "unknown_tool"
    if exception == "invalid arguments":
        return "invalid_arguments"
    return "tool_error"
