"""What observing costs (observability, "Collection cost and interval"), printed, not
asserted: a /metrics scrape of a real broker holding 1,000 queues and a 100k-message
backlog (duration, response size, series count, Observe's own collection time), and
Send x1 throughput over HTTP with a 1 s scrape running versus none (target >= 0.9x); then
the same for 10 queues and 1,000 messages, for scale.

    .venv/bin/python tests/bench/observe_bench.py            # ~2 minutes
    .venv/bin/python tests/bench/observe_bench.py --quick    # smoke run
"""

from __future__ import annotations

import argparse
import base64
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

import mqlite
from mqlite import OutMessage

ADMIN = "mqk_bench_admin_" + "a" * 24
MONITOR = "mqk_bench_monitor_" + "m" * 24


def build(db: Path, queues: int, backlog: int) -> None:
    with mqlite.open_embedded(f"file:{db}", background=False) as mq:
        for i in range(queues):
            mq.create_queue(f"q{i:04d}")
        mq.create_queue("bench")
        body = os.urandom(256)
        per = 500
        for n in range(0, backlog, per):
            mq.send(f"q{(n // per) % queues:04d}", [OutMessage(body=body)] * per)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start(db: Path, port: int) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MQLITE_")}
    env.update(
        MQLITE_DB=f"file:{db}",
        MQLITE_TOKENS=ADMIN,
        MQLITE_MONITOR_TOKENS=MONITOR,
        MQLITE_METRICS="on",
        MQLITE_LOG_LEVEL="WARNING",
    )
    cmd = [sys.executable, "-m", "mqlite.cli.main", "serve", "--addr", f"127.0.0.1:{port}"]
    proc = subprocess.Popen(
        cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).text == "ok":
                return proc
        except httpx.TransportError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("broker did not start")


def scrape(base: str) -> tuple[float, int, int]:
    started = time.perf_counter()
    r = httpx.get(f"{base}/metrics", headers={"Authorization": f"Bearer {MONITOR}"}, timeout=60)
    elapsed = time.perf_counter() - started
    r.raise_for_status()
    series = sum(1 for line in r.text.splitlines() if line and not line.startswith("#"))
    return elapsed, len(r.content), series


def sends_per_second(base: str, seconds: float, with_scrape: bool) -> float:
    stop = threading.Event()
    scrapes: list[float] = []

    def scraper() -> None:
        while not stop.is_set():
            began = time.monotonic()
            scrapes.append(scrape(base)[0])
            stop.wait(max(1.0 - (time.monotonic() - began), 0))

    thread = threading.Thread(target=scraper, daemon=True)
    if with_scrape:
        thread.start()
    body = {"queue": "bench", "messages": [{"body": base64.b64encode(b"x" * 256).decode()}]}
    n = 0
    with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {ADMIN}"}) as c:
        started = time.perf_counter()
        while time.perf_counter() - started < seconds:
            c.post("/mqlite.v1.QueueService/Send", json=body).raise_for_status()
            n += 1
        elapsed = time.perf_counter() - started
    stop.set()
    if with_scrape:
        thread.join()
    return n / elapsed


def measure(queues: int, backlog: int, seconds: float, trials: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "bench.db"
        began = time.perf_counter()
        build(db, queues, backlog)
        print(f"{queues} queues, {backlog} messages (built in {time.perf_counter() - began:.1f} s)")
        port = free_port()
        proc = start(db, port)
        base = f"http://127.0.0.1:{port}"
        try:
            scrape(base)  # warm
            times, size, series = [], 0, 0
            for _ in range(5):
                t, size, series = scrape(base)
                times.append(t)
            r = httpx.post(
                f"{base}/mqlite.v1.AdminService/Observe",
                headers={"Authorization": f"Bearer {MONITOR}"},
                json={},
                timeout=60,
            ).json()
            collected = r["collection"]["duration_seconds"] * 1000
            median = sorted(times)[2] * 1000
            print(
                f"  scrape: median {median:.0f} ms, {size / 1024:.0f} KiB, {series} series; "
                f"collection {collected:.1f} ms"
            )
            plain, scraped = [], []
            for _ in range(trials):
                plain.append(sends_per_second(base, seconds, with_scrape=False))
                scraped.append(sends_per_second(base, seconds, with_scrape=True))
            ratio = max(scraped) / max(plain)
            print(
                f"  Send x1: {max(plain):.0f}/s without scrape, {max(scraped):.0f}/s with a "
                f"1 s scrape: {ratio:.2f}x (target >= 0.9x)"
            )
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=30)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    if args.quick:
        measure(100, 10_000, 2.0, 1)
        return
    measure(1000, 100_000, 8.0, 2)  # the figure
    measure(10, 1_000, 8.0, 2)  # a small inventory, for scale


if __name__ == "__main__":
    main()
