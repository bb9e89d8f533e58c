"""What provider plugins share: typed errors, the retry policy, secret handling (spec/providers.md).

This is the public home of `minagent._providers`; a plugin imports from here.
"""

from ._providers import (
    AuthenticationError,
    BadRequestError,
    NotFoundError,
    ProviderConnectionError,
    ProviderError,
    ProviderTimeoutError,
    RateLimitError,
    RetryPolicy,
    Secret,
    ServerError,
    StreamInterruptedError,
    SupportsRandom,
    describe,
    error_for_status,
    parse_duration,
    redact,
    retry_call,
    server_delay,
)

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
    "retry_call",
    "server_delay",
]
