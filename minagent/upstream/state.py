"""``register_state_type``: upstream's way to let a class live in session state
(spec/sessions.md SE-2).

A registered class is written as its encoder's dict plus ``"type": type_id`` and
restored by its decoder; the core's `encode_state` / `decode_state` read the registry
this function fills.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from minagent import SerializationError
from minagent._sessions import STATE_TYPES_BY_CLASS, STATE_TYPES_BY_ID

__all__ = ["StateType", "register_state_type"]

# the core's encoder (or decoder) of the values inside
Recurse = Callable[[Any, str], Any]


@dataclass(frozen=True)
class StateType:
    """A class registered to live in session state (SE-2): an entry of the core's
    registries, which `encode_state` and `decode_state` call for its instances and its
    dicts."""

    cls: type[Any]
    type_id: str
    encoder: Callable[[Any], Mapping[str, Any]]
    decoder: Callable[[Mapping[str, Any]], Any]

    def encode(self, value: Any, path: str, encode: Recurse) -> dict[str, Any]:
        payload = self.encoder(value)
        if not isinstance(payload, Mapping):
            raise SerializationError(
                path, f"the encoder of {self.cls.__name__} returned no dict"
            )
        out = {k: encode(v, f"{path}.{k}") for k, v in payload.items() if k != "type"}
        out["type"] = self.type_id
        return out

    def decode(self, data: Mapping[str, Any], path: str, decode: Recurse) -> Any:
        try:
            return self.decoder({k: decode(v, f"{path}.{k}") for k, v in data.items()})
        except SerializationError:
            raise
        except Exception as exc:
            raise SerializationError(
                path, f"{self.cls.__name__} could not be restored: {exc}"
            ) from exc


def register_state_type(
    cls: type[Any],
    *,
    type_id: str | None = None,
    encoder: Callable[[Any], Mapping[str, Any]] | None = None,
    decoder: Callable[[Mapping[str, Any]], Any] | None = None,
) -> None:
    """Let instances of ``cls`` live in session state (SE-2, upstream's function).

    They are written as their encoder's dict plus ``"type": type_id`` and restored by
    the decoder. Without callbacks, a class with ``to_dict``/``from_dict`` or a
    pydantic-style model (``model_dump``/``model_validate``) gets default ones;
    ``type_id`` defaults to the class's ``_get_type_identifier()``, else its ``TYPE``,
    else the lowercased class name. Registering again the same way is a no-op; a
    conflict is a `ValueError`.
    """
    # upstream's spellings of a type id, then the class name
    named = getattr(cls, "_get_type_identifier", None)
    resolved = (
        type_id
        or (named() if callable(named) else None)
        or getattr(cls, "TYPE", None)
        or cls.__name__.lower()
    )
    if not isinstance(resolved, str) or not resolved or resolved == "message":
        raise ValueError(
            f"state type id must be a non-empty string other than 'message', got {resolved!r}"
        )
    if (encoder is None) != (decoder is None):
        raise ValueError("pass encoder and decoder together, or neither")
    known = STATE_TYPES_BY_CLASS.get(cls)
    if known is not None:
        if known.type_id != resolved or (
            encoder is not None and known.encoder is not encoder
        ):
            raise ValueError(
                f"{cls.__name__} is already registered as {known.type_id!r} with other callbacks"
            )
        return
    if resolved in STATE_TYPES_BY_ID:
        raise ValueError(
            f"state type id {resolved!r} is already registered for {STATE_TYPES_BY_ID[resolved].cls.__name__}"
        )
    if encoder is None or decoder is None:
        if callable(getattr(cls, "to_dict", None)) and callable(
            getattr(cls, "from_dict", None)
        ):
            encoder, decoder = (
                (lambda value: value.to_dict()),
                (lambda data: cls.from_dict(dict(data))),
            )
        elif callable(getattr(cls, "model_dump", None)) and callable(
            getattr(cls, "model_validate", None)
        ):
            encoder = lambda value: value.model_dump(mode="json")  # noqa: E731
            decoder = lambda data: cls.model_validate(  # noqa: E731
                {k: v for k, v in data.items() if k != "type"}
            )
        else:
            raise ValueError(
                f"{cls.__name__} needs to_dict()/from_dict(), a pydantic model's model_dump()/model_validate(), "
                "or encoder= and decoder= to live in session state"
            )
    entry = StateType(cls, resolved, encoder, decoder)
    STATE_TYPES_BY_ID[resolved] = entry
    STATE_TYPES_BY_CLASS[cls] = entry
