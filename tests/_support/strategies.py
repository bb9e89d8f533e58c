"""Hypothesis strategies of the wire types: contents, messages and threads of every kind,
unknown content kinds and unknown fields included.

Used wherever a store or a serialisation must keep any message (threads, sessions, the
SQLite and Redis stores).
"""

from __future__ import annotations

from hypothesis import strategies as st

from minagent import AgentThread, Content, Message

KEYS = st.text(alphabet='abkz_é\u2603"', max_size=4)
JSON_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53), max_value=2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
)
JSON = st.recursive(
    JSON_SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=3)
    ),
    max_leaves=4,
)
EXTRA = st.dictionaries(KEYS.map(lambda k: f"x_{k}"), JSON, max_size=2)
IDS = st.text(min_size=1, max_size=8)
OPTIONAL_TEXT = st.none() | st.text(max_size=8)


@st.composite
def function_calls(draw: st.DrawFn) -> Content:
    arguments = draw(
        st.none() | st.text(max_size=10) | st.dictionaries(KEYS, JSON, max_size=2)
    )
    return Content.from_function_call(
        draw(IDS),
        draw(st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True)),
        arguments,
        informational_only=draw(st.booleans()),
        extra=draw(EXTRA),
    )


@st.composite
def contents(draw: st.DrawFn) -> Content:
    kind = draw(
        st.sampled_from(
            ["text", "call", "result", "request", "response", "unknown", "error"]
        )
    )
    props = draw(st.dictionaries(KEYS, JSON, max_size=2))
    extra = draw(EXTRA)
    if kind == "text":
        return Content.from_text(
            draw(st.text(max_size=20)), additional_properties=props, extra=extra
        )
    if kind == "call":
        return draw(function_calls())
    if kind == "result":
        return Content.from_function_result(
            draw(IDS),
            draw(JSON),
            exception=draw(st.none() | st.text(max_size=8)),
            extra=extra,
        )
    if kind == "request":
        return Content.from_function_approval_request(draw(IDS), draw(function_calls()))
    if kind == "response":
        return Content.from_function_approval_response(
            draw(st.booleans()), draw(IDS), draw(function_calls()), extra=extra
        )
    if kind == "error":
        return Content.from_error(
            draw(st.text(max_size=8)), error_code=draw(OPTIONAL_TEXT)
        )
    name = draw(
        st.from_regex(r"[a-z][a-z_]{0,10}", fullmatch=True).filter(
            lambda n: n not in _KNOWN
        )
    )
    return Content(
        name, text=draw(OPTIONAL_TEXT), additional_properties=props, extra=extra
    )


_KNOWN = {
    "text", "text_reasoning", "data", "uri", "error", "usage", "function_call",
    "function_result", "function_approval_request", "function_approval_response",
}  # fmt: skip


@st.composite
def messages(draw: st.DrawFn) -> Message:
    return Message(
        draw(
            st.sampled_from(["user", "assistant", "tool", "system"])
            | st.text(min_size=1, max_size=6)
        ),
        draw(st.lists(contents(), max_size=3)),
        author_name=draw(OPTIONAL_TEXT),
        message_id=draw(st.none() | IDS),
        additional_properties=draw(st.dictionaries(KEYS, JSON, max_size=2)),
        extra=draw(EXTRA),
    )


@st.composite
def threads(draw: st.DrawFn) -> AgentThread:
    return AgentThread(
        messages=draw(st.lists(messages(), max_size=5)),
        service_thread_id=draw(st.none() | IDS),
        thread_id=draw(st.none() | IDS),
        state=draw(st.dictionaries(KEYS, JSON, max_size=3)),
    )
