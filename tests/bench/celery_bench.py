"""Celery throughput on mqlite, next to Celery on Redis and on RabbitMQ, in one run.

Run from the repository root (not collected by pytest; it prints, it asserts nothing)::

    .venv/bin/python tests/bench/celery_bench.py [--tasks N] [--concurrency C] [--only NAME]

Brokers, each started by this script on a free loopback port in a temporary directory and
stopped before the next one starts (and in any case on the way out):

- ``mqlite http``: ``mqlite serve`` (MQLITE_LOG_LEVEL=WARNING), ``mqlite+http://``;
- ``mqlite embedded``: ``mqlite:///mq.db``, the engine inside the producer, then inside
  the worker (one process at a time, as docs/celery.md says);
- ``redis``: Debian's ``redis-server`` (no persistence: its default for a cache), kombu's
  ``redis://`` transport (the ``redis`` client is pip-installed if missing);
- ``rabbitmq``: Debian's ``rabbitmq-server`` (one node, durable queues, persistent
  messages: Celery's defaults), kombu's ``amqp://`` (py-amqp).

Missing Debian packages are installed with apt-get (as root). For each broker, two
figures with the same app (``celery_bench_app``: ``acks_late``, no results, a task that
appends one line to a ledger file), the same worker (prefork, ``--concurrency``
processes, Celery's default prefetch) and the same N tasks:

1. **publish**: N ``delay()`` calls from one process with no worker running, tasks/s;
2. **drain**: a worker starts on that backlog; tasks/s from the worker's ``ready`` line to
   the ledger's N-th line (every task ran; the ledger is checked for none missing).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
DEBIAN = {"redis": "redis-server", "rabbitmq": "rabbitmq-server"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def ensure_debian(package: str) -> None:
    if shutil.which(package) or Path(f"/usr/sbin/{package}").exists():
        return
    if os.geteuid() != 0:
        raise SystemExit(f"{package} is missing: apt-get install {package} (as root)")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    apt = ["apt-get", "-o", "DPkg::Lock::Timeout=600", "-qq"]
    subprocess.run([*apt, "update"], check=True, env=env)
    subprocess.run([*apt, "install", "-y", "--no-install-recommends", package], check=True, env=env)


def ensure_redis_client() -> None:
    try:
        import redis  # noqa: F401
    except ImportError:
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "redis>=4.5"], check=True)


def wait_port(port: int, deadline_s: float, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"broker exited with {proc.returncode}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.5):
            return
        time.sleep(0.1)
    raise RuntimeError(f"nothing listens on {port} after {deadline_s} s")


@dataclass
class Broker:
    name: str
    url: str
    options: dict[str, object] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)


@contextlib.contextmanager
def process(
    cmd: list[str], env: dict[str, str], cwd: Path, log: Path
) -> Iterator[subprocess.Popen[bytes]]:
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
    try:
        yield proc
    finally:
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


@contextlib.contextmanager
def mqlite_http(tmp: Path) -> Iterator[Broker]:
    port, token = free_port(), "mqk_" + secrets.token_hex(16)
    env = dict(os.environ, MQLITE_DB=f"file:{tmp / 'mq.db'}", MQLITE_TOKENS=token,
               MQLITE_LOG_LEVEL="WARNING")  # fmt: skip
    cmd = [sys.executable, "-m", "mqlite.cli.main", "serve", "--addr", f"127.0.0.1:{port}"]
    with process(cmd, env, tmp, tmp / "broker.log") as proc:
        wait_port(port, 30, proc)
        yield Broker("mqlite http", f"mqlite+http://127.0.0.1:{port}", {"token": token})


@contextlib.contextmanager
def mqlite_embedded(tmp: Path) -> Iterator[Broker]:
    yield Broker("mqlite embedded", "mqlite:///mq.db")


@contextlib.contextmanager
def redis(tmp: Path) -> Iterator[Broker]:
    ensure_debian("redis-server")
    ensure_redis_client()
    port = free_port()
    cmd = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
           "--appendonly", "no", "--dir", str(tmp)]  # fmt: skip
    with process(cmd, dict(os.environ), tmp, tmp / "broker.log") as proc:
        wait_port(port, 30, proc)
        yield Broker("redis", f"redis://127.0.0.1:{port}/0")


@contextlib.contextmanager
def rabbitmq(tmp: Path) -> Iterator[Broker]:
    ensure_debian("rabbitmq-server")
    port, dist = free_port(), free_port()
    node = f"bench{os.getpid()}@localhost"
    (tmp / "enabled_plugins").write_text("[].\n")
    env = dict(
        os.environ,
        HOME=str(tmp),  # the Erlang cookie lands here, not in root's home
        RABBITMQ_NODENAME=node,
        RABBITMQ_NODE_IP_ADDRESS="127.0.0.1",
        RABBITMQ_NODE_PORT=str(port),
        RABBITMQ_DIST_PORT=str(dist),
        RABBITMQ_MNESIA_BASE=str(tmp / "mnesia"),
        RABBITMQ_LOG_BASE=str(tmp / "log"),
        RABBITMQ_ENABLED_PLUGINS_FILE=str(tmp / "enabled_plugins"),
        RABBITMQ_CONFIG_FILE=str(tmp / "rabbitmq"),
    )
    # The real server, not /usr/sbin's wrapper: as root the wrapper switches to the
    # rabbitmq user, who cannot write this temporary directory.
    server = "/usr/lib/rabbitmq/bin/rabbitmq-server"
    with process([server], env, tmp, tmp / "broker.log") as proc:
        wait_port(port, 90, proc)
        yield Broker("rabbitmq", f"amqp://guest:guest@127.0.0.1:{port}//")


BROKERS = {"mqlite-http": mqlite_http, "mqlite-embedded": mqlite_embedded, "redis": redis,
           "rabbitmq": rabbitmq}  # fmt: skip


def app_env(broker: Broker, ledger: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MQLITE_", "CELERY_"))}
    env.update(BENCH_BROKER=broker.url, BENCH_LEDGER=str(ledger),
               BENCH_OPTIONS=json.dumps(broker.options), PYTHONUNBUFFERED="1",
               PYTHONPATH=str(HERE) + os.pathsep + str(REPO / "app"))  # fmt: skip
    return env


PUBLISH = """
import sys, time
from celery_bench_app import app, mark
n = int(sys.argv[1])
with app.producer_or_acquire() as producer:
    mark.delay(-1)  # connect and declare outside the timing
    t = time.perf_counter()
    for i in range(n):
        mark.apply_async((i,), producer=producer)
    print(time.perf_counter() - t)
app.close()
"""


def lines(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


def run(name: str, n: int, concurrency: int) -> tuple[str, float, float]:
    with tempfile.TemporaryDirectory(prefix=f"celery-bench-{name}-") as d:
        tmp = Path(d)
        with BROKERS[name](tmp) as broker:
            ledger = tmp / "ledger.txt"
            env = app_env(broker, ledger)
            out = subprocess.run([sys.executable, "-c", PUBLISH, str(n)], env=env, cwd=tmp,
                                 capture_output=True, text=True, timeout=900)  # fmt: skip
            if out.returncode != 0:
                raise RuntimeError(f"{name}: publishing failed:\n{out.stderr[-3000:]}")
            publish_s = float(out.stdout.strip().splitlines()[-1])
            cmd = [sys.executable, "-m", "celery", "-A", "celery_bench_app", "worker",
                   "--pool=prefork", f"--concurrency={concurrency}", "--without-mingle",
                   "--without-gossip", "--without-heartbeat", "--loglevel=INFO"]  # fmt: skip
            log = tmp / "worker.log"
            with process(cmd, env, tmp, log) as worker:
                deadline = time.monotonic() + 60
                while b" ready." not in log.read_bytes():
                    if worker.poll() is not None or time.monotonic() > deadline:
                        raise RuntimeError(
                            f"{name}: worker did not start:\n{log.read_text()[-3000:]}"
                        )
                    time.sleep(0.01)
                start = time.perf_counter()
                deadline = time.monotonic() + 900
                while lines(ledger) < n + 1:
                    if worker.poll() is not None or time.monotonic() > deadline:
                        raise RuntimeError(f"{name}: {lines(ledger)} of {n + 1} tasks ran")
                    time.sleep(0.005)
                drain_s = time.perf_counter() - start
            keys = set(ledger.read_text().split())
            missing = n + 1 - len(keys)
            if missing:
                raise RuntimeError(f"{name}: {missing} task(s) missing")
            return broker.name, n / publish_s, n / drain_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--only", choices=sorted(BROKERS), action="append")
    args = parser.parse_args()
    names = args.only or list(BROKERS)
    rows = []
    for name in names:
        print(f"... {name}", file=sys.stderr, flush=True)
        rows.append(run(name, args.tasks, args.concurrency))
    print(f"\nCelery {args.tasks} tasks, prefork --concurrency={args.concurrency}, acks_late\n")
    print("| broker | publish tasks/s | drain tasks/s |")
    print("|---|---:|---:|")
    for broker, publish, drain in rows:
        print(f"| {broker} | {publish:,.0f} | {drain:,.0f} |")


if __name__ == "__main__":
    main()
