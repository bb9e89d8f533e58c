"""benchmarks/devserver_stream.py, the dev server's CPU per streamed response (issue
41), at one round: it serves its responses, its client's checks pass, it prints its
figures. Never a timed assertion: the figures are only looked for, not judged."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "devserver_stream.py"


def test_one_round_serves_every_chunk_and_prints_its_figures(tmp_path: Path) -> None:
    """HS-110: 40 responses of 500 chunks each on one kept-alive connection, each a
    chunked 200 holding exactly the chunks the application sent (the client exits
    non-zero otherwise); the current server and a copy given with ``--against`` are
    both measured and printed."""
    copy = tmp_path / "server_copy.py"
    copy.write_bytes((ROOT / "minagent" / "hosting" / "server.py").read_bytes())
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--rounds", "1", "--against", str(copy)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "server CPU per response of 500 chunks, 1 rounds (ms)"
    figure = r"\d+\.\d\d"
    assert len(lines) == 3
    names = ("minagent/hosting/server.py", "server_copy.py")
    for line, name in zip(lines[1:], names, strict=True):
        assert re.fullmatch(
            rf".*{re.escape(name)}: median {figure}, min {figure}, max {figure}", line
        ), line
