"""``python -m minagent``: the command line of `minagent.cli`, an optional folder
(spec/package.md PK-3)."""

from __future__ import annotations

import sys


def main() -> int:
    try:
        # the seam to the command line (spec/decisions.md)
        from .cli import main as cli_main
    except ModuleNotFoundError as exc:
        if exc.name != f"{__package__}.cli":
            raise
        print(
            "error: this copy of minagent has no minagent/cli/ folder; copy it to use the command line",
            file=sys.stderr,
        )
        return 2
    return cli_main()


if __name__ == "__main__":
    sys.exit(main())
