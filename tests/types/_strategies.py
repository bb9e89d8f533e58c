"""Hypothesis strategies of the types' tests (JSON values, contents of every kind,
messages, responses and updates), and the usage a merge of them must give."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import strategies as st

from minagent import (
    AgentResponseUpdate,
    Content,
    Message,
    UsageDetails,
)

COUNT_FIELDS = (
    "input_token_count",
    "output_token_count",
    "total_token_count",
    "cache_read_input_token_count",
    "cache_creation_input_token_count",
    "reasoning_output_token_count",
)


json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53), max_value=2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
)


json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(st.text(max_size=5), children, max_size=3)
    ),
    max_leaves=8,
)


json_objects = st.dictionaries(st.text(max_size=5), json_values, max_size=3)


# Unknown keys: prefixed so they never collide with a known field name.
extras = st.dictionaries(
    st.text(max_size=6).map(lambda s: "x_" + s), json_values, max_size=2
)


opt_text = st.none() | st.text(max_size=8)


opt_count = st.none() | st.integers(min_value=0, max_value=10**9)


usage_details = st.builds(
    UsageDetails,
    input_token_count=opt_count,
    output_token_count=opt_count,
    total_token_count=opt_count,
    cache_read_input_token_count=opt_count,
    cache_creation_input_token_count=opt_count,
    reasoning_output_token_count=opt_count,
    additional_counts=st.dictionaries(
        st.text(max_size=5), st.integers(0, 1000), max_size=2
    ),
    extra=extras,
)


function_calls = st.builds(
    Content.from_function_call,
    st.text(max_size=6),
    st.text(max_size=6),
    st.none() | st.text(max_size=12) | json_objects,
    exception=opt_text,
    informational_only=st.booleans(),
)


media_types = st.sampled_from(["image/png", "text/plain", "application/octet-stream"])


known_contents = st.one_of(
    st.builds(Content.from_text, st.text(max_size=10)),
    st.builds(
        Content.from_text_reasoning, opt_text, id=opt_text, protected_data=opt_text
    ),
    st.builds(Content.from_data, st.binary(max_size=12), media_types),
    st.builds(
        Content.from_uri,
        st.sampled_from(["https://a.test/x", "s3://b/k", "file:///tmp/f"]),
        st.none() | media_types,
    ),
    st.builds(
        Content.from_error, st.text(max_size=8), error_code=opt_text, details=opt_text
    ),
    st.builds(Content.from_usage, usage_details),
    function_calls,
    st.builds(Content.from_function_result, st.text(max_size=6), json_values, opt_text),
    st.builds(
        Content.from_function_approval_request, st.text(max_size=6), function_calls
    ),
    st.builds(
        Content.from_function_approval_response,
        st.booleans(),
        st.text(max_size=6),
        function_calls,
    ),
)


unknown_contents = st.builds(
    lambda kind, text, uri: Content(kind, text=text, uri=uri),
    st.sampled_from(["hologram", "video_v2", "x-future"]),
    opt_text,
    st.none() | st.just("holo://x"),
)


contents = st.builds(
    lambda c, props, extra: replace(c, additional_properties=props, extra=extra),
    known_contents | unknown_contents,
    json_objects,
    extras,
)


roles = st.sampled_from(["user", "assistant", "system", "tool"]) | st.text(
    min_size=1, max_size=5
)


messages = st.builds(
    lambda role, cs, author, mid, props, extra: Message(
        role,
        cs,
        author_name=author,
        message_id=mid,
        additional_properties=props,
        extra=extra,
    ),
    roles,
    st.lists(contents, max_size=3),
    opt_text,
    opt_text,
    json_objects,
    extras,
)


common_update = {
    "author_name": opt_text,
    "response_id": opt_text,
    "message_id": opt_text,
    "created_at": opt_text,
    "finish_reason": opt_text,
    "additional_properties": json_objects,
    "extra": extras,
}


agent_updates = st.builds(
    AgentResponseUpdate,
    st.lists(contents, max_size=3),
    st.none() | roles,
    agent_id=opt_text,
    **common_update,
)


def expected_usage(usages: list[UsageDetails]) -> UsageDetails | None:
    """The field-by-field sum, computed without UsageDetails.__add__."""
    if not usages:
        return None
    counts = {}
    for name in COUNT_FIELDS:
        present = [getattr(u, name) for u in usages if getattr(u, name) is not None]
        counts[name] = sum(present) if present else None
    extra_counts: dict[str, int] = {}
    for u in usages:
        for key, value in u.additional_counts.items():
            extra_counts[key] = extra_counts.get(key, 0) + value
    return UsageDetails(**counts, additional_counts=extra_counts)


plain_usage = st.builds(
    UsageDetails,
    input_token_count=opt_count,
    output_token_count=opt_count,
    total_token_count=opt_count,
    reasoning_output_token_count=opt_count,
    additional_counts=st.dictionaries(
        st.sampled_from(["a", "b"]), st.integers(0, 100), max_size=2
    ),
)
