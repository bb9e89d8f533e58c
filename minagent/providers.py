"""What provider plugins share: typed errors, the retry policy, secret handling and the sans-I/O
server-sent events decoder (spec/providers.md).

This is the public home of `minagent._providers` and `minagent._sse`; a plugin imports from here.
"""

from ._providers import *  # noqa: F403 - the public names are _providers.__all__ and the SSE decoder's
from ._providers import __all__ as _provider_names
from ._sse import SSEDecoder, SSEEvent, SSELimitError

__all__ = [*_provider_names, "SSEDecoder", "SSEEvent", "SSELimitError"]
