"""What every provider transport shares: typed errors, retry policy, secrets (spec/providers.md).

Theory of operation
-------------------
A transport turns each failed attempt into one `ProviderError` subclass (PV-23): an HTTP
status through ``error_for_status`` (one table, ``_STATUS_ERRORS``), a timeout into
`ProviderTimeoutError`, a refused or reset connection into `ProviderConnectionError`, a stream
that breaks after its first byte into `StreamInterruptedError`. ``retry_call`` then asks the
`RetryPolicy` whether to try again (PV-25) and how long to wait (PV-26, PV-27): a delay the
server names in its headers is used as given, capped; otherwise exponential backoff with full
jitter. The clock (``sleep``) and the randomness (``rng``) are parameters, so tests never wait.

Secrets never reach text: an API key is held in a `Secret` (whose repr hides it) and every
message built from server data goes through ``redact`` (PV-24).

Standard library only; nothing here knows HTTP libraries or any provider's wire format.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import math
import random
import re
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import ClassVar, Protocol, Self, TypeVar

from .._exceptions import MinagentError

__all__ = [
    "AuthenticationError",
    "BadRequestError",
    "NotFoundError",
    "ProviderConnectionError",
    "ProviderError",
    "ProviderTimeoutError",
    "RateLimitError",
    "RetryPolicy",
    "Secret",
    "ServerError",
    "StreamInterruptedError",
    "SupportsRandom",
    "describe",
    "error_for_status",
    "parse_duration",
    "redact",
    "redact_headers",
    "retry_call",
    "server_delay",
]

T = TypeVar("T")

REDACTED = "[redacted]"

# --------------------------------------------------------------------------------------------
# Errors (PV-23, PV-24)


class ProviderError(MinagentError):
    """A model provider's call failed. Every transport failure is one of the subclasses.

    ``status`` is the HTTP status (None when there was no HTTP answer), ``provider_message``
    the provider's own explanation, ``request_id`` the provider's id for the request (quote it
    to their support), ``retryable`` whether the failure is of a kind a retry can cure, and
    ``headers`` the response headers with lower-case names (empty without an answer).
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
        self.provider_message = message if provider_message is None else provider_message
        self.request_id = request_id
        self.retryable = self.default_retryable if retryable is None else retryable
        self.provider = provider
        self.headers: dict[str, str] = {str(k).lower(): str(v) for k, v in (headers or {}).items()}

    @property
    def retry_after(self) -> float | None:
        """The wait in seconds the server asked for in its headers (PV-27), uncapped, or None."""
        return server_delay(self.headers, status=self.status)

    def redact(self, *secrets: str | Secret | None) -> Self:
        """Remove the secrets from this error, in place, and cut its chain (PV-24, PV-35).

        Every text is passed through ``redact``: the message, the args, and every attribute
        that holds plain data (strings, and the strings inside dicts, lists and tuples, such as
        an echoed error body); the headers through ``redact_headers``. ``__cause__`` and
        ``__context__`` are cleared, so no library exception (which may hold the request
        headers) stays reachable from the error.
        """
        self.__cause__ = None
        self.__context__ = None
        self.__suppress_context__ = True
        if not any(secrets):
            return self
        self.args = tuple(_redact_data(a, secrets) for a in self.args)
        for name, value in list(vars(self).items()):
            if name == "headers":
                self.headers = redact_headers(value, *secrets)
            elif name not in _KEEP_ATTRIBUTES:
                setattr(self, name, _redact_data(value, secrets))
        return self


class BadRequestError(ProviderError):
    """HTTP 400 or 422: the request was malformed or semantically invalid."""


class AuthenticationError(ProviderError):
    """HTTP 401 or 403: the API key is missing, wrong, or lacks permission."""


class NotFoundError(ProviderError):
    """HTTP 404: unknown model, deployment or endpoint."""


class RateLimitError(ProviderError):
    """HTTP 429: a rate limit or quota was hit; ``retry_after`` tells how long to wait."""

    default_retryable = True


class ServerError(ProviderError):
    """HTTP 5xx: the provider failed."""

    default_retryable = True


class ProviderTimeoutError(ProviderError, TimeoutError):
    """No answer in time (or HTTP 408). Also a `TimeoutError`."""

    default_retryable = True


class ProviderConnectionError(ProviderError, ConnectionError):
    """The connection was refused, reset or dropped before an answer. Also a `ConnectionError`."""

    default_retryable = True


class StreamInterruptedError(ProviderError):
    """A stream failed after its first byte was received: never retried (PV-29).

    The updates decoded before the failure were delivered; the caller decides whether to send
    the request again.
    """


# Status -> error class (PV-23). Not listed: 5xx -> ServerError, anything else -> ProviderError.
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


def describe(status: int | None, message: str, request_id: str | None = None, *, provider: str | None = None) -> str:
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
# Secrets (PV-24)


class Secret:
    """A credential whose ``repr`` and ``str`` never show it; ``reveal()`` gives the value."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __bool__(self) -> bool:
        return bool(self._value)

    def __repr__(self) -> str:
        return "Secret('***')" if self._value else "Secret('')"

    __str__ = __repr__


MIN_SECRET_LENGTH = 8
"""Shorter values (``test``, ``llama``, ``ollama``: placeholders of local servers) are not
redacted in text: they are not secrets, and replacing them would corrupt text (PV-24)."""

# A secret counts only as a whole token: not preceded or followed by a letter or digit (PV-24).
_TOKEN_CHAR = r"[^\W_]"
# Headers whose values are credentials whatever they contain (PV-24).
CREDENTIAL_HEADERS = frozenset(
    {"authorization", "proxy-authorization", "api-key", "x-api-key", "cookie", "set-cookie", "x-goog-api-key"}
)
# Attributes of an error that are not plain data and are left alone by ``ProviderError.redact``.
_KEEP_ATTRIBUTES = frozenset({"updates"})


def _reveal(secret: str | Secret | None) -> str:
    value = secret.reveal() if isinstance(secret, Secret) else secret
    return value if isinstance(value, str) else ""


@functools.lru_cache(maxsize=16)
def _secret_pattern(value: str) -> re.Pattern[str]:
    from urllib.parse import quote, quote_plus  # lazily, like the other error-path imports

    forms = sorted({value, quote(value, safe=""), quote_plus(value, safe=""), quote(value)}, key=len, reverse=True)
    alternatives = "|".join(re.escape(form) for form in forms)
    return re.compile(f"(?<!{_TOKEN_CHAR})(?:{alternatives})(?!{_TOKEN_CHAR})")


def redact(text: str, *secrets: str | Secret | None) -> str:
    """``text`` with every whole-token occurrence of each secret replaced by ``[redacted]`` (PV-24).

    A secret is matched as given and URL-encoded, and only where no letter or digit touches it
    (so the key ``llama`` would leave ``llama3`` alone); a secret shorter than
    ``MIN_SECRET_LENGTH`` characters is not redacted in text at all.
    """
    for secret in secrets:
        value = _reveal(secret)
        if len(value) >= MIN_SECRET_LENGTH:
            text = _secret_pattern(value).sub(REDACTED, text)
    return text


def redact_headers(headers: Mapping[str, str] | None, *secrets: str | Secret | None) -> dict[str, str]:
    """A copy of ``headers`` (lower-case names) without secrets (PV-24).

    The value of a credential header (``authorization``, ``api-key``, ``x-api-key``, cookies,
    ...) and a value that is a secret, alone or after ``Bearer``, become ``[redacted]``,
    whatever the secret's length; other values go through ``redact``.
    """
    values = {_reveal(s) for s in secrets} - {""}
    out: dict[str, str] = {}
    for name, raw in (headers or {}).items():
        key, value = str(name).lower(), str(raw)
        bare = value.strip()
        if bare[:7].lower() == "bearer ":
            bare = bare[7:].strip()
        if key in CREDENTIAL_HEADERS or bare in values:
            out[key] = REDACTED
        else:
            out[key] = redact(value, *secrets)
    return out


def _redact_data(value: object, secrets: tuple[str | Secret | None, ...], depth: int = 0) -> object:
    """Strings inside plain data redacted (copies; other objects as they are)."""
    if isinstance(value, str):
        return redact(value, *secrets)
    if depth > 100:
        return "[nested too deep]"
    if isinstance(value, dict):
        return {_redact_data(k, secrets, depth + 1): _redact_data(v, secrets, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        items = [_redact_data(v, secrets, depth + 1) for v in value]
        return items if isinstance(value, list) else tuple(items)
    return value


# --------------------------------------------------------------------------------------------
# Retry policy (PV-25 .. PV-28)


class SupportsRandom(Protocol):
    """A source of floats in [0, 1): `random.Random`, or a test's fake."""

    def random(self) -> float: ...


_RNG = random.Random()

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
    """Seconds of a duration such as ``1m30s``, ``6m0s``, ``20ms``, ``1.5s`` or ``2`` (PV-28).

    Go's ``time.Duration`` syntax (units h, m, s, ms, us/µs, ns, in any combination); a bare
    number is seconds. Anything else, or a negative value, is None.
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
    headers: Mapping[str, str] | None, *, status: int | None = None, now: float | None = None
) -> float | None:
    """The wait the server asks for, in seconds, uncapped; None when it names none (PV-27).

    In this order, the first usable header wins: ``retry-after-ms`` (milliseconds),
    ``retry-after`` (seconds, or an HTTP date, counted from ``now``, default ``time.time()``;
    a past date is 0), and — for a 429 only, since providers send them on every answer —
    ``x-ratelimit-reset-requests`` / ``x-ratelimit-reset-tokens`` (PV-28 durations): of the
    limits whose ``x-ratelimit-remaining-*`` is 0, or of all given when none is, the longest.
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
    exhausted = [resets[limit] for limit in resets if lowered.get(f"x-ratelimit-remaining-{limit}", "").strip() == "0"]
    chosen = exhausted or list(resets.values())
    return max(chosen) if chosen else None


def _http_date(text: str) -> float | None:
    try:
        from datetime import UTC
        from email.utils import parsedate_to_datetime  # lazily: ~4 ms at import time

        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # RFC 9110 dates are GMT
        when = when.replace(tzinfo=UTC)
    return when.timestamp()


@dataclass(frozen=True)
class RetryPolicy:
    """When a failed call is tried again, and after how long (PV-25 .. PV-27).

    ``max_retries`` attempts after the first; delays are ``rng.random() * min(max_delay,
    base_delay * 2 ** (attempt - 1))`` (exponential backoff with full jitter), or the server's
    delay from the headers, used as given but never longer than ``max_server_delay``.
    """

    max_retries: int = 2
    base_delay: float = 0.5
    max_delay: float = 8.0
    max_server_delay: float = 60.0
    retry_statuses: frozenset[int] = field(default=RETRY_STATUSES)
    retry_server_errors: bool = True

    def __post_init__(self) -> None:
        for name in ("max_retries", "base_delay", "max_delay", "max_server_delay"):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and value >= 0 and math.isfinite(value)):
                raise ValueError(f"RetryPolicy.{name} must be a finite number >= 0, got {value!r}")

    def retries_status(self, status: int) -> bool:
        """Whether an answer with this HTTP status is retried (PV-25)."""
        return status in self.retry_statuses or (self.retry_server_errors and 500 <= status <= 599)

    def should_retry(self, error: BaseException, retries_done: int) -> bool:
        """Whether to try again after ``error`` when ``retries_done`` retries were made (PV-25).

        Only a `ProviderError` is retried, never a `StreamInterruptedError`; a response header
        ``x-should-retry: true`` / ``false`` overrides the status rule.
        """
        if retries_done >= self.max_retries or not isinstance(error, ProviderError):
            return False
        if isinstance(error, StreamInterruptedError):
            return False
        hint = error.headers.get("x-should-retry", "").strip().lower()
        if hint in ("true", "false"):
            return hint == "true"
        if error.status is not None:
            return self.retries_status(error.status)
        return error.retryable

    def delay(
        self,
        attempt: int,
        headers: Mapping[str, str] | None = None,
        rng: SupportsRandom | None = None,
        *,
        status: int | None = None,
        now: float | None = None,
    ) -> float:
        """Seconds to wait before retry number ``attempt`` (1 for the first retry).

        The server's delay (``server_delay``) capped at ``max_server_delay`` when it names one
        (PV-27), else full-jitter backoff (PV-26).
        """
        if attempt < 1:
            raise ValueError(f"attempt counts retries from 1, got {attempt}")
        asked = server_delay(headers, status=status, now=now)
        if asked is not None:
            return min(asked, self.max_server_delay)
        ceiling = min(self.max_delay, self.base_delay * 2.0 ** min(attempt - 1, 64))
        return (rng or _RNG).random() * ceiling


async def retry_call(
    attempt: Callable[[], Awaitable[T]],
    *,
    policy: RetryPolicy,
    sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    rng: SupportsRandom | None = None,
    logger: logging.Logger | None = None,
) -> T:
    """Run ``attempt()`` until it succeeds or the policy gives up; raise the last error (PV-25).

    Each retry waits ``policy.delay(n, error.headers, rng, status=error.status)`` through
    ``sleep``; cancellation during the wait or an attempt propagates at once.
    """
    retries = 0
    while True:
        try:
            return await attempt()
        except ProviderError as error:
            if not policy.should_retry(error, retries):
                raise
            retries += 1
            wait = policy.delay(retries, error.headers, rng, status=error.status)
            if logger is not None:
                logger.info("retry %d of %d in %.3f s after: %s", retries, policy.max_retries, wait, error)
        await sleep(wait)
