"""The version of minagent, in this one place (spec/package.md PK-2, PK-3)."""

__all__ = ["__version__"]

__version__ = "0.1.0"
