"""The cheap `Content`: only the fields given are stored, and nobody can tell
(spec/types.md, TY-50).

The reference is today's constructor as it was before TY-50: the dataclass's own
``__init__``, which stores every field (type checkers still see it;
``Content.__init__.__wrapped__``). Each property builds one content twice through the
same spelling, once with that constructor installed and once with the cheap one, and
checks that nothing a user can do tells the two apart.
"""

from __future__ import annotations

import copy
import copyreg
import dataclasses
import os
import pickle
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import MISSING, fields, replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from minagent import (
    Content,
    Message,
    SerializationError,
    UsageDetails,
    normalize_messages,
)
from minagent._types import CONTENT_LISTS, UPSTREAM_FIELDS
from minagent.upstream.content import KINDS

ROOT = Path(__file__).resolve().parents[2]
FIELDS = {f.name: f for f in fields(Content)}
TODAYS_INIT: Callable[..., None] = Content.__init__.__wrapped__  # type: ignore[attr-defined]


@contextmanager
def todays_constructor() -> Iterator[None]:
    """Content built as before TY-50: the dataclass's constructor, every field
    stored."""
    cheap = Content.__init__
    Content.__init__ = TODAYS_INIT  # type: ignore[method-assign]
    try:
        yield
    finally:
        Content.__init__ = cheap  # type: ignore[method-assign]


def default(name: str) -> Any:
    f = FIELDS[name]
    return f.default_factory() if f.default_factory is not MISSING else f.default


# -- strategies: a way of building a content, run under both constructors ------------------------

short = st.text(max_size=4)
json_scalar = st.none() | st.booleans() | st.integers(-5, 5) | short
props = st.dictionaries(short, json_scalar, max_size=2)
nested = st.none() | st.lists(st.builds(Content.from_text, short), max_size=2)
calls = st.builds(
    Content.from_function_call,
    short,
    short,
    st.none() | short | st.dictionaries(short, json_scalar),
)
VALUES: dict[str, st.SearchStrategy[Any]] = {
    **{n: st.none() | short for n in Content._STR_FIELDS if n != "text"},
    "arguments": st.none() | short | st.dictionaries(short, json_scalar, max_size=2),
    "result": json_scalar | st.lists(json_scalar, max_size=2),
    "usage_details": st.none()
    | st.builds(UsageDetails, input_token_count=st.integers(0, 9)),
    "approved": st.none() | st.booleans(),
    "function_call": st.none() | calls,
    "informational_only": st.booleans() | st.sampled_from([0, 1]),
    "user_input_request": st.booleans(),
    "annotations": st.none() | st.lists(props, min_size=1, max_size=2),
    "additional_properties": props,
    "extra": st.dictionaries(
        st.sampled_from(["file_id", "status", "x_new"]), json_scalar, max_size=2
    ),
    "raw_representation": st.none() | short,
}
KIND = st.sampled_from(
    [
        "text",
        "function_call",
        "function_result",
        "error",
        "usage",
        "uri",
        "a_newer_kind",
    ]
)
Build = tuple[str, Callable[[], Content]]


def fresh(make: Callable[..., Content], *args: Any, **kw: Any) -> Callable[[], Content]:
    """A builder that gives each build its own copy of the arguments (a constructor
    keeps the dicts it gets)."""
    return lambda: make(*copy.deepcopy(args), **copy.deepcopy(kw))


@st.composite
def constructor_calls(draw: st.DrawFn) -> Build:
    """``Content(...)`` in each spelling, with a random subset of the fields (one left
    out is at its default)."""
    names = draw(st.lists(st.sampled_from(sorted(VALUES)), unique=True))
    kind, text, kw = (
        draw(KIND),
        draw(st.none() | short),
        {n: draw(VALUES[n]) for n in names},
    )
    spelling = draw(
        st.sampled_from(
            ["positional type", "type=", "positional text", "every field given"]
        )
    )
    if spelling == "type=":
        return spelling, fresh(Content, type=kind, text=text, **kw)
    if spelling == "positional text":
        return spelling, fresh(Content, kind, text, **kw)
    if spelling == "every field given":
        kw = {n: default(n) for n in FIELDS if n not in ("type", "text")} | kw
    return spelling, fresh(Content, kind, text=text, **kw)


@st.composite
def factory_calls(draw: st.DrawFn) -> Build:
    """Every ``Content.from_*`` factory, ours and upstream's other kinds (TY-15), with
    drawn arguments."""
    kw = {"additional_properties": draw(props)} if draw(st.booleans()) else {}
    call = draw(calls)
    made: dict[str, tuple[Any, ...]] = {
        "from_text": (draw(short),),
        "from_text_reasoning": (draw(st.none() | short),),
        "from_data": (draw(st.binary(max_size=6)), "image/png"),
        "from_uri": (
            draw(
                st.sampled_from(
                    ["https://x.test/a.png", "data:text/plain;base64,aGk=", "s3://b/k"]
                )
            ),
        ),
        "from_error": (draw(st.none() | short),),
        "from_usage": ({"input_token_count": draw(st.integers(0, 9))},),
        "from_function_call": (draw(short), draw(short), draw(VALUES["arguments"])),
        "from_function_result": (
            draw(short),
            draw(VALUES["result"] | st.just([Content.from_text("a")])),
        ),
        "from_function_approval_request": (draw(short), call),
        "from_function_approval_response": (draw(st.booleans()), draw(short), call),
    }
    # a list of contents where upstream takes one
    for name, (_, params, _) in KINDS.items():
        made[name] = tuple(
            draw(nested if p in CONTENT_LISTS else json_scalar) for p in params
        )
    name = draw(st.sampled_from(sorted(made)))
    return name, fresh(getattr(Content, name), *made[name], **kw)


@st.composite
def other_ways(draw: st.DrawFn) -> Build:
    """`from_dict` of a content's JSON, `dataclasses.replace`, and the text content a
    message makes of a str."""
    _, base = draw(constructor_calls() | factory_calls())
    way = draw(st.sampled_from(["from_dict", "replace", "message"]))
    if way == "from_dict":
        data = base().to_dict()
        assume(isinstance(read_back(base()), Content))  # JSON that from_dict reads
        return way, lambda: Content.from_dict(data)
    if way == "message":
        text, which = draw(short), draw(st.integers(0, 1))
        return way, lambda: [
            *Message("user", [text]).contents,
            *normalize_messages(text)[0].contents,
        ][which]
    changes = {
        n: draw(VALUES[n])
        for n in draw(
            st.lists(st.sampled_from(sorted(VALUES)), unique=True, max_size=3)
        )
    }
    return way, lambda: replace(base(), **copy.deepcopy(changes))


builds = constructor_calls() | factory_calls() | other_ways()


def read_back(content: Content) -> Content | str:
    """`from_dict` of the content's JSON, or the error it raises (a field at a value
    `to_dict` writes but `from_dict` refuses, such as an int ``informational_only``)."""
    try:
        return Content.from_dict(content.to_dict())
    except SerializationError as exc:
        return f"SerializationError: {exc}"


def both(build: Build) -> tuple[Content, Content]:
    """The content built with the cheap constructor, and the same built with today's."""
    _, make = build
    cheap = make()
    with todays_constructor():
        full = make()
    return cheap, full


# -- the properties ---------------------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(builds)
def test_every_spelling_builds_what_todays_constructor_builds(build: Build) -> None:
    """TY-50: through every spelling — the constructor (type by position or keyword,
    text by position or keyword, every field given), every ``from_*`` factory including
    upstream's kinds (TY-15), `from_dict`, `dataclasses.replace`, a message's contents —
    the cheap content equals the one today's constructor builds, both ways round, in
    every field and upstream attribute, repr, str, `to_dict` (both spellings), JSON,
    `asdict`, `astuple`; both are unhashable."""
    cheap, full = both(build)
    # the reference stores every field, as the slotted class did
    assert len(vars(full)) == len(FIELDS)
    assert cheap == full
    assert full == cheap
    assert (cheap != full) is False
    for name in [*FIELDS, *sorted(UPSTREAM_FIELDS)]:
        assert getattr(cheap, name) == getattr(full, name), name
    assert repr(cheap) == repr(full)
    assert str(cheap) == str(full)
    assert cheap.to_dict() == full.to_dict()
    assert cheap.to_dict(exclude_none=False) == full.to_dict(exclude_none=False)
    assert cheap.to_json() == full.to_json()
    assert read_back(cheap) == read_back(full)
    # a usage's counts rebuilt from pairs (TY-12)
    assert dataclasses.asdict(cheap) == dataclasses.asdict(full)
    assert dataclasses.astuple(cheap) == dataclasses.astuple(full)
    for made in (cheap, full):
        with pytest.raises(TypeError, match="unhashable"):
            hash(made)


@settings(max_examples=200, deadline=None)
@given(builds, st.integers(0, pickle.HIGHEST_PROTOCOL))
def test_copies_pickles_and_replace_keep_the_content(
    build: Build, protocol: int
) -> None:
    """TY-50 (with TY-17, TY-60): a copy, a deep copy, a pickle (each protocol) and
    `replace()` of a cheap content equal the content today's constructor builds and give
    the same JSON; a deep copy keeps `raw_representation` by reference and owns its
    dicts; a shallow copy shares them."""
    cheap, full = both(build)
    raw = object()
    cheap.raw_representation = raw
    copies = [
        copy.copy(cheap),
        copy.deepcopy(cheap),
        pickle.loads(pickle.dumps(replace(cheap, raw_representation=None), protocol)),
    ]
    for made in [*copies, replace(cheap)]:
        assert made == full
        assert made.to_dict() == full.to_dict()
        assert repr(made) == repr(full)
    shallow, deep = copies[0], copies[1]
    assert deep.raw_representation is raw
    assert shallow.raw_representation is raw
    assert deep.additional_properties is not cheap.additional_properties
    assert deep.extra is not cheap.extra
    assert shallow.additional_properties is cheap.additional_properties
    assert replace(cheap, text="other").text == "other"


class _Slotted:
    """Pickles as the slotted `Content` before TY-50 did: ``Content`` made by NEWOBJ,
    then BUILD with ``(None, {every field: its value})`` (the same opcodes,
    `pickletools.dis` shows)."""

    __class__ = property(lambda self: Content)  # type: ignore[assignment]  # pickle checks NEWOBJ's class

    def __init__(self, state: dict[str, Any]) -> None:
        self.state = state

    def __reduce_ex__(self, protocol: Any) -> tuple[Any, ...]:
        return copyreg.__newobj__, (Content,), (None, self.state)  # type: ignore[attr-defined]


@settings(max_examples=100, deadline=None)
@given(builds, st.integers(2, pickle.HIGHEST_PROTOCOL))
def test_a_pickle_of_the_slotted_content_loads_as_the_same_content(
    build: Build, protocol: int
) -> None:
    """TY-50: the state the slotted `Content` pickled (every field by name) loads as
    that content."""
    cheap, full = both(build)
    state = {name: getattr(full, name) for name in FIELDS}
    loaded = pickle.loads(pickle.dumps(_Slotted(state), protocol=protocol))
    assert type(loaded) is Content
    assert loaded == cheap == full
    assert loaded.to_dict() == full.to_dict()
    assert repr(loaded) == repr(full)


# Written by minagent before TY-50 (main at 93a60a2, Python 3.11): pickle.dumps(m,
# protocol=5) of Message("assistant", [Content.from_text("hi"), call,
# Content.from_usage(UsageDetails(input_token_count=3))]) where call =
# Content.from_function_call("c1", "get", {"q": 1}, additional_properties={"k": "v"})
# with call.extra["status"] = "done"; and pickle.dumps(call, protocol=2).
MESSAGE_PICKLED_BEFORE = (
    b"\x80\x05\x95\xe3\x02\x00\x00\x00\x00\x00\x00\x8c\x0fminagent._types\x94\x8c\x07Message\x94\x93\x94)\x81\x94N}"
    b"\x94(\x8c\x04role\x94\x8c\tassistant\x94\x8c\x08contents\x94]\x94(h\x00\x8c\x07Content\x94\x93\x94)\x81\x94N}"
    b"\x94(\x8c\x04type\x94\x8c\x04text\x94h\x0e\x8c\x02hi\x94\x8c\x02id\x94N\x8c\x07call_id\x94N\x8c\x04name\x94N"
    b"\x8c\targuments\x94N\x8c\x06result\x94N\x8c\texception\x94N\x8c\x03uri\x94N\x8c\nmedia_type\x94N\x8c\x07mess"
    b"age\x94N\x8c\nerror_code\x94N\x8c\x07details\x94N\x8c\rusage_details\x94N\x8c\x08approved\x94N\x8c\rfunction"
    b"_call\x94N\x8c\x0eprotected_data\x94N\x8c\x12informational_only\x94\x89\x8c\x12user_input_request\x94\x89\x8c"
    b"\x0bannotations\x94N\x8c\x15additional_properties\x94}\x94\x8c\x05extra\x94}\x94\x8c\x12raw_representation"
    b"\x94Nu\x86\x94bh\n)\x81\x94N}\x94(h\rh\x1dh\x0eNh\x10Nh\x11\x8c\x02c1\x94h\x12\x8c\x03get\x94h\x13}\x94\x8c"
    b'\x01q\x94K\x01sh\x14Nh\x15Nh\x16Nh\x17Nh\x18Nh\x19Nh\x1aNh\x1bNh\x1cNh\x1dNh\x1eNh\x1f\x89h \x89h!Nh"}\x94\x8c'
    b"\x01k\x94\x8c\x01v\x94sh$}\x94\x8c\x06status\x94\x8c\x04done\x94sh&Nu\x86\x94bh\n)\x81\x94N}\x94(h\r\x8c\x05"
    b"usage\x94h\x0eNh\x10Nh\x11Nh\x12Nh\x13Nh\x14Nh\x15Nh\x16Nh\x17Nh\x18Nh\x19Nh\x1aNh\x1b\x8c\x0eminagent._wire"
    b"\x94\x8c\x0cUsageDetails\x94\x93\x94)\x81\x94\x8c\x11input_token_count\x94K\x03sh\x1cNh\x1dNh\x1eNh\x1f\x89h "
    b'\x89h!Nh"}\x94h$}\x94h&Nu\x86\x94be\x8c\x0bauthor_name\x94N\x8c\nmessage_id\x94Nh"}\x94h$}\x94h&Nu\x86\x94b.'
)
CALL_PICKLED_BEFORE = (
    b"\x80\x02cminagent._types\nContent\nq\x00)\x81q\x01N}q\x02(X\x04\x00\x00\x00typeq\x03X\r\x00\x00\x00function_c"
    b"allq\x04X\x04\x00\x00\x00textq\x05NX\x02\x00\x00\x00idq\x06NX\x07\x00\x00\x00call_idq\x07X\x02\x00\x00\x00c1"
    b"q\x08X\x04\x00\x00\x00nameq\tX\x03\x00\x00\x00getq\nX\t\x00\x00\x00argumentsq\x0b}q\x0cX\x01\x00\x00\x00qq\rK"
    b"\x01sX\x06\x00\x00\x00resultq\x0eNX\t\x00\x00\x00exceptionq\x0fNX\x03\x00\x00\x00uriq\x10NX\n\x00\x00\x00media"
    b"_typeq\x11NX\x07\x00\x00\x00messageq\x12NX\n\x00\x00\x00error_codeq\x13NX\x07\x00\x00\x00detailsq\x14NX\r\x00"
    b"\x00\x00usage_detailsq\x15NX\x08\x00\x00\x00approvedq\x16Nh\x04NX\x0e\x00\x00\x00protected_dataq\x17NX\x12\x00"
    b"\x00\x00informational_onlyq\x18\x89X\x12\x00\x00\x00user_input_requestq\x19\x89X\x0b\x00\x00\x00annotationsq"
    b"\x1aNX\x15\x00\x00\x00additional_propertiesq\x1b}q\x1cX\x01\x00\x00\x00kq\x1dX\x01\x00\x00\x00vq\x1esX\x05\x00"
    b'\x00\x00extraq\x1f}q X\x06\x00\x00\x00statusq!X\x04\x00\x00\x00doneq"sX\x12\x00\x00\x00raw_representationq#Nu'
    b"\x86q$b."
)


def test_pickles_written_before_the_cheap_content_load() -> None:
    """TY-50: a message and a content pickled by the slotted `Content` (protocols 5 and
    2, bytes written by minagent before this rule) load as the same message and content,
    which behave as fresh ones: their JSON, their upstream attributes, and dicts of
    their own."""
    call = Content.from_function_call(
        "c1", "get", {"q": 1}, additional_properties={"k": "v"}
    )
    call.extra["status"] = "done"
    expected = Message(
        "assistant",
        [
            Content.from_text("hi"),
            call,
            Content.from_usage(UsageDetails(input_token_count=3)),
        ],
    )
    message = pickle.loads(MESSAGE_PICKLED_BEFORE)
    assert message == expected
    assert message.to_dict() == expected.to_dict()
    assert [repr(c) for c in message.contents] == [repr(c) for c in expected.contents]
    loaded = pickle.loads(CALL_PICKLED_BEFORE)
    assert loaded == call
    assert (
        loaded.to_dict()
        == call.to_dict()
        == {
            "type": "function_call",
            "call_id": "c1",
            "name": "get",
            "arguments": {"q": 1},
            "additional_properties": {"k": "v"},
            "status": "done",
        }
    )
    assert loaded.status == "done"
    assert loaded.parse_arguments() == {"q": 1}
    text, again = message.contents[0], pickle.loads(CALL_PICKLED_BEFORE)
    text.extra["file_id"] = "f"
    again.additional_properties["k2"] = 2
    assert loaded.additional_properties == {"k": "v"}
    assert message.contents[1].extra == {"status": "done"}
    assert pickle.loads(pickle.dumps(loaded)) == call


# -- the constructor's signature: for type checkers and at runtime -------------------------------------

USER_PROGRAM = """\
from dataclasses import replace

from minagent import Content

good = [
    Content("text", text="hi"),
    Content(type="text", text="hi"),
    Content("text", "hi"),
    Content("function_call", call_id="c1", name="f", arguments={"a": 1}, informational_only=True),
    Content("a_newer_kind", additional_properties={"k": 1}, extra={"x": 2}, raw_representation=object()),
]
misspelt = Content("text", txt="hi")
wrong_type = Content("text", call_id=3)
third_positional = Content("text", "hi", "id1")
replaced = replace(good[0], text=3)
print(len(good))
"""


def test_mypy_strict_sees_the_typed_constructor(tmp_path: Path) -> None:
    """TY-50: ``mypy --strict`` checks a user's ``Content(...)`` against the typed
    signature: every upstream spelling passes; a misspelt keyword, a value of the wrong
    type, a third positional argument and a wrongly typed `replace` are errors, each on
    its line, and nothing else is."""
    user = tmp_path / "user.py"
    user.write_text(USER_PROGRAM)
    checked = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--no-incremental",
            "--python-version",
            "3.11",
            "user.py",
        ],
        cwd=tmp_path,
        env={**os.environ, "MYPYPATH": str(ROOT)},
        capture_output=True,
        text=True,
    )
    errors = re.findall(r"^user\.py:(\d+): error: (.*)$", checked.stdout, re.MULTILINE)
    lines = USER_PROGRAM.splitlines()
    assert {lines[int(n) - 1].split(" = ")[0]: message for n, message in errors} == {
        "misspelt": 'Unexpected keyword argument "txt" for "Content"; did you mean "text"?  [call-arg]',
        "wrong_type": 'Argument "call_id" to "Content" has incompatible type "int"; expected "str | None"  [arg-type]',
        "third_positional": 'Too many positional arguments for "Content"  [call-arg]',
        "replaced": 'Argument "text" to "replace" of "Content" has incompatible type "int"; expected "str | None"'
        "  [arg-type]",
    }, checked.stdout
    assert checked.stdout.count("error:") == 4, checked.stdout


def test_the_runtime_constructor_takes_what_the_typed_one_declares() -> None:
    """TY-50: at runtime as for the type checker, `type` and `text` may be positional
    and nothing else; an unknown keyword or a repeated argument is a `TypeError` naming
    it, raised by ``Content.__init__``; `inspect.signature` shows the typed
    constructor."""
    import inspect

    with pytest.raises(TypeError, match=r"'colour'"):
        Content("text", text="x", colour="red")  # type: ignore[call-arg]
    with pytest.raises(
        TypeError,
        match=r"^Content\.__init__\(\) takes from 2 to 3 positional arguments but 4",
    ):
        Content("text", "hi", "id1")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=r"multiple values for argument 'text'"):
        Content("text", "hi", text="again")  # type: ignore[misc]
    with pytest.raises(
        TypeError, match=r"missing 1 required positional argument: 'type'"
    ):
        Content()  # type: ignore[call-arg]
    signature = inspect.signature(Content)
    assert list(signature.parameters) == list(FIELDS)
    assert [p.kind for p in signature.parameters.values()][:3] == [
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
        inspect.Parameter.KEYWORD_ONLY,
    ]
    assert Content.__match_args__ == ("type", "text")
    assert [(f.name, f.default, f.compare, f.repr) for f in fields(Content)][-1] == (
        "raw_representation",
        None,
        False,
        False,
    )


# -- what a content stores -------------------------------------------------------------------------


def test_a_fresh_content_shares_no_mutable_object_and_writes_stay_its_own() -> None:
    """TY-50: two fresh contents never share a dict; what is written to one content's
    ``additional_properties`` or ``extra`` (first access or later) shows in no other
    content."""
    a, b = Content.from_text("a"), Content("text", text="b")
    assert a.additional_properties is not b.additional_properties
    assert a.extra is not b.extra
    a.additional_properties["k"] = 1
    a.extra["file_id"] = "f1"
    assert a.file_id == "f1"
    assert a.to_dict()["file_id"] == "f1"
    assert a.to_dict()["additional_properties"] == {"k": 1}
    c = Content.from_text("c")
    for other in (
        b,
        c,
        Content("error", message="m"),
        Content.from_function_call("c1", "f"),
    ):
        assert other.additional_properties == {}
        assert other.extra == {}
        assert other.file_id is None
    assert Content.extra is not None  # the class attribute is no shared dict
    assert not isinstance(Content.__dict__["extra"], dict)


def test_a_streamed_text_chunk_stores_its_type_text_and_one_dict() -> None:
    """TY-50: a text chunk holds its type, its text and its ``additional_properties``
    (every fold reads them) and nothing else until another field is written; a field
    given at its default is not stored."""
    chunk = Content.from_text("hi")
    assert vars(chunk) == {"type": "text", "text": "hi", "additional_properties": {}}
    assert chunk.call_id is None
    assert chunk.informational_only is False
    assert chunk.annotations is None
    call = Content.from_function_call("c1", "f", "{}")
    assert set(vars(call)) == {
        "type",
        "text",
        "additional_properties",
        "call_id",
        "name",
        "arguments",
    }
    chunk.call_id = "c1"
    assert vars(chunk)["call_id"] == "c1"
    assert chunk.to_dict() == {"type": "text", "text": "hi", "call_id": "c1"}
