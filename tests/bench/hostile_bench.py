"""Hostile-client figures of ``mqlite serve`` (issue 12, the HTTP items), one real broker
per scenario on a free loopback port. Prints one line per figure; asserts nothing.

Run from the repository root (not collected by pytest)::

    .venv/bin/python tests/bench/hostile_bench.py [scenario ...]

Scenarios (all by default): ``bomb`` (one connection streams a 128 MB header while a
probe polls /healthz: worst probe latency, bytes the broker read before refusing,
whether the worker was replaced), ``idle`` (1,100 idle sockets against a broker whose fd
limit is 1024: how long a real client is locked out), ``bodies`` (8 concurrent ~29 MB
Sends, legal and with 2M properties: worker RSS, answers, worst probe latency),
``peek`` (1,000 messages with 64 KiB of metadata: bytes of one Peek response),
``log`` (a 30 MB queue name: the longest access-log line), ``origin`` (auth off:
text/plain, a foreign Host, a cross-site Origin), ``envelope`` (content types of
/metrics' 403 and of a malformed request), ``redrive`` (messages a paced Redrive still
moves after its client went away). The PR's closing note quotes these figures before
and after the change.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import resource
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx

TOKEN = "mqk_bench_" + "b" * 30
RPC = "/mqlite.v1."


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def broker(env: dict[str, str] | None = None, nofile: int | None = None) -> Iterator[Any]:
    """A real broker; yields an object with url, port, proc, stderr path and worker()."""
    tmp = Path(tempfile.mkdtemp(prefix="hostile-"))
    port = free_port()
    full = {k: v for k, v in os.environ.items() if not k.startswith("MQLITE_")}
    full.update({"MQLITE_DB": f"file:{tmp}/mq.db", "MQLITE_TOKENS": TOKEN})
    full.update(env or {})

    def limit() -> None:
        if nofile:
            resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

    err = (tmp / "stderr").open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "mqlite.cli.main", "serve", "--addr", f"127.0.0.1:{port}"],
        env=full,
        stdout=subprocess.DEVNULL,
        stderr=err,
        start_new_session=True,
        preexec_fn=limit,
    )

    class B:
        url = f"http://127.0.0.1:{port}"
        stderr = tmp / "stderr"

        def __init__(self) -> None:
            self.port = port
            self.proc = proc

        def worker(self) -> int:
            path = Path(f"/proc/{proc.pid}/task/{proc.pid}/children")
            kids = path.read_text().split() if path.exists() else []
            return int(kids[0]) if kids else 0

        def rss_mb(self) -> float:
            pid = self.worker()
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
            return 0.0

    b = B()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        with contextlib.suppress(httpx.TransportError):
            if httpx.get(b.url + "/healthz", timeout=1).status_code == 200:
                break
        time.sleep(0.05)
    try:
        yield b
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(5)
        err.close()


def headers(token: str | None = TOKEN) -> dict[str, str]:
    h = {"Content-Type": "application/json"}
    if token:
        h["Authorization"] = f"Bearer {token}"
    return h


PROBE = """
import sys, time, httpx
url, stop = sys.argv[1], sys.argv[2]
worst = failures = 0
import os
with httpx.Client(timeout=60) as c:
    while not os.path.exists(stop):
        t = time.perf_counter()
        try:
            c.get(url + "/healthz")
        except httpx.TransportError:
            failures += 1
        worst = max(worst, time.perf_counter() - t)
        time.sleep(0.02)
print(worst, failures)
"""


class Probe:
    """GET /healthz every 20 ms from another process (no GIL shared with the load
    threads); records the worst latency and the failures."""

    def __init__(self, url: str) -> None:
        self.url, self.worst, self.failures = url, 0.0, 0
        self._stop = Path(tempfile.mkdtemp(prefix="probe-")) / "stop"

    def __enter__(self) -> Probe:
        self._proc = subprocess.Popen(
            [sys.executable, "-c", PROBE, self.url, str(self._stop)], stdout=subprocess.PIPE
        )
        time.sleep(0.5)
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.touch()
        worst, failures = self._proc.communicate(timeout=70)[0].split()
        self.worst, self.failures = float(worst), int(failures)


def out(name: str, **figures: Any) -> None:
    print(name, " ".join(f"{k}={v}" for k, v in figures.items()), flush=True)


def bomb() -> None:
    with broker() as b:
        pid = b.worker()
        sent, answer = 0, b""
        with Probe(b.url) as probe:
            s = socket.create_connection(("127.0.0.1", b.port))
            s.settimeout(30)
            chunk = b"a" * 65536
            started = time.monotonic()
            try:
                s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nX-Bomb: ")
                while sent < 128 << 20 and time.monotonic() - started < 60:
                    s.sendall(chunk)
                    sent += len(chunk)
                s.sendall(b"\r\n\r\n")
                answer = s.recv(200)
            except OSError as exc:
                with contextlib.suppress(OSError):
                    answer = s.recv(200)
                answer = answer or repr(exc).encode()
            s.close()
            elapsed = time.monotonic() - started
            time.sleep(0.5)
        out(
            "bomb",
            header_bytes_sent=sent,
            seconds=round(elapsed, 2),
            worst_probe_s=round(probe.worst, 3),
            probe_failures=probe.failures,
            worker_replaced=b.worker() != pid,
            answer=answer[:60],
        )


def idle() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    with broker(nofile=1024) as b:
        socks = []
        for _ in range(1100):
            s = socket.socket()
            s.setblocking(False)
            with contextlib.suppress(BlockingIOError):
                s.connect(("127.0.0.1", b.port))
            socks.append(s)
        time.sleep(1)
        started = time.monotonic()
        first_ok, statuses = None, []
        while time.monotonic() - started < 20 and first_ok is None:
            try:
                r = httpx.get(b.url + "/healthz", timeout=2)
                statuses.append(r.status_code)
                if r.status_code == 200:
                    first_ok = time.monotonic() - started
            except httpx.TransportError as exc:
                statuses.append(type(exc).__name__)
        closed = 0
        for s in socks:
            try:
                closed += s.recv(1) == b""
            except BlockingIOError:
                pass
            except OSError:
                closed += 1
            s.close()
        out(
            "idle",
            sockets=len(socks),
            locked_out_s=round(first_ok, 2) if first_ok is not None else ">20",
            attempts=len(statuses),
            first=statuses[:3],
            idle_closed_by_broker=closed,
        )
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def _props_body(queue: str) -> bytes:
    props = ",".join(f'"{i:07d}":"x"' for i in range(2_000_000))
    message = '{"body":"aGk=","properties":{' + props + "}}"
    return ('{"queue":"' + queue + '","messages":[' + message + "]}").encode()


def _legal_body(queue: str) -> bytes:
    one = base64.b64encode(os.urandom(1 << 20)).decode()
    msgs = ",".join('{"body":"' + one + '"}' for _ in range(21))
    return ('{"queue":"' + queue + '","messages":[' + msgs + "]}").encode()


def bodies() -> None:
    for kind, build in (("2M-properties", _props_body), ("legal-21x1MiB", _legal_body)):
        with broker() as b:
            httpx.post(
                b.url + RPC + "AdminService/CreateQueue", json={"name": "q"}, headers=headers()
            )
            body = build("q")
            pid, rss0 = b.worker(), b.rss_mb()
            statuses: list[Any] = []

            def send(body: bytes = body, statuses: list[Any] = statuses, b: Any = b) -> None:
                try:
                    r = httpx.post(
                        b.url + RPC + "QueueService/Send",
                        content=body,
                        headers=headers(),
                        timeout=120,
                    )
                    statuses.append(r.status_code)
                except httpx.TransportError as exc:
                    statuses.append(type(exc).__name__)

            with Probe(b.url) as probe:
                started = time.monotonic()
                threads = [threading.Thread(target=send) for _ in range(8)]
                for t in threads:
                    t.start()
                peak = rss0
                while any(t.is_alive() for t in threads):
                    with contextlib.suppress(OSError, ValueError):
                        peak = max(peak, b.rss_mb())
                    time.sleep(0.05)
                elapsed = time.monotonic() - started
                time.sleep(1)
            out(
                "bodies",
                kind=kind,
                request_mb=round(len(body) / 1e6, 1),
                statuses=sorted(map(str, statuses)),
                seconds=round(elapsed, 1),
                worst_probe_s=round(probe.worst, 3),
                rss_mb_before=round(rss0),
                rss_mb_peak=round(peak),
                rss_mb_after=round(b.rss_mb()) if b.worker() else 0,
                worker_replaced=b.worker() != pid,
            )


def peek() -> None:
    with broker() as b, httpx.Client(base_url=b.url, headers=headers(), timeout=120) as c:
        c.post(RPC + "AdminService/CreateQueue", json={"name": "q"})
        value = "v" * 4000
        msg = {"properties": {f"k{i:02d}": value for i in range(16)}, "body": ""}
        for _ in range(4):
            r = c.post(RPC + "QueueService/Send", json={"queue": "q", "messages": [msg] * 250})
            assert r.status_code == 200, r.text[:200]
        r = c.post(RPC + "QueueService/Peek", json={"queue": "q", "max": 1000})
        out(
            "peek",
            messages=len(r.json()["messages"]),
            response_bytes=len(r.content),
            budget=32 << 20,
        )


def log() -> None:
    with broker() as b:
        name = "q" * (30 << 20)
        r = httpx.post(
            b.url + RPC + "QueueService/Stats",
            content=json.dumps({"queue": name}).encode(),
            headers=headers(),
            timeout=60,
        )
        time.sleep(1)
        longest = max((len(line) for line in b.stderr.read_bytes().splitlines()), default=0)
        out("log", status=r.status_code, longest_log_line_bytes=longest)


def origin() -> None:
    with broker({"MQLITE_TOKENS": "off"}) as b:
        send = b.url + RPC + "AdminService/ListQueues"
        cases: dict[str, Callable[[], httpx.Response]] = {
            "text_plain": lambda: httpx.post(
                send, content=b"{}", headers={"Content-Type": "text/plain"}
            ),
            "no_content_type": lambda: httpx.post(send, content=b"{}"),
            "foreign_host": lambda: httpx.post(
                send, json={}, headers={"Host": "evil.example:6754"}
            ),
            "cross_site_origin": lambda: httpx.post(
                send, json={}, headers={"Origin": "http://evil.example"}
            ),
        }
        out("origin", **{k: f().status_code for k, f in cases.items()})


def envelope() -> None:
    with broker({"MQLITE_METRICS": "on"}) as b:
        r = httpx.get(b.url + "/metrics")
        s = socket.create_connection(("127.0.0.1", b.port))
        s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nBad Header: y\r\n\r\n")
        raw = s.recv(4096)
        s.close()
        head = raw.split(b"\r\n\r\n")[0].lower()
        ctype = [h for h in head.split(b"\r\n") if h.startswith(b"content-type")]
        out(
            "envelope",
            metrics_status=r.status_code,
            metrics_type=r.headers.get("content-type"),
            malformed_status=raw[9:12].decode(),
            malformed_type=ctype[0].decode() if ctype else None,
        )


def redrive() -> None:
    with broker() as b, httpx.Client(base_url=b.url, headers=headers(), timeout=30) as c:
        c.post(RPC + "AdminService/CreateQueue", json={"name": "q"})
        c.post(RPC + "QueueService/Send", json={"queue": "q", "messages": [{"body": "aGk="}] * 200})
        got = c.post(RPC + "QueueService/Receive", json={"queue": "q", "max_messages": 256})
        for m in got.json()["messages"]:
            c.post(
                RPC + "QueueService/Reject",
                json={"queue": "q", "seq_number": m["seq_number"], "lock_token": m["lock_token"]},
            )

        def dead() -> int:
            stats = c.post(RPC + "QueueService/Stats", json={"queue": "q"}).json()
            return int(stats.get("dead_lettered", 0))

        before = dead()
        with contextlib.suppress(httpx.TimeoutException):
            httpx.post(
                b.url + RPC + "AdminService/Redrive",
                json={"queue": "q", "rate_per_sec": 20},
                headers=headers(),
                timeout=1.0,
            )
        at_disconnect = dead()
        time.sleep(3)
        out(
            "redrive",
            dead_letters=before,
            moved_before_disconnect=before - at_disconnect,
            moved_after_disconnect=at_disconnect - dead(),
        )


SCENARIOS: dict[str, Callable[[], None]] = {
    "bomb": bomb,
    "idle": idle,
    "bodies": bodies,
    "peek": peek,
    "log": log,
    "origin": origin,
    "envelope": envelope,
    "redrive": redrive,
}

if __name__ == "__main__":
    for name in sys.argv[1:] or list(SCENARIOS):
        SCENARIOS[name]()
