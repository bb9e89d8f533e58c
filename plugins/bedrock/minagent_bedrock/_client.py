"""The connection of the Bedrock Converse plugin (spec/bedrock.md BR-12 .. BR-15,
BR-21, spec/providers.md PV-38).

Rules
-----
1. This module holds only what is Bedrock's about the connection: the region and the
   endpoint, the model in the path, the credentials (a Bedrock API key as a bearer
   token, else SigV4 with AWS credentials, BR-12) and the signing of every attempt.
   Sending, retrying, timing out, bounding, redacting and closing are
   `HTTPChatClient`'s; the wire format is `ConverseCodec`'s.
2. It imports no network library: the transport is ``transport_for``'s, wrapped in
   `SigningTransport`.

Theory of operation
-------------------
`HTTPChatClient` builds one `Request` per attempt for ``{endpoint}/model/{id}/converse``.
`SigningTransport` sits between it and the real transport: it sends a request that
accepts the event stream to ``converse-stream`` instead (BR-21) and signs it at the
moment of sending (a retry is signed anew, BR-13). Signatures are kept (the last few)
so that no error text shows one (PV-24).
"""

from __future__ import annotations

import datetime
import os
import re
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from ._codec import EVENT_STREAM, ConverseCodec
from ._minagent import (
    DEFAULT_MAX_BODY_SIZE,
    DEFAULT_MAX_LINE_SIZE,
    FunctionInvocationConfiguration,
    HTTPChatClient,
    ProviderError,
    Request,
    Response,
    RetryPolicy,
    Secret,
    SupportsRandom,
    Transport,
    transport_for,
)
from ._sigv4 import Credentials, resolve_credentials, sign_headers

if TYPE_CHECKING:
    from aiohttp import ClientSession

__all__ = ["BedrockChatClient", "SigningTransport", "default_endpoint"]

USER_AGENT = "minagent-bedrock"
SERVICE = "bedrock"
_KEPT_SIGNATURES = 16
_REGION = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")


def default_endpoint(region: str) -> str:
    """``https://bedrock-runtime.{region}.amazonaws.com`` (BR-15)."""
    return f"https://bedrock-runtime.{region}.amazonaws.com"


class SigningTransport:
    """A `Transport` that routes ConverseStream requests and signs with SigV4 (BR-13,
    BR-21).

    ``clock`` gives the signing time (UTC), for tests. ``credentials`` None: requests go
    unsigned (a bearer key is already in their headers).
    """

    def __init__(
        self,
        inner: Transport,
        *,
        credentials: Credentials | None,
        region: str,
        clock: Callable[[], datetime.datetime] | None = None,
    ) -> None:
        self.inner = inner
        self.credentials = credentials
        self.region = region
        self.clock = clock
        self.signatures: deque[Secret] = deque(maxlen=_KEPT_SIGNATURES)

    @property
    def session(self) -> Any:
        return getattr(self.inner, "session", None)

    def route(self, request: Request) -> Request:
        accept = {k.lower(): v for k, v in request.headers.items()}.get("accept", "")
        url = request.url
        if accept == EVENT_STREAM:
            path, sep, query = url.partition("?")
            url = path.removesuffix("/converse") + "/converse-stream" + sep + query
        return Request(
            request.method, url, request.headers, request.body, request.timeouts
        )

    def sign(self, request: Request) -> Request:
        request = self.route(request)
        if self.credentials is None:
            return request
        added = sign_headers(
            request.method,
            request.url,
            request.headers,
            request.body,
            credentials=self.credentials,
            region=self.region,
            service=SERVICE,
            now=self.clock() if self.clock is not None else None,
        )
        signature = added["Authorization"].rpartition("Signature=")[2]
        self.signatures.append(Secret(signature))
        replaced = {k.lower() for k in added}
        headers = {
            k: v for k, v in request.headers.items() if k.lower() not in replaced
        }
        headers.update(added)
        return Request(
            request.method, request.url, headers, request.body, request.timeouts
        )

    async def send(self, request: Request) -> Response:
        return await self.inner.send(self.sign(request))

    async def aclose(self) -> None:
        await self.inner.aclose()


class BedrockChatClient(HTTPChatClient):
    """A chat client for the Bedrock Runtime Converse and ConverseStream APIs.

    ``model`` is a model id, an inference profile id or an ARN (BR-1). ``region``
    defaults to ``AWS_REGION``, then ``AWS_DEFAULT_REGION`` (BR-15); ``base_url`` (the
    ``endpoint_url`` of boto3) to ``https://bedrock-runtime.{region}.amazonaws.com``.
    Credentials (BR-12): ``api_key`` (a Bedrock API key, sent as a bearer token; default
    ``AWS_BEARER_TOKEN_BEDROCK``), else SigV4 with ``aws_access_key_id`` /
    ``aws_secret_access_key`` / ``aws_session_token``, the environment's
    ``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY`` / ``AWS_SESSION_TOKEN``, or
    ``profile`` (default ``AWS_PROFILE``) of the shared credentials file
    (``AWS_SHARED_CREDENTIALS_FILE``, default ``~/.aws/credentials``). ``clock`` gives the
    signing time (tests). The other arguments are `HTTPChatClient`'s.
    """

    path = "/converse"
    api_key_env = "AWS_BEARER_TOKEN_BEDROCK"
    not_found_hint = (
        "is the model id right, and enabled in this region? base_url is the endpoint's "
        "root (https://bedrock-runtime.REGION.amazonaws.com)"
    )
    user_agent = USER_AGENT

    def __init__(
        self,
        model: str,
        *,
        region: str | None = None,
        api_key: str | None = None,
        aws_access_key_id: str | None = None,
        aws_secret_access_key: str | None = None,
        aws_session_token: str | None = None,
        profile: str | None = None,
        base_url: str | None = None,
        timeout: float | None = 600.0,
        max_retries: int = 2,
        middleware: Any = None,
        function_invocation_configuration: FunctionInvocationConfiguration
        | None = None,
        session: ClientSession | None = None,
        retry_policy: RetryPolicy | None = None,
        default_headers: Mapping[str, str] | None = None,
        sleep: Callable[[float], Awaitable[object]] | None = None,
        rng: SupportsRandom | None = None,
        max_body_size: int = DEFAULT_MAX_BODY_SIZE,
        max_line_size: int | None = DEFAULT_MAX_LINE_SIZE,
        transport: Transport | None = None,
        clock: Callable[[], datetime.datetime] | None = None,
    ) -> None:
        if not isinstance(model, str) or not model:
            raise ValueError(f"model must be a non-empty str, got {model!r}")
        chosen_region = (
            region
            or os.environ.get("AWS_REGION")
            or os.environ.get("AWS_DEFAULT_REGION")
        )
        if not chosen_region:
            raise ValueError(
                "Bedrock needs a region: pass region= or set AWS_REGION "
                "(the shared config file is not read)"
            )
        if not _REGION.fullmatch(chosen_region):
            raise ValueError(
                f"region must look like 'us-east-1' (letters, digits, '-'), got "
                f"{chosen_region!r}"
            )
        if any(name.lower() == "accept" for name in default_headers or {}):
            # BR-21: the codec's accept header chooses Converse or ConverseStream
            raise ValueError(
                "default_headers cannot set 'accept': it chooses between Converse and "
                "ConverseStream"
            )
        self.region = chosen_region
        key = api_key if api_key is not None else os.environ.get(self.api_key_env, "")
        credentials = (
            None
            if key
            else resolve_credentials(
                access_key=aws_access_key_id,
                secret_key=aws_secret_access_key,
                token=aws_session_token,
                profile=profile,
            )
        )
        self.credentials_source = credentials.source if credentials else "api_key"
        self._aws_secrets = (
            (Secret(credentials.secret_key), Secret(credentials.token or ""))
            if credentials
            else ()
        )
        self.signing = SigningTransport(
            transport_for(transport, session=session, trust_env=False),
            credentials=credentials,
            region=chosen_region,
            clock=clock,
        )
        root = (base_url or default_endpoint(chosen_region)).rstrip("/")
        super().__init__(
            model,
            codec=ConverseCodec(),
            transport=self.signing,
            # BR-1: the model id is one path segment ("/" of an ARN quoted). ":" goes
            # as it is: aiohttp's URL type turns "%3A" into ":" before sending, and the
            # signature must cover the path exactly as it goes on the wire (BR-13).
            base_url=f"{root}/model/{quote(model, safe=':')}",
            api_key=key,
            timeout=timeout,
            max_retries=max_retries,
            retry_policy=retry_policy,
            default_headers=default_headers,
            sleep=sleep,
            rng=rng,
            max_body_size=max_body_size,
            max_line_size=max_line_size,
            middleware=middleware,
            function_invocation_configuration=function_invocation_configuration,
        )

    async def _status_error(self, response: Response, url: str) -> ProviderError:
        """A non-2xx answer's error (BR-20). A signed request's 401 does not say "no API
        key was configured" (the shared client's hint for key-only providers): it says
        where the signing credentials came from."""
        failure = await super()._status_error(response, url)
        if self.signing.credentials is None:
            return failure
        key_hint = (
            f" (no API key was configured: pass api_key= or set {self.api_key_env})"
        )
        signed_hint = (
            f" (signed with AWS credentials from {self.credentials_source}: check the "
            "access key, its secret, the region and the clock)"
        )
        if key_hint in failure.message:
            failure.message = failure.message.replace(key_hint, signed_hint)
            failure.provider_message = (failure.provider_message or "").replace(
                key_hint, signed_hint
            )
            failure.args = (failure.message, *failure.args[1:])
        return failure

    @property
    def _secrets(self) -> tuple[Secret, ...]:
        """PV-24: the key, the AWS secret and token, and the recent signatures."""
        return (
            *super()._secrets,
            *self._aws_secrets,
            *self.signing.signatures,
        )
