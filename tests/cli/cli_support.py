"""CLI test support: run the REAL ``mqlite`` entry point as a subprocess, embedded on a temp
DB or as a client of a real ``mqlite serve`` subprocess on a free loopback port."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import mqlite
from waiting import poll_real_process

APP_DIR = str(Path(mqlite.__file__).resolve().parents[1])
RUN_TIMEOUT_S = 30
ADMIN_TOKEN = "mqk_cli_test_admin_token"


def base_env(**extra: str) -> dict[str, str]:
    """The parent environment minus every ambient MQLITE_* variable, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MQLITE_")}
    env["PYTHONPATH"] = APP_DIR + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra)
    return env


def mqlite_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "mqlite.cli.main", *args]


@dataclass
class Cli:
    """Runs ``mqlite`` in one mode; ``env`` selects embedded (MQLITE_DB) or client."""

    mode: str
    env: dict[str, str]
    db_path: Path
    endpoint: str = ""
    extra: dict[str, str] = field(default_factory=dict)

    def run(
        self,
        *args: str,
        input: bytes | None = None,
        env: dict[str, str] | None = None,
        **kw: Any,
    ) -> subprocess.CompletedProcess[bytes]:
        merged = {**self.env, **(env or {})}
        kw.setdefault("stdout", subprocess.PIPE)
        kw.setdefault("stderr", subprocess.PIPE)
        return subprocess.run(
            mqlite_cmd(*args), input=input, env=merged, timeout=RUN_TIMEOUT_S, **kw
        )

    def ok(self, *args: str, **kw: Any) -> str:
        r = self.run(*args, **kw)
        assert r.returncode == 0, (args, r.returncode, r.stdout, r.stderr)
        return r.stdout.decode()

    def json(self, *args: str, **kw: Any) -> Any:
        return json.loads(self.ok(*args, "--output", "json", **kw))

    def stats(self, queue: str) -> dict[str, int]:
        return self.json("metrics", queue)  # type: ignore[no-any-return]

    @contextmanager
    def sdk(self) -> Iterator[Any]:
        """The same database through the SDK, in-process (setup and checks, not the CLI)."""
        if self.mode == "client":
            client = mqlite.connect(self.endpoint, token=ADMIN_TOKEN)  # type: ignore[attr-defined]
        else:
            client = mqlite.open_embedded(f"file:{self.db_path}", background=False)
        try:
            yield client
        finally:
            client.close()

    def setup_queue(self, queue: str, *bodies: bytes, **config: Any) -> None:
        with self.sdk() as c:
            c.create_queue(queue, mqlite.QueueConfig(**config) if config else None)
            for body in bodies:
                c.send_one(queue, mqlite.OutMessage(body=body))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Broker:
    proc: subprocess.Popen[bytes]
    endpoint: str
    db_path: Path
    log: Path


def start_broker(data_dir: Path, token: str = ADMIN_TOKEN) -> Broker:
    port = free_port()
    db = data_dir / "mq.db"
    log = data_dir / "broker.log"
    env = base_env(MQLITE_DB=f"file:{db}", MQLITE_TOKENS=token)
    with open(log, "wb") as fh:
        proc = subprocess.Popen(
            mqlite_cmd("serve", "--addr", f"127.0.0.1:{port}"),
            env=env,
            stdout=fh,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    endpoint = f"http://127.0.0.1:{port}"

    def healthy() -> bool:
        if proc.poll() is not None:
            raise RuntimeError(f"broker exited: {log.read_text()}")
        try:
            with urllib.request.urlopen(endpoint + "/healthz", timeout=1) as resp:
                return bool(resp.status == 200)
        except OSError:
            return False

    try:
        poll_real_process("the broker's /healthz", healthy, deadline_s=20)
    except AssertionError:
        stop_broker(Broker(proc, endpoint, db, log))
        raise RuntimeError(f"broker did not become healthy: {log.read_text()}") from None
    return Broker(proc, endpoint, db, log)


def stop_broker(broker: Broker) -> None:
    if broker.proc.poll() is None:
        os.killpg(broker.proc.pid, signal.SIGTERM)  # its own session: gunicorn + worker
        try:
            broker.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(broker.proc.pid, signal.SIGKILL)
            broker.proc.wait(timeout=5)
