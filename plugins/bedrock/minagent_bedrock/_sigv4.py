"""AWS Signature Version 4 and credentials, in the standard library (spec/bedrock.md
BR-12 .. BR-15).

Theory of operation
-------------------
Sans-I/O: ``sign_headers(method, url, headers, body, credentials=, region=, service=,
now=)`` returns the headers to add to a request (``X-Amz-Date``, the session token and
``Authorization``) and computes them as botocore's ``SigV4Auth`` does (BR-13): the
canonical request (method, the path normalised and quoted again, the sorted query, the
lower-cased headers that are signed with their values' whitespace collapsed, the host
from the URL, the body's SHA-256), the string to sign and the HMAC chain of the date,
the region, the service and ``aws4_request``.

``resolve_credentials`` finds credentials in the order of BR-12: the arguments, the
standard environment variables, then a named profile of the shared credentials file.
It reads no network credential provider (instance metadata, SSO, process): those are
refused by their absence, with an error naming what was looked at (BR-14).
"""

from __future__ import annotations

import configparser
import datetime
import hashlib
import hmac
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote, urlsplit

__all__ = [
    "ALGORITHM",
    "UNSIGNED_HEADERS",
    "Credentials",
    "CredentialsError",
    "canonical_request",
    "resolve_credentials",
    "sign_headers",
]

ALGORITHM = "AWS4-HMAC-SHA256"
# BR-13: the headers botocore never signs (a proxy or the HTTP library may change them)
UNSIGNED_HEADERS = frozenset(
    {
        "authorization",
        "connection",
        "expect",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "user-agent",
        "x-amzn-trace-id",
    }
)
_DEFAULT_PORTS = {"http": 80, "https": 443}


class CredentialsError(ValueError):
    """No usable AWS credentials, or a malformed credentials file (BR-14)."""


@dataclass(frozen=True)
class Credentials:
    """An access key, its secret and an optional session token (BR-12).

    ``repr`` shows the access key id only (PV-24)."""

    access_key: str
    secret_key: str = field(repr=False)
    token: str | None = field(default=None, repr=False)
    source: str = ""


def resolve_credentials(
    *,
    access_key: str | None = None,
    secret_key: str | None = None,
    token: str | None = None,
    profile: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> Credentials:
    """Credentials by BR-12's order: arguments, environment, shared credentials file.

    Raises `CredentialsError` naming every place looked at when none is found, when an
    access key comes without its secret, or when a named profile is missing (BR-14).
    """
    env = os.environ if environ is None else environ
    if access_key is not None or secret_key is not None:
        if not access_key or not secret_key:
            raise CredentialsError(
                "aws_access_key_id and aws_secret_access_key must be given together"
            )
        return Credentials(access_key, secret_key, token or None, "arguments")
    # an explicit profile wins over the environment's keys, as in botocore
    if profile is None:
        env_key = env.get("AWS_ACCESS_KEY_ID", "")
        env_secret = env.get("AWS_SECRET_ACCESS_KEY", "")
        if env_key or env_secret:
            if not env_key or not env_secret:
                raise CredentialsError(
                    "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY must be set together"
                )
            session = token or env.get("AWS_SESSION_TOKEN") or None
            return Credentials(env_key, env_secret, session, "environment")
    name = profile or env.get("AWS_PROFILE") or env.get("AWS_DEFAULT_PROFILE")
    path = Path(
        env.get("AWS_SHARED_CREDENTIALS_FILE") or Path.home() / ".aws" / "credentials"
    ).expanduser()
    found = _from_file(path, name or "default", explicit=name is not None)
    if found is not None:
        return found
    raise CredentialsError(
        "no AWS credentials found: pass aws_access_key_id= and aws_secret_access_key=, "
        "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or add a [default] profile to "
        f"{path} (network credential providers are not read); or use a Bedrock API key "
        "(api_key= or AWS_BEARER_TOKEN_BEDROCK)"
    )


def _from_file(path: Path, name: str, *, explicit: bool) -> Credentials | None:
    parser = configparser.RawConfigParser()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        if explicit:
            raise CredentialsError(
                f"AWS profile {name!r} was asked for, but {path} does not exist"
            ) from None
        return None
    except OSError as exc:
        raise CredentialsError(f"cannot read {path}: {exc}") from None
    try:
        parser.read_string(text, source=str(path))
    except configparser.Error as exc:
        raise CredentialsError(
            f"{path} is not a valid credentials file: {exc}"
        ) from None
    if not parser.has_section(name):
        if explicit:
            raise CredentialsError(f"AWS profile {name!r} is not in {path}")
        return None
    section = parser[name]
    key = section.get("aws_access_key_id", "").strip()
    secret = section.get("aws_secret_access_key", "").strip()
    if not key or not secret:
        raise CredentialsError(
            f"profile {name!r} of {path} needs aws_access_key_id and "
            "aws_secret_access_key"
        )
    token = section.get("aws_session_token", "").strip() or None
    return Credentials(key, secret, token, f"profile {name} of {path}")


# --------------------------------------------------------------------------------------------
# Signing (BR-13)


def _host(url: str) -> str:
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    port = parts.port
    if port is not None and port != _DEFAULT_PORTS.get(parts.scheme):
        host = f"{host}:{port}"
    return host


def _normalised_path(path: str) -> str:
    """RFC 3986 dot segments and empty segments removed, then quoted again (BR-13)."""
    if not path:
        return "/"
    kept: list[str] = []
    for segment in path.split("/"):
        if segment in ("", "."):
            continue
        if segment == "..":
            if kept:
                kept.pop()
            continue
        kept.append(segment)
    normal = "/" + "/".join(kept)
    if path.endswith("/") and kept:
        normal += "/"
    return quote(normal, safe="/~")


def _query(query: str) -> str:
    if not query:
        return ""
    pairs = [pair.partition("=") for pair in query.split("&")]
    return "&".join(f"{k}={v}" for k, v in sorted((k, v) for k, _, v in pairs))


def _signed(headers: Mapping[str, str], url: str) -> dict[str, str]:
    chosen: dict[str, list[str]] = {}
    for name, value in headers.items():
        lower = name.lower()
        if lower not in UNSIGNED_HEADERS:
            chosen.setdefault(lower, []).append(" ".join(value.split()))
    if "host" not in chosen:
        chosen["host"] = [_host(url)]
    return {name: ",".join(chosen[name]) for name in sorted(chosen)}


def canonical_request(
    method: str, url: str, headers: Mapping[str, str], body: bytes
) -> tuple[str, str]:
    """``(canonical request, signed header names)`` of BR-13."""
    parts = urlsplit(url)
    signed = _signed(headers, url)
    names = ";".join(signed)
    lines = [
        method.upper(),
        _normalised_path(parts.path),
        _query(parts.query),
        "".join(f"{name}:{value}\n" for name, value in signed.items()),
        names,
        hashlib.sha256(body).hexdigest(),
    ]
    return "\n".join(lines), names


def _hmac(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode("utf-8"), hashlib.sha256).digest()


def sign_headers(
    method: str,
    url: str,
    headers: Mapping[str, str],
    body: bytes,
    *,
    credentials: Credentials,
    region: str,
    service: str = "bedrock",
    now: datetime.datetime | None = None,
) -> dict[str, str]:
    """The headers that sign this request: ``X-Amz-Date``, ``X-Amz-Security-Token``
    (with a session token) and ``Authorization`` (BR-13).

    ``headers`` are those the request will carry; any ``Authorization``, date or token
    among them is replaced. ``now`` (UTC) is the signing time, for tests.
    """
    moment = now or datetime.datetime.now(datetime.UTC)
    if moment.tzinfo is not None:
        moment = moment.astimezone(datetime.UTC).replace(tzinfo=None)
    stamp = moment.strftime("%Y%m%dT%H%M%SZ")
    day = stamp[:8]
    replaced = {"authorization", "x-amz-date", "x-amz-security-token"}
    to_sign = {k: v for k, v in headers.items() if k.lower() not in replaced}
    added = {"X-Amz-Date": stamp}
    if credentials.token:
        added["X-Amz-Security-Token"] = credentials.token
    to_sign.update(added)
    request, names = canonical_request(method, url, to_sign, body)
    scope = f"{day}/{region}/{service}/aws4_request"
    string_to_sign = "\n".join(
        [ALGORITHM, stamp, scope, hashlib.sha256(request.encode("utf-8")).hexdigest()]
    )
    key = _hmac(f"AWS4{credentials.secret_key}".encode(), day)
    for part in (region, service, "aws4_request"):
        key = _hmac(key, part)
    signature = hmac.new(
        key, string_to_sign.encode("utf-8"), hashlib.sha256
    ).hexdigest()
    added["Authorization"] = (
        f"{ALGORITHM} Credential={credentials.access_key}/{scope}, "
        f"SignedHeaders={names}, Signature={signature}"
    )
    return added
