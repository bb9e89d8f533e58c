"""The ASGI 3 application (spec/hosting.md HS-1 .. HS-8): ``http`` and ``lifespan``
scopes, ``POST /v1/chat/completions`` and ``GET /v1/models``, errors in OpenAI's error
shape."""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from minagent import Message, SupportsAgentRun
from minagent._observe import current as observer

from .a2a import A2AHost, is_a2a_path
from .conversations import Conversations, SessionStoreLike
from .mcp import MCPMount
from .openai_wire import HostingError
from .openai_wire import send_json as _send_json
from .openai_wire import usage as _usage
from .routes import route_of

if TYPE_CHECKING:
    from .devui import DevUI

__all__ = ["HostingApp", "HostingError"]

Scope = Mapping[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

_log = logging.getLogger("minagent.hosting")

# HS-6: the default cap on a request body, in bytes.
DEFAULT_MAX_BODY = 1_000_000


def _agent_name(agent: SupportsAgentRun) -> str:
    name = getattr(agent, "name", None)
    if not isinstance(name, str) or not name:
        raise ValueError("every hosted agent needs a non-empty name")
    return name


class HostingApp:
    """An ASGI 3 application serving ``agents`` by name (HS-1, HS-2)."""

    def __init__(
        self,
        agents: Sequence[SupportsAgentRun],
        *,
        max_body: int = DEFAULT_MAX_BODY,
        store: SessionStoreLike | None = None,
        ui: bool = False,
    ) -> None:
        if not agents:
            raise ValueError("HostingApp needs at least one agent")
        self.agents: dict[str, SupportsAgentRun] = {}
        for agent in agents:
            name = _agent_name(agent)
            if name in self.agents:
                raise ValueError(f"two hosted agents are named {name!r}")
            self.agents[name] = agent
        self.max_body = max_body
        # HS-140: every protocol's conversations, in one session store
        self.conversations = Conversations(store)
        # HS-170: each agent as an MCP server at /mcp/{name}
        self.mcp = MCPMount(self.agents, max_body)
        # HS-50: the A2A face (cards, JSON-RPC endpoints, tasks)
        self.a2a = A2AHost(self.agents, self.conversations, max_body=max_body)
        self.created = int(time.time())
        # HS-210: the dev UI at / and /ui/..., only when asked for
        self.ui: DevUI | None = None
        if ui:
            from .devui import DevUI

            self.ui = DevUI(self.agents, self.conversations)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
        elif scope["type"] == "http":
            # HS-180: the request inside what the observer puts around it (a server
            # span when tracing is on; nothing otherwise)
            route = route_of(scope["path"])
            await observer().request(scope, route, self._http)(scope, receive, send)
        else:
            raise ValueError(f"unsupported ASGI scope type {scope['type']!r}")

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        # HS-1: startup and shutdown are acknowledged; the app holds no resources yet.
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.mcp.close()
                await self.a2a.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        method, path = scope["method"], scope["path"]
        status = 500
        try:
            if path == "/v1/models" and method == "GET":
                status = await _send_json(send, 200, self._models())
            elif path == "/v1/chat/completions" and method == "POST":
                request = await self._read_json(receive)
                status = await self._chat(request, send)
            elif path.startswith("/mcp/"):
                status = await self.mcp(path[5:], scope, receive, send)
            elif path == "/v1/responses" or path.startswith("/v1/responses/"):
                from .responses import handle  # HS-20: loaded on first use

                status = await handle(self, scope, receive, send)
            elif is_a2a_path(path):
                status = await self.a2a.handle(scope, receive, send)
            elif path == "/agui" or path.startswith("/agui/"):
                # HS-80: AG-UI runs (minagent/hosting/agui.py); refusals as RUN_ERROR
                from . import agui

                try:
                    body = await self._read_json(receive) if method == "POST" else None
                except HostingError as error:
                    status = await agui.refuse(
                        send, error.status, error.message, error.code
                    )
                else:
                    status = await agui.handle(self, scope, body, send)
            elif self.ui is not None and (path == "/" or path.startswith("/ui/")):
                status = await self.ui.handle(scope, send)
            else:
                raise HostingError(
                    404,
                    f"no route {method} {path}",
                    "invalid_request_error",
                    "not_found",
                )
        except HostingError as error:
            status = await _send_json(send, error.status, error.body())
        except Exception:
            # HS-5: the traceback goes to the log, never into the body.
            _log.exception("hosting: request failed")
            status = await _send_json(
                send,
                500,
                HostingError(
                    500, "internal server error", "server_error", "internal_error"
                ).body(),
            )
        _log.info("%s %s %d", method, path, status)

    def _models(self) -> dict[str, Any]:
        return {
            "object": "list",
            "data": [
                {
                    "id": name,
                    "object": "model",
                    "created": self.created,
                    "owned_by": "minagent",
                }
                for name in self.agents
            ],
        }

    async def _read_json(self, receive: Receive) -> dict[str, Any]:
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise HostingError(
                    400, "client disconnected", "invalid_request_error", "disconnected"
                )
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body:
                raise HostingError(
                    413,
                    f"request body over {self.max_body} bytes",
                    "invalid_request_error",
                    "request_too_large",
                )
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        try:
            data = json.loads(b"".join(chunks))
        except (ValueError, RecursionError):
            raise HostingError(
                400,
                "request body is not valid JSON",
                "invalid_request_error",
                "invalid_json",
            ) from None
        if not isinstance(data, dict):
            raise HostingError(
                400,
                "request body must be a JSON object",
                "invalid_request_error",
                "invalid_json",
            )
        return data

    def _agent(self, request: Mapping[str, Any]) -> tuple[str, SupportsAgentRun]:
        model = request.get("model")
        if not isinstance(model, str):
            raise HostingError(
                400,
                "'model' must name an agent",
                "invalid_request_error",
                "invalid_model",
            )
        agent = self.agents.get(model)
        if agent is None:
            raise HostingError(
                404,
                f"the model {model!r} does not exist",
                "invalid_request_error",
                "model_not_found",
            )
        return model, agent

    async def _chat(self, request: Mapping[str, Any], send: Send) -> int:
        name, agent = self._agent(request)
        messages = _messages(request.get("messages"))
        # HS-32: the client's tools, declaration-only for this run
        from .client_tools import chat_tools, handed_back, tool_calls

        tools = chat_tools(agent, request.get("tools"))
        completion_id = f"chatcmpl-{uuid.uuid4().hex}"
        created = int(time.time())
        if request.get("stream"):
            return await self._chat_stream(
                agent, name, messages, completion_id, created, send, tools
            )
        response = await agent.run(messages, tools=tools or None)
        calls = tool_calls(handed_back(response, tools))
        message: dict[str, Any] = {"role": "assistant", "content": response.text}
        if calls:
            message.update(content=response.text or None, tool_calls=calls)
        body = {
            "id": completion_id,
            "object": "chat.completion",
            "created": created,
            "model": name,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if calls else "stop",
                    "logprobs": None,
                }
            ],
            "usage": _usage(getattr(response, "usage_details", None)),
        }
        return await _send_json(send, 200, body)

    async def _chat_stream(
        self,
        agent: SupportsAgentRun,
        name: str,
        messages: list[Message],
        completion_id: str,
        created: int,
        send: Send,
        tools: Sequence[Any] = (),
    ) -> int:
        # HS-4: the stream starts once the run's first update is in hand, so a failure
        # before it is still an ordinary error response.
        from .client_tools import handed_back, tool_calls

        stream = agent.run(messages, stream=True, tools=list(tools) or None)
        iterator = stream.__aiter__()

        def chunk(delta: dict[str, Any], finish: str | None, usage: Any) -> bytes:
            body: dict[str, Any] = {
                "id": completion_id,
                "object": "chat.completion.chunk",
                "created": created,
                "model": name,
                "choices": []
                if usage is not None
                else [{"index": 0, "delta": delta, "finish_reason": finish}],
            }
            if usage is not None:
                body["usage"] = usage
            return b"data: " + json.dumps(body).encode() + b"\n\n"

        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    (b"content-type", b"text/event-stream"),
                    (b"cache-control", b"no-cache"),
                ],
            }
        )

        async def emit(data: bytes) -> None:
            await send({"type": "http.response.body", "body": data, "more_body": True})

        await emit(chunk({"role": "assistant", "content": ""}, None, None))
        usage: Any = None
        try:
            async for update in iterator:
                text = update.text
                if text:
                    await emit(chunk({"content": text}, None, None))
                for content in getattr(update, "contents", []):
                    if getattr(content, "type", None) == "usage":
                        details = getattr(content, "usage_details", None)
                        usage = details if usage is None else usage + details
            final = await stream.get_final_response()
            usage = getattr(final, "usage_details", None) or usage
            # HS-32: the calls handed back, once the run has ended
            calls = tool_calls(handed_back(final, tools))
        except Exception as exc:
            # HS-5: headers are sent; the error goes in the stream, no traceback.
            error = exc if isinstance(exc, HostingError) else None
            if error is None:
                _log.exception("hosting: streamed run failed")
                error = HostingError(
                    500, "internal server error", "server_error", "internal_error"
                )
            await emit(b"data: " + json.dumps(error.body()).encode() + b"\n\n")
            await send({"type": "http.response.body", "body": b"data: [DONE]\n\n"})
            return 200
        for index, entry in enumerate(calls):
            await emit(chunk({"tool_calls": [{"index": index, **entry}]}, None, None))
        await emit(chunk({}, "tool_calls" if calls else "stop", None))
        await emit(chunk({}, None, _usage(usage)))
        await send({"type": "http.response.body", "body": b"data: [DONE]\n\n"})
        return 200


def _messages(raw: Any) -> list[Message]:
    """HS-3: Chat Completions messages as minagent messages (text content only)."""
    if not isinstance(raw, list) or not raw:
        raise HostingError(
            400,
            "'messages' must be a non-empty array",
            "invalid_request_error",
            "invalid_messages",
        )
    out: list[Message] = []
    for index, item in enumerate(raw):
        role = item.get("role") if isinstance(item, dict) else None
        content = item.get("content") if isinstance(item, dict) else None
        if role == "developer":
            role = "system"
        if role == "tool" or (role == "assistant" and item.get("tool_calls")):
            from .client_tools import chat_message  # HS-32

            out.append(chat_message(item, index))
            continue
        if role not in ("system", "user", "assistant"):
            raise HostingError(
                400,
                f"messages[{index}].role must be system, developer, user, assistant or tool",
                "invalid_request_error",
                "invalid_messages",
            )
        if isinstance(content, list):
            parts = [
                p.get("text")
                for p in content
                if isinstance(p, dict) and p.get("type") == "text"
            ]
            if len(parts) != len(content) or not all(isinstance(p, str) for p in parts):
                raise HostingError(
                    400,
                    f"messages[{index}].content: only text parts are supported",
                    "invalid_request_error",
                    "invalid_messages",
                )
            content = "".join(str(p) for p in parts)
        if not isinstance(content, str):
            raise HostingError(
                400,
                f"messages[{index}].content must be a string",
                "invalid_request_error",
                "invalid_messages",
            )
        out.append(Message(role, text=content))
    return out
