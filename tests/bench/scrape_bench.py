"""What /metrics costs at a large inventory (issues 26 and 28), printed, not asserted: for
a real broker holding N queues, the scrape's size and series, its wall time, the
in-process render time of one observation, and a bystander's Send latency (p50/p99/max)
while four scrapers poll /metrics back to back, next to the same Sends with no scrape.

    .venv/bin/python tests/bench/scrape_bench.py                  # 1,000 and 10,000 queues
    .venv/bin/python tests/bench/scrape_bench.py --queues 1000    # one inventory
"""

from __future__ import annotations

import argparse
import base64
import os
import signal
import statistics
import tempfile
import threading
import time
from pathlib import Path

import httpx
from observe_bench import ADMIN, MONITOR, free_port, start

import mqlite
from mqlite.engine import Engine
from mqlite.server import metrics

SCRAPERS = 4


def build(db: Path, queues: int) -> None:
    with mqlite.open_embedded(f"file:{db}", background=False) as mq:
        for i in range(queues):
            mq.create_queue(f"q{i:05d}")
        mq.create_queue("bench")


def render_ms(db: Path) -> float:
    """The median of five renders of one observation, in process (no HTTP)."""
    engine = Engine(f"file:{db}")
    try:
        observed = engine.observe()
        times = []
        for _ in range(5):
            began = time.perf_counter()
            metrics.render(observed)
            times.append(time.perf_counter() - began)
    finally:
        engine.close()
    return statistics.median(times) * 1000


def scrape(client: httpx.Client) -> tuple[float, int, int, int]:
    """Wall time, text bytes, series and bytes on the wire (gzip when the broker
    offers it: httpx asks for it, as Prometheus does)."""
    began = time.perf_counter()
    r = client.get("/metrics", headers={"Authorization": f"Bearer {MONITOR}"}, timeout=120)
    elapsed = time.perf_counter() - began
    r.raise_for_status()
    series = sum(1 for line in r.text.splitlines() if line and not line.startswith("#"))
    return elapsed, len(r.content), series, r.num_bytes_downloaded


def send_latencies(base: str, seconds: float, scrapers: int) -> list[float]:
    stop = threading.Event()

    def scraper() -> None:  # downloads only: parsing 19 MB here would starve the broker
        headers = {"Authorization": f"Bearer {MONITOR}"}
        with httpx.Client(base_url=base, headers=headers, timeout=120) as c:
            while not stop.is_set():
                c.get("/metrics").raise_for_status()

    threads = [threading.Thread(target=scraper, daemon=True) for _ in range(scrapers)]
    for t in threads:
        t.start()
    time.sleep(0.5 if scrapers else 0)
    body = {"queue": "bench", "messages": [{"body": base64.b64encode(b"x" * 256).decode()}]}
    out = []
    with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {ADMIN}"}) as c:
        began = time.perf_counter()
        while time.perf_counter() - began < seconds:
            t0 = time.perf_counter()
            c.post("/mqlite.v1.QueueService/Send", json=body, timeout=60).raise_for_status()
            out.append(time.perf_counter() - t0)
            time.sleep(0.01)  # a paced producer: 100 Sends/s at most
    stop.set()
    for t in threads:
        t.join()
    return out


def quantiles(xs: list[float]) -> str:
    xs = sorted(xs)
    p = lambda q: xs[min(int(q * len(xs)), len(xs) - 1)] * 1000  # noqa: E731
    return f"p50 {p(0.5):.1f} ms, p99 {p(0.99):.1f} ms, max {xs[-1] * 1000:.1f} ms (n={len(xs)})"


def measure(queues: int, seconds: float) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "bench.db"
        began = time.perf_counter()
        build(db, queues)
        print(f"{queues} queues (built in {time.perf_counter() - began:.1f} s)", flush=True)
        print(f"  render (in process): median {render_ms(db):.0f} ms", flush=True)
        port = free_port()
        proc = start(db, port)
        base = f"http://127.0.0.1:{port}"
        try:
            with httpx.Client(base_url=base) as c:
                c.post(
                    "/mqlite.v1.QueueService/Send",
                    headers={"Authorization": f"Bearer {ADMIN}"},
                    json={"queue": "bench", "messages": [{"body": "eA=="}]},
                ).raise_for_status()
                scrape(c)  # warm
                runs = []
                for _ in range(3):  # each a collection of its own: past the reuse window
                    time.sleep(1.2)
                    runs.append(scrape(c))
            median = statistics.median(r[0] for r in runs) * 1000
            _, size, series, wire = runs[-1]
            print(
                f"  scrape: median {median:.0f} ms, {size / 1024:.0f} KiB "
                f"({wire / 1024:.0f} KiB on the wire), {series} series"
            )
            print("  Send, no scrape:      " + quantiles(send_latencies(base, seconds, 0)))
            print(
                f"  Send, {SCRAPERS} scrapers:      "
                + quantiles(send_latencies(base, seconds, SCRAPERS)),
                flush=True,
            )
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=60)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--queues", type=int, action="append")
    ap.add_argument("--seconds", type=float, default=10.0)
    args = ap.parse_args()
    for n in args.queues or [1000, 10_000]:
        measure(n, args.seconds)


if __name__ == "__main__":
    main()
