"""Real ``celery worker`` processes for the Celery tier (the app is ``celery_app``).

``Workers.start(name, env)`` runs ``python -m celery -A celery_app worker --pool=prefork
--concurrency=2`` in its own process group with this directory on ``PYTHONPATH`` and
waits (bounded) for ``ready.`` in its log; teardown kills every group it started.
Polls with deadlines, never open-ended sleeps (this is the e2e tier).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from e2e_support import scaled

HERE = Path(__file__).resolve().parent
READY_DEADLINE_S = 30.0
T = TypeVar("T")


def celery_env(broker: str, results: Path, ledger: Path, queue: str,
               options: Mapping[str, Any]) -> dict[str, str]:  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MQLITE_", "CELERY_"))}
    env.update(
        CELERY_TEST_BROKER=broker,
        CELERY_TEST_RESULTS=str(results),
        CELERY_TEST_LEDGER=str(ledger),
        CELERY_TEST_QUEUE=queue,
        CELERY_TEST_OPTIONS=json.dumps(dict(options)),
        PYTHONPATH=str(HERE) + os.pathsep + env.get("PYTHONPATH", ""),
        PYTHONUNBUFFERED="1",
    )
    return env


def celery(args: list[str], env: Mapping[str, str], cwd: Path, timeout: float = 60) -> str:
    """Run a ``celery -A celery_app ...`` command to completion; its output."""
    out = subprocess.run(
        [sys.executable, "-m", "celery", "-A", "celery_app", *args],
        env=dict(env), cwd=cwd, capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip
    assert out.returncode == 0, (out.returncode, out.stdout, out.stderr[-3000:])
    return out.stdout + out.stderr


def wait_for(what: str, probe: Callable[[], T | None], deadline_s: float = 60.0) -> T:
    """Poll the real workers' outcome; the deadline is an idle machine's, stretched by the
    measured slowdown (e2e_support.scaled): Celery's prefork children restart and import
    again after each crash, and at a load of 2 CPU hogs beside make test's four processes
    the three dead letters of the rejection test took over 60 s (issue 25)."""
    deadline = time.monotonic() + scaled(deadline_s)
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def ledger_lines(path: Path, kind: str) -> list[list[str]]:
    if not path.exists():
        return []
    rows = [line.split() for line in path.read_text().splitlines()]
    return [r[1:] for r in rows if r and r[0] == kind]


@dataclass
class Worker:
    name: str
    proc: subprocess.Popen[bytes]
    log: Path

    @property
    def node(self) -> str:
        """The node name ``-n NAME@%h`` expands to (what ``celery inspect -d`` takes)."""
        return f"{self.name}@{socket.gethostname()}"

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def kill(self) -> None:
        """SIGKILL the whole worker: the main process and its pool processes."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=10)

    def stop(self, timeout: float = 30.0) -> int:
        """Warm shutdown (SIGTERM): running tasks finish, the channel closes cleanly."""
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"{self.name} ignored SIGTERM:\n{self.output()[-3000:]}") from None


class Workers:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.started: list[Worker] = []

    def start(self, name: str, env: Mapping[str, str], cwd: Path,
              extra: tuple[str, ...] = ()) -> Worker:  # fmt: skip
        log = self.root / f"{name}.log"
        cmd = [
            sys.executable, "-m", "celery", "-A", "celery_app", "worker",
            "--pool=prefork", "--concurrency=2", "-n", f"{name}@%h",
            "--without-mingle", "--without-gossip", "--loglevel=INFO", *extra,
        ]  # fmt: skip
        with log.open("wb") as out:
            proc = subprocess.Popen(
                cmd, env=dict(env), cwd=cwd, stdout=out, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, start_new_session=True,
            )  # fmt: skip
        worker = Worker(name, proc, log)
        self.started.append(worker)
        deadline = time.monotonic() + READY_DEADLINE_S
        while " ready." not in worker.output():
            if proc.poll() is not None or time.monotonic() > deadline:
                worker.kill() if proc.poll() is None else None
                raise AssertionError(f"worker {name} did not start:\n{worker.output()[-4000:]}")
            time.sleep(0.05)
        return worker

    def teardown(self) -> None:
        for w in self.started:
            if w.proc.poll() is None:
                w.kill()
