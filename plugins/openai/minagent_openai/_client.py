"""The connection of the OpenAI-compatible Chat Completions plugin (spec/providers.md
OA-20 .. OA-32, PV-38).

Rules
-----
1. This module holds only what is OpenAI's about the connection: ``OPENAI_API_KEY``
   (sent as ``Authorization: Bearer``), ``OPENAI_BASE_URL``, ``OPENAI_ORG_ID`` /
   ``OPENAI_PROJECT_ID`` (sent as ``OpenAI-Organization`` / ``OpenAI-Project``), the
   user agent, the path, the request id kept on responses (OA-29), proxies from the
   environment (OA-31), and Azure's endpoint, deployment, ``api-key`` and Entra ID token
   (OA-32). Sending, retrying, timing out, bounding, redacting and closing are
   `HTTPChatClient`'s (PV-23 .. PV-40); the wire format is the codec's (``_codec``).
2. It imports no network library: the default transport is ``transport_for``'s
   (aiohttp's ``minagent_http`` when it can be imported, else the standard library's,
   PV-41).

Theory of operation
-------------------
The constructor resolves the environment and hands `HTTPChatClient` the codec
``_codec()`` builds and a transport (``transport=``, or an aiohttp transport over
``session=`` that trusts the environment's proxy settings unless ``trust_env=False``).
`OpenAIResponsesClient` (``_responses_client``) is this connection with another path and
another codec.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from ._minagent import (
    DEFAULT_MAX_BODY_SIZE,
    FunctionInvocationConfiguration,
    HTTPChatClient,
    RetryPolicy,
    Secret,
    SupportsRandom,
    Transport,
    WireCodec,
    transport_for,
)

if TYPE_CHECKING:
    from aiohttp import ClientSession

from ._codec import ChatCompletionsCodec
from ._stream import DEFAULT_MAX_LINE_SIZE

__all__ = [
    "DEFAULT_BASE_URL",
    "DEFAULT_MAX_BODY_SIZE",
    "AzureOpenAIChatClient",
    "OpenAIChatClient",
]

DEFAULT_BASE_URL = "https://api.openai.com/v1"


def _plugin_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("minagent-openai")
    except PackageNotFoundError:  # running from a source tree without installing
        return "0+unknown"


USER_AGENT = f"minagent-openai/{_plugin_version()}"


class OpenAIChatClient(HTTPChatClient):
    """A chat client for ``POST /chat/completions`` of OpenAI and compatible servers.

    ``api_key``, ``base_url``, ``organization`` and ``project`` default to
    ``OPENAI_API_KEY``, ``OPENAI_BASE_URL`` (then ``https://api.openai.com/v1``),
    ``OPENAI_ORG_ID`` and ``OPENAI_PROJECT_ID``; without a key no ``Authorization``
    header is sent (local servers need none). ``default_query`` is sent on every
    request, after the base URL's own query (OA-30). ``timeout`` (seconds, None for
    none) bounds connecting and every wait for data; ``total_timeout`` bounds each
    attempt from sending to the end of its body (OA-23). ``max_retries`` builds the
    `RetryPolicy` unless ``retry_policy`` is given. ``session``:
    an ``aiohttp.ClientSession`` to use (and leave open); by default the client creates
    one on first use, honouring ``HTTP_PROXY``/``HTTPS_PROXY``/``NO_PROXY`` when
    ``trust_env`` (OA-31), and closes it in ``aclose()`` / ``async with`` (PV-31);
    ``transport``: any `Transport` instead (PV-38). ``max_body_size`` and
    ``max_line_size`` bound what the server may send (PV-36). ``sleep`` and ``rng``
    replace ``asyncio.sleep`` and the random source of the backoff (tests, PV-32).
    ``options["model"]`` overrides ``model`` per call.
    """

    # appended to the base URL's path; a subclass for another endpoint sets its own
    path = "/chat/completions"
    api_key_env = "OPENAI_API_KEY"
    user_agent = USER_AGENT
    keeps_request_id = True  # OA-29
    # PV-45
    not_found_hint = (
        "is the base URL right? an OpenAI-compatible one usually ends in /v1"
    )
    hosted: ClassVar[tuple[str, ...]] = ("api.openai.com",)  # PV-46: no key, no request

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        organization: str | None = None,
        project: str | None = None,
        timeout: float | None = 60.0,
        total_timeout: float | None = 600.0,
        max_retries: int = 2,
        middleware: Any = None,
        function_invocation_configuration: FunctionInvocationConfiguration
        | None = None,
        session: ClientSession | None = None,
        retry_policy: RetryPolicy | None = None,
        default_headers: Mapping[str, str] | None = None,
        default_query: Mapping[str, str] | None = None,
        max_tokens_key: str = "max_completion_tokens",
        sleep: Callable[[float], Awaitable[object]] | None = None,
        rng: SupportsRandom | None = None,
        trust_env: bool = True,
        max_body_size: int = DEFAULT_MAX_BODY_SIZE,
        max_line_size: int = DEFAULT_MAX_LINE_SIZE,
        transport: Transport | None = None,
    ) -> None:
        self.organization = (
            organization
            if organization is not None
            else os.environ.get("OPENAI_ORG_ID") or None
        )
        self.project = (
            project
            if project is not None
            else os.environ.get("OPENAI_PROJECT_ID") or None
        )
        self.max_tokens_key = max_tokens_key
        self.trust_env = trust_env
        super().__init__(
            model,
            codec=self._codec(),
            transport=transport_for(transport, session=session, trust_env=trust_env),
            base_url=base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL,
            api_key=api_key
            if api_key is not None
            else os.environ.get(self.api_key_env, ""),
            timeout=timeout,
            total_timeout=total_timeout,
            max_retries=max_retries,
            retry_policy=retry_policy,
            default_headers=default_headers,
            default_query=default_query,
            sleep=sleep,
            rng=rng,
            max_body_size=max_body_size,
            max_line_size=max_line_size,
            middleware=middleware,
            function_invocation_configuration=function_invocation_configuration,
        )

    def _codec(self) -> WireCodec:
        """The wire format of this endpoint: Chat Completions (a subclass for another
        endpoint gives its own)."""
        return ChatCompletionsCodec(max_tokens_key=self.max_tokens_key)

    def _connection_headers(self) -> dict[str, str]:
        headers = {"User-Agent": self.user_agent}
        if self.organization:
            headers["OpenAI-Organization"] = self.organization
        if self.project:
            headers["OpenAI-Project"] = self.project
        return headers


class AzureOpenAIChatClient(OpenAIChatClient):
    """Chat Completions of an Azure OpenAI deployment (OA-32).

    ``POST {endpoint}/openai/deployments/{deployment}/chat/completions?api-version=...``
    with the ``api-key`` header (or ``Authorization: Bearer <ad_token>`` for an Entra ID
    token). ``endpoint``, ``api_key``, ``ad_token`` and ``api_version`` default to
    ``AZURE_OPENAI_ENDPOINT``, ``AZURE_OPENAI_API_KEY``, ``AZURE_OPENAI_AD_TOKEN`` and
    ``OPENAI_API_VERSION``; ``base_url`` replaces the deployment URL (for example
    ``{endpoint}/openai/v1``, where ``api_version`` is optional). Every other argument
    is the one of `OpenAIChatClient`.
    """

    api_key_env = "AZURE_OPENAI_API_KEY"
    # OB-28: the GenAI conventions' name for Azure OpenAI
    provider_name = "azure.ai.openai"
    # PV-45
    not_found_hint = "are the endpoint, the deployment name and api_version right?"
    # PV-46
    hosted = (
        ".openai.azure.com",
        ".cognitiveservices.azure.com",
        ".services.ai.azure.com",
    )

    def __init__(
        self,
        deployment: str,
        *,
        endpoint: str | None = None,
        api_key: str | None = None,
        api_version: str | None = None,
        ad_token: str | None = None,
        base_url: str | None = None,
        default_query: Mapping[str, str] | None = None,
        organization: str | None = None,
        project: str | None = None,
        **kwargs: Any,
    ) -> None:
        if not deployment or not isinstance(deployment, str):
            raise ValueError(
                "AzureOpenAIChatClient needs the deployment name as its first argument"
            )
        version = api_version or os.environ.get("OPENAI_API_VERSION") or None
        if base_url is None:
            endpoint = endpoint or os.environ.get("AZURE_OPENAI_ENDPOINT") or None
            if not endpoint:
                raise ValueError(
                    "AzureOpenAIChatClient needs endpoint= or AZURE_OPENAI_ENDPOINT"
                )
            if version is None:
                raise ValueError(
                    "AzureOpenAIChatClient needs api_version= or OPENAI_API_VERSION"
                )
            base_url = f"{endpoint.rstrip('/')}/openai/deployments/{deployment}"
        key = (
            api_key
            if api_key is not None
            else os.environ.get("AZURE_OPENAI_API_KEY", "")
        )
        self._ad_token = Secret(
            ad_token
            if ad_token is not None
            else os.environ.get("AZURE_OPENAI_AD_TOKEN", "")
        )
        query = dict(default_query or {})
        if version is not None:
            query["api-version"] = version
        self.api_version = version
        super().__init__(
            deployment,
            api_key=key,
            base_url=base_url,
            default_query=query,
            organization=organization or "",
            project=project or "",
            **kwargs,
        )

    @property
    def _secrets(self) -> tuple[Secret, ...]:
        return (self._api_key, self._url_password, self._ad_token)

    def _auth_headers(self) -> dict[str, str]:
        """The Entra ID token as ``Authorization: Bearer``, else the key as ``api-key``
        (OA-32)."""
        if self._ad_token:
            return {"Authorization": f"Bearer {self._ad_token.reveal()}"}
        return {"api-key": self._api_key.reveal()} if self._api_key else {}
