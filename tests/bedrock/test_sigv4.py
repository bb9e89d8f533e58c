"""SigV4 against botocore's signer, and where credentials come from (BR-12 .. BR-15)."""

from __future__ import annotations

import datetime
from pathlib import Path
from unittest import mock

import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials as BotoCredentials
from minagent_bedrock import (
    BedrockChatClient,
    Credentials,
    CredentialsError,
    resolve_credentials,
    sign_headers,
)
from minagent_bedrock._client import SigningTransport

from minagent.providers import Request

CLOCK = datetime.datetime(2026, 12, 2, 3, 4, 5, tzinfo=datetime.UTC)
BODY = b'{"messages":[{"role":"user","content":[{"text":"Hi"}]}]}'


def botocore_authorization(
    url: str,
    headers: dict[str, str],
    body: bytes,
    credentials: Credentials,
    region: str = "us-east-1",
) -> dict[str, str]:
    """The headers botocore's SigV4Auth adds to the same request at CLOCK."""
    request = AWSRequest(method="POST", url=url, headers=dict(headers), data=body)
    boto = BotoCredentials(
        credentials.access_key, credentials.secret_key, credentials.token
    )
    fixed = CLOCK.replace(tzinfo=None)
    with mock.patch("botocore.auth.get_current_datetime", return_value=fixed):
        SigV4Auth(boto, "bedrock", region).add_auth(request)
    return {
        k: v
        for k, v in request.headers.items()
        if k.lower().startswith(("x-amz", "authorization"))
    }


URLS = [
    "https://bedrock-runtime.us-east-1.amazonaws.com/model/amazon.nova-lite-v1%3A0/converse",
    "https://bedrock-runtime.us-east-1.amazonaws.com/model/anthropic.claude-3-haiku/converse-stream",
    "http://127.0.0.1:8123/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A1%3Ainference-profile%2Fx/converse",
    "https://example.test:443/base/./model/m/../m/converse?b=2&a=1",
]


@pytest.mark.parametrize("url", URLS)
@pytest.mark.parametrize("token", [None, "FwoGZXIvYXdzEXAMPLE//token+="])
def test_signature_equals_botocore(url: str, token: str | None) -> None:
    """BR-13: for the same request and clock, our Authorization (and X-Amz-Date, the
    session token) equal botocore's SigV4Auth's, quoted paths, ports and queries
    included."""
    credentials = Credentials(
        "AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", token
    )
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json",
        "User-Agent": "minagent-bedrock",
        "X-Custom": "  spaced   value ",
    }
    ours = sign_headers(
        "POST",
        url,
        headers,
        BODY,
        credentials=credentials,
        region="us-east-1",
        now=CLOCK,
    )
    theirs = botocore_authorization(url, headers, BODY, credentials)
    assert ours["Authorization"] == theirs["Authorization"]
    assert ours["X-Amz-Date"] == theirs["X-Amz-Date"] == "20261202T030405Z"
    assert ours.get("X-Amz-Security-Token") == theirs.get("X-Amz-Security-Token")
    assert "user-agent" not in ours["Authorization"]


def test_signature_changes_with_body_region_and_secret() -> None:
    """BR-13: the signature covers the body, the region and the secret."""
    credentials = Credentials("AKID", "secret")
    url = URLS[0]

    def signature(**kw: object) -> str:
        args: dict[str, object] = {
            "credentials": credentials,
            "region": "us-east-1",
            "now": CLOCK,
        }
        body = kw.pop("body", BODY)
        args.update(kw)
        return sign_headers("POST", url, {}, body, **args)["Authorization"]  # type: ignore[arg-type]

    base = signature()
    assert signature(body=b"{}") != base
    assert signature(region="eu-west-1") != base
    assert signature(credentials=Credentials("AKID", "other")) != base
    assert signature() == base


def test_signing_transport_routes_streams_and_signs_each_attempt() -> None:
    """BR-21, BR-13: an event-stream request goes to converse-stream; the signature is
    made at send time, an old Authorization replaced."""
    times = iter([CLOCK, CLOCK + datetime.timedelta(seconds=1)])
    transport = SigningTransport(
        mock.Mock(),
        credentials=Credentials("AKID", "secret"),
        region="us-east-1",
        clock=lambda: next(times),
    )
    url = "https://h.test/model/m/converse"
    plain = transport.sign(
        Request(
            "POST", url, {"accept": "application/json", "Authorization": "old"}, BODY
        )
    )
    stream = transport.sign(
        Request("POST", url, {"accept": "application/vnd.amazon.eventstream"}, BODY)
    )
    assert plain.url == url
    assert stream.url == "https://h.test/model/m/converse-stream"
    assert plain.headers["Authorization"].startswith(
        "AWS4-HMAC-SHA256 Credential=AKID/20261202/us-east-1/bedrock/aws4_request"
    )
    assert "old" not in plain.headers.values()
    assert plain.headers["X-Amz-Date"] != stream.headers["X-Amz-Date"]
    assert len(transport.signatures) == 2


def test_credentials_repr_hides_secret_and_token() -> None:
    """PV-24: a Credentials repr shows the access key id only."""
    text = repr(Credentials("AKID", "s3cr3t", "t0ken"))
    assert "AKID" in text
    assert "s3cr3t" not in text
    assert "t0ken" not in text


# --------------------------------------------------------------------------------------------
# Credentials (BR-12, BR-14)


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_arguments_win() -> None:
    """BR-12: explicit keys win over the environment."""
    env = {"AWS_ACCESS_KEY_ID": "ENV", "AWS_SECRET_ACCESS_KEY": "envs"}
    found = resolve_credentials(
        access_key="ARG", secret_key="args", token="t", environ=env
    )
    assert (found.access_key, found.secret_key, found.token) == ("ARG", "args", "t")


def test_environment_with_session_token() -> None:
    """BR-12: the standard environment variables, the session token included."""
    env = {
        "AWS_ACCESS_KEY_ID": "ENV",
        "AWS_SECRET_ACCESS_KEY": "envs",
        "AWS_SESSION_TOKEN": "envt",
    }
    found = resolve_credentials(environ=env)
    assert (found.access_key, found.secret_key, found.token) == ("ENV", "envs", "envt")
    assert found.source == "environment"


def test_profile_of_the_shared_file(tmp_path: Path) -> None:
    """BR-12: AWS_PROFILE names a profile of AWS_SHARED_CREDENTIALS_FILE, token
    included; without a name the default profile is read."""
    path = write(
        tmp_path / "credentials",
        "[default]\naws_access_key_id = DEF\naws_secret_access_key = defs\n\n"
        "[work]\naws_access_key_id = WORK\naws_secret_access_key = works\n"
        "aws_session_token = workt\n",
    )
    env = {"AWS_SHARED_CREDENTIALS_FILE": str(path), "AWS_PROFILE": "work"}
    work = resolve_credentials(environ=env)
    assert (work.access_key, work.secret_key, work.token) == ("WORK", "works", "workt")
    default = resolve_credentials(environ={"AWS_SHARED_CREDENTIALS_FILE": str(path)})
    assert (default.access_key, default.token) == ("DEF", None)
    named = resolve_credentials(
        profile="default",
        environ={
            "AWS_SHARED_CREDENTIALS_FILE": str(path),
            "AWS_ACCESS_KEY_ID": "X",
            "AWS_SECRET_ACCESS_KEY": "y",
        },
    )
    assert named.access_key == "DEF"


@pytest.mark.parametrize(
    ("kwargs", "env", "match"),
    [
        ({"access_key": "A"}, {}, "together"),
        ({}, {"AWS_ACCESS_KEY_ID": "A"}, "together"),
        ({"profile": "missing"}, {}, "missing"),
        ({}, {}, "no AWS credentials found"),
    ],
)
def test_missing_credentials_are_clear_errors(
    tmp_path: Path, kwargs: dict[str, str], env: dict[str, str], match: str
) -> None:
    """BR-14: half a key, a missing profile, nothing at all: a CredentialsError saying
    what was looked at."""
    env = {"AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none"), **env}
    with pytest.raises(CredentialsError, match=match):
        resolve_credentials(environ=env, **kwargs)  # type: ignore[arg-type]


def test_profile_without_keys_and_bad_file(tmp_path: Path) -> None:
    """BR-14: a profile without both keys, or a file that is not INI, is a clear
    error."""
    half = write(tmp_path / "half", "[p]\naws_access_key_id = A\n")
    with pytest.raises(CredentialsError, match="needs aws_access_key_id"):
        resolve_credentials(
            profile="p", environ={"AWS_SHARED_CREDENTIALS_FILE": str(half)}
        )
    bad = write(tmp_path / "bad", "not ini at all\n")
    with pytest.raises(CredentialsError, match="not a valid credentials file"):
        resolve_credentials(environ={"AWS_SHARED_CREDENTIALS_FILE": str(bad)})


def test_client_region_and_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    """BR-15, BR-1: the region from AWS_REGION, the default endpoint, the model quoted
    in the path; no region is a ValueError."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKID")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    monkeypatch.delenv("AWS_BEARER_TOKEN_BEDROCK", raising=False)
    monkeypatch.setenv("AWS_REGION", "eu-central-1")
    client = BedrockChatClient("amazon.nova-pro-v1:0")
    arn = BedrockChatClient("arn:aws:bedrock:eu-central-1:1:inference-profile/x")
    assert arn.base_url.endswith(
        "/model/arn:aws:bedrock:eu-central-1:1:inference-profile%2Fx"
    )
    assert client.region == "eu-central-1"
    assert client.base_url == (
        "https://bedrock-runtime.eu-central-1.amazonaws.com/model/amazon.nova-pro-v1:0"
    )
    assert client.credentials_source == "environment"
    monkeypatch.delenv("AWS_REGION")
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    with pytest.raises(ValueError, match="region"):
        BedrockChatClient("m")
    with pytest.raises(ValueError, match="must look like"):
        BedrockChatClient("m", region="us-east-1.evil.test/x")
    with pytest.raises(ValueError, match="cannot set 'accept'"):
        BedrockChatClient("m", region="us-east-1", default_headers={"Accept": "x"})


def test_bearer_key_skips_signing(monkeypatch: pytest.MonkeyPatch) -> None:
    """BR-12: a Bedrock API key (AWS_BEARER_TOKEN_BEDROCK) is a bearer token; nothing
    is signed and no AWS credentials are needed."""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_BEARER_TOKEN_BEDROCK", "bedrock-api-key-xyz")
    client = BedrockChatClient("m", region="us-west-2")
    assert client.signing.credentials is None
    assert client._auth_headers() == {"Authorization": "Bearer bedrock-api-key-xyz"}
    assert "bedrock-api-key-xyz" not in repr(client)
