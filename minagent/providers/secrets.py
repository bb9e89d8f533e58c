"""Secrets: credentials that never reach text (spec/providers.md, PV-24).

Rules
-----
1. A credential a client holds lives in a `Secret`, whose ``repr`` and ``str`` never
   show it.
2. Every text built from server data or from an exception passes through ``redact``
   before it leaves a client; every header mapping through ``redact_headers``.
3. A secret is matched only as a whole token, as given or URL-encoded; a value shorter
   than ``MIN_SECRET_LENGTH`` is not a secret in text (it is a placeholder such as
   ``ollama``).

Theory of operation
-------------------
``redact`` compiles one pattern per secret (cached): every form of the value (as given,
``quote``, ``quote_plus``), longest first, not touched by a letter or a digit on either
side. ``redact_headers`` copies headers with lower-case names: a credential header's
value, or a value that is a secret alone or after ``Bearer``, becomes ``[redacted]``
whatever its length; other values go through ``redact``. ``redact_data`` walks plain
data (dicts, lists, tuples) and redacts every string in it, making copies. Nothing here
holds state but the cache.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping

__all__ = [
    "CREDENTIAL_HEADERS",
    "MIN_SECRET_LENGTH",
    "REDACTED",
    "Secret",
    "redact",
    "redact_data",
    "redact_headers",
]

REDACTED = "[redacted]"


class Secret:
    """A credential whose ``repr`` and ``str`` never show it; ``reveal()`` gives the
    value."""

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

# A secret counts only as a whole token: not preceded or followed by a letter or digit
# (PV-24).
_TOKEN_CHAR = r"[^\W_]"
# Headers whose values are credentials whatever they contain (PV-24).
CREDENTIAL_HEADERS = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "api-key",
        "x-api-key",
        "cookie",
        "set-cookie",
        "x-goog-api-key",
    }
)


def _reveal(secret: str | Secret | None) -> str:
    value = secret.reveal() if isinstance(secret, Secret) else secret
    return value if isinstance(value, str) else ""


@functools.lru_cache(maxsize=16)
def _secret_pattern(value: str) -> re.Pattern[str]:
    # lazily, like the other error-path imports
    from urllib.parse import quote, quote_plus

    forms = sorted(
        {value, quote(value, safe=""), quote_plus(value, safe=""), quote(value)},
        key=len,
        reverse=True,
    )
    alternatives = "|".join(re.escape(form) for form in forms)
    return re.compile(f"(?<!{_TOKEN_CHAR})(?:{alternatives})(?!{_TOKEN_CHAR})")


def redact(text: str, *secrets: str | Secret | None) -> str:
    """``text`` with every whole-token occurrence of each secret replaced by
    ``[redacted]`` (PV-24).

    A secret is matched as given and URL-encoded, and only where no letter or digit
    touches it (so the key ``llama`` would leave ``llama3`` alone); a secret shorter
    than ``MIN_SECRET_LENGTH`` characters is not redacted in text at all.
    """
    for secret in secrets:
        value = _reveal(secret)
        if len(value) >= MIN_SECRET_LENGTH:
            text = _secret_pattern(value).sub(REDACTED, text)
    return text


def redact_headers(
    headers: Mapping[str, str] | None, *secrets: str | Secret | None
) -> dict[str, str]:
    """A copy of ``headers`` (lower-case names) without secrets (PV-24).

    The value of a credential header (``authorization``, ``api-key``, ``x-api-key``,
    cookies,
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


def redact_data(
    value: object, secrets: tuple[str | Secret | None, ...], depth: int = 0
) -> object:
    """Strings inside plain data redacted (copies; other objects as they are)."""
    if isinstance(value, str):
        return redact(value, *secrets)
    if depth > 100:
        return "[nested too deep]"
    if isinstance(value, dict):
        return {
            redact_data(k, secrets, depth + 1): redact_data(v, secrets, depth + 1)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        items = [redact_data(v, secrets, depth + 1) for v in value]
        return items if isinstance(value, list) else tuple(items)
    return value
