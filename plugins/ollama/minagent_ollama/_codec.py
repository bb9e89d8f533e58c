"""The sans-I/O codec of Ollama's native chat API (spec/ollama.md, spec/providers.md).

Theory of operation
-------------------
Requests and responses are plain data on both sides; nothing here touches a socket, a task
or a clock, and aiohttp is never imported (PV-1).

* ``build_request(messages, options, *, model, stream)`` renders minagent messages and options
  as the JSON body of ``POST /api/chat`` (OL-1 .. OL-10). Sampling options go into Ollama's
  nested ``options`` object through one table, ``_MODEL_OPTIONS``; an option the codec does
  not know is refused with what to write instead (``options["extra_body"]``, OL-24).
* ``parse_response(body, id_seed=...)`` turns a non-streaming body into a ``ChatResponse``
  (OL-11 .. OL-15).
* ``OllamaStreamDecoder`` turns the bytes of a streaming answer (NDJSON: one JSON object per
  line) into ``ChatResponseUpdate``s. Its state is the unfinished last line and the number of
  tool calls seen so far, which numbers the calls for their generated ids (OL-15, OL-17).
* Ollama may send no tool-call ids. ``_CallIds`` makes deterministic ones from the request's
  ``call_id_seed`` and the call itself, so the same request answered the same way gives the
  same ids in both modes, and call/result pairs survive a move to another provider.
* ``parse_error`` / ``error_for_answer`` turn a non-2xx answer into a typed error (OL-19,
  OL-20).

The codec lives in three modules — ``_request`` (the body and the host), ``_response`` (whole
bodies and streams) and ``_errors`` — and this module is their public face.

A streamed chunk and a whole body have the same shape, so one function (``_contents``) maps
both; streaming and non-streaming therefore agree (PV-9).
"""

from __future__ import annotations

from ._errors import (
    OllamaModelNotFoundError,
    OllamaProtocolError,
    OllamaStreamError,
    error_for_answer,
    parse_error,
)
from ._request import DEFAULT_HOST, build_request, call_id_seed, parse_host
from ._response import DEFAULT_MAX_LINE_SIZE, OllamaStreamDecoder, parse_response

__all__ = [
    "DEFAULT_HOST",
    "DEFAULT_MAX_LINE_SIZE",
    "OllamaModelNotFoundError",
    "OllamaProtocolError",
    "OllamaStreamDecoder",
    "OllamaStreamError",
    "build_request",
    "call_id_seed",
    "error_for_answer",
    "parse_error",
    "parse_host",
    "parse_response",
]
