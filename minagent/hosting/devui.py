"""The dev UI (spec/hosting.md HS-210 .. HS-239): one page of static files served from
``minagent/hosting/ui/`` and the read-only JSON endpoints it needs.

Theory of operation
-------------------
`HostingApp(..., ui=True)` hands ``GET /`` and every ``/ui/...`` path to `DevUI`. The
page's files are a fixed set, read from the package folder once and kept in memory; a
name that is not one of them is a 404 (no path is ever joined from the request). Every
answer carries the page's content security policy, which allows the server's own origin
and nothing else. The JSON endpoints read the hosted agents and the conversations'
session store; they never save a session.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

from minagent import Message, SupportsAgentRun, categorize_middleware

from .agui_input import BOOK_KEY
from .conversations import Conversations
from .openai_wire import HostingError

__all__ = ["CONTENT_SECURITY_POLICY", "FILES", "PUBLIC_PATHS", "DevUI", "history"]

Send = Callable[[dict[str, Any]], Awaitable[None]]

UI_FOLDER = Path(__file__).with_name("ui")

# HS-211: the page's files and their content types; nothing else is served
FILES: dict[str, bytes] = {
    "index.html": b"text/html; charset=utf-8",
    "app.css": b"text/css; charset=utf-8",
    "app.js": b"text/javascript; charset=utf-8",
    "state.js": b"text/javascript; charset=utf-8",
    "clienttools.js": b"text/javascript; charset=utf-8",
    "flow.js": b"text/javascript; charset=utf-8",
    "auth.js": b"text/javascript; charset=utf-8",
    "sessions.js": b"text/javascript; charset=utf-8",
    "mermaid.js": b"text/javascript; charset=utf-8",
}

# HS-230: the paths of the page's files, served without the token (they hold no secret)
PUBLIC_PATHS: frozenset[str] = frozenset({"/", *(f"/ui/{name}" for name in FILES)})

# HS-212: the server's own origin only; no inline script, no frame, no form target
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'"
)

# HS-228: how many of an agent's threads the sessions list shows
THREADS_LISTED = 50

_SECURITY_HEADERS: list[tuple[bytes, bytes]] = [
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-cache"),
]


def _not_found(what: str) -> HostingError:
    return HostingError(404, what, "invalid_request_error", "not_found")


class DevUI:
    """The page and its endpoints, for one application's agents and conversations."""

    def __init__(
        self, agents: Mapping[str, SupportsAgentRun], conversations: Conversations
    ) -> None:
        self.agents = agents
        self.conversations = conversations
        self._files: dict[str, bytes] = {}

    def _file(self, name: str) -> bytes:
        if name not in self._files:
            self._files[name] = (UI_FOLDER / name).read_bytes()
        return self._files[name]

    async def handle(self, scope: Mapping[str, Any], send: Send) -> int:
        """Answer ``GET /`` or a ``/ui/...`` request; returns the HTTP status."""
        method, path = scope["method"], scope["path"]
        if method != "GET":
            raise HostingError(
                405,
                f"the dev UI answers GET only, not {method}",
                "invalid_request_error",
                "method_not_allowed",
            )
        if path == "/":
            return await self._send(
                send, 200, FILES["index.html"], self._file("index.html")
            )
        rest = path[len("/ui/") :]
        if rest in FILES:
            return await self._send(send, 200, FILES[rest], self._file(rest))
        if rest == "api/agents":
            return await self._json(send, {"agents": self._agents()})
        if rest.startswith("api/threads/"):
            agent, slash, thread = rest[len("api/threads/") :].partition("/")
            if agent and not slash:
                return await self._json(send, await self._threads(agent))
            if not slash or not agent or not thread or "/" in thread:
                raise _not_found(f"no route GET {path}")
            # the server has percent-decoded the path: a name holding "/" cannot be
            # named here
            return await self._json(send, await self._thread(agent, thread))
        raise _not_found(f"the dev UI has no file {rest!r}")

    async def _send(self, send: Send, status: int, kind: bytes, body: bytes) -> int:
        headers = [
            (b"content-type", kind),
            (b"content-length", str(len(body)).encode()),
            *_SECURITY_HEADERS,
        ]
        await send(
            {"type": "http.response.start", "status": status, "headers": headers}
        )
        await send({"type": "http.response.body", "body": body})
        return status

    async def _json(self, send: Send, body: Mapping[str, Any]) -> int:
        data = json.dumps(body).encode()
        return await self._send(send, 200, b"application/json", data)

    def _agents(self) -> list[dict[str, Any]]:
        """HS-213: each hosted agent with its description and tools."""
        out = []
        for name, agent in self.agents.items():
            tools = []
            options = getattr(agent, "default_options", None) or {}
            for tool in options.get("tools") or []:
                parameters = getattr(tool, "parameters", None)
                tools.append(
                    {
                        "name": str(getattr(tool, "name", "")),
                        "description": str(getattr(tool, "description", "") or ""),
                        "parameters": parameters() if callable(parameters) else {},
                        "approvalRequired": getattr(tool, "approval_mode", None)
                        == "always_require",
                    }
                )
            description = getattr(agent, "description", None)
            out.append(
                {
                    "name": name,
                    "description": description if isinstance(description, str) else "",
                    "tools": tools,
                    "middleware": _middleware(agent),
                }
            )
        return out

    async def _threads(self, agent: str) -> dict[str, Any]:
        """HS-228: the agent's stored threads, the last saved first, titled by their
        first prompt; ``listed`` is false when the store cannot list."""
        if agent not in self.agents:
            raise _not_found(f"no agent named {agent!r}")
        # HS-141 keys are "{agent}/{thread}": a hosted agent whose name extends this
        # one's with "/" owns the keys under its own name, never this agent
        longer = [
            f"{name}/"
            for name in self.agents
            if name != agent and name.startswith(f"{agent}/")
        ]
        limit = THREADS_LISTED if not longer else 20 * THREADS_LISTED
        ids = await self.conversations.list_ids(agent, limit)
        if ids is None:
            return {"agent": agent, "listed": False, "threads": []}
        threads = []
        for thread in ids:
            if not thread or any(f"{agent}/{thread}".startswith(o) for o in longer):
                continue
            session = await self.conversations.get(agent, thread)
            state = session.state if session is not None else {}
            threads.append({"threadId": thread, "title": _title(state)})
            if len(threads) == THREADS_LISTED:
                break
        return {"agent": agent, "listed": True, "threads": threads}

    async def _thread(self, agent: str, thread: str) -> dict[str, Any]:
        """HS-214: a thread's history and open approvals, read from the store."""
        if agent not in self.agents:
            raise _not_found(f"no agent named {agent!r}")
        session = await self.conversations.get(agent, thread)
        state: Mapping[str, Any] = session.state if session is not None else {}
        book = state.get(BOOK_KEY) or {}
        interrupts = [
            {
                "id": interrupt_id,
                "toolCallId": call.get("callId"),
                "name": call.get("name"),
                "arguments": call.get("arguments"),
            }
            for interrupt_id, call in (book.get("interrupts") or {}).items()
        ]
        return {
            "agent": agent,
            "threadId": thread,
            "messages": history(state),
            "interrupts": interrupts,
        }


def _middleware(agent: SupportsAgentRun) -> dict[str, list[str]]:
    """HS-213: the names of the agent's middleware and then its client's, by layer."""
    client = getattr(agent, "client", None)
    found = categorize_middleware(
        getattr(agent, "middleware", None), getattr(client, "middleware", None)
    )
    return {
        "agent": [_name_of(m) for m in found.agent],
        "chat": [_name_of(m) for m in found.chat],
        "function": [_name_of(m) for m in found.function],
    }


def _name_of(middleware: Any) -> str:
    # a class instance is kept as its bound ``process`` method: named by its class
    owner = (
        getattr(middleware, "__self__", None) if inspect.ismethod(middleware) else None
    )
    if owner is not None and getattr(middleware, "__name__", "") == "process":
        return type(owner).__name__
    name = str(getattr(middleware, "__qualname__", None) or type(middleware).__name__)
    return name.rpartition("<locals>.")[2]


def _title(state: Mapping[str, Any]) -> str:
    """HS-228: the first stored user message's text, cut to 80 characters."""
    for message in _stored_messages(state):
        if message.role == "user":
            text = "".join(c.text or "" for c in message.contents if c.type == "text")
            return " ".join(text.split())[:80]
    return ""


def _stored_messages(state: Mapping[str, Any]) -> list[Message]:
    # the history providers that keep messages in the session's own state
    # (InMemoryHistoryProvider, SE-7) keep them as a "messages" list of their entry
    out: list[Message] = []
    for entry in state.values():
        if isinstance(entry, Mapping):
            messages = entry.get("messages")
            if isinstance(messages, list):
                out.extend(m for m in messages if isinstance(m, Message))
    return out


def _json_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value)
    except (TypeError, ValueError):
        return str(value)


def history(state: Mapping[str, Any]) -> list[dict[str, Any]]:
    """HS-214: the session's stored messages as AG-UI messages: user and system text,
    assistant text with its ``toolCalls``, one ``tool`` message per result."""
    out: list[dict[str, Any]] = []
    for index, message in enumerate(_stored_messages(state)):
        base = message.message_id or f"stored-{index}"
        text = "".join(c.text or "" for c in message.contents if c.type == "text")
        if message.role == "tool":
            for part, content in enumerate(message.contents):
                if content.type == "function_result":
                    entry: dict[str, Any] = {
                        "id": f"{base}-{part}",
                        "role": "tool",
                        "toolCallId": content.call_id,
                        "content": _json_text(content.result),
                    }
                    if content.exception is not None:
                        entry["error"] = str(content.exception)
                    out.append(entry)
            continue
        calls = [
            {
                "id": c.call_id,
                "type": "function",
                "function": {"name": c.name, "arguments": _json_text(c.arguments)},
            }
            for c in message.contents
            if c.type == "function_call"
        ]
        role = message.role if message.role in ("user", "system") else "assistant"
        item: dict[str, Any] = {"id": base, "role": role, "content": text}
        if calls:
            item["toolCalls"] = calls
        if text or calls:
            out.append(item)
    return out
