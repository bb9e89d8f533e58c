"""Wire types: `Content`, `UsageDetails`, `Message` and `normalize_messages`
(spec/types.md).

Every type is a dataclass that round-trips through plain JSON with ``to_dict()`` /
``from_dict()``. A dict carries a ``type`` discriminator; fields this version does not
know, and content kinds it does not know, are kept in ``extra`` and written back
unchanged (TY-8), so data from a newer minagent survives a trip through an older one.
``raw_representation`` is the provider's own object: never serialised, never compared.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field, fields, replace
from enum import StrEnum
from typing import Any, ClassVar, TypeAlias, cast

from . import _edge
from ._exceptions import (
    AdditionItemMismatch,
    ContentError,
    SerializationError,
    type_name,
)
from ._validate import check_limits, describe_issues, parse_json_arguments
from ._wire import (
    UsageDetails,
    _compact,
    _expect_mapping,
    _expect_type,
    _extra,
    _get,
    _Json,
    _Own,
    add_usage,
)

__all__ = [
    "CONTENT_LISTS",
    "FORMAT_VERSION",
    "UPSTREAM_FIELDS",
    "Content",
    "Message",
    "Role",
    "UsageDetails",
]
__all__ += ["normalize_messages"]

FORMAT_VERSION = 1
"""The JSON format version written by ``to_dict()`` on messages, responses and updates."""


class Role(StrEnum):
    """The well-known roles as constants that are the strings themselves: ``Role.USER ==
    "user"`` (older upstream samples' spelling). A message stores the plain str
    (TY-5)."""

    SYSTEM = "system"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"


class _Kinds(type):
    """Content's class: a ``from_<kind>`` factory of upstream's other content kinds
    (``from_hosted_file``, ``from_shell_tool_call``, ...) is upstream's API, found
    through the edge (TY-15, UP-10)."""

    def __getattr__(cls, name: str) -> Any:
        if not name.startswith("from_"):
            raise AttributeError(
                f"type object {cls.__name__!r} has no attribute {name!r}"
            )
        try:
            return _edge.current().content_factory(cls, name)
        except ImportError as exc:
            # a copy of the core without minagent/upstream/: no such attribute here
            raise AttributeError(
                f"type object {cls.__name__!r} has no attribute {name!r} ({exc})"
            ) from exc


@dataclass(repr=False)
class Content(_Json, metaclass=_Kinds):
    """One piece of a message. ``type`` says which of the optional fields are meaningful
    (TY-1).

    Build contents with the ``from_*`` factories; the constructor accepts any
    combination so that data from a newer version (an unknown ``type``) can still be
    represented. Fields of upstream's other content kinds (``file_id``, ``outputs``,
    ``annotations``, ...) are kept in ``extra`` and read as attributes (TY-15).
    """

    type: str
    text: str | None = None
    # the fields after text by keyword only, as the constructor below takes them (TY-50)
    _: KW_ONLY
    id: str | None = None
    call_id: str | None = None
    name: str | None = None
    arguments: str | dict[str, Any] | None = None
    result: Any = None
    exception: str | None = None
    uri: str | None = None
    media_type: str | None = None
    message: str | None = None
    error_code: str | None = None
    details: str | None = None
    usage_details: UsageDetails | None = None
    approved: bool | None = None
    function_call: Content | None = None
    protected_data: str | None = None
    informational_only: bool = False
    user_input_request: bool = False
    # citations and the like (upstream's Annotation dicts), TY-15
    annotations: list[Any] | None = None
    additional_properties: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    raw_representation: Any = field(default=None, compare=False, repr=False)

    def __getattr__(self, name: str) -> Any:
        """TY-15: a field of upstream's other content kinds, from ``extra`` (None when
        absent)."""
        if name not in UPSTREAM_FIELDS:
            raise AttributeError(f"'Content' object has no attribute {name!r}")
        value = self.extra.get(name)
        # upstream's view of the result
        if value is None and name == "items" and self.type == "function_result":
            result = self.result
            return [
                Content(
                    "text",
                    text=result
                    if isinstance(result, str)
                    else json.dumps(result, default=str),
                )
            ]
        return value

    def __str__(self) -> str:
        """An error as upstream writes it (``Error E1: Oops``), a text as its text, else
        the repr."""
        if self.type == "error":
            message = self.message or ""
            return (
                f"Error {self.error_code}: {message}"
                if self.error_code
                else message or "Unknown error"
            )
        return self.text or "" if self.type == "text" else repr(self)

    def __repr__(self) -> str:
        shown = [
            f"{f.name}={v!r}"
            for f in fields(self)[1:]
            if f.repr and _shown(v := getattr(self, f.name))
        ]
        return f"Content({', '.join([repr(self.type), *shown])})"

    # -- factories ----------------------------------------------------------------------------

    @classmethod
    def from_text(cls, text: str, **kw: Any) -> Content:
        if type(text) is not str and not isinstance(text, str):
            raise ContentError(f"text content needs a str, got {type(text).__name__}")
        if kw or cls is not Content or Content.__init__ is not _init:
            return cls("text", text=text, **kw)
        # a streamed chunk: the three fields `_init` stores (TY-50), set here, one
        # frame less per chunk (ST-52)
        new = cls.__new__(cls)
        new.type, new.text, new.additional_properties = "text", text, {}
        return new

    @classmethod
    def from_text_reasoning(
        cls,
        text: str | None = None,
        *,
        id: str | None = None,
        protected_data: str | None = None,
        **kw: Any,
    ) -> Content:
        return cls(
            "text_reasoning", text=text, id=id, protected_data=protected_data, **kw
        )

    @classmethod
    def from_data(cls, data: bytes, media_type: str, **kw: Any) -> Content:
        if not isinstance(data, bytes | bytearray):
            raise ContentError(f"data content needs bytes, got {type(data).__name__}")
        encoded = base64.b64encode(bytes(data)).decode("ascii")
        return cls(
            "data",
            uri=f"data:{media_type};base64,{encoded}",
            media_type=media_type,
            **kw,
        )

    @classmethod
    def from_uri(cls, uri: str, media_type: str | None = None, **kw: Any) -> Content:
        """A ``data:`` URI gives a data content, any other URI with a scheme a uri
        content (TY-3)."""
        if not isinstance(uri, str):
            raise ContentError(f"uri content needs a str URI, got {type(uri).__name__}")
        scheme, sep, rest = uri.partition(":")
        if (
            not sep
            or not scheme
            or not scheme.replace("+", "").replace("-", "").replace(".", "").isalnum()
        ):
            raise ContentError(f"uri content needs a URI with a scheme, got {uri!r}")
        if scheme.lower() == "data":
            header = rest.partition(",")[0]
            media_type = media_type or header.split(";")[0] or None
            return cls("data", uri=uri, media_type=media_type, **kw)
        return cls("uri", uri=uri, media_type=media_type, **kw)

    @classmethod
    def from_error(
        cls,
        message: str | None = None,
        *,
        error_code: str | None = None,
        details: str | None = None,
        **kw: Any,
    ) -> Content:
        return cls(
            "error", message=message, error_code=error_code, details=details, **kw
        )

    @classmethod
    def from_usage(
        cls, usage_details: UsageDetails | Mapping[str, Any], **kw: Any
    ) -> Content:
        usage = (
            usage_details
            if isinstance(usage_details, UsageDetails)
            else UsageDetails(**usage_details)
        )
        return cls("usage", usage_details=usage, **kw)

    @classmethod
    def from_function_call(
        cls,
        call_id: str,
        name: str,
        arguments: str | Mapping[str, Any] | None = None,
        *,
        exception: str | None = None,
        informational_only: bool = False,
        **kw: Any,
    ) -> Content:
        args = (
            dict(arguments)
            if type(arguments) is dict or isinstance(arguments, Mapping)
            else arguments
        )
        return cls(
            "function_call",
            call_id=call_id,
            name=name,
            arguments=args,
            exception=exception,
            informational_only=informational_only,
            **kw,
        )

    @classmethod
    def from_function_result(
        cls, call_id: str, result: Any = None, exception: str | None = None, **kw: Any
    ) -> Content:
        """A call's result (TL-5). A list of contents (a tool's parsed result, TL-14) is
        upstream's form: its texts joined by newlines are the result, the contents
        themselves its ``items``."""
        if (
            isinstance(result, list)
            and result
            and all(isinstance(c, Content) for c in result)
        ):
            kw["extra"] = {**kw.get("extra", {}), "items": result}
            result = "\n".join(c.text for c in result if c.type == "text" and c.text)
        return cls(
            "function_result", call_id=call_id, result=result, exception=exception, **kw
        )

    @classmethod
    def from_function_approval_request(
        cls, id: str, function_call: Content, **kw: Any
    ) -> Content:
        _require_call(function_call)
        kw.setdefault("user_input_request", True)
        return cls(
            "function_approval_request", id=id, function_call=function_call, **kw
        )

    @classmethod
    def from_function_approval_response(
        cls, approved: bool, id: str, function_call: Content, **kw: Any
    ) -> Content:
        _require_call(function_call)
        return cls(
            "function_approval_response",
            approved=bool(approved),
            id=id,
            function_call=function_call,
            **kw,
        )

    def to_function_approval_response(self, approved: bool) -> Content:
        """Answer this approval request."""
        if (
            self.type != "function_approval_request"
            or self.function_call is None
            or self.id is None
        ):
            raise ContentError(
                f"only a function_approval_request can be answered, not {self.type!r}"
            )
        return Content.from_function_approval_response(
            approved, self.id, self.function_call
        )

    # -- behaviour ----------------------------------------------------------------------------

    @property
    def data(self) -> bytes | None:
        """The decoded bytes of a base64 ``data:`` URI, else None."""
        if self.uri is None or not self.uri.startswith("data:"):
            return None
        header, _, payload = self.uri.partition(",")
        if not header.endswith(";base64"):
            return payload.encode()
        try:
            return base64.b64decode(payload, validate=True)
        except binascii.Error as exc:
            raise ContentError(f"data URI is not valid base64: {exc}") from None

    def parse_arguments(self) -> dict[str, Any] | None:
        """A function call's arguments as a dict (TY-4). Raises `ContentError` when they
        are not a JSON object."""
        args = self.arguments
        if args is None or args == "":
            return None if args is None else {}
        if isinstance(args, dict):
            # SC-49: limits hold whatever form the arguments came in
            issues = check_limits(args)
            if issues:
                raise ContentError(describe_issues(issues))
            return args
        try:
            # SC-49: within the argument limits (SC-48)
            parsed = parse_json_arguments(args)
        except ValueError as exc:
            raise ContentError(str(exc)) from None
        if not isinstance(parsed, dict):
            raise ContentError(
                f"arguments must be a JSON object, got {type(parsed).__name__}"
            )
        return parsed

    def has_top_level_media_type(self, top_level: str) -> bool:
        """Whether the media type is of ``top_level`` (``"image"`` for ``image/png``);
        no media type is an error."""
        if self.media_type is None:
            raise ContentError("no media_type found")
        return self.media_type.partition("/")[0].strip().lower() == top_level.lower()

    def __add__(self, other: Content) -> Content:
        """Two chunks of one content merged as upstream merges them (TY-16): texts and
        reasoning texts concatenate (reasoning of two ids is an `AdditionItemMismatch`),
        a call's arguments join (two call ids a `ContentError`), usages sum; contents of
        two kinds are a `TypeError`."""
        if not isinstance(other, Content):
            raise TypeError(
                f"Incompatible type: cannot add Content and {type(other).__name__}"
            )
        if self.type != other.type:
            raise TypeError(
                f"Cannot add Content of type {self.type!r} and {other.type!r}"
            )
        common: dict[str, Any] = {
            "additional_properties": {
                **other.additional_properties,
                **self.additional_properties,
            },
            "raw_representation": _combined(
                self.raw_representation, other.raw_representation
            ),
        }
        if self.type in ("text", "text_reasoning"):
            if (
                self.type == "text_reasoning"
                and self.id
                and other.id
                and self.id != other.id
            ):
                raise AdditionItemMismatch(
                    f"cannot add text_reasoning contents with different ids: {self.id!r} != {other.id!r}"
                )
            texts = [t for t in (self.text, other.text) if t is not None]
            return replace(
                self,
                text="".join(texts) if texts else None,
                id=self.id or other.id,
                protected_data=other.protected_data or self.protected_data,
                annotations=_combined(self.annotations, other.annotations),
                extra={**other.extra, **self.extra},
                **common,
            )
        if self.type == "usage":
            summed = add_usage(
                _as_usage(self.usage_details), _as_usage(other.usage_details)
            )
            usage = UsageDetails()
            usage.update(
                (k, v)
                for k, v in (summed or {}).items()
                if isinstance(v, int) and not isinstance(v, bool)
            )
            return replace(self, usage_details=usage, **common)
        if self.type == "function_call":
            if other.call_id and self.call_id != other.call_id:
                raise ContentError("Cannot add function calls with different call_ids")
            return replace(
                self,
                name=self.name or other.name,
                arguments=_joined_arguments(self.arguments, other.arguments),
                id=self.id or other.id,
                exception=self.exception or other.exception,
                informational_only=self.informational_only or other.informational_only,
                user_input_request=self.user_input_request or other.user_input_request,
                extra={**other.extra, **self.extra},
                **common,
            )
        raise ContentError(f"Addition not supported for content type: {self.type}")

    # -- JSON ---------------------------------------------------------------------------------

    _STR_FIELDS: ClassVar[tuple[str, ...]] = (
        "text",
        "id",
        "call_id",
        "name",
        "exception",
        "uri",
        "media_type",
    )
    _STR_FIELDS += ("message", "error_code", "details", "protected_data")

    def to_dict(
        self, *, exclude: Iterable[str] = (), exclude_none: bool = True
    ) -> dict[str, Any]:
        """The JSON form (TY-8); ``exclude`` drops keys, ``exclude_none=False`` writes
        every string field, None included (upstream's spelling, TY-15)."""
        out = self._to_dict()
        if not exclude_none:
            out.update((n, getattr(self, n)) for n in self._STR_FIELDS if n not in out)
        for key in exclude:
            out.pop(key, None)
        return out

    def _to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type}
        out.update(_compact((n, getattr(self, n)) for n in self._STR_FIELDS))
        if self.arguments is not None:
            out["arguments"] = self.arguments
        if self.type == "function_result" or self.result is not None:
            out["result"] = self.result
        if self.usage_details is not None:
            out["usage_details"] = UsageDetails.to_dict(
                UsageDetails(**self.usage_details)
            )
        if self.approved is not None:
            out["approved"] = self.approved
        if self.function_call is not None:
            out["function_call"] = self.function_call.to_dict()
        if self.annotations:
            out["annotations"] = [
                dict(a) if isinstance(a, Mapping) else a for a in self.annotations
            ]
        # such a call is always informational (TY-15)
        if self.type != "mcp_server_tool_call":
            out.update(_compact([("informational_only", self.informational_only)]))
        out.update(_compact([("user_input_request", self.user_input_request)]))
        if self.additional_properties:
            out["additional_properties"] = dict(self.additional_properties)
        for key, value in self.extra.items():
            out.setdefault(key, _plain(value))
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, path: str = "content") -> Content:
        data = _expect_mapping(data, path)
        kind = data.get("type")
        if not isinstance(kind, str) or not kind:
            raise SerializationError(
                f"{path}.type", f"expected a content type name, got {kind!r}"
            )
        kw: dict[str, Any] = {n: _get(data, n, str, path) for n in cls._STR_FIELDS}
        kw["arguments"] = _get(data, "arguments", (str, dict), path)
        kw["result"] = data.get("result")
        if (usage := _get(data, "usage_details", dict, path)) is not None:
            kw["usage_details"] = UsageDetails.from_dict(
                usage, path=f"{path}.usage_details"
            )
        kw["approved"] = _get(data, "approved", bool, path)
        if (call := _get(data, "function_call", dict, path)) is not None:
            kw["function_call"] = cls.from_dict(call, path=f"{path}.function_call")
        kw["informational_only"] = (
            bool(_get(data, "informational_only", bool, path))
            or kind == "mcp_server_tool_call"
        )
        kw["user_input_request"] = bool(_get(data, "user_input_request", bool, path))
        kw["additional_properties"] = dict(
            _get(data, "additional_properties", dict, path) or {}
        )
        kw["annotations"] = _get(data, "annotations", list, path)
        # upstream keeps it; to_dict never writes it
        kw["raw_representation"] = data.get("raw_representation")
        if (
            kind == "data"
            and isinstance(data.get("data"), bytes | bytearray)
            and kw["uri"] is None
        ):
            kw["uri"] = Content.from_data(
                data["data"], kw["media_type"] or "application/octet-stream"
            ).uri
        known = (
            {f.name for f in fields(cls)} | {"data"}
            if kind == "data"
            else {f.name for f in fields(cls)}
        )
        extra = _extra(data, known - {"extra"})
        # TY-15: contents nested in another kind
        for key in CONTENT_LISTS.intersection(extra):
            if isinstance(extra[key], list):
                extra[key] = [
                    cls.from_dict(c, path=f"{path}.{key}[{i}]")
                    if isinstance(c, Mapping)
                    else c
                    for i, c in enumerate(extra[key])
                ]
        return cls(kind, **kw, extra=extra)


# MISSING for the dicts: always stored
_DEFAULTS = {f.name: f.default for f in fields(Content)[2:]}


def _init(self: Content, type: str, text: str | None = None, **kw: Any) -> None:
    """TY-50: only the fields given are stored, the others read their class defaults;
    ``extra`` is made on first access, ``additional_properties`` (read by every fold)
    here. Type checkers and `inspect.signature` see the dataclass's typed constructor,
    which this one replaces."""
    self.type, self.text, self.additional_properties = type, text, {}
    if kw:
        own = self.__dict__  # item by item: no call per field
        for name in kw:
            if name not in _DEFAULTS:
                raise TypeError(
                    f"Content() got an unexpected keyword argument {name!r}"
                )
            # a default stays the class's: fewer keys
            if (value := kw[name]) is not _DEFAULTS[name]:
                own[name] = value


_init.__qualname__, _init.__wrapped__ = "Content.__init__", Content.__init__  # type: ignore[attr-defined]
Content.__init__ = _init  # type: ignore[method-assign]
Content.extra = _Own("extra")  # type: ignore[assignment]  # TY-50: the instance's own dict, made on first access


def _as_usage(value: Any) -> UsageDetails | None:
    """A usage content's counts as `UsageDetails` (a plain dict of counts too, TY-16)."""
    if value is None or isinstance(value, UsageDetails):
        return value
    usage = UsageDetails()
    usage.update(value)
    return usage


def _combined(a: Any, b: Any) -> Any:
    """Upstream's merge of two raw representations (or annotation lists), TY-16: one,
    or both in a list."""
    if a is None or b is None:
        return b if a is None else a
    return [*(a if isinstance(a, list) else [a]), *(b if isinstance(b, list) else [b])]


def _joined_arguments(a: Any, b: Any) -> Any:
    """Two chunks of a call's arguments (TY-16): texts concatenate, dicts merge."""
    if not a or not b:
        return a or b
    if isinstance(a, str) and isinstance(b, str):
        return a + b
    if isinstance(a, dict) and isinstance(b, dict):
        return {**a, **b}
    raise TypeError(
        f"Incompatible argument types: {type(a).__name__} and {type(b).__name__}"
    )


def _shown(value: object) -> bool:
    return value is not None and value is not False and value != {}


def _require_call(function_call: object) -> None:
    if not isinstance(function_call, Content) or function_call.type not in (
        "function_call",
        "mcp_server_tool_call",
    ):
        raise ContentError(f"expected a function_call Content, got {function_call!r}")


# TY-15: the fields of upstream's other content kinds (minagent.upstream.content), kept
# in `Content.extra`
_UPSTREAM_NAMES = (
    "items file_id vector_store_id inputs outputs image_id commands timeout_ms max_output_length status "
    "stdout stderr exit_code timed_out tool_name server_name output consent_link error_details"
)
UPSTREAM_FIELDS = frozenset(_UPSTREAM_NAMES.split())
CONTENT_LISTS = frozenset({"items", "inputs", "outputs"})


def _plain(value: Any) -> Any:
    """A value of ``extra`` in its JSON form: contents as their dicts."""
    if isinstance(value, Content):
        return value.to_dict()
    return [_plain(v) for v in value] if isinstance(value, list) else value


def as_content(
    item: Content | str | Mapping[str, Any], *, path: str = "content"
) -> Content:
    """A str becomes text content, a mapping goes through `Content.from_dict` (TY-5)."""
    if isinstance(item, Content):
        return item
    if isinstance(item, str):
        return Content.from_text(item)
    if isinstance(item, Mapping):
        return Content.from_dict(item, path=path)
    raise ContentError(
        f"{path}: expected Content, str or dict, got {type(item).__name__}"
    )


def content_list(contents: object) -> list[Content]:
    """A new list of contents from what a message or an update accepts (TY-5): None, one
    item, or a sequence whose None items are dropped. Runs for every message and
    streamed chunk, so a list that already holds only `Content` is copied without
    converting anything."""
    if contents is None:
        return []
    kind = type(contents)
    # the common case: no isinstance on ABCs, no index paths
    if kind is list or kind is tuple:
        out: list[Content] = []
        for item in contents:  # type: ignore[attr-defined]
            if type(item) is Content:
                out.append(item)
            elif type(item) is str:
                out.append(Content("text", text=item))
            else:
                break
        else:
            return out
    if isinstance(contents, Content | str | Mapping):
        return [as_content(contents)]
    if isinstance(contents, Iterable) and not isinstance(contents, bytes | bytearray):
        return [
            as_content(c, path=f"contents[{i}]")
            for i, c in enumerate(contents)
            if c is not None
        ]
    raise ContentError(
        f"contents: expected Content, str, dict or a sequence of them, got {type(contents).__name__}"
    )


@dataclass(init=False, slots=True)
class Message(_Json):
    """One turn of a conversation: a role and its contents (TY-5).

    ``Message("user", ["hi"])`` and ``Message("user", "hi")`` are the same message.
    """

    role: str
    contents: list[Content]
    author_name: str | None
    message_id: str | None
    additional_properties: dict[str, Any]
    extra: dict[str, Any]
    raw_representation: Any = field(compare=False, repr=False)

    def __init__(
        self,
        role: str,
        contents: Sequence[Content | str | Mapping[str, Any]]
        | Content
        | str
        | None = None,
        *,
        text: str | None = None,
        author_name: str | None = None,
        message_id: str | None = None,
        additional_properties: Mapping[str, Any] | None = None,
        extra: Mapping[str, Any] | None = None,
        raw_representation: Any = None,
    ) -> None:
        if type(role) is not str:
            if not isinstance(role, str):
                raise ContentError(
                    f"Message role must be a non-empty str, got {role!r}"
                )
            role = role.value if isinstance(role, Role) else str(role)
        if not role:
            raise ContentError(f"Message role must be a non-empty str, got {role!r}")
        if text is not None:
            if contents is not None:
                raise ContentError("Message takes contents or text=, not both")
            if not isinstance(text, str):
                raise ContentError(
                    f"Message text must be a str, got {type(text).__name__}"
                )
            contents = [text]
        self.role = role
        self.contents = content_list(contents)
        self.author_name, self.message_id = author_name, message_id
        self.additional_properties = dict(additional_properties or {})
        self.extra = dict(extra or {})
        self.raw_representation = raw_representation

    def with_contents(self, contents: Sequence[Content]) -> Message:
        """A copy of this message with other contents and the same role and metadata
        (TY-5).

        The loop copies every message it sends through chat middleware (LP-3), so this
        skips ``__init__``: the role and metadata are already valid.
        """
        new = Message.__new__(Message)
        new.role, new.contents, new.raw_representation = (
            self.role,
            content_list(contents),
            self.raw_representation,
        )
        new.author_name, new.message_id = self.author_name, self.message_id
        new.additional_properties, new.extra = (
            dict(self.additional_properties),
            dict(self.extra),
        )
        return new

    @property
    def text(self) -> str:
        """The text contents concatenated with no separator (TY-6)."""
        return "".join(c.text for c in self.contents if c.type == "text" and c.text)

    def __str__(self) -> str:
        return self.text

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "type": "message",
            "version": FORMAT_VERSION,
            "role": self.role,
        }
        out["contents"] = [c.to_dict() for c in self.contents]
        out.update(
            _compact(
                [("author_name", self.author_name), ("message_id", self.message_id)]
            )
        )
        if self.additional_properties:
            out["additional_properties"] = dict(self.additional_properties)
        for key, value in self.extra.items():
            out.setdefault(key, value)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, path: str = "message") -> Message:
        data = _expect_mapping(data, path)
        _expect_type(data, "message", path)
        _get(data, "version", int, path)
        role = data.get("role")
        if not isinstance(role, str) or not role:
            raise SerializationError(
                f"{path}.role", f"expected a non-empty str, got {role!r}"
            )
        return cls(
            role,
            _contents_from(data, path),
            author_name=_get(data, "author_name", str, path),
            message_id=_get(data, "message_id", str, path),
            additional_properties=_get(data, "additional_properties", dict, path),
            extra=_extra(data, _MESSAGE_KEYS),
        )


_MESSAGE_KEYS = (
    "type",
    "version",
    "role",
    "contents",
    "author_name",
    "message_id",
    "additional_properties",
)


def _contents_from(data: Mapping[str, Any], path: str) -> list[Content]:
    raw = _get(data, "contents", list, path) or []
    return [
        Content.from_dict(
            _expect_mapping(c, f"{path}.contents[{i}]"), path=f"{path}.contents[{i}]"
        )
        for i, c in enumerate(raw)
    ]


MessageInput: TypeAlias = (
    str | Content | Message | Sequence[str | Content | Message] | None
)


def _message(role: str, contents: list[Content]) -> Message:
    """A message from a valid role and a list of `Content` (taken, not copied): no
    checks."""
    new = Message.__new__(Message)
    new.role = role
    new.contents = contents
    new.author_name = new.message_id = new.raw_representation = None
    new.additional_properties, new.extra = {}, {}
    return new


def normalize_messages(messages: MessageInput) -> list[Message]:
    """Turn the loose inputs a run accepts into a list of messages (TY-7).

    None gives ``[]``; a str or a Content gives one user message; a Message is kept; in
    a sequence each str or Content becomes its own user message.
    """
    if messages is None:
        return []
    if type(messages) is str:
        return [_message("user", [Content("text", text=messages)])]
    if type(messages) is list:
        for m in messages:
            if type(m) is not Message:
                break
        else:
            # the loop's and the agent's own lists: nothing to convert
            return list(messages)
    if isinstance(messages, str | Content | Message):
        messages = [messages]
    elif not isinstance(messages, Sequence) or isinstance(
        cast(object, messages), bytes | bytearray
    ):
        raise ContentError(
            f"messages must be str, Content, Message or a sequence of them, got {type_name(messages)}"
        )
    out: list[Message] = []
    for i, item in enumerate(messages):
        if isinstance(item, Message):
            out.append(item)
        elif isinstance(item, str | Content):
            out.append(Message("user", [item]))
        else:
            raise ContentError(
                f"messages[{i}]: expected str, Content or Message, got {type_name(item)}"
            )
    return out
