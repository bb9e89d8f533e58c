"""A process that reads its stdin and never answers: `initialize` must time out."""

import sys

for _line in sys.stdin:
    pass
