"""HTTP benchmark of ``mqlite serve``, next to a no-op route on the same stack, in one run.

Run from the repository root (not collected by pytest)::

    .venv/bin/python tests/bench/http_bench.py [--client auto|wrk|python] [-c N]
                                              [--duration S] [--warmup S]

It prints; it asserts nothing (exit status 0 unless the run itself breaks).

What runs, in order, each on a free loopback port and stopped (SIGTERM, then SIGKILL)
before the next starts, and in any case on the way out:

1. ``tests/bench/noop_app.py``: one starlette POST route that reads the body and answers
   ``{}``, served by gunicorn with the broker's own options (``gunicorn_options``, one
   worker of class ``mqlite.server.worker.Worker``). Its requests/s for the same small
   POST the single-message Send uses is the stack's ceiling.
2. ``python -m mqlite.cli.main serve`` with MQLITE_DB=file:<tmp>/mq.db, a generated
   MQLITE_TOKENS and MQLITE_LOG_LEVEL=WARNING: single-message Send requests/s, Send of 64
   messages per request (messages/s), then a drain of a pre-filled queue with Receive
   max_messages=256 + CompleteBatch (messages/s), and the worker's VmRSS after start and
   after the load.
3. The same broker at the default MQLITE_LOG_LEVEL=INFO (one JSON access-log line per
   request, written to a file): single-message Send requests/s once more.

Load: wrk (one thread, ``-c`` keep-alive connections, a Lua script setting the method,
body and headers) for the fixed-body POSTs when wrk is on PATH, else a keep-alive
raw-socket HTTP/1.1 client on asyncio (uvloop when installed). The drain is stateful
(the CompleteBatch body is built from the Receive response), so it always uses the
raw-socket client. Every message body is 256 bytes (344 in base64), as in engine_bench.py.

Targets (issue 4, "Performance"): single Send >= 0.4x the no-op requests/s; Send of 64
>= 20,000 msgs/s; Receive 256 + CompleteBatch drain >= 15,000 msgs/s; worker RSS < 80 MB.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import http.client
import json
import os
import resource
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
APP_DIR = REPO / "app"
NOOP_APP = Path(__file__).resolve().parent / "noop_app.py"
HOST = "127.0.0.1"

SEND = "/mqlite.v1.QueueService/Send"
RECEIVE = "/mqlite.v1.QueueService/Receive"
COMPLETE_BATCH = "/mqlite.v1.QueueService/CompleteBatch"
STATS = "/mqlite.v1.QueueService/Stats"
CREATE_QUEUE = "/mqlite.v1.AdminService/CreateQueue"
NOOP = "/noop"

BODY_B64 = base64.b64encode(bytes(range(256))).decode("ascii")  # 256-byte message body
RECEIVE_MAX = 256
SEND_BATCH = 64
FILL_BATCH = 256  # messages per Send while pre-filling the drain queue

TARGET_SEND1_RATIO = 0.4
TARGET_SEND64_MSGS = 20_000
TARGET_DRAIN_MSGS = 15_000
TARGET_RSS_MB = 80.0

STARTUP_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 15.0  # above the broker's 10 s graceful timeout
CLK_TCK = os.sysconf("SC_CLK_TCK")


# -- small helpers ------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def send_body(n: int, queue: str) -> bytes:
    payload = {"queue": queue, "messages": [{"body": BODY_B64}] * n}
    return json.dumps(payload, separators=(",", ":")).encode()


def proc_stat(pid: int, tid: int | None = None) -> list[str] | None:
    """/proc/<pid>[/task/<tid>]/stat fields, numbered as in proc(5) from field 3 (state)."""
    path = f"/proc/{pid}/stat" if tid is None else f"/proc/{pid}/task/{tid}/stat"
    try:
        raw = Path(path).read_text()
    except OSError:
        return None
    return raw[raw.rindex(")") + 2 :].split()


def start_time(pid: int) -> str | None:
    fields = proc_stat(pid)
    return fields[19] if fields else None  # field 22, starttime


def cpu_ticks(pid: int) -> tuple[int, int]:
    """(event-loop thread, all other threads) utime+stime of a process, in clock ticks."""
    main = other = 0
    try:
        tids = [int(t) for t in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        return 0, 0
    for tid in tids:
        fields = proc_stat(pid, tid)
        if not fields:
            continue
        ticks = int(fields[11]) + int(fields[12])  # fields 14, 15: utime, stime
        if tid == pid:
            main += ticks
        else:
            other += ticks
    return main, other


def vm_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


def host_busy_ticks() -> int:
    """Busy clock ticks of the whole host (all CPUs): user+nice+system+irq+softirq+steal."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = (fields + [0] * 8)[:8]
    return user + nice + system + irq + softirq + steal


def children_cpu_s() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


class CpuWindow:
    """CPU use during one measurement: the worker's event-loop thread, its other threads
    (SQLite writer, scheduler), the load client, and every other process on the host."""

    def __init__(self, worker_pid: int, client_cpu: Callable[[], float]) -> None:
        self.pid = worker_pid
        self.client_cpu = client_cpu
        self.loop0, self.other0 = cpu_ticks(worker_pid)
        self.host0 = host_busy_ticks()
        self.client0 = client_cpu()

    def close(self, result: LoadResult, wall: float) -> LoadResult:
        loop1, other1 = cpu_ticks(self.pid)
        host = (host_busy_ticks() - self.host0) / CLK_TCK
        loop = (loop1 - self.loop0) / CLK_TCK
        other = (other1 - self.other0) / CLK_TCK
        client = self.client_cpu() - self.client0
        result.client_cpu_s = client
        result.loop_cpu_pct = 100 * loop / wall
        result.other_cpu_pct = 100 * other / wall
        result.foreign_cpu_pct = 100 * max(host - loop - other - client, 0.0) / wall
        return result


def children_of(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
        return [int(x) for x in text.split()]
    except OSError:
        pass
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = proc_stat(int(entry))
            if fields and int(fields[1]) == pid:
                found.append(int(entry))
    return found


# -- the servers under test ---------------------------------------------------------------


@dataclass
class Server:
    """One gunicorn master we started, its single worker, and where its output goes."""

    name: str
    port: int
    proc: subprocess.Popen[bytes]
    log_path: Path
    worker_pid: int = 0
    worker_start: str | None = None

    def log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self) -> None:
        """SIGTERM the master (it stops its worker); SIGKILL whatever is left."""
        proc = self.proc
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
                proc.wait(5)
        # The worker normally exits with the master; kill it only if it is still the very
        # process we recorded (same pid AND same start time), never a recycled pid.
        if self.worker_pid and start_time(self.worker_pid) == self.worker_start:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.worker_pid, signal.SIGTERM)
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline and start_time(self.worker_pid) == self.worker_start:
                time.sleep(0.05)
            if start_time(self.worker_pid) == self.worker_start:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(self.worker_pid, signal.SIGKILL)


def start_server(
    name: str,
    argv: list[str],
    env: dict[str, str],
    port: int,
    workdir: Path,
    probe: Callable[[int], bool],
    registry: list[Server],
) -> Server:
    log_path = workdir / f"{name}.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            argv, env=env, cwd=REPO, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )
    server = Server(name, port, proc, log_path)
    registry.append(server)  # stopped by the caller's finally, whatever happens next
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"{name} exited with {proc.returncode}:\n{server.log_tail()}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"{name} did not answer within {STARTUP_TIMEOUT_S}s")
        with contextlib.suppress(OSError, http.client.HTTPException):
            if probe(port):
                break
        time.sleep(0.1)
    kids = children_of(proc.pid)
    if len(kids) != 1:
        raise RuntimeError(f"{name}: expected one gunicorn worker, found {kids}")
    server.worker_pid = kids[0]
    server.worker_start = start_time(kids[0])
    return server


def http_call(port: int, path: str, payload: Any, token: str = "") -> tuple[int, Any]:
    """One setup/probe request (http.client; never used for the load)."""
    conn = http.client.HTTPConnection(HOST, port, timeout=10)
    try:
        headers = {"Content-Type": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        conn.request("POST", path, body=json.dumps(payload).encode(), headers=headers)
        resp = conn.getresponse()
        raw = resp.read()
        try:
            return resp.status, json.loads(raw)
        except ValueError:
            return resp.status, raw
    finally:
        conn.close()


def broker_env(workdir: Path, token: str, level: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MQLITE_")}
    env.update(
        MQLITE_DB=f"file:{workdir}/mq-{level.lower()}.db",  # one database per broker
        MQLITE_TOKENS=token,
        MQLITE_LOG_LEVEL=level,
        PYTHONPATH=os.pathsep.join(filter(None, [str(APP_DIR), env.get("PYTHONPATH", "")])),
        PYTHONUNBUFFERED="1",
    )
    return env


# -- load clients -------------------------------------------------------------------------


@dataclass
class LoadResult:
    requests: int
    seconds: float
    errors: int
    client_cpu_s: float = 0.0
    loop_cpu_pct: float = 0.0
    other_cpu_pct: float = 0.0
    foreign_cpu_pct: float = 0.0
    detail: str = ""
    wall: float = 0.0

    @property
    def rps(self) -> float:
        return self.requests / self.seconds if self.seconds > 0 else 0.0


def _lua_string(text: str) -> str:
    return "[==[" + text + "]==]"


WRK_DONE = """
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("BENCH %d %d %d %d %d %d %d %.0f %.0f\\n",
    summary.requests, summary.duration, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(99)))
end
"""


def wrk_load(
    port: int,
    path: str,
    body: bytes,
    token: str,
    conns: int,
    warmup: float,
    duration: float,
    workdir: Path,
    worker_pid: int,
) -> LoadResult:
    script = workdir / "post.lua"
    lines = [
        'wrk.method = "POST"',
        f"wrk.body = {_lua_string(body.decode())}",
        'wrk.headers["Content-Type"] = "application/json"',
    ]
    if token:
        lines.append(f'wrk.headers["Authorization"] = "Bearer {token}"')
    script.write_text("\n".join(lines) + "\n" + WRK_DONE)
    url = f"http://{HOST}:{port}{path}"

    def run(seconds: float) -> str:
        argv = ["wrk", "-t1", f"-c{conns}", f"-d{max(1, round(seconds))}s", "-s", str(script), url]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=seconds + 30)
        if done.returncode != 0:
            raise RuntimeError(f"wrk failed: {done.stderr or done.stdout}")
        return done.stdout

    if warmup > 0:
        run(warmup)
    window = CpuWindow(worker_pid, children_cpu_s)  # wrk is a child, reaped by run()
    t0 = time.monotonic()
    out = run(duration)
    wall = time.monotonic() - t0
    line = next((x for x in out.splitlines() if x.startswith("BENCH ")), None)
    if line is None:
        raise RuntimeError(f"no summary from wrk:\n{out}")
    n, dur_us, e_conn, e_read, e_write, e_status, e_timeout, p50, p99 = (
        float(x) for x in line.split()[1:]
    )
    result = LoadResult(
        requests=int(n),
        seconds=dur_us / 1e6,
        errors=int(e_conn + e_read + e_write + e_status + e_timeout),
        detail=f"p50 {p50 / 1000:.2f} ms, p99 {p99 / 1000:.2f} ms",
        wall=wall,
    )
    return window.close(result, wall)


def _request_bytes(port: int, path: str, body: bytes, token: str) -> bytes:
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {HOST}:{port}\r\n"
        "Content-Type: application/json\r\n"
        + (f"Authorization: Bearer {token}\r\n" if token else "")
        + f"Content-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


class Conn:
    """A keep-alive HTTP/1.1 connection: write a request, read one Content-Length response."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    @classmethod
    async def open(cls, port: int) -> Conn:
        reader, writer = await asyncio.open_connection(HOST, port, limit=1 << 24)
        sock = writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return cls(reader, writer)

    async def roundtrip(self, request: bytes) -> tuple[int, bytes]:
        self.writer.write(request)
        head = await self.reader.readuntil(b"\r\n\r\n")
        status = int(head[9:12])
        lower = head.lower()
        at = lower.find(b"\r\ncontent-length:")
        if at < 0:
            raise RuntimeError(f"response without Content-Length: {head!r}")
        end = lower.index(b"\r\n", at + 2)
        length = int(lower[at + len(b"\r\ncontent-length:") : end])
        body = await self.reader.readexactly(length) if length else b""
        return status, body

    def close(self) -> None:
        self.writer.close()


def run_async(coro: Any) -> Any:
    try:
        import uvloop
    except ImportError:
        return asyncio.run(coro)
    return uvloop.run(coro)


def python_load(
    port: int,
    path: str,
    body: bytes,
    token: str,
    conns: int,
    warmup: float,
    duration: float,
    worker_pid: int,
) -> LoadResult:
    request = _request_bytes(port, path, body, token)

    async def main() -> LoadResult:
        pool = [await Conn.open(port) for _ in range(conns)]
        counts = {"n": 0, "err": 0, "on": False}
        stop_at = 0.0

        async def worker(c: Conn) -> None:
            while time.monotonic() < stop_at:
                status, _ = await c.roundtrip(request)
                if counts["on"]:
                    counts["n"] += 1
                    if status >= 400:
                        counts["err"] += 1

        try:
            stop_at = time.monotonic() + warmup
            await asyncio.gather(*(worker(c) for c in pool))
            counts["on"] = True
            window = CpuWindow(worker_pid, time.process_time)
            t0 = time.monotonic()
            stop_at = t0 + duration
            await asyncio.gather(*(worker(c) for c in pool))
            seconds = time.monotonic() - t0
            result = LoadResult(counts["n"], seconds, counts["err"], wall=seconds)
            return window.close(result, seconds)
        finally:
            for c in pool:
                c.close()

    return run_async(main())  # type: ignore[no-any-return]


@dataclass
class Loader:
    client: str  # "wrk" or "python"
    conns: int
    warmup: float
    duration: float
    workdir: Path
    notes: list[str] = field(default_factory=list)

    def post(self, server: Server, path: str, body: bytes, token: str) -> LoadResult:
        if self.client == "wrk":
            return wrk_load(
                server.port,
                path,
                body,
                token,
                self.conns,
                self.warmup,
                self.duration,
                self.workdir,
                server.worker_pid,
            )
        return python_load(
            server.port,
            path,
            body,
            token,
            self.conns,
            self.warmup,
            self.duration,
            server.worker_pid,
        )


def fill(port: int, token: str, queue: str, total: int, conns: int) -> float:
    """Send ``total`` messages to ``queue`` in Sends of FILL_BATCH; returns the seconds."""
    request = _request_bytes(port, SEND, send_body(FILL_BATCH, queue), token)
    batches = -(-total // FILL_BATCH)

    async def main() -> float:
        pool = [await Conn.open(port) for _ in range(conns)]
        left = [batches]
        t0 = time.monotonic()

        async def worker(c: Conn) -> None:
            while left[0] > 0:
                left[0] -= 1
                status, raw = await c.roundtrip(request)
                if status != 200:
                    raise RuntimeError(f"fill Send answered {status}: {raw[:200]!r}")

        try:
            await asyncio.gather(*(worker(c) for c in pool))
        finally:
            for c in pool:
                c.close()
        return time.monotonic() - t0

    return run_async(main())  # type: ignore[no-any-return]


def drain(
    port: int, token: str, queue: str, conns: int, max_seconds: float, worker_pid: int
) -> tuple[LoadResult, int]:
    """Receive 256 (peek-lock) + CompleteBatch on ``conns`` connections until the queue is
    empty or ``max_seconds`` pass; returns (load result, messages completed)."""
    receive_req = _request_bytes(
        port, RECEIVE, json.dumps({"queue": queue, "max_messages": RECEIVE_MAX}).encode(), token
    )

    async def main() -> tuple[LoadResult, int]:
        pool = [await Conn.open(port) for _ in range(conns)]
        stats = {"requests": 0, "done": 0, "errors": 0, "last": 0.0}
        t0 = time.monotonic()
        stop_at = t0 + max_seconds

        async def worker(c: Conn) -> None:
            while time.monotonic() < stop_at:
                status, raw = await c.roundtrip(receive_req)
                stats["requests"] += 1
                if status != 200:
                    stats["errors"] += 1
                    raise RuntimeError(f"Receive answered {status}: {raw[:200]!r}")
                msgs = json.loads(raw).get("messages") or []
                if not msgs:
                    return
                pairs = [
                    {"seq_number": m["seq_number"], "lock_token": m["lock_token"]} for m in msgs
                ]
                body = json.dumps({"queue": queue, "messages": pairs}).encode()
                status, raw = await c.roundtrip(_request_bytes(port, COMPLETE_BATCH, body, token))
                stats["requests"] += 1
                if status != 200:
                    stats["errors"] += 1
                    raise RuntimeError(f"CompleteBatch answered {status}: {raw[:200]!r}")
                results = json.loads(raw).get("results") or []
                stats["done"] += sum(1 for r in results if r.get("ok"))
                stats["last"] = time.monotonic()

        window = CpuWindow(worker_pid, time.process_time)
        try:
            await asyncio.gather(*(worker(c) for c in pool))
        finally:
            for c in pool:
                c.close()
        seconds = (stats["last"] or time.monotonic()) - t0
        wall = time.monotonic() - t0
        result = LoadResult(int(stats["requests"]), seconds, int(stats["errors"]), wall=wall)
        return window.close(result, wall), int(stats["done"])

    return run_async(main())  # type: ignore[no-any-return]


# -- the run ------------------------------------------------------------------------------


@dataclass
class Figure:
    """One figure over the rounds; the best round is reported (the host may be shared)."""

    name: str
    client: str
    results: list[LoadResult] = field(default_factory=list)
    values: list[float] = field(default_factory=list)  # the figure's unit, per round

    def add(self, result: LoadResult, value: float) -> None:
        self.results.append(result)
        self.values.append(value)

    @property
    def best(self) -> float:
        return max(self.values) if self.values else 0.0

    @property
    def best_result(self) -> LoadResult:
        return self.results[self.values.index(self.best)]

    def spread(self) -> str:
        if len(self.values) < 2:
            return ""
        return " (rounds: " + " / ".join(fmt(v) for v in self.values) + ")"


def fmt(x: float) -> str:
    return f"{x:,.0f}"


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def cpu_row(fig: Figure, unit: str) -> str:
    r = fig.best_result
    client_pct = 100 * r.client_cpu_s / r.wall if r.wall else 0.0
    return (
        f"| {fig.name} | {fmt(fig.best)} {unit} | {r.loop_cpu_pct:.0f}% | {r.other_cpu_pct:.0f}% "
        f"| {fig.client} {client_pct:.0f}% | {r.foreign_cpu_pct:.0f}% | {r.errors} "
        f"| {r.detail or '—'} |"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="HTTP benchmark of mqlite serve")
    parser.add_argument("--client", choices=("auto", "wrk", "python"), default="auto")
    parser.add_argument(
        "-c",
        "--connections",
        type=int,
        default=32,
        help="keep-alive conns (a broker serves many clients; see docs/benchmarks.md for a sweep)",
    )
    parser.add_argument("--duration", type=float, default=4.0, help="seconds per figure")
    parser.add_argument("--warmup", type=float, default=2.0, help="seconds before each figure")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds; best kept")
    parser.add_argument("--drain-messages", type=int, default=50_000, help="per round")
    parser.add_argument("--drain-connections", type=int, default=4)
    parser.add_argument("--drain-max-seconds", type=float, default=15.0)
    parser.add_argument("--skip-info", action="store_true", help="skip the INFO-level run")
    args = parser.parse_args(argv)
    if args.rounds < 1 or args.connections < 1 or args.drain_connections < 1:
        parser.error("--rounds, --connections and --drain-connections must be at least 1")

    client = args.client
    if client == "auto":
        client = "wrk" if shutil.which("wrk") else "python"
    if client == "wrk" and not shutil.which("wrk"):
        parser.error("wrk is not on PATH (apt-get install wrk, or --client python)")

    # A SIGTERM/SIGHUP to the benchmark still runs the finally below (servers stopped).
    def _exit(signum: int, _frame: Any) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, _exit)
    signal.signal(signal.SIGHUP, _exit)

    servers: list[Server] = []
    workdir = Path(tempfile.mkdtemp(prefix="mqlite-http-bench-"))
    loader = Loader(client, args.connections, args.warmup, args.duration, workdir)
    py = sys.executable
    token = "mqk_" + secrets.token_hex(32)
    label = "wrk" if client == "wrk" else "py"
    began = time.monotonic()
    host0 = host_busy_ticks()
    ours0 = children_cpu_s() + time.process_time()

    def stop(server: Server) -> None:
        server.stop()
        servers.remove(server)

    def start_broker(level: str) -> Server:
        port = free_port()
        return start_server(
            f"broker-{level.lower()}",
            [py, "-m", "mqlite.cli.main", "serve", "--addr", f"{HOST}:{port}"],
            broker_env(workdir, token, level),
            port,
            workdir,
            lambda p: http_call(p, STATS, {"queue": "none"}, token)[0] in (200, 404),
            servers,
        )

    try:
        # The ceiling (no-op route, same gunicorn + uvicorn worker stack) and the broker at
        # WARNING run side by side; each round measures every figure once, interleaved, so
        # a burst of load from elsewhere on the host hits both sides alike.
        noop_env = dict(os.environ, PYTHONPATH=str(APP_DIR), PYTHONUNBUFFERED="1")
        port = free_port()
        noop = start_server(
            "noop",
            [py, str(NOOP_APP), "--addr", f"{HOST}:{port}"],
            noop_env,
            port,
            workdir,
            lambda p: http_call(p, NOOP, {})[0] == 200,
            servers,
        )
        broker = start_broker("WARNING")
        # The same broker at the default INFO level (one JSON access line per request,
        # written to a file) runs alongside and is measured in every round too.
        broker_info = None if args.skip_info else start_broker("INFO")
        if broker_info is not None:
            http_call(broker_info.port, CREATE_QUEUE, {"name": "bench-1"}, token)
        queues = ["bench-1", "bench-64"] + [f"bench-drain-{i}" for i in range(args.rounds)]
        for q in queues:
            status, body = http_call(broker.port, CREATE_QUEUE, {"name": q}, token)
            if status != 200:
                raise RuntimeError(f"CreateQueue {q}: {status} {body!r}")
        time.sleep(1.0)
        noop_rss = vm_rss_mb(noop.worker_pid)
        rss_start = vm_rss_mb(broker.worker_pid)

        small = send_body(1, "bench-1")
        batch = send_body(SEND_BATCH, "bench-64")
        f_noop = Figure("no-op POST", label)
        f_send1 = Figure("Send ×1", label)
        f_send64 = Figure("Send ×64", label)
        f_drain = Figure("Receive 256 + CompleteBatch", "py")
        f_info = Figure("Send ×1 @INFO", label)
        drained_total = 0
        fill_s: list[float] = []
        for i in range(args.rounds):
            r = loader.post(noop, NOOP, small, token)  # same request, same headers
            f_noop.add(r, r.rps)
            r = loader.post(broker, SEND, small, token)
            f_send1.add(r, r.rps)
            if broker_info is not None:
                r = loader.post(broker_info, SEND, small, token)
                f_info.add(r, r.rps)
            r = loader.post(broker, SEND, batch, token)
            f_send64.add(r, r.rps * SEND_BATCH)
            queue = f"bench-drain-{i}"
            fill_s.append(fill(broker.port, token, queue, args.drain_messages, 2))
            r, drained = drain(
                broker.port,
                token,
                queue,
                args.drain_connections,
                args.drain_max_seconds,
                broker.worker_pid,
            )
            drained_total += drained
            f_drain.add(r, drained / r.seconds if r.seconds > 0 else 0.0)
        left = [http_call(broker.port, STATS, {"queue": q}, token)[1] for q in queues[2:]]
        time.sleep(2.0)
        rss_after = vm_rss_mb(broker.worker_pid)
        stop(broker)
        stop(noop)
        if broker_info is not None:
            stop(broker_info)

        # -- the report -------------------------------------------------------------------
        ceiling = f_noop.best
        run_s = time.monotonic() - began
        foreign = (host_busy_ticks() - host0) / CLK_TCK - (
            children_cpu_s() + time.process_time() - ours0
        )
        base = f"no-op {fmt(ceiling)} req/s"
        rows: list[tuple[str, str, str, str, str]] = [
            ("no-op POST req/s (stack ceiling)", fmt(ceiling) + f_noop.spread(), "—", "1.00×", "—")
        ]
        ratio1 = f_send1.best / ceiling
        rows.append(
            (
                "Send ×1 req/s (WARNING)",
                fmt(f_send1.best) + f_send1.spread(),
                f"{base}; target ≥ {TARGET_SEND1_RATIO}×",
                f"{ratio1:.2f}×",
                verdict(ratio1 >= TARGET_SEND1_RATIO),
            )
        )
        if f_info.values:
            ratio_info = f_info.best / ceiling
            rows.append(
                (
                    "Send ×1 req/s (default INFO: JSON access log on)",
                    fmt(f_info.best) + f_info.spread(),
                    f"{base}; target ≥ {TARGET_SEND1_RATIO}×",
                    f"{ratio_info:.2f}×",
                    verdict(ratio_info >= TARGET_SEND1_RATIO),
                )
            )
        s64 = f_send64.best
        rows.append(
            (
                "Send ×64 msgs/s",
                f"{fmt(s64)} = {fmt(s64 / SEND_BATCH)} req/s" + f_send64.spread(),
                f"{base}; target ≥ {fmt(TARGET_SEND64_MSGS)} msgs/s",
                f"{s64 / ceiling:.2f} msgs per no-op req ({s64 / SEND_BATCH / ceiling:.2f}× req/s)",
                verdict(s64 >= TARGET_SEND64_MSGS),
            )
        )
        d = f_drain.best
        rows.append(
            (
                "Receive 256 + CompleteBatch drain msgs/s",
                fmt(d) + f_drain.spread(),
                f"{base}; target ≥ {fmt(TARGET_DRAIN_MSGS)} msgs/s",
                f"{d / ceiling:.2f} msgs per no-op req",
                verdict(d >= TARGET_DRAIN_MSGS),
            )
        )
        for what, rss in (("after start", rss_start), ("after the load, idle", rss_after)):
            rows.append(
                (
                    f"broker worker VmRSS {what} (MB)",
                    f"{rss:.1f}",
                    f"no-op worker {noop_rss:.1f} MB; target < {TARGET_RSS_MB:.0f} MB",
                    f"{rss / noop_rss:.2f}× no-op",
                    verdict(rss < TARGET_RSS_MB),
                )
            )

        print()
        print(f"## mqlite HTTP benchmark ({run_s:.0f} s run, best of {args.rounds} rounds)")
        print()
        print("| figure | measured | baseline / target | ratio | vs target |")
        print("|---|---|---|---|---|")
        for row in rows:
            print("| " + " | ".join(row) + " |")
        print()
        print("CPU during the best round of each figure, as % of one core: the broker (or no-op)")
        print("worker's event-loop thread, its other threads (SQLite writer, scheduler), the")
        print("load client, and every other process on the host:")
        print()
        print(
            "| load | rate | worker loop | worker other | client | other processes "
            "| errors | latency |"
        )
        print("|---|---|---|---|---|---|---|---|")
        print(cpu_row(f_noop, "req/s"))
        print(cpu_row(f_send1, "req/s"))
        if f_info.values:
            print(cpu_row(f_info, "req/s"))
        print(cpu_row(f_send64, "msgs/s"))
        print(cpu_row(f_drain, "msgs/s"))
        print()
        wrk_v = ""
        if client == "wrk":
            with contextlib.suppress(Exception):
                out = subprocess.run(["wrk", "-v"], capture_output=True, text=True, timeout=5)
                wrk_v = " " + (out.stdout or out.stderr).split()[1]
        if client == "wrk":
            load = f"wrk{wrk_v}, 1 thread, {args.connections} keep-alive connections, Lua script"
        else:
            load = f"python asyncio raw-socket client, {args.connections} keep-alive connections"
        active_left = sum(x.get("active", 0) for x in left if isinstance(x, dict))
        print(
            f"- fixed-body POSTs: {load}; {args.warmup:g} s warm-up + {args.duration:g} s "
            f"measured per figure per round"
        )
        print(
            f"- drain: python asyncio raw-socket client, {args.drain_connections} keep-alive "
            f"connections, each looping Receive(max_messages={RECEIVE_MAX}, peek-lock) → "
            f"CompleteBatch until empty; {args.drain_messages:,} messages pre-filled per "
            f"round (Send ×{FILL_BATCH}, {' / '.join(f'{x:.1f}' for x in fill_s)} s); "
            f"{drained_total:,} completed, {active_left} left"
        )
        print(
            f"- request: {len(small)}-byte Send ×1 body (one 256-byte message, base64) with "
            f"Bearer auth; the no-op route gets the identical request"
        )
        print(
            f"- host: {os.cpu_count()} CPUs, Python {sys.version.split()[0]}, client and "
            f"servers share the cores; other processes used {100 * foreign / run_s:.0f}% "
            f"of one core on average during the run"
        )
        return 0
    finally:
        for server in reversed(servers):
            server.stop()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
