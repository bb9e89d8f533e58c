"""What provider plugins build on: typed errors, the retry policy, secret handling, the sans-I/O
server-sent events decoder and plugin discovery (spec/providers.md). A plugin imports from here.

Optional: the core never imports this folder; ``minagent.get_client`` and the provider errors
(``minagent.RateLimitError``, ...) load it on first use.
"""

from .errors import *  # noqa: F403 - the public names are errors.__all__
from .errors import __all__ as _error_names
from .registry import ENTRY_POINT_GROUP, PluginNotFoundError, available_providers, get_client
from .sse import SSEDecoder, SSEEvent, SSELimitError

__all__ = [
    *_error_names,
    "ENTRY_POINT_GROUP",
    "PluginNotFoundError",
    "SSEDecoder",
    "SSEEvent",
    "SSELimitError",
    "available_providers",
    "get_client",
]
