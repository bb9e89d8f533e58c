"""Behaviour of core corners the rest of the suite does not reach (coverage, tests
only).

Rules: PK-3, PK-9 (package), SC-5, SC-52 (schema), TL-11, TL-14, TL-15 (tools), TY-12
(types).
"""

from __future__ import annotations

import dataclasses
import enum
import sys
from typing import Annotated, Any, TypedDict

import pytest

import minagent
from minagent import ArgumentConversionError, UsageDetails, tool
from minagent._convert import ArgumentConverter
from minagent._tools import SKIP_PARSING, result_value

# -- PK-9 / PK-3: a copy of the core without a folder --------------------------------------------


def test_lazy_name_without_its_folder_names_the_folder(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """PK-9: in a copy of the core without a folder, its optional name is an ImportError
    naming the folder."""
    name = next(n for n, folder in minagent._LAZY.items() if folder == "structured")
    monkeypatch.delitem(minagent.__dict__, name, raising=False)
    for mod in [
        m
        for m in sys.modules
        if m == "minagent.structured" or m.startswith("minagent.structured.")
    ]:
        monkeypatch.delitem(sys.modules, mod)
    monkeypatch.setitem(sys.modules, "minagent.structured", None)  # type: ignore[arg-type]
    with pytest.raises(ImportError, match=r"minagent/structured/") as info:
        getattr(minagent, name)
    assert isinstance(info.value.__cause__, ModuleNotFoundError)
    assert name not in minagent.__dict__  # nothing cached on failure


def test_lazy_name_reraises_a_missing_dependency_of_the_folder(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """PK-9: only the folder's own absence becomes the 'copy that folder' error; any
    other missing module propagates."""
    import importlib

    name = next(n for n, folder in minagent._LAZY.items() if folder == "structured")
    monkeypatch.delitem(minagent.__dict__, name, raising=False)

    def fake_import(module: str, package: str | None = None) -> Any:
        raise ModuleNotFoundError("No module named 'somedep'", name="somedep")

    monkeypatch.setattr(importlib, "import_module", fake_import)
    with pytest.raises(ModuleNotFoundError) as info:
        getattr(minagent, name)
    assert info.value.name == "somedep"


def test_main_without_cli_folder_says_so(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """PK-3: `python -m minagent` in a copy without minagent/cli/ exits 2 with an error
    naming the folder."""
    from minagent import __main__ as entry

    for mod in [
        m for m in sys.modules if m == "minagent.cli" or m.startswith("minagent.cli.")
    ]:
        monkeypatch.delitem(sys.modules, mod)
    monkeypatch.setitem(sys.modules, "minagent.cli", None)  # type: ignore[arg-type]
    assert entry.main() == 2
    assert "minagent/cli/" in capsys.readouterr().err


def test_main_reraises_a_missing_module_other_than_cli(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """PK-3: a missing dependency inside the command line is not disguised as a missing
    folder."""
    from minagent import __main__ as entry

    for mod in [
        m for m in sys.modules if m == "minagent.cli" or m.startswith("minagent.cli.")
    ]:
        monkeypatch.delitem(sys.modules, mod)
    monkeypatch.setitem(sys.modules, "minagent.cli", None)  # type: ignore[arg-type]
    real = ModuleNotFoundError

    class Other(real):
        pass

    err = ModuleNotFoundError("No module named 'x'", name="x")
    monkeypatch.setitem(sys.modules, "minagent.cli", None)  # type: ignore[arg-type]
    import builtins

    orig_import = builtins.__import__

    def fake(name: str, *a: Any, **k: Any) -> Any:
        if name == "cli" or name.endswith(".cli"):
            raise err
        return orig_import(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", fake)
    with pytest.raises(ModuleNotFoundError) as info:
        entry.main()
    assert info.value is err


def test_python_dash_m_minagent_version_runs_main() -> None:
    """PK-3: `python -m minagent --version` prints `minagent <version>` (the module's
    __main__ guard)."""
    import subprocess

    done = subprocess.run(
        [sys.executable, "-m", "minagent", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("minagent ")


# -- SC-52: the argument converter -----------------------------------------------------------------


class Color(enum.Enum):
    RED = "red"


class Point(TypedDict):
    x: int


@dataclasses.dataclass
class Positive:
    n: int

    def __post_init__(self) -> None:
        if self.n <= 0:
            raise ValueError("n must be positive")


def test_bare_dict_and_tuple_pass_items_through() -> None:
    """SC-52: an un-parameterised dict or tuple converts the container and leaves the
    items as they are."""

    def f(d: dict, t: tuple, m: dict[str, Any]) -> None:  # type: ignore[type-arg]
        pass

    conv = ArgumentConverter(f)
    out = conv.convert({"d": {"a": [1]}, "t": [1, "x"], "m": {"k": 2.0}})
    assert out == {"d": {"a": [1]}, "t": (1, "x"), "m": {"k": 2.0}}
    assert type(out["t"]) is tuple
    with pytest.raises(ArgumentConversionError, match=r"d: expected an object"):
        conv.convert({"d": [1]})


def test_context_by_annotation_is_not_converted() -> None:
    """SC-5: a parameter annotated FunctionInvocationContext is the context, never an
    argument to convert."""

    def f(x: int, ctx: FunctionInvocationContext) -> None:  # type: ignore[name-defined]  # noqa: F821
        pass

    conv = ArgumentConverter(f)
    assert set(conv.converters) == {"x"}
    assert conv.convert({"x": 3.0}) == {"x": 3}


def test_unhashable_annotated_hint_still_converts() -> None:
    """SC-52: a hint that cannot be hashed (metadata holding a dict) is converted like
    its type."""

    def f(x: Annotated[int, {"unit": "s"}]) -> None:
        pass

    assert ArgumentConverter(f).convert({"x": 4.0}) == {"x": 4}


def test_typed_dict_rejects_a_non_object() -> None:
    """SC-52: a TypedDict argument that is not an object is a conversion error naming
    the path."""

    def f(p: Point) -> None:
        pass

    conv = ArgumentConverter(f)
    assert conv.convert({"p": {"x": 2.0}}) == {"p": {"x": 2}}
    with pytest.raises(ArgumentConversionError, match=r"p: expected an object"):
        conv.convert({"p": 5})


def test_union_prefers_exact_number_types() -> None:
    """SC-52: a union tries its members without number conversion first: ints stay ints,
    a float member takes 3 last."""

    def f(a: int | str, b: float | str, c: list[float]) -> None:
        pass

    conv = ArgumentConverter(f)
    out = conv.convert({"a": 3, "b": 3, "c": [2.5]})
    assert out["a"] == 3
    assert type(out["a"]) is int
    assert out["b"] == 3.0
    assert type(out["b"]) is float

    class Measured(float):  # a float subclass (not the exact type) carrying an infinity
        pass

    assert conv.convert({"c": [Measured(1.5)]}) == {"c": [1.5]}
    with pytest.raises(ArgumentConversionError, match="finite"):
        conv.convert({"c": [Measured("inf")]})


def test_dataclass_refusal_in_a_union_names_the_class() -> None:
    """SC-52: a dataclass whose __init__ refuses the value is an ArgumentConversionError
    naming the class."""

    def f(p: Positive | Color) -> None:
        pass

    conv = ArgumentConverter(f)
    assert conv.convert({"p": {"n": 2}}) == {"p": Positive(2)}
    assert conv.convert({"p": "red"}) == {"p": Color.RED}
    with pytest.raises(ArgumentConversionError, match="Positive"):
        conv.convert({"p": {"n": -1}})


# -- TL-15, SC-5, TL-11: tools -----------------------------------------------------------------------


def test_method_tool_read_from_the_class_is_the_tool() -> None:
    """TL-15: `@tool` on a method, read from the class, is the tool itself; from an
    instance, bound."""

    class Box:
        def __init__(self) -> None:
            self.v = 7

        @tool
        def get(self) -> int:
            """Value."""
            return self.v

    assert Box.get is Box.__dict__["get"]
    assert Box().get is not Box.get
    assert Box().get() == 7


def test_plain_function_tool_on_a_class_is_not_bound() -> None:
    """TL-15: a tool whose function takes no self, stored on a class, is the same tool
    from an instance."""

    @tool
    def ping() -> str:
        """Ping."""
        return "pong"

    class Holder:
        t = ping

    assert Holder().t is ping


def test_two_context_parameters_is_a_value_error() -> None:
    """SC-5: a tool function with two FunctionInvocationContext parameters is refused (a
    ValueError)."""

    def f(a: FunctionInvocationContext, b: FunctionInvocationContext) -> None:  # type: ignore[name-defined]  # noqa: F821
        """Two."""

    with pytest.raises(ValueError, match="multiple FunctionInvocationContext"):
        tool(f)


def test_skip_parsing_repr() -> None:
    """TL-14: upstream's SKIP_PARSING sentinel (`result_parser=SKIP_PARSING`) shows its
    name."""
    assert repr(SKIP_PARSING) == "SKIP_PARSING"


def test_result_value_keeps_str_and_bool_subclasses() -> None:
    """TL-11: a str subclass (a StrEnum member) is already JSON text and is returned as
    it is."""

    class Tag(str):
        pass

    t = Tag("x")
    assert result_value(t) is t


# -- TY-12: UsageDetails ---------------------------------------------------------------------------


def test_usage_sum_skips_none_and_refuses_non_mappings() -> None:
    """TY-12: a + b sums field by field, a None on the right keeps the left; a
    non-mapping is not addable."""
    a = UsageDetails(input_token_count=3)
    s = a + {"input_token_count": None, "output_token_count": 2}
    assert s.input_token_count == 3
    assert s.output_token_count == 2
    with pytest.raises(TypeError):
        a + 5  # type: ignore[operator]


def test_usage_count_properties_set_and_clear() -> None:
    """TY-12: the named counts are int or None; setting None removes the count."""
    u = UsageDetails()
    assert not u
    u.input_token_count = 5
    assert u["input_token_count"] == 5
    assert u
    u.input_token_count = None
    assert "input_token_count" not in u
    assert u.input_token_count is None
