"""Cron schedules at scale (docs/cron.md), printed, not asserted: N schedules (10,000, the
limit) all due in the same minute, fired by a real ``mqlite serve``'s own maintenance
loop, and what that costs a concurrent producer -- in ONE run.

The schedules (``* * * * *``, one message each into queue ``cron``) are created in the
database file before the broker starts (``--over-http`` creates them through the broker:
about 15 ms each on a busy 2-core machine). A producer thread sends one message at a time
over HTTP from 20 s before a minute boundary until the firing is over, recording each
Send's latency. Reported:

- **fire time**: from the slot (the minute boundary) to the last slot sent, read from the
  broker itself (Observe's ``lag_seconds`` of each schedule = fire time - slot time), and
  the time until every message is visible to Stats;
- **producer p50/p99/max** Send latency during the 15 s before the boundary (baseline)
  and from the boundary until the firing is over.

    .venv/bin/python tests/bench/cron_bench.py               # 10,000 schedules, ~1.5 min
    .venv/bin/python tests/bench/cron_bench.py --schedules 1000
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

ADMIN = "mqk_bench_admin_" + "a" * 24
BODY = base64.b64encode(b"x" * 256).decode()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start(db: Path, port: int) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MQLITE_")}
    env.update(MQLITE_DB=f"file:{db}", MQLITE_TOKENS=ADMIN, MQLITE_LOG_LEVEL="WARNING")
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


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p * len(ordered)))] if ordered else float("nan")


def stats_total(c: httpx.Client) -> int:
    r = c.post("/mqlite.v1.QueueService/Stats", json={"queue": "cron"})
    return int(r.json()["total"])


def create_embedded(db: Path, n: int) -> None:
    import mqlite
    from mqlite import OutMessage

    with mqlite.open_embedded(f"file:{db}", background=False) as mq:
        for q in ("cron", "produce"):
            mq.create_queue(q)
        for i in range(n):
            mq.create_schedule(f"s{i:05d}", "* * * * *", "cron", OutMessage(b"x" * 256))


def run(n: int, over_http: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "bench.db"
        began = time.perf_counter()
        if not over_http:
            create_embedded(db, n)
            print(f"{n} schedules created in {time.perf_counter() - began:.1f} s (embedded)")
        port = free_port()
        proc = start(db, port)
        base = f"http://127.0.0.1:{port}"
        auth = {"Authorization": f"Bearer {ADMIN}"}
        try:
            with httpx.Client(base_url=base, headers=auth, timeout=120) as c:
                for q in ("cron", "produce") if over_http else ():
                    c.post(
                        "/mqlite.v1.AdminService/CreateQueue", json={"name": q}
                    ).raise_for_status()
                began = time.perf_counter()
                for i in range(n if over_http else 0):
                    c.post(
                        "/mqlite.v1.AdminService/CreateSchedule",
                        json={"name": f"s{i:05d}", "cron": "* * * * *", "queue": "cron",
                              "message": {"body": BODY}},
                    ).raise_for_status()  # fmt: skip
                if over_http:
                    print(f"{n} schedules created in {time.perf_counter() - began:.1f} s (HTTP)")
                # The next boundary with at least 20 s of baseline before it; if creating
                # crossed a boundary, that round fires first and is waited out here.
                now = time.time()
                boundary = (int(now // 60) + 1) * 60
                if boundary - now < 20:
                    boundary += 60
                while time.time() < boundary - 20:
                    time.sleep(0.2)
                before = stats_total(c)
                lat: list[tuple[float, float]] = []
                stop = threading.Event()

                def producer() -> None:
                    with httpx.Client(base_url=base, headers=auth, timeout=120) as p:
                        body = {"queue": "produce", "messages": [{"body": BODY}]}
                        while not stop.is_set():
                            t0 = time.time()
                            p.post("/mqlite.v1.QueueService/Send", json=body).raise_for_status()
                            lat.append((t0, time.time() - t0))

                thread = threading.Thread(target=producer)
                thread.start()
                visible_at = None
                while time.time() < boundary + 120:
                    if time.time() >= boundary and stats_total(c) >= before + n:
                        visible_at = time.time()
                        break
                    time.sleep(0.1)
                time.sleep(1.0)  # a little after, as the producer sees it
                stop.set()
                thread.join()
                obs = c.post("/mqlite.v1.AdminService/Observe", json={}).json()["schedules"]
                lags = [s["lag_seconds"] for s in obs["schedules"]]
                fired = stats_total(c) - before
                end = (visible_at or time.time()) + 1.0
                baseline = [d for t, d in lat if boundary - 15 <= t < boundary - 0.5]
                during = [d for t, d in lat if boundary <= t < end]
                slot = time.strftime("%H:%M:%S", time.gmtime(boundary))
                seen = (visible_at or end) - boundary
                print(
                    f"slot {slot}Z: {fired} fired (first {min(lags):.2f} s, last "
                    f"{max(lags):.2f} s after the slot); all visible to Stats {seen:.2f} s after it"
                )
                for label, xs in (("baseline (15 s before)", baseline), ("during firing", during)):
                    print(
                        f"  producer {label}: {len(xs)} sends, p50 {pct(xs, 0.5) * 1000:.1f} ms, "
                        f"p99 {pct(xs, 0.99) * 1000:.1f} ms, max {max(xs, default=0) * 1000:.1f} ms"
                    )
                # The same as a markdown table (make bench's focused section "cron").
                ms = lambda xs, q: f"{pct(xs, q) * 1000:.1f}"  # noqa: E731
                print(
                    "\n| schedules fired | first–last after the slot | all visible to Stats "
                    "| producer Send p50 before → during | p99 before → during |"
                )
                print("|---:|---|---:|---|---|")
                print(
                    f"| {fired:,} of {n:,} | {min(lags):.1f} s – {max(lags):.1f} s | {seen:.1f} s "
                    f"| {ms(baseline, 0.5)} → {ms(during, 0.5)} ms "
                    f"| {ms(baseline, 0.99)} → {ms(during, 0.99)} ms |"
                )
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(30)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--schedules", type=int, default=10_000)
    ap.add_argument("--over-http", action="store_true", help="create them through the broker")
    args = ap.parse_args()
    run(args.schedules, args.over_http)


if __name__ == "__main__":
    main()
