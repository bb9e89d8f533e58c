"""The shared server-sent events decoder (`minagent.providers`, spec/providers.md PV-17 .. PV-21),
imported here under this plugin's old module name."""

from minagent.providers import SSEDecoder, SSEEvent, SSELimitError

__all__ = ["SSEDecoder", "SSEEvent", "SSELimitError"]
