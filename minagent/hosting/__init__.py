"""Serving agents over HTTP (spec/hosting.md): one ASGI 3 application, standard library
only, for OpenAI Chat Completions and Responses, A2A, AG-UI and MCP; a dev server
(`server`), a guard that makes it safe by default (`guard`), and `python -m minagent
serve`."""

from __future__ import annotations

from .app import HostingApp, HostingError

__all__ = ["HostingApp", "HostingError"]
