"""A process that ignores SIGTERM and never reads its stdin: closing must escalate to
SIGKILL."""

import signal
import time

signal.signal(signal.SIGTERM, signal.SIG_IGN)
print("ready", flush=True, file=__import__("sys").stderr)
while True:
    time.sleep(1)
