"""The ASGI 3 application (spec/hosting.md HS-1 .. HS-8): ``http`` and ``lifespan``
scopes, ``POST /v1/chat/completions`` and ``GET /v1/models``, errors in OpenAI's error
shape."""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from minagent import Message, SupportsAgentRun

from .conversations import Conversations, SessionStoreLike

__all__ = ["HostingApp", "HostingError"]

Scope = Mapping[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

_log = logging.getLogger("minagent.hosting")

# HS-6: the default cap on a request body, in bytes.
DEFAULT_MAX_BODY = 1_000_000


class HostingError(Exception):
    """A request the application answers with an OpenAI-shaped error (HS-5)."""

    def __init__(self, status: int, message: str, type_: str, code: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.type = type_
        self.code = code

    def body(self) -> dict[str, Any]:
        """OpenAI's error shape: ``{"error": {message, type, param, code}}``."""
        return {
            "error": {
                "message": self.message,
                "type": self.type,
                "param": None,
                "code": self.code,
            }
        }


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
        self.created = int(time.time())

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
        elif scope["type"] == "http":
            await self._http(scope, receive, send)
        else:
            raise ValueError(f"unsupported ASGI scope type {scope['type']!r}")

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        # HS-1: startup and shutdown are acknowledged; the app holds no resources yet.
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
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
        if request.get("tools"):
            # HS-8: client-side tools are not in this slice; refused, never ignored.
            raise HostingError(
                400,
                "client-declared tools are not supported yet",
                "invalid_request_error",
                "unsupported_parameter",
            )
        completion_id = f"chatcmpl-{uuid.uuid4().hex}"
        created = int(time.time())
        if request.get("stream"):
            return await self._chat_stream(
                agent, name, messages, completion_id, created, send
            )
        response = await agent.run(messages)
        body = {
            "id": completion_id,
            "object": "chat.completion",
            "created": created,
            "model": name,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": response.text},
                    "finish_reason": "stop",
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
    ) -> int:
        # HS-4: the stream starts once the run's first update is in hand, so a failure
        # before it is still an ordinary error response.
        stream = agent.run(messages, stream=True)
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
        except Exception:
            # HS-5: headers are sent; the error goes in the stream, no traceback.
            _log.exception("hosting: streamed run failed")
            error = HostingError(
                500, "internal server error", "server_error", "internal_error"
            )
            await emit(b"data: " + json.dumps(error.body()).encode() + b"\n\n")
            await send({"type": "http.response.body", "body": b"data: [DONE]\n\n"})
            return 200
        await emit(chunk({}, "stop", None))
        await emit(chunk({}, None, _usage(usage)))
        await send({"type": "http.response.body", "body": b"data: [DONE]\n\n"})
        return 200


def _usage(details: Any) -> dict[str, int]:
    """OpenAI's usage object from a `UsageDetails` (absent counts are 0)."""
    prompt = int(getattr(details, "input_token_count", None) or 0) if details else 0
    completion = (
        int(getattr(details, "output_token_count", None) or 0) if details else 0
    )
    total = int(getattr(details, "total_token_count", None) or 0) if details else 0
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": total or prompt + completion,
    }


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
        if role not in ("system", "user", "assistant"):
            raise HostingError(
                400,
                f"messages[{index}].role must be system, developer, user or assistant",
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


async def _send_json(send: Send, status: int, body: Mapping[str, Any]) -> int:
    data = json.dumps(body).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(data)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": data})
    return status
