"""What a failed provider call means: typed errors and the delay a server asks for
(spec/providers.md).

Rules
-----
1. Every failure a provider client raises on purpose is a `ProviderError` subclass
   (PV-23); its class comes from one table, ``_STATUS_ERRORS``, for an HTTP status.
2. The text of an error says what failed and where; it never holds a secret once it has
   left a client (``ProviderError.redact``, PV-24, PV-35).
3. What a server's headers say about waiting (PV-27, PV-28) is read here, once: by
   ``ProviderError.retry_after`` and by the retry policy.

Theory of operation
-------------------
``error_for_status`` turns a non-2xx answer into the class of PV-23 with the text of
PV-24 (``describe``). A timeout without an answer is `ProviderTimeoutError`, a refused
or reset connection `ProviderConnectionError`, a stream that breaks after its first byte
`StreamInterruptedError`. ``server_delay`` reads ``retry-after-ms``, ``retry-after``
and, for a 429, the ``x-ratelimit-reset-*`` durations (``parse_duration``). Standard
library only; nothing here knows an HTTP library or a wire format.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Mapping
from typing import ClassVar, Self

from .. import MinagentError
from .secrets import Secret, redact_data, redact_headers

__all__ = [
    "RETRY_STATUSES",
    "AuthenticationError",
    "BadRequestError",
    "NotFoundError",
    "ProviderConnectionError",
    "ProviderError",
    "ProviderTimeoutError",
    "RateLimitError",
    "ServerError",
    "StreamInterruptedError",
    "describe",
    "error_for_status",
    "parse_duration",
    "server_delay",
]

# Attributes of an error that are not plain data and are left alone by
# ``ProviderError.redact``.
_KEEP_ATTRIBUTES = frozenset({"updates"})


# --------------------------------------------------------------------------------------------
# Errors (PV-23, PV-24)


class ProviderError(MinagentError):
    """A model provider's call failed. Every transport failure is one of the subclasses.

    ``status`` is the HTTP status (None when there was no HTTP answer),
    ``provider_message`` the provider's own explanation, ``request_id`` the provider's
    id for the request (quote it to their support), ``retryable`` whether the failure is
    of a kind a retry can cure, and ``headers`` the response headers with lower-case
    names (empty without an answer).
    """

    default_retryable: ClassVar[bool] = False

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        provider_message: str | None = None,
        request_id: str | None = None,
        retryable: bool | None = None,
        provider: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.provider_message = (
            message if provider_message is None else provider_message
        )
        self.request_id = request_id
        self.retryable = self.default_retryable if retryable is None else retryable
        self.provider = provider
        self.headers: dict[str, str] = {
            str(k).lower(): str(v) for k, v in (headers or {}).items()
        }

    @property
    def retry_after(self) -> float | None:
        """The wait in seconds the server asked for in its headers (PV-27), uncapped, or
        None."""
        return server_delay(self.headers, status=self.status)

    def redact(self, *secrets: str | Secret | None) -> Self:
        """Remove the secrets from this error, in place, and cut its chain (PV-24,
        PV-35).

        Every text is passed through ``redact``: the message, the args, and every
        attribute that holds plain data (strings, and the strings inside dicts, lists
        and tuples, such as an echoed error body); the headers through
        ``redact_headers``. ``__cause__`` and ``__context__`` are cleared, so no library
        exception (which may hold the request headers) stays reachable from the error.
        """
        self.__cause__ = None
        self.__context__ = None
        self.__suppress_context__ = True
        if not any(secrets):
            return self
        self.args = tuple(redact_data(a, secrets) for a in self.args)
        for name, value in list(vars(self).items()):
            if name == "headers":
                self.headers = redact_headers(value, *secrets)
            elif name not in _KEEP_ATTRIBUTES:
                setattr(self, name, redact_data(value, secrets))
        return self


class BadRequestError(ProviderError):
    """HTTP 400 or 422: the request was malformed or semantically invalid."""


class AuthenticationError(ProviderError):
    """HTTP 401 or 403: the API key is missing, wrong, or lacks permission."""


class NotFoundError(ProviderError):
    """HTTP 404: unknown model, deployment or endpoint."""


class RateLimitError(ProviderError):
    """HTTP 429: a rate limit or quota was hit; ``retry_after`` tells how long to
    wait."""

    default_retryable = True


class ServerError(ProviderError):
    """HTTP 5xx: the provider failed."""

    default_retryable = True


class ProviderTimeoutError(ProviderError, TimeoutError):
    """No answer in time (or HTTP 408). Also a `TimeoutError`."""

    default_retryable = True


class ProviderConnectionError(ProviderError, ConnectionError):
    """The connection was refused, reset or dropped before an answer. Also a
    `ConnectionError`."""

    default_retryable = True


class StreamInterruptedError(ProviderError):
    """A stream failed after its first byte was received: never retried (PV-29).

    The updates decoded before the failure were delivered; the caller decides whether to
    send the request again.
    """


# Status -> error class (PV-23). Not listed: 5xx -> ServerError, anything else ->
# ProviderError.
_STATUS_ERRORS: dict[int, type[ProviderError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: AuthenticationError,
    404: NotFoundError,
    408: ProviderTimeoutError,
    422: BadRequestError,
    429: RateLimitError,
}
RETRY_STATUSES: frozenset[int] = frozenset({408, 409, 429})


def _status_retryable(status: int) -> bool:
    return status in RETRY_STATUSES or 500 <= status <= 599


def error_for_status(
    status: int,
    message: str,
    request_id: str | None = None,
    *,
    provider: str | None = None,
    headers: Mapping[str, str] | None = None,
) -> ProviderError:
    """The typed error of a non-2xx answer (PV-23); its text is described in PV-24."""
    if status in _STATUS_ERRORS:
        cls = _STATUS_ERRORS[status]
    elif 500 <= status <= 599:
        cls = ServerError
    else:
        cls = ProviderError
    return cls(
        describe(status, message, request_id, provider=provider),
        status=status,
        provider_message=message,
        request_id=request_id,
        retryable=_status_retryable(status),
        provider=provider,
        headers=headers,
    )


def describe(
    status: int | None,
    message: str,
    request_id: str | None = None,
    *,
    provider: str | None = None,
) -> str:
    """``"<provider>: HTTP <status> <reason>: <message> (request id <id>)"`` (PV-24)."""
    text = message
    if status is not None:
        try:
            from http import HTTPStatus  # lazily, like the other error-path imports

            reason = HTTPStatus(status).phrase
        except ValueError:
            reason = ""
        head = f"HTTP {status} {reason}".rstrip()
        if not message:
            text = head
        elif not message.startswith(f"HTTP {status}"):
            text = f"{head}: {message}"
    if provider:
        text = f"{provider}: {text}"
    return f"{text} (request id {request_id})" if request_id else text


# --------------------------------------------------------------------------------------------
# What the server asks for: its delay before a retry (PV-27, PV-28)

_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|h|m|s)")
_UNIT_SECONDS = {
    "h": 3600.0,
    "m": 60.0,
    "s": 1.0,
    "ms": 1e-3,
    "us": 1e-6,
    "µs": 1e-6,
    "μs": 1e-6,
    "ns": 1e-9,
}


def parse_duration(text: str) -> float | None:
    """Seconds of a duration such as ``1m30s``, ``6m0s``, ``20ms``, ``1.5s`` or ``2``
    (PV-28).

    Go's ``time.Duration`` syntax (units h, m, s, ms, us/µs, ns, in any combination); a
    bare number is seconds. Anything else, or a negative value, is None.
    """
    text = text.strip()
    if not text:
        return None
    plain = _non_negative(text)
    if plain is not None:
        return plain
    total, position = 0.0, 0
    for match in _DURATION_PART.finditer(text):
        if match.start() != position:
            return None
        total += float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
        position = match.end()
    if position != len(text) or position == 0:
        return None
    return total if math.isfinite(total) else None


def _non_negative(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) and value >= 0 else None


def server_delay(
    headers: Mapping[str, str] | None,
    *,
    status: int | None = None,
    now: float | None = None,
) -> float | None:
    """The wait the server asks for, in seconds, uncapped; None when it names none
    (PV-27).

    In this order, the first usable header wins: ``retry-after-ms`` (milliseconds),
    ``retry-after`` (seconds, or an HTTP date, counted from ``now``, default
    ``time.time()``; a past date is 0), and — for a 429 only, since providers send them
    on every answer — ``x-ratelimit-reset-requests`` / ``x-ratelimit-reset-tokens``
    (PV-28 durations): of the limits whose ``x-ratelimit-remaining-*`` is 0, or of all
    given when none is, the longest.
    """
    if not headers:
        return None
    lowered = {str(k).lower(): str(v).strip() for k, v in headers.items()}
    millis = _non_negative(lowered.get("retry-after-ms", ""))
    if millis is not None:
        return millis / 1000.0
    after = lowered.get("retry-after")
    if after:
        seconds = _non_negative(after)
        if seconds is not None:
            return seconds
        at = _http_date(after)
        if at is not None:
            return max(0.0, at - (time.time() if now is None else now))
    if status != 429:
        return None
    resets: dict[str, float] = {}
    for limit in ("requests", "tokens"):
        reset = parse_duration(lowered.get(f"x-ratelimit-reset-{limit}", ""))
        if reset is not None:
            resets[limit] = reset
    exhausted = [
        resets[limit]
        for limit in resets
        if lowered.get(f"x-ratelimit-remaining-{limit}", "").strip() == "0"
    ]
    chosen = exhausted or list(resets.values())
    return max(chosen) if chosen else None


def _http_date(text: str) -> float | None:
    try:
        from datetime import UTC
        from email.utils import parsedate_to_datetime  # lazily: ~4 ms at import time

        when = parsedate_to_datetime(text)
    # a year no clock can hold (OverflowError) is as unusable as a malformed date
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:  # RFC 9110 dates are GMT
        when = when.replace(tzinfo=UTC)
    return when.timestamp()
