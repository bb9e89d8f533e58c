"""MessagePack in the standard library, the subset JSON data needs (spec/sessions.md
SE-24).

`packb` writes None, bool, int (64-bit), float (64-bit), str, bytes, lists and dicts
with str keys in their shortest MessagePack form; `unpackb` reads every MessagePack type
those produce and the other sizes of each (a file written by another implementation
reads back), and raises `ValueError` on truncated or unknown data. Nothing here holds
state.
"""

from __future__ import annotations

import struct
from typing import Any

__all__ = ["packb", "unpackb"]


def packb(value: Any) -> bytes:
    """``value`` (JSON-like data, or bytes) as MessagePack."""
    out = bytearray()
    _pack(value, out)
    return bytes(out)


def _header(
    out: bytearray, n: int, small: int, small_limit: int, codes: tuple[int, int, int]
) -> None:
    if n < small_limit:
        out.append(small | n)
    elif n < 0x100 and codes[0]:
        out += bytes((codes[0], n))
    elif n < 0x10000:
        out += struct.pack(">BH", codes[1], n)
    else:
        out += struct.pack(">BI", codes[2], n)


_UNSIGNED = (
    (0xCC, "B", 1 << 8),
    (0xCD, "H", 1 << 16),
    (0xCE, "I", 1 << 32),
    (0xCF, "Q", 1 << 64),
)
_SIGNED = (
    (0xD0, "b", 1 << 7),
    (0xD1, "h", 1 << 15),
    (0xD2, "i", 1 << 31),
    (0xD3, "q", 1 << 63),
)


def _pack(value: Any, out: bytearray) -> None:
    if value is None:
        out.append(0xC0)
    elif value is True or value is False:
        out.append(0xC3 if value else 0xC2)
    elif isinstance(value, int):
        if 0 <= value < 0x80 or -32 <= value < 0:
            out += struct.pack(">b" if value < 0 else ">B", value)
        else:
            sizes = _UNSIGNED if value >= 0 else _SIGNED
            code, fmt = next((c, f) for c, f, limit in sizes if -limit <= value < limit)
            out += struct.pack(f">B{fmt}", code, value)
    elif isinstance(value, float):
        out += struct.pack(">Bd", 0xCB, value)
    elif isinstance(value, str):
        data = value.encode("utf-8")
        _header(out, len(data), 0xA0, 32, (0xD9, 0xDA, 0xDB))
        out += data
    elif isinstance(value, bytes | bytearray):
        _header(out, len(value), 0, 0, (0xC4, 0xC5, 0xC6))
        out += value
    elif isinstance(value, list | tuple):
        _header(out, len(value), 0x90, 16, (0, 0xDC, 0xDD))
        for item in value:
            _pack(item, out)
    elif isinstance(value, dict):
        _header(out, len(value), 0x80, 16, (0, 0xDE, 0xDF))
        for key, item in value.items():
            _pack(key, out)
            _pack(item, out)
    else:
        raise TypeError(f"cannot write {type(value).__name__} as MessagePack")


# code -> (struct format of a fixed-size value, or of a length, and what the length
# counts)
_FIXED = {
    0xCA: ">f",
    0xCB: ">d",
    0xCC: ">B",
    0xCD: ">H",
    0xCE: ">I",
    0xCF: ">Q",
    0xD0: ">b",
    0xD1: ">h",
}
_FIXED |= {0xD2: ">i", 0xD3: ">q"}
_SIZED = {
    0xD9: (">B", "str"),
    0xDA: (">H", "str"),
    0xDB: (">I", "str"),
    0xC4: (">B", "bin"),
}
_SIZED |= {
    0xC5: (">H", "bin"),
    0xC6: (">I", "bin"),
    0xDC: (">H", "array"),
    0xDD: (">I", "array"),
}
_SIZED |= {0xDE: (">H", "map"), 0xDF: (">I", "map")}


def unpackb(data: bytes) -> Any:
    """The value `packb` (or any MessagePack writer, for these types) wrote."""
    value, end = _unpack(memoryview(data), 0)
    if end != len(data):
        raise ValueError(f"MessagePack data has {len(data) - end} extra bytes")
    return value


def _take(data: memoryview, at: int, n: int) -> tuple[memoryview, int]:
    if at + n > len(data):
        raise ValueError("MessagePack data is truncated")
    return data[at : at + n], at + n


def _unpack(data: memoryview, at: int) -> tuple[Any, int]:
    code = _take(data, at, 1)[0][0]
    at += 1
    if code < 0x80 or code >= 0xE0:
        return (code if code < 0x80 else code - 0x100), at
    if code < 0xC0:  # fixmap, fixarray, fixstr
        kind, n = (
            ("map", code & 0x0F)
            if code < 0x90
            else ("array", code & 0x0F)
            if code < 0xA0
            else ("str", code & 0x1F)
        )
        return _sized(data, at, kind, n)
    if code in (0xC0, 0xC2, 0xC3):
        return {0xC0: None, 0xC2: False, 0xC3: True}[code], at
    if code in _FIXED:
        fmt = _FIXED[code]
        raw, at = _take(data, at, struct.calcsize(fmt))
        return struct.unpack(fmt, raw)[0], at
    if code in _SIZED:
        fmt, kind = _SIZED[code]
        raw, at = _take(data, at, struct.calcsize(fmt))
        return _sized(data, at, kind, struct.unpack(fmt, raw)[0])
    raise ValueError(f"unsupported MessagePack type 0x{code:02x}")


def _sized(data: memoryview, at: int, kind: str, n: int) -> tuple[Any, int]:
    if kind in ("str", "bin"):
        raw, at = _take(data, at, n)
        return (bytes(raw).decode("utf-8") if kind == "str" else bytes(raw)), at
    if kind == "array":
        items = []
        for _ in range(n):
            item, at = _unpack(data, at)
            items.append(item)
        return items, at
    mapping = {}
    for _ in range(n):
        key, at = _unpack(data, at)
        mapping[key], at = _unpack(data, at)
    return mapping, at
