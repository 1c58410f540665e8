"""The brokers the suite starts itself: each on a free loopback port, in its own temporary
directory, in its own process group; stopped (SIGTERM, then SIGKILL) when the run ends.

Durability, as configured here (docs/benchmarks.md repeats it):

- ``mqlite serve``: WAL, ``synchronous=NORMAL`` (the default: a commit survives a crash
  of the process, the last ones may be lost on power loss), log level WARNING.
- RabbitMQ: durable classic queue, persistent messages, publisher confirms (a confirm is
  sent once the message is fsynced to disk, batched across publishers).
- Redis: AOF with ``appendfsync everysec`` (like NORMAL: fsync once a second) and, as a
  second server, ``appendfsync always`` (fsync before replying, like FULL); no RDB.
- NATS JetStream: file storage; nats-server 2.9 writes before the PubAck and leaves fsync
  to the OS (its sync interval is not configurable before 2.10): like NORMAL.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import probes

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # http_bench.py, a sibling script

import http_bench  # noqa: E402

HOST = "127.0.0.1"


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


@dataclass
class Server:
    """One broker we started: where it listens, its process tree, its data on disk."""

    name: str
    port: int
    proc: subprocess.Popen[bytes]
    data: Path
    log: Path
    token: str = ""
    extra: dict[str, str] = field(default_factory=dict)
    _pids: list[int] = field(default_factory=list)

    def pids(self) -> list[int]:
        """The process tree, read once after start (brokers do not fork per request)."""
        if not self._pids:
            self._pids = probes.tree(self.proc.pid)
        return self._pids

    def describe(self) -> dict[str, object]:
        return {"name": self.name, "port": self.port, "token": self.token,
                "pids": self.pids(), "data": str(self.data), **self.extra}  # fmt: skip

    def stop(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


def _spawn(cmd: list[str], env: dict[str, str], cwd: Path, log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(cmd, env=env, cwd=cwd, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)  # fmt: skip


def _wait_port(server: Server, deadline_s: float) -> None:
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        if server.proc.poll() is not None:
            tail = server.log.read_text(errors="replace")[-2000:]
            raise RuntimeError(f"{server.name} exited with {server.proc.returncode}:\n{tail}")
        with contextlib.suppress(OSError), socket.create_connection((HOST, server.port), 0.5):
            return
        time.sleep(0.1)
    server.stop()
    raise RuntimeError(f"{server.name}: nothing listens on {server.port} after {deadline_s} s")


def mqlite_serve(tmp: Path) -> Server:
    data = tmp / "mqlite-serve"
    data.mkdir()
    port, token = free_port(), "mqk_" + secrets.token_hex(32)
    env = http_bench.broker_env(data, token, "WARNING")
    env["MQLITE_DB"] = f"file:{data}/mq.db"
    cmd = [sys.executable, "-m", "mqlite.cli.main", "serve", "--addr", f"{HOST}:{port}"]
    server = Server("mqlite-http", port, _spawn(cmd, env, http_bench.REPO, tmp / "mqlite.log"),
                    data, tmp / "mqlite.log", token)  # fmt: skip
    _wait_port(server, 60)
    deadline = time.monotonic() + 30
    while len(server.pids()) < 2 and time.monotonic() < deadline:  # gunicorn's worker
        server._pids = []
        time.sleep(0.1)
    return server


def _epmd_pids() -> set[int]:
    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError):
                if Path(f"/proc/{entry}/comm").read_text().strip() == "epmd":
                    found.add(int(entry))
    return found


def rabbitmq(tmp: Path) -> Server:
    data = tmp / "rabbitmq"
    data.mkdir()
    port, dist = free_port(), free_port()
    (data / "enabled_plugins").write_text("[].\n")  # no management plugin
    env = dict(
        os.environ,
        HOME=str(data),  # the Erlang cookie lands here, not in root's home
        RABBITMQ_NODENAME=f"mqbench{os.getpid()}@localhost",
        RABBITMQ_NODE_IP_ADDRESS=HOST,
        RABBITMQ_NODE_PORT=str(port),
        RABBITMQ_DIST_PORT=str(dist),
        RABBITMQ_MNESIA_BASE=str(data / "mnesia"),
        RABBITMQ_LOG_BASE=str(data / "log"),
        RABBITMQ_ENABLED_PLUGINS_FILE=str(data / "enabled_plugins"),
        RABBITMQ_CONFIG_FILE=str(data / "rabbitmq"),
    )
    epmd_before = _epmd_pids()
    # The server script itself: as root, /usr/sbin's wrapper switches to the rabbitmq
    # user, who cannot write this directory.
    cmd = ["/usr/lib/rabbitmq/bin/rabbitmq-server"]
    server = Server("rabbitmq", port, _spawn(cmd, env, data, tmp / "rabbitmq.log"),
                    data / "mnesia", tmp / "rabbitmq.log")  # fmt: skip
    _wait_port(server, 120)
    # An epmd that RabbitMQ had to start is ours to stop (one already running is not).
    server.extra["epmd_started"] = ",".join(str(p) for p in _epmd_pids() - epmd_before)
    return server


def stop_rabbitmq_epmd(server: Server) -> None:
    for pid in filter(None, server.extra.get("epmd_started", "").split(",")):
        with contextlib.suppress(ProcessLookupError, ValueError):
            if Path(f"/proc/{pid}/comm").read_text().strip() == "epmd":
                os.kill(int(pid), signal.SIGTERM)


def redis(tmp: Path, fsync: str) -> Server:
    data = tmp / f"redis-{fsync}"
    data.mkdir()
    port = free_port()
    cmd = ["redis-server", "--port", str(port), "--bind", HOST, "--save", "",
           "--appendonly", "yes", "--appendfsync", fsync, "--dir", str(data)]  # fmt: skip
    name = f"redis-aof-{fsync}"
    server = Server(name, port, _spawn(cmd, dict(os.environ), data, tmp / f"{name}.log"),
                    data, tmp / f"{name}.log")  # fmt: skip
    _wait_port(server, 30)
    return server


def nats(tmp: Path) -> Server:
    data = tmp / "nats"
    data.mkdir()
    port = free_port()
    cmd = ["nats-server", "-js", "-a", HOST, "-p", str(port), "-sd", str(data)]
    server = Server("nats-js", port, _spawn(cmd, dict(os.environ), data, tmp / "nats.log"),
                    data, tmp / "nats.log")  # fmt: skip
    _wait_port(server, 30)
    return server


STARTERS = {
    "mqlite-http": mqlite_serve,
    "rabbitmq": rabbitmq,
    "redis-aof-everysec": lambda tmp: redis(tmp, "everysec"),
    "redis-aof-always": lambda tmp: redis(tmp, "always"),
    "nats-js": nats,
}

# Which executable each server needs (deps.sh installs them); a missing one is reported.
NEEDS = {
    "rabbitmq-server": "/usr/lib/rabbitmq/bin/rabbitmq-server",
    "redis-server": "redis-server",
    "nats-server": "nats-server",
}
NEEDED_BY = {"rabbitmq": "rabbitmq-server", "redis-aof-everysec": "redis-server",
             "redis-aof-always": "redis-server", "nats-js": "nats-server"}  # fmt: skip


def missing(name: str) -> str | None:
    """Why server ``name`` cannot start here (its executable is absent), or None."""
    package = NEEDED_BY.get(name)
    if package is None:
        return None
    exe = NEEDS[package]
    if os.path.isabs(exe) and os.access(exe, os.X_OK):
        return None
    if not os.path.isabs(exe) and shutil.which(exe):
        return None
    return (
        f"Debian package {package} is not installed ({exe} not found; "
        "run tests/bench/suite/deps.sh)"
    )


def stop(server: Server) -> None:
    server.stop()
    if server.name == "rabbitmq":
        stop_rabbitmq_epmd(server)
