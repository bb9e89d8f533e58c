"""The exception hierarchy (spec/package.md PK-6).

Every *error* minagent raises on purpose derives from `MinagentError`. Two exceptions
are not errors but control flow, and so derive from `Exception` directly:
`MiddlewareTermination` (end the pipeline, MW-6) and `UserInputRequiredError` (pause the
call for the user, LP-11). An ``except MinagentError`` therefore never swallows a
termination or a pause.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "AdditionItemMismatch",
    "AgentException",
    "AgentInvalidRequestException",
    "ContentError",
    "MiddlewareException",
    "MiddlewareTermination",
    "MinagentError",
]
__all__ += [
    "NoValueError",
    "SerializationError",
    "StreamError",
    "UserInputRequiredError",
]


class MinagentError(Exception):
    """Base class of every error raised by minagent itself. ``inner_exception=``
    (upstream's keyword) is the error's cause, and its second argument (PK-6)."""

    def __init__(
        self, *args: Any, inner_exception: BaseException | None = None
    ) -> None:
        super().__init__(
            *args, *(() if inner_exception is None else (inner_exception,))
        )
        self.inner_exception = inner_exception
        self.__cause__ = inner_exception


class ContentError(MinagentError, ValueError):
    """A message, content or response was built from invalid values."""


class NoValueError(MinagentError, LookupError):
    """A response's ``value`` was read where there is none (SO-9): ``reason`` says
    which, ``"no format"`` (the response has no structured ``response_format``) or
    ``"no answer"`` (no assistant message has text). `try_value` gives None instead."""

    def __init__(self, reason: str) -> None:
        if reason == "no format":
            message = (
                "this response has no value: it was produced without a structured "
                "response_format (pass options={'response_format': YourClass}); "
                "read .text for the answer, or .try_value for None"
            )
        else:
            message = (
                "this response has no value: no assistant message has text to parse "
                "(the run ended without an answer); .try_value gives None"
            )
        super().__init__(message)
        self.reason: str = reason


class AdditionItemMismatch(ContentError):
    """Two contents that cannot be merged were added (`Content.__add__`, TY-16;
    upstream's name)."""


class AgentException(MinagentError):
    """An agent failed (upstream's name, spec/upstream.md UP-8)."""


class AgentInvalidRequestException(AgentException, ValueError):
    """An agent was asked for something it cannot do (upstream's name, UP-8): a run of
    an agent over a chat client with a structured ``service_session_id`` (SE-65)."""


class SerializationError(MinagentError, ValueError):
    """`from_dict` was given data that does not describe the requested type.

    The message names the path of the offending field, for example
    ``messages[2].contents[0].type``.
    """

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}" if path else problem)
        self.path = path
        self.problem = problem


class StreamError(MinagentError, RuntimeError):
    """A `ResponseStream` was used in a way its life cycle does not allow."""


class MiddlewareException(MinagentError, TypeError):
    """A middleware object could not be typed or registered."""


class MiddlewareTermination(Exception):
    """Raised by middleware to end the whole pipeline at once (rule MW-6).

    The pipeline's result is ``context.result`` if it is set, else this exception's
    ``result``, else an empty response of the layer's type.
    """

    def __init__(self, message: str | None = None, *, result: Any = None) -> None:
        super().__init__(message or "Middleware terminated execution.")
        self.result = result


class UserInputRequiredError(Exception):
    """Raised by a tool whose work needs the user first (an `as_tool` sub-agent's
    approval requests).

    The loop returns the call unexecuted and surfaces ``contents`` in the response
    (LP-11, AG-8).
    """

    def __init__(self, contents: list[Any]) -> None:
        super().__init__(f"the tool needs user input: {len(contents)} request(s)")
        self.contents = list(contents)


def type_name(value: object) -> str:
    """The name of ``value``'s type for an error; when the type is another copy of
    minagent's (a vendored one beside an installed one), it says so and where each copy
    is (PK-14)."""
    cls, ours = type(value), __name__.rpartition(".")[0]
    package = cls.__module__.rpartition(".")[0]
    if package != ours and package.rpartition(".")[2] == "minagent":
        return (
            f"{cls.__name__} of another copy of minagent ({package}, not {ours}: "
            "import every minagent name from one)"
        )
    return cls.__name__
