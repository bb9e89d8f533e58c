"""The version of a durable agent's definition, and how DBOS learns it (spec/dbos.md
DU-20).

Rules
-----
1. The version is a function of what decides the path of a run's steps and nothing
   else: the same definition built again (in this process or another, whatever the
   hash seed) gives the same version; an agent's id, its client's settings (a base URL,
   a key) and the state of its objects do not count.
2. Code counts by its compiled form: a function by its module, qualified name and a
   hash of its code object (bytecode, names, constants, nested code), so a changed body
   changes the version and a changed comment does not; a class by its name and the code
   of the methods it and its bases define (minagent's own classes by name, the minagent
   version standing for their code).

Theory of operation
-------------------
`definition` describes the agent as plain data (`_describe` walks options, tools,
middleware and providers, `_code_digest` hashes code objects with a canonical order for
the constants Python keeps unordered); `definition_version` hashes it. DBOS computes its
application version from the source text of the registered workflows
(``inspect.getsource``), so `versioned_workflow` compiles each `DurableAgent`'s workflow
function from a small source text that holds the version, registered in `linecache`
under a file name of its own (as generated code does for tracebacks): DBOS's version
then changes with the agent's, and DBOS's own pins (``application_version`` in its
configuration, ``DBOS__APPVERSION``) still win.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import linecache
import types
import weakref
from collections.abc import Callable, Coroutine, Mapping
from typing import Any

import minagent
from minagent import FunctionTool

__all__ = ["definition", "definition_version", "plugin_code", "versioned_workflow"]

# deeper structures are described by their type only
_MAX_DEPTH = 8
_CLASS_CODE: weakref.WeakKeyDictionary[type, str] = weakref.WeakKeyDictionary()


def _own(module: str | None) -> bool:
    """Whether ``module`` is minagent's (its code counts through the minagent
    version)."""
    return module is not None and (
        module == "minagent" or module.startswith("minagent.")
    )


def _name(obj: Any) -> str:
    module = getattr(obj, "__module__", None) or "?"
    qualname = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", "?")
    return f"{module}.{qualname}"


def _const(value: Any, digest: Any) -> None:
    """Feed one constant of a code object to ``digest`` in a canonical form."""
    if isinstance(value, types.CodeType):
        digest.update(b"code:")
        _code(value, digest)
    elif isinstance(value, tuple | frozenset):
        # a frozenset's iteration order follows the hash seed: sort its items' forms
        items = [_const_text(v) for v in value]
        if isinstance(value, frozenset):
            items.sort()
        digest.update(f"{type(value).__name__}({len(items)}):".encode())
        for item in items:
            digest.update(item.encode() + b"\0")
    else:
        digest.update(f"{type(value).__name__}:{value!r}\0".encode())


def _const_text(value: Any) -> str:
    inner = hashlib.sha256()
    _const(value, inner)
    return inner.hexdigest()


def _code(code: types.CodeType, digest: Any) -> None:
    digest.update(code.co_code)
    for names in (code.co_names, code.co_varnames, code.co_freevars, code.co_cellvars):
        digest.update(("\0".join(names) + "\1").encode())
    digest.update(
        f"{code.co_argcount},{code.co_kwonlyargcount},{code.co_flags}".encode()
    )
    for value in code.co_consts:
        _const(value, digest)


def _code_digest(code: types.CodeType) -> str:
    digest = hashlib.sha256()
    _code(code, digest)
    return digest.hexdigest()[:16]


def _class(cls: type) -> dict[str, Any]:
    """A class: its name, and the code of the methods of its own bases (not
    minagent's, not the standard library's builtins)."""
    if _own(cls.__module__) or cls.__module__ == "builtins":
        return {"class": _name(cls)}
    cached = _CLASS_CODE.get(cls)
    if cached is None:
        digest = hashlib.sha256()
        for base in cls.__mro__:
            if _own(base.__module__) or base.__module__ == "builtins":
                continue
            digest.update(_name(base).encode() + b"\0")
            for attribute, member in sorted(vars(base).items()):
                function = _function_of(member)
                if function is not None:
                    digest.update(attribute.encode() + b"=")
                    digest.update(_code_digest(function.__code__).encode())
        cached = _CLASS_CODE[cls] = digest.hexdigest()[:16]
    return {"class": _name(cls), "code": cached}


def _function_of(member: Any) -> types.FunctionType | None:
    """The Python function behind a class member (a method, a static or class method,
    a property's getter), or None."""
    if isinstance(member, staticmethod | classmethod):
        member = member.__func__
    elif isinstance(member, property):
        member = member.fget
    return member if isinstance(member, types.FunctionType) else None


def _callable(value: Any, depth: int) -> dict[str, Any]:
    if isinstance(value, types.MethodType):
        return {
            "method": _callable(value.__func__, depth),
            "of": _class(type(value.__self__)),
        }
    if isinstance(value, functools.partial):
        return {
            "partial": _callable(value.func, depth),
            "args": _describe(list(value.args), depth + 1),
            "keywords": _describe(dict(value.keywords), depth + 1),
        }
    if isinstance(value, types.FunctionType):
        if _own(value.__module__):
            return {"function": _name(value)}
        return {"function": _name(value), "code": _code_digest(value.__code__)}
    if isinstance(value, types.BuiltinFunctionType):
        return {"function": _name(value)}
    if isinstance(value, type):
        return _class(value)
    return {"object": _class(type(value))}


def _tool(tool: FunctionTool, depth: int) -> dict[str, Any]:
    return {
        "tool": tool.name,
        "description": tool.description,
        "parameters": _describe(dict(tool.parameters), depth + 1),
        "approval_mode": str(tool.approval_mode),
        "sequential": bool(tool.sequential),
        "function": None if tool.func is None else _callable(tool.func, depth + 1),
        "type": _class(type(tool)),
    }


def _describe(value: Any, depth: int = 0) -> Any:
    """``value`` as plain data that counts for the version (rule 1)."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return repr(value)
    if depth > _MAX_DEPTH:
        return {"type": _name(type(value))}
    if isinstance(value, FunctionTool):
        return _tool(value, depth)
    if isinstance(value, Mapping):
        return {
            "map": sorted(
                ([str(k), _describe(v, depth + 1)] for k, v in value.items()),
                key=lambda item: item[0],
            )
        }
    if isinstance(value, list | tuple):
        return [_describe(item, depth + 1) for item in value]
    if isinstance(value, set | frozenset):
        return {"set": sorted(json.dumps(_describe(v, depth + 1)) for v in value)}
    if isinstance(value, type):
        return _class(value)
    if dataclasses.is_dataclass(value):
        return {
            "dataclass": _class(type(value)),
            "fields": {
                f.name: _describe(getattr(value, f.name), depth + 1)
                for f in dataclasses.fields(value)
            },
        }
    if callable(value):
        return _callable(value, depth)
    return {"object": _class(type(value))}


def definition(agent: Any) -> dict[str, Any]:
    """What counts of ``agent`` for its version, as plain data (DU-20)."""
    client = getattr(agent, "client", None)
    providers = getattr(agent, "context_providers", None) or []
    return {
        "minagent": minagent.__version__,
        "agent": _class(type(agent)),
        "name": _describe(getattr(agent, "name", None)),
        # instructions, tools, response format and the other default options
        "default_options": _describe(getattr(agent, "default_options", None)),
        "middleware": _describe(getattr(agent, "middleware", None)),
        "context_providers": [
            {
                "type": _class(type(p)),
                "source_id": _describe(getattr(p, "source_id", None)),
            }
            for p in providers
        ],
        "client": None
        if client is None
        else {
            "type": _name(type(client)),
            "middleware": _describe(getattr(client, "middleware", None)),
            "function_invocation_configuration": _describe(
                getattr(client, "function_invocation_configuration", None)
            ),
        },
    }


@functools.cache
def plugin_code() -> str:
    """A hash of this plugin's code that runs in the workflow outside the steps (the
    `DurableAgent` and the step middleware), so a changed plugin changes the version."""
    from . import _durable, _steps

    digest = hashlib.sha256()
    for module in (_durable, _steps):
        for attribute, member in sorted(vars(module).items()):
            if getattr(member, "__module__", None) != module.__name__:
                continue
            if isinstance(member, type):
                digest.update(json.dumps([attribute, _class(member)]).encode())
            elif isinstance(member, types.FunctionType):
                digest.update(f"{attribute}={_code_digest(member.__code__)}".encode())
    return digest.hexdigest()[:16]


def definition_version(agent: Any) -> str:
    """The version of ``agent``'s definition: a hash of `definition` (DU-20)."""
    text = json.dumps(definition(agent), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:32]


_SOURCE = """async def workflow(request):
    definition = ({name!r}, {version!r})
    return await durable._workflow(request)
"""


def versioned_workflow(
    durable: Any, name: str, version: str
) -> Callable[[dict[str, Any]], Coroutine[Any, Any, dict[str, Any]]]:
    """The workflow function of the `DurableAgent` ``durable``: it calls
    ``durable._workflow``, and its source text (what DBOS hashes into the application
    version) holds ``name`` and ``version``."""
    source = _SOURCE.format(name=name, version=version)
    filename = (
        f"<minagent-dbos workflow {hashlib.sha256(source.encode()).hexdigest()[:16]}>"
    )
    # mtime None: linecache.checkcache keeps the entry (it has no file to compare)
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace: dict[str, Any] = {"__name__": __name__, "durable": durable}
    exec(compile(source, filename, "exec"), namespace)
    workflow: Callable[[dict[str, Any]], Coroutine[Any, Any, dict[str, Any]]] = (
        namespace["workflow"]
    )
    workflow.__qualname__ = f"DurableAgent.{name}"
    return workflow
