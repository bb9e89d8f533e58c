"""The middleware library: retries, fallback, limits, approval, history processing,
redaction (spec/middleware-library.md).

Each class is written on the public hook API (`minagent.hooks`) or as plain chat
middleware, and each rule is in spec/middleware-library.md (ML-*). Nothing here is
imported by ``import minagent``; import ``minagent.middleware`` when you need it.

Rules
-----
1. One concern a file: `retry.py`, `fallback.py`, `limits.py`, `approval.py`,
   `history.py`, `redact.py`, `injection.py` (upstream's message injection); an error
   lives with the middleware that raises it. `per_run.py` holds the per-run state the
   limits and the approval share, `checks.py` the argument checks of every constructor
   and what `retry.py` and `fallback.py` both count as retryable (public names: no file
   takes a private name of another).
2. ``__init__`` only re-exports.
3. The library reaches the core through public names and the hooks through
   `minagent.hooks` (one private use: `per_run.py` extends ``HookMiddleware._compile``),
   and upstream's exception names through `minagent.upstream`; the core knows nothing of
   it.
"""

from .approval import Approve, Edit, HumanApproval, Reject
from .fallback import FallbackExhaustedError, ModelFallback
from .history import HistoryTrimmer, Summarizer, approx_tokens

# importable from here, as before (not in __all__)
from .history import clean_cut as clean_cut
from .injection import (
    MESSAGE_INJECTION_PENDING_MESSAGES_STATE_KEY,
    MessageInjectionMiddleware,
    enqueue_messages,
)
from .limits import CallLimitExceededError, ModelCallLimit, ToolCallLimit
from .redact import Redact
from .retry import ModelRetry, ToolRetry

__all__ = [
    "MESSAGE_INJECTION_PENDING_MESSAGES_STATE_KEY",
    "Approve",
    "CallLimitExceededError",
    "Edit",
    "FallbackExhaustedError",
    "HistoryTrimmer",
    "HumanApproval",
    "MessageInjectionMiddleware",
    "ModelCallLimit",
    "ModelFallback",
    "ModelRetry",
    "Redact",
    "Reject",
    "Summarizer",
    "ToolCallLimit",
    "ToolRetry",
    "approx_tokens",
    "enqueue_messages",
]
