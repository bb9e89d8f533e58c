"""Tool descriptions from docstrings: the summary and each parameter's text
(spec/schema.md SC-20 .. SC-22).

Google (``Args:``) and Sphinx (``:param x:``) styles; used by `function_schema`.
"""

from __future__ import annotations

import re

__all__ = ["parse_docstring"]

_ARGS_SECTIONS = (
    "args|arguments|parameters|params|keyword args|keyword arguments|other parameters"
)
# Patterns as strings: `re` compiles and caches them on first use, not at import
# (docstrings are parsed only when a tool is defined).
_SECTION = r"^[A-Z][A-Za-z ]*:$"  # a Google section header: Args:, Returns:, ...
_SPHINX_FIELD = r"^:\w+[^:]*:"
_SPHINX_PARAM = r"^:(?:param|parameter|arg|argument|key|keyword)\s+(?:[^:]*?\s+)?(\*{0,2}\w+)\s*:\s*(.*)$"
_GOOGLE_ARG = r"^(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$"


def parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """SC-20 .. SC-22: the description, and the description of each parameter."""
    lines = doc.splitlines()
    starts = [
        bool(re.match(_SECTION, s) or re.match(_SPHINX_FIELD, s))
        for s in map(str.strip, lines)
    ]
    end = starts.index(True) if True in starts else len(lines)
    entries: dict[str, list[str]] = {}
    entry: list[str] | None = None  # the entry that deeper-indented lines continue
    entry_indent = 0
    args_indent: int | None = None  # the indentation of the open Args: header
    for line in lines[end:]:
        text, indent = line.strip(), len(line) - len(line.lstrip())
        if not text:
            continue
        if (
            entry is not None
            and indent > entry_indent
            and not re.match(_SPHINX_FIELD, text)
        ):
            entry.append(text)
            continue
        entry = None
        if args_indent is not None and indent <= args_indent:
            args_indent = None
        match = re.match(_SPHINX_PARAM, text)
        if match is None and args_indent is not None:
            match = re.match(_GOOGLE_ARG, text)
        if match is not None:
            entry, entry_indent = [match.group(2)], indent
            entries[match.group(1)] = entry
        elif re.fullmatch(rf"({_ARGS_SECTIONS})\s*:", text, re.IGNORECASE):
            args_indent = indent
    described = {
        name: " ".join(" ".join(parts).split()) for name, parts in entries.items()
    }
    return "\n".join(lines[:end]).strip(), described
