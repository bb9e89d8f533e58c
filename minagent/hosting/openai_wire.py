"""What the OpenAI-compatible protocols share on the wire (spec/hosting.md HS-3, HS-5,
HS-23): OpenAI's error shape, a JSON answer, and OpenAI's usage counts.

It sits below the application and the protocol modules, which all import it, so that
no protocol module imports the application (PK-8: no import cycle).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

__all__ = ["HostingError", "bad_request", "send_json", "usage"]

Send = Callable[[dict[str, Any]], Awaitable[None]]


class HostingError(Exception):
    """A request the application answers with an OpenAI-shaped error (HS-5)."""

    def __init__(
        self,
        status: int,
        message: str,
        type_: str,
        code: str,
        param: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.type = type_
        self.code = code
        self.param = param

    def body(self) -> dict[str, Any]:
        """OpenAI's error shape: ``{"error": {message, type, param, code}}``."""
        return {
            "error": {
                "message": self.message,
                "type": self.type,
                "param": self.param,
                "code": self.code,
            }
        }


# the request field a 400 is about, by its code, when the code says (HS-21, HS-29, HS-32)
_PARAM_OF_CODE = {
    "invalid_input": "input",
    "unsupported_content": "input",
    "unsupported_input_item": "input",
    "invalid_tools": "tools",
    "unsupported_tool": "tools",
    "invalid_messages": "messages",
}


def bad_request(message: str, code: str, param: str | None = None) -> HostingError:
    """A 400 ``invalid_request_error``; ``param`` names the request field at fault
    (by default the one the code is about)."""
    return HostingError(
        400,
        message,
        "invalid_request_error",
        code,
        param or _PARAM_OF_CODE.get(code),
    )


def usage(details: Any) -> dict[str, int]:
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


async def send_json(send: Send, status: int, body: Mapping[str, Any]) -> int:
    """One JSON answer; the status, for the access log."""
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
