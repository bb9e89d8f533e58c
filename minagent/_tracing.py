"""Tracing: OpenTelemetry GenAI spans through a tiny tracer protocol (spec/observability.md).

Theory of operation
-------------------
The core knows no tracing library. It calls a `Tracer` — anything with ``start_span`` and
``activate`` — whose spans have ``set_attributes``, ``record_error`` and ``end`` (OB-1). The
tracer in use is the module variable ``TRACER``; ``set_tracer`` changes it. With none set (the
default) each of the three places below costs one check of that variable (OB-2):

    place                         span                       starts / ends
    ``RawAgent.run``              ``invoke_agent {name}``    when the run starts / when it returns, fails,
                                                             or its stream ends or is closed
    the loop's model call         ``chat {model}``           before the provider is called / when its
                                                             response arrives or its stream ends or closes
    the runner's tool call        ``execute_tool {name}``    before the call is checked / when its result
                                                             is made

Nesting (OB-3) uses a context variable, ``_CURRENT``: the agent's span is current while the run
works (around the whole coroutine, or around every pull of its stream, so nothing leaks into the
caller's context between pulls), and a tool's span is current while the tool runs, so a chat or
tool span's parent is the run's span and an agent run as a tool nests under ``execute_tool``.
The parent is handed to ``start_span`` explicitly; ``Tracer.activate(span)`` is entered only
around a tool's execution, so a tracing library's own notion of "current" (OpenTelemetry's context)
follows into the tool and the tool's own spans nest under ``execute_tool`` (OB-4).

Attributes use the OpenTelemetry GenAI semantic-convention names (OB-5). Message contents and tool
arguments and results are recorded only when ``set_tracer(..., record_content=True)`` (OB-6).
"""

from __future__ import annotations

import contextvars
import json
from collections.abc import AsyncGenerator, AsyncIterable, Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol, TypeVar, cast, runtime_checkable

from ._responses import ChatResponse, ChatResponseUpdate, Fold
from ._stream import ResponseStream
from ._types import Content, Message, UsageDetails, add_usage

__all__ = ["Span", "Tracer", "current_span", "get_tracer", "set_tracer"]

T = TypeVar("T")


@runtime_checkable
class Span(Protocol):
    """One span of a `Tracer` (OB-1)."""

    def set_attributes(self, attributes: Mapping[str, Any]) -> None: ...

    def record_error(self, error: BaseException) -> None: ...

    def end(self) -> None: ...


@runtime_checkable
class Tracer(Protocol):
    """What the core calls to trace a run (OB-1).

    ``start_span`` starts a span named ``name`` under ``parent`` (None: whatever the tracer itself
    considers current) with the given attributes. ``activate(span)`` is a context manager that makes
    the span current for the tracer's own library while a tool runs (OB-4)."""

    def start_span(self, name: str, attributes: Mapping[str, Any], parent: Span | None) -> Span: ...

    def activate(self, span: Span) -> AbstractContextManager[Any]: ...


TRACER: Tracer | None = None  # the one variable the flow checks (OB-2)
RECORD_CONTENT = False  # OB-6: message contents, tool arguments and results only when asked for
_CURRENT: contextvars.ContextVar[Span | None] = contextvars.ContextVar("minagent_span", default=None)
_RAISED: contextvars.ContextVar[list[BaseException] | None] = contextvars.ContextVar("minagent_raised", default=None)

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
ERROR_TYPE = "error.type"
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


def set_tracer(tracer: Tracer | None, *, record_content: bool = False) -> None:
    """Trace every run from now on with ``tracer`` (None: stop tracing) (OB-1, OB-6).

    ``record_content=True`` also records message contents and tool arguments and results."""
    global TRACER, RECORD_CONTENT
    if tracer is not None and not isinstance(tracer, Tracer):
        raise TypeError(
            f"set_tracer() takes a Tracer (start_span(name, attributes, parent) and activate(span)), "
            f"got {type(tracer).__name__}"
        )
    if not isinstance(record_content, bool):
        raise TypeError(f"record_content must be a bool, got {type(record_content).__name__}")
    TRACER, RECORD_CONTENT = tracer, record_content


def get_tracer() -> Tracer | None:
    """The tracer in use, or None."""
    return TRACER


def current_span() -> Span | None:
    """The span of the agent run or tool call this code runs in, or None (OB-3)."""
    return _CURRENT.get()


def event(name: str, attributes: Mapping[str, Any]) -> None:
    """OB-11: a loop event on the current span, for spans that have ``add_event`` (OpenTelemetry's do)."""
    span = _CURRENT.get()
    add_event = getattr(span, "add_event", None)
    if add_event is not None:
        add_event(name, attributes)


def model_call(number: int, tool_choice: Any, last: bool) -> None:
    """OB-11: the loop is about to call the model (through chat middleware)."""
    choice = tool_choice.get("mode") if isinstance(tool_choice, Mapping) else tool_choice
    event("minagent.model_call", {"number": number, "tool_choice": str(choice or "auto"), "last": last})


def error_type(error: BaseException) -> str:
    """OB-7: ``error.type`` is the exception's class, qualified by its module unless built in."""
    cls = type(error)
    return cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"


def _start(name: str, attributes: dict[str, Any]) -> Span:
    tracer = TRACER
    assert tracer is not None  # callers check first
    return tracer.start_span(name, attributes, _CURRENT.get())


def _fail(span: Span, error: BaseException) -> None:
    """Record ``error`` on ``span``; closing a stream early (GeneratorExit) is not an error."""
    if not isinstance(error, GeneratorExit):
        span.set_attributes({ERROR_TYPE: error_type(error)})
        span.record_error(error)


def _messages_json(messages: Sequence[Message], tools: Any = None) -> str:
    """The messages as recorded (OB-6); arguments of secret parameters in calls replaced (OB-16)."""
    data = [m.to_dict() for m in messages]
    secrets = {getattr(t, "name", None): secret_parameters(t) for t in tools or ()}
    if any(secrets.values()):
        for message in data:
            for content in message.get("contents", ()):
                hidden = secrets.get(content.get("name")) if content.get("type") == "function_call" else None
                if hidden:
                    content["arguments"] = _hide(content.get("arguments"), hidden)
    return json.dumps(data, ensure_ascii=False, default=str)


def _hide(arguments: Any, secret: frozenset[str]) -> Any:
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return SECRET_TEXT
    if not isinstance(arguments, Mapping):
        return SECRET_TEXT
    return {k: SECRET_TEXT if k in secret else v for k, v in arguments.items()}


def _usage_attributes(usage: UsageDetails | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if usage is not None:
        if usage.input_token_count is not None:
            out[INPUT_TOKENS] = usage.input_token_count
        if usage.output_token_count is not None:
            out[OUTPUT_TOKENS] = usage.output_token_count
    return out


def _response_attributes(response: Any, tools: Any = None) -> dict[str, Any]:
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
    if RECORD_CONTENT:
        out[OUTPUT_MESSAGES] = _messages_json(getattr(response, "messages", []), tools)
    return out


# -- invoke_agent ---------------------------------------------------------------------------------


def trace_agent(agent: Any, messages: Sequence[Message], stream: bool, result: T) -> T:
    """The run ``result`` (a coroutine, or a ResponseStream when streaming) inside an
    ``invoke_agent`` span that starts when the run starts (OB-8)."""
    name = getattr(agent, "name", None)
    attributes: dict[str, Any] = {OPERATION: "invoke_agent", AGENT_ID: str(agent.id)}
    if name:
        attributes[AGENT_NAME] = str(name)
    if description := getattr(agent, "description", None):
        attributes[AGENT_DESCRIPTION] = str(description)
    model = getattr(agent, "default_options", {}).get("model")
    if model:
        attributes[REQUEST_MODEL] = str(model)
    tools = getattr(agent, "default_options", {}).get("tools")
    if RECORD_CONTENT:
        attributes[INPUT_MESSAGES] = _messages_json(messages, tools)
    span_name = f"invoke_agent {name}" if name else "invoke_agent"
    if stream:
        run = cast(ResponseStream[Any, Any], result)
        pulls = _agent_pulls(span_name, attributes, run, tools)
        return cast(T, ResponseStream._of_run(pulls, run.get_final_response))
    return cast(T, _agent_run(span_name, attributes, cast(Awaitable[Any], result), tools))


async def _agent_run(name: str, attributes: dict[str, Any], run: Awaitable[Any], tools: Any) -> Any:
    span = _start(name, attributes)
    token = _CURRENT.set(span)
    try:
        response = await run
        span.set_attributes(_response_attributes(response, tools))
        return response
    except BaseException as exc:
        _fail(span, exc)
        raise
    finally:
        _CURRENT.reset(token)
        span.end()


async def _agent_pulls(
    name: str, attributes: dict[str, Any], stream: ResponseStream[Any, Any], tools: Any
) -> AsyncGenerator[Any]:
    """The run's stream, each pull (and the final response) with the run's span current."""
    span = _start(name, attributes)
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
            span.set_attributes(_response_attributes(await stream.get_final_response(), tools))
        finally:
            _CURRENT.reset(token)
    except BaseException as exc:
        _fail(span, exc)
        raise
    finally:
        try:
            await iterator.aclose()
        finally:
            span.end()


# -- chat ----------------------------------------------------------------------------------------


def _chat_attributes(
    client: Any, options: Mapping[str, Any], messages: Sequence[Message]
) -> tuple[str, dict[str, Any]]:
    model = options.get("model") or getattr(client, "model", None) or getattr(client, "model_id", None)
    attributes: dict[str, Any] = {OPERATION: "chat"}
    if model:
        attributes[REQUEST_MODEL] = str(model)
    if provider := getattr(client, "provider_name", None):
        attributes["gen_ai.provider.name"] = str(provider)
    for key, attribute in REQUEST_PARAMETERS.items():
        value = options.get(key)
        if value is not None:
            attributes[attribute] = [value] if key == "stop" and isinstance(value, str) else value
    if conversation := options.get("conversation_id"):
        attributes[CONVERSATION_ID] = str(conversation)
    if RECORD_CONTENT:
        attributes[INPUT_MESSAGES] = _messages_json(messages, options.get("tools"))
    return (f"chat {model}" if model else "chat"), attributes


async def trace_chat(
    client: Any, messages: list[Message], options: dict[str, Any], kwargs: dict[str, Any], stream: bool
) -> Any:
    """One provider call inside a ``chat {model}`` span (OB-9); streaming: a folding stream whose
    span ends when the provider's stream ends or is closed."""
    name, attributes = _chat_attributes(client, options, messages)
    span = _start(name, attributes)
    if stream:
        try:
            updates = client._inner_get_streaming_response(messages=messages, options=options, **kwargs)
        except BaseException as exc:
            _fail(span, exc)
            span.end()
            raise
        return ResponseStream._folding(_chat_updates(span, updates, options.get("tools")), Fold(ChatResponse()))
    try:
        response = await client._inner_get_response(messages=messages, options=options, **kwargs)
        span.set_attributes(_response_attributes(response, options.get("tools")))
        return response
    except BaseException as exc:
        _fail(span, exc)
        raise
    finally:
        span.end()


async def _chat_updates(
    span: Span, updates: AsyncIterable[ChatResponseUpdate], tools: Any
) -> AsyncGenerator[ChatResponseUpdate]:
    """The provider's updates, passed on; what the span records is gathered on the way (OB-9)."""
    fold = Fold(ChatResponse()) if RECORD_CONTENT else None
    seen = ChatResponse()
    usage: UsageDetails | None = None
    iterator = aiter(updates)
    try:
        async for update in iterator:
            for scalar in ("response_id", "model", "finish_reason", "conversation_id"):
                if (value := getattr(update, scalar, None)) is not None:
                    setattr(seen, scalar, value)
            for content in update.contents:
                if content.type == "usage":
                    usage = add_usage(usage, content.usage_details)
            if fold is not None:
                fold.add(update)
            yield update
        seen.usage_details = usage
        if fold is not None:
            seen.messages = fold.result().messages
        span.set_attributes(_response_attributes(seen, tools))
    except BaseException as exc:
        _fail(span, exc)
        raise
    finally:
        try:
            closer = getattr(iterator, "aclose", None)
            if closer is not None:
                await closer()
        finally:
            span.end()


# -- execute_tool --------------------------------------------------------------------------------


async def trace_tool(
    invoke: Callable[[Content, Any], Awaitable[tuple[T, bool]]], call: Content, view: Any, tool: Any
) -> tuple[T, bool]:
    """One tool call inside an ``execute_tool {name}`` span, current (and activated) while the
    call runs (OB-10)."""
    tracer = TRACER
    assert tracer is not None
    name = call.name or ""
    attributes: dict[str, Any] = {
        OPERATION: "execute_tool",
        TOOL_NAME: name,
        TOOL_CALL_ID: call.call_id or "",
        TOOL_TYPE: "function",
    }
    if description := getattr(tool, "description", None):
        attributes[TOOL_DESCRIPTION] = str(description)
    if RECORD_CONTENT and call.arguments is not None:
        attributes[TOOL_ARGUMENTS] = _arguments_text(call, tool)
    span = tracer.start_span(f"execute_tool {name}", attributes, _CURRENT.get())
    token, raised = _CURRENT.set(span), _RAISED.set([])
    try:
        with tracer.activate(span):
            outcome = await invoke(call, view)
        result, errors = outcome[0], _RAISED.get()
        if errors:  # the tool raised: its call got an error result (LP-6)
            _fail(span, errors[-1])
        elif isinstance(result, Content) and result.exception is not None:
            span.set_attributes({ERROR_TYPE: _result_error_type(result.exception)})
        if isinstance(result, Content) and RECORD_CONTENT:
            value = result.result
            span.set_attributes({TOOL_RESULT: value if isinstance(value, str) else json.dumps(value, default=str)})
        return outcome
    except BaseException as exc:
        _fail(span, exc)
        raise
    finally:
        _RAISED.reset(raised)
        _CURRENT.reset(token)
        span.end()


SECRET_TEXT = "[secret]"


def secret_parameters(tool: Any) -> frozenset[str]:
    """OB-16: the parameters the tool's schema marks secret (``"writeOnly": true`` or
    ``"format": "password"``, as pydantic's ``SecretStr`` writes them)."""
    parameters = getattr(tool, "parameters", None)
    properties = parameters.get("properties") if isinstance(parameters, Mapping) else None
    if not isinstance(properties, Mapping):
        return frozenset()
    return frozenset(
        name
        for name, schema in properties.items()
        if isinstance(schema, Mapping) and (schema.get("writeOnly") is True or schema.get("format") == "password")
    )


def _arguments_text(call: Content, tool: Any) -> str:
    """The call's arguments as recorded (OB-6), values of secret parameters replaced (OB-16)."""
    secret = secret_parameters(tool)
    arguments = call.arguments
    if not secret:
        return arguments if isinstance(arguments, str) else json.dumps(arguments, default=str)
    try:
        parsed = call.parse_arguments() or {}
    except Exception:
        return SECRET_TEXT  # unparsable arguments of a tool with secrets: nothing of them is shown
    return json.dumps({k: SECRET_TEXT if k in secret else v for k, v in parsed.items()}, default=str)


def tool_raised(error: BaseException) -> None:
    """The tool itself raised (its call gets an error result, LP-6): noted for the tool's span."""
    errors = _RAISED.get()
    if errors is not None:
        errors.append(error)


def _result_error_type(exception: str) -> str:
    """OB-7: an error result the runner made without an exception: a low-cardinality kind."""
    if exception.startswith("unknown function"):
        return "unknown_tool"
    if exception == "invalid arguments":
        return "invalid_arguments"
    return "tool_error"
