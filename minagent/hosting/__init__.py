"""Serving agents over HTTP (spec/hosting.md): an ASGI 3 application, standard library
only. First slice: OpenAI-compatible Chat Completions and the models list."""

from __future__ import annotations

from .app import HostingApp, HostingError

__all__ = ["HostingApp", "HostingError"]
