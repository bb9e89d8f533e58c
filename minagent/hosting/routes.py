"""The route templates of the application's paths (spec/hosting.md HS-181): what an
observer names a request by, ``/v1/responses/{response_id}`` rather than the path with
its id, so that span names stay few however many requests come."""

from __future__ import annotations

__all__ = ["route_of"]

# paths that are their own template
_FIXED = frozenset(
    {
        "/v1/models",
        "/v1/chat/completions",
        "/v1/responses",
        "/agui",
        "/.well-known/agent-card.json",
        "/.well-known/agent.json",
    }
)
# prefix -> the template of one name segment after it, and what may follow that segment
_NAMED = (
    ("/v1/responses/", "/v1/responses/{response_id}", frozenset({""})),
    ("/mcp/", "/mcp/{agent}", frozenset({""})),
    ("/agui/", "/agui/{agent}", frozenset({"", "/"})),
    (
        "/a2a/",
        "/a2a/{agent}",
        frozenset({"", "/", "/.well-known/agent-card.json", "/.well-known/agent.json"}),
    ),
)


def route_of(path: str) -> str | None:
    """HS-181: the template of the route ``path`` is answered by, or None for a path
    no route takes."""
    if path in _FIXED:
        return path
    for prefix, template, tails in _NAMED:
        if path.startswith(prefix):
            name, slash, rest = path[len(prefix) :].partition("/")
            tail = slash + rest
            if name and tail in tails:
                return template + tail
    return None
