"""A real PostgreSQL server for the tests (spec/dbos.md DU-15): Debian's ``postgresql``
package, initialised in a temporary directory and started on a free port as an
unprivileged user (as root, the ``postgres`` user the package creates: the server
refuses to run as root), then stopped."""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path


def binaries() -> Path | None:
    """The directory of ``initdb`` and ``pg_ctl``: on PATH, or Debian's
    /usr/lib/postgresql/N/bin."""
    found = shutil.which("initdb")
    if found is not None and shutil.which("pg_ctl") is not None:
        return Path(found).resolve().parent
    versions = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"),
        key=lambda p: int(p.split("/")[4]),
    )
    return Path(versions[-1]).parent if versions else None


def missing() -> str | None:
    """Why no server can be started here, or None."""
    if binaries() is None:
        return (
            "needs PostgreSQL's server programs (Debian: apt-get install -y postgresql)"
        )
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return "running as root needs the 'postgres' user (Debian's postgresql package creates it)"
    return None


class PostgresServer:
    """One server in a directory of its own; ``url`` is a database for DBOS to create
    and use."""

    def __init__(self, *, fsync: bool = False) -> None:
        bin_dir = binaries()
        assert bin_dir is not None
        self.bin = bin_dir
        self.directory = Path(tempfile.mkdtemp(prefix="minagent-pg-"))
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.user: pwd.struct_passwd | None = (
            pwd.getpwnam("postgres") if os.geteuid() == 0 else None
        )
        self.started = False
        # off for the tests (speed); on for the benchmark (what a deployment has)
        self.fsync = fsync

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/minagent_tests"

    def _as_user(self, *command: str) -> list[str]:
        return (
            ["runuser", "-u", "postgres", "--", *command]
            if self.user is not None
            else list(command)
        )

    def start(self) -> None:
        data = self.directory / "data"
        if self.user is not None:
            os.chown(self.directory, self.user.pw_uid, self.user.pw_gid)
        subprocess.run(
            self._as_user(
                str(self.bin / "initdb"),
                "-D",
                str(data),
                "-U",
                "postgres",
                "--auth=trust",
                "-E",
                "UTF8",
            ),
            check=True,
            capture_output=True,
        )
        options = f"-p {self.port} -k {self.directory} -c listen_addresses=127.0.0.1 -c max_connections=300"
        if not self.fsync:
            options += " -c fsync=off"
        subprocess.run(
            self._as_user(
                str(self.bin / "pg_ctl"),
                "-D",
                str(data),
                "-l",
                str(self.directory / "log"),
                "-w",
                "-o",
                options,
                "start",
            ),
            check=True,
            capture_output=True,
            timeout=120,
        )
        self.started = True
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError("postgres did not start")

    def stop(self) -> None:
        if self.started:
            subprocess.run(
                self._as_user(
                    str(self.bin / "pg_ctl"),
                    "-D",
                    str(self.directory / "data"),
                    "-m",
                    "fast",
                    "-w",
                    "stop",
                ),
                check=True,
                capture_output=True,
                timeout=120,
            )
            self.started = False
        shutil.rmtree(self.directory, ignore_errors=True)
