"""Responses and streamed updates (spec/types.md TY-9 .. TY-14).

`ChatResponse` / `AgentResponse` hold whole messages; `ChatResponseUpdate` /
`AgentResponseUpdate` hold the contents of one streamed chunk. ``from_updates`` folds a
sequence of updates into a response (TY-9 .. TY-11): it never mutates the updates or
their contents, so a stream's finalizer can run over updates the consumer has already
seen.
"""

from __future__ import annotations

import operator
from collections.abc import AsyncIterable, Callable, Iterable, Mapping, Sequence
from dataclasses import KW_ONLY, InitVar, dataclass, field, fields
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, Self, TypeVar, cast

from ._exceptions import ContentError, NoValueError
from ._fold import Fold
from ._types import FORMAT_VERSION, Content, Message, _contents_from, content_list
from ._validate import _Written
from ._wire import (
    UsageDetails,
    _compact,
    _expect_mapping,
    _expect_type,
    _extra,
    _get,
    _Json,
)

__all__ = [
    "AgentResponse",
    "AgentResponseUpdate",
    "ChatResponse",
    "ChatResponseUpdate",
    "response_format",
]


def response_format(value: Any) -> Any:
    """The seam to structured output (spec/decisions.md): ``minagent.structured`` loads
    only when a run or a response asks for a ``response_format``; the format has
    ``wire`` and what `value` needs."""
    from .structured import ResponseFormat

    return ResponseFormat.of(value)


_format_of = response_format  # for the methods whose parameter has the name
# SO-28: what `value` is; a bare `AgentResponse` reads it as Any (PEP 696)
if TYPE_CHECKING:
    T = TypeVar("T", default=Any)
else:
    T = TypeVar("T")

# Response-level scalar fields: on merge the last update with a non-None value wins
# (TY-11).


class _Wire(_Json):
    """to_dict / from_dict shared by the four response and update types (TY-8)."""

    TYPE: ClassVar[str]

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.TYPE, "version": FORMAT_VERSION}
        extra: dict[str, Any] = {}
        for f in fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            if f.name == "messages":
                out["messages"] = [m.to_dict() for m in value]
            elif f.name == "contents":
                out["contents"] = [c.to_dict() for c in value]
            elif f.name == "usage_details":
                if value is not None:
                    out["usage_details"] = value.to_dict()
            elif f.name == "extra":
                extra = value
            elif f.compare:
                out.update(_compact([(f.name, value)]))
        for key, value in extra.items():
            out.setdefault(key, value)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, path: str | None = None) -> Self:
        path = path or cls.TYPE
        data = _expect_mapping(data, path)
        _expect_type(data, cls.TYPE, path)
        _get(data, "version", int, path)
        kw: dict[str, Any] = {}
        for f in fields(cls):  # type: ignore[arg-type]
            if f.name == "messages":
                raw = _get(data, "messages", list, path) or []
                kw["messages"] = [
                    Message.from_dict(m, path=f"{path}.messages[{i}]")
                    for i, m in enumerate(raw)
                ]
            elif f.name == "contents":
                kw["contents"] = _contents_from(data, path)
            elif f.name == "usage_details":
                usage = _get(data, "usage_details", dict, path)
                kw["usage_details"] = (
                    None
                    if usage is None
                    else UsageDetails.from_dict(usage, path=f"{path}.usage_details")
                )
            elif f.name == "additional_properties":
                kw[f.name] = dict(_get(data, f.name, dict, path) or {})
            elif f.name in ("extra", "raw_representation"):
                continue
            elif f.name == "continuation_token":
                kw[f.name] = _get(data, f.name, dict, path)
            else:
                kw[f.name] = _get(data, f.name, str, path)
        known = {f.name for f in fields(cls)} | {"type", "version"}  # type: ignore[arg-type]
        # not wire keys: data keys so named are unknown
        known -= {"extra", "raw_representation"}
        return cast(Self, cast(Any, cls)(**kw, extra=_extra(data, known)))


def _text_of_messages(messages: Sequence[Message]) -> str:
    """The texts of the messages that have any, joined with a newline (TY-6)."""
    return "\n".join(t for t in (m.text for m in messages) if t)


def _requests(messages: Sequence[Message]) -> list[Content]:
    return [c for m in messages for c in m.contents if c.user_input_request]


class _ValueFormat(Protocol):
    """What `value` needs of a structured format
    (`minagent.structured.format.ResponseFormat`, SO-9)."""

    @property
    def kind(self) -> str: ...

    @property
    def errors(self) -> tuple[type[Exception], ...]: ...

    def parse(self, text: str) -> Any: ...


def _answer_text(messages: Sequence[Message]) -> str:
    """SO-9: the text of the last assistant message that has any, its texts joined with
    no separator."""
    for message in reversed(messages):
        if message.role == "assistant":
            text = "".join(
                c.text for c in message.contents if c.type == "text" and c.text
            )
            if text.strip():
                return text
    return ""


@dataclass(repr=False, eq=False)
class _Response(_Written, _Wire, Generic[T]):
    """Fields and behaviour shared by `ChatResponse` and `AgentResponse`."""

    messages: list[Message] = field(default_factory=list)
    _: KW_ONLY
    response_id: str | None = None
    created_at: str | None = None
    finish_reason: str | None = None
    usage_details: UsageDetails | None = None
    continuation_token: dict[str, Any] | None = None
    additional_properties: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    raw_representation: Any = field(default=None, compare=False, repr=False)
    # SO-9, UP-5: what `value` parses the answer as
    response_format: InitVar[Any] = None

    # SO-9: the run's structured format and the cached parse; attributes, not dataclass
    # fields (never compared, serialised or shown)
    _format = cast("_ValueFormat | None", None)
    _parsed = cast("tuple[str, Any] | None", None)

    def __post_init__(self, response_format: Any) -> None:
        self.messages = _message_list(self.messages)
        if (
            self.usage_details is not None
            and type(self.usage_details) is not UsageDetails
        ):
            # UP-6: a dict of counts
            self.usage_details = UsageDetails(**self.usage_details)
        if response_format is not None:
            self._format = _format_of(response_format)

    @property
    def value(self) -> T:
        """SO-9: the last answer parsed as the run's ``response_format``.

        Raises `NoValueError` when there is nothing to parse (no format, or no answer;
        its ``reason`` says which) and a `StructuredOutputError` when the answer does
        not match the format; `try_value` gives None in all those cases."""
        fmt = self._format
        # the "text" format asks for prose: there is no structured value to read
        if fmt is None or fmt.kind == "text":
            raise NoValueError("no format")
        text = _answer_text(self.messages)
        if not text:
            raise NoValueError("no answer")
        parsed = self._parsed
        if parsed is not None and parsed[0] == text:
            return cast("T", parsed[1])
        value: T = fmt.parse(text)
        self._parsed = (text, value)
        return value

    @property
    def try_value(self) -> T | None:
        """SO-9: `value`, or None where it would raise `NoValueError` (no format, no
        answer) or a `StructuredOutputError` (an answer that does not match)."""
        fmt = self._format
        if fmt is None or fmt.kind == "text" or not _answer_text(self.messages):
            return None
        try:
            return self.value
        except Exception as exc:
            if isinstance(exc, fmt.errors):
                return None
            raise

    def _with_format(self, fmt: _ValueFormat | None) -> Self:
        """SO-9: this response, reading `value` with ``fmt``."""
        self._format = fmt
        return self

    @property
    def text(self) -> str:
        return _text_of_messages(self.messages)

    def __str__(self) -> str:
        return self.text

    @property
    def user_input_requests(self) -> list[Content]:
        return _requests(self.messages)

    @classmethod
    def from_updates(
        cls,
        updates: Iterable[ChatResponseUpdate | AgentResponseUpdate],
        *,
        output_format_type: Any = None,
    ) -> Self:
        """The updates folded into one response (TY-10); `value` parses it as
        ``output_format_type`` (UP-5)."""
        return _merge(cls(response_format=output_format_type), updates)

    @classmethod
    async def from_update_generator(
        cls,
        updates: AsyncIterable[ChatResponseUpdate | AgentResponseUpdate],
        *,
        output_format_type: Any = None,
    ) -> Self:
        """`from_updates` of an async iterable, folded as the updates arrive (UP-5)."""
        fold = Fold(cls(response_format=output_format_type))
        async for update in updates:
            fold.add(update)
        return cast(Self, fold.result())


@dataclass(repr=False, eq=False)
class ChatResponse(_Response[T]):
    """What one chat-client call returns: the new messages and response-level facts."""

    TYPE: ClassVar[str] = "chat_response"

    _: KW_ONLY
    conversation_id: str | None = None
    model: str | None = None

    def as_updates(self) -> list[ChatResponseUpdate]:
        """This response as a stream would carry it: one update per message, then the
        usage (LP-2)."""
        updates = [
            ChatResponseUpdate(
                list(m.contents),
                m.role,
                author_name=m.author_name,
                message_id=m.message_id,
                response_id=self.response_id,
                conversation_id=self.conversation_id,
                model=self.model,
                created_at=self.created_at,
                finish_reason=self.finish_reason
                if i == len(self.messages) - 1
                else None,
                continuation_token=self.continuation_token
                if i == len(self.messages) - 1
                else None,
                additional_properties=dict(self.additional_properties),
            )
            for i, m in enumerate(self.messages)
        ]
        if self.usage_details:
            updates.append(ChatResponseUpdate([Content.from_usage(self.usage_details)]))
        return updates


@dataclass(repr=False, eq=False)
class AgentResponse(_Response[T]):
    """What one agent run returns."""

    TYPE: ClassVar[str] = "agent_response"

    _: KW_ONLY
    agent_id: str | None = None

    @property
    def text(self) -> str:
        """The messages' texts concatenated with no separator, as upstream's (TY-6)."""
        return "".join(m.text for m in self.messages)

    @classmethod
    def from_chat_response(
        cls, response: ChatResponse[T], *, agent_id: str | None = None
    ) -> AgentResponse[T]:
        return cls(
            list(response.messages),
            response_id=response.response_id,
            agent_id=agent_id,
            created_at=response.created_at,
            finish_reason=response.finish_reason,
            usage_details=response.usage_details,
            continuation_token=response.continuation_token,
            additional_properties=dict(response.additional_properties),
            raw_representation=response,
        )._with_format(response._format)  # SO-9


@dataclass(repr=False, eq=False)
class _Update(_Written, _Wire):
    """Fields and behaviour shared by `ChatResponseUpdate` and `AgentResponseUpdate`."""

    # the response-level scalars an update carries (TY-11), read in one C-level call by
    # `Fold`
    _scalar_values: ClassVar[Callable[[Any], tuple[Any, ...]]] = operator.attrgetter(
        "response_id", "created_at", "finish_reason", "continuation_token"
    )

    contents: list[Content] = field(default_factory=list)
    role: str | None = None
    _: KW_ONLY
    author_name: str | None = None
    response_id: str | None = None
    message_id: str | None = None
    created_at: str | None = None
    finish_reason: str | None = None
    continuation_token: dict[str, Any] | None = None
    additional_properties: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    raw_representation: Any = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        self.contents = content_list(self.contents)

    @property
    def text(self) -> str:
        # a streamed chunk: one content, no call more
        if len(contents := self.contents) == 1:
            return (contents[0].text or "") if contents[0].type == "text" else ""
        return "".join(c.text for c in contents if c.type == "text" and c.text)

    @property
    def user_input_requests(self) -> list[Content]:
        """The contents of this update flagged as user-input requests (TY-9)."""
        return [c for c in self.contents if c.user_input_request]

    def __str__(self) -> str:
        return self.text


@dataclass(repr=False, eq=False, init=False)
class ChatResponseUpdate(_Update):
    """One streamed chunk of a chat-client call."""

    TYPE: ClassVar[str] = "chat_response_update"
    _scalar_values: ClassVar[Callable[[Any], tuple[Any, ...]]] = operator.attrgetter(
        "response_id",
        "conversation_id",
        "model",
        "created_at",
        "finish_reason",
        "continuation_token",
    )

    _: KW_ONLY
    conversation_id: str | None = None
    model: str | None = None

    def __init__(
        self,
        contents: Sequence[Content | str | Mapping[str, Any]]
        | Content
        | str
        | None = None,
        role: str | None = None,
        *,
        author_name: str | None = None,
        response_id: str | None = None,
        message_id: str | None = None,
        created_at: str | None = None,
        finish_reason: str | None = None,
        continuation_token: dict[str, Any] | None = None,
        additional_properties: dict[str, Any] | None = None,
        extra: dict[str, Any] | None = None,
        raw_representation: Any = None,
        conversation_id: str | None = None,
        model: str | None = None,
    ) -> None:
        # written out (a provider makes one per streamed chunk): the dataclass's fields,
        # in order; a chunk's one content is taken into a list of the update's own with
        # no call of content_list (ST-52)
        if (
            type(contents) is list
            and len(contents) == 1
            and type(contents[0]) is Content
        ):
            self.contents = contents[:]
        else:
            self.contents = content_list(contents)
        self.role = role
        self.author_name = author_name
        self.response_id = response_id
        self.message_id = message_id
        self.created_at = created_at
        self.finish_reason = finish_reason
        self.continuation_token = continuation_token
        self.additional_properties = (
            {} if additional_properties is None else additional_properties
        )
        self.extra = {} if extra is None else extra
        self.raw_representation = raw_representation
        self.conversation_id = conversation_id
        self.model = model


@dataclass(repr=False, eq=False, init=False)
class AgentResponseUpdate(_Update):
    """One streamed chunk of an agent run."""

    TYPE: ClassVar[str] = "agent_response_update"
    _scalar_values: ClassVar[Callable[[Any], tuple[Any, ...]]] = operator.attrgetter(
        "response_id", "agent_id", "created_at", "finish_reason", "continuation_token"
    )

    _: KW_ONLY
    agent_id: str | None = None

    def __init__(
        self,
        contents: Sequence[Content | str | Mapping[str, Any]]
        | Content
        | str
        | None = None,
        role: str | None = None,
        *,
        author_name: str | None = None,
        response_id: str | None = None,
        message_id: str | None = None,
        created_at: str | None = None,
        finish_reason: str | None = None,
        continuation_token: dict[str, Any] | None = None,
        additional_properties: dict[str, Any] | None = None,
        extra: dict[str, Any] | None = None,
        raw_representation: Any = None,
        agent_id: str | None = None,
    ) -> None:
        self.contents = content_list(contents)
        self.role = role
        self.author_name = author_name
        self.response_id = response_id
        self.message_id = message_id
        self.created_at = created_at
        self.finish_reason = finish_reason
        self.continuation_token = continuation_token
        self.additional_properties = (
            {} if additional_properties is None else additional_properties
        )
        self.extra = {} if extra is None else extra
        self.raw_representation = raw_representation
        self.agent_id = agent_id

    @classmethod
    def from_chat_update(
        cls,
        update: ChatResponseUpdate,
        *,
        agent_id: str | None = None,
        author_name: str | None = None,
    ) -> AgentResponseUpdate:
        """The agent's view of a chat update (raw_representation = the chat update)."""
        return agent_update_view(agent_id, author_name, assistant_only=False)(update)


def agent_update_view(
    agent_id: str | None, author_name: str | None, *, assistant_only: bool = True
) -> Callable[[ChatResponseUpdate], AgentResponseUpdate]:
    """The agent's view of each chat update of a run:
    `AgentResponseUpdate.from_chat_update` with the agent's name as author of the
    assistant's updates (or of every update, ``assistant_only`` False). Runs once per
    streamed chunk, so it fills the fields directly instead of going through
    ``__init__`` (the chat update's values are already valid), in one frame."""
    make = AgentResponseUpdate.__new__

    def view(update: ChatResponseUpdate) -> AgentResponseUpdate:
        # attributes set in field order, as __init__ would (compact dicts)
        new = make(AgentResponseUpdate)
        new.contents = update.contents[:]
        new.role = role = update.role
        new.author_name = update.author_name or (
            author_name
            if not assistant_only or role is None or role == "assistant"
            else None
        )
        new.response_id = update.response_id
        new.message_id = update.message_id
        new.created_at = update.created_at
        new.finish_reason = update.finish_reason
        new.continuation_token = update.continuation_token
        # shared with the chat update it views
        new.additional_properties = update.additional_properties
        new.extra = update.extra
        new.raw_representation = update
        new.agent_id = agent_id
        return new

    return view


def _message_list(messages: object) -> list[Message]:
    if type(messages) is list:
        for m in messages:
            if type(m) is not Message:
                break
        else:
            return list(messages)  # the common case: a list of messages, copied
    if messages is None:
        return []
    if isinstance(messages, Message):
        return [messages]
    if not isinstance(messages, list | tuple) or not all(
        isinstance(m, Message) for m in messages
    ):
        raise ContentError(f"messages must be a list of Message, got {messages!r:.200}")
    return list(messages)


# -- The merge algorithm (TY-9, TY-10, TY-11). -----------------------------------------------------

_R = TypeVar("_R", bound=_Response)


def _merge(
    response: _R, updates: Iterable[ChatResponseUpdate | AgentResponseUpdate]
) -> _R:
    """Fold updates into ``response`` (TY-10, TY-11): one `Fold`, fed every update."""
    fold = Fold(response)
    for update in updates:
        fold.add(update)
    return cast(_R, fold.result())
