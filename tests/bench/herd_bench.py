"""Thundering herd: sends to a queue with many parked long polls, next to none, one run.

Run from the repository root (not collected by pytest)::

    .venv/bin/python tests/bench/herd_bench.py [--polls 1000] [--duration 5]

One broker (``mqlite serve``, WARNING). Phase 1 (baseline): 4 keep-alive connections
send single messages to queue ``hot`` while 1 connection sends to an unrelated queue
``cold``; phase 2: the same with ``--polls`` long polls (Receive, wait 20 s, re-issued as
soon as each returns) parked on its own, empty ``hot`` queue, so every send there is also
a delivery to a parked poll. It prints sends/s to ``hot``, p50/p99 latency of
the sends to ``cold``, and the ratios phase 2 / phase 1. It asserts nothing. A broker that
wakes every parked poll per send makes each send cost ``--polls`` claims on the writer;
one that wakes as many polls as there are messages keeps both ratios near 1.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import secrets
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from http_bench import (  # a sibling script, not a package
    CREATE_QUEUE,
    HOST,
    RECEIVE,
    SEND,
    STATS,
    Conn,
    Server,
    _request_bytes,
    broker_env,
    free_port,
    http_call,
    run_async,
    send_body,
    start_server,
)


async def phase(
    port: int, token: str, hot_queue: str, polls: int, duration: float
) -> dict[str, float]:
    hot = _request_bytes(port, SEND, send_body(1, hot_queue), token)
    cold = _request_bytes(port, SEND, send_body(1, "cold"), token)
    poll_body = json.dumps({"queue": hot_queue, "max_messages": 1, "wait_time_ms": 20_000})
    poll_body = poll_body.encode()
    poll = _request_bytes(port, RECEIVE, poll_body, token)
    stop = time.monotonic() + duration + 3600
    received = 0

    async def poller(c: Conn) -> None:
        nonlocal received
        while time.monotonic() < stop:
            status, body = await c.roundtrip(poll)
            if status == 200:
                received += len(json.loads(body).get("messages", []))

    pollers = [await Conn.open(port) for _ in range(polls)]
    tasks = [asyncio.ensure_future(poller(c)) for c in pollers]
    await asyncio.sleep(min(5.0, 1.0 + polls / 500))  # let the polls park
    sent = 0
    latencies: list[float] = []
    senders = [await Conn.open(port) for _ in range(4)]
    cold_conn = await Conn.open(port)
    t0 = time.monotonic()
    end = t0 + duration

    async def send_hot(c: Conn) -> None:
        nonlocal sent
        while time.monotonic() < end:
            await c.roundtrip(hot)
            sent += 1

    async def send_cold() -> None:
        while time.monotonic() < end:
            started = time.perf_counter()
            await cold_conn.roundtrip(cold)
            latencies.append((time.perf_counter() - started) * 1000)
            await asyncio.sleep(0.01)

    await asyncio.gather(*(send_hot(c) for c in senders), send_cold())
    elapsed = time.monotonic() - t0
    stop = 0.0
    for c in [*pollers, *senders, cold_conn]:
        c.close()
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    latencies.sort()
    return {
        "hot_sends_per_s": sent / elapsed,
        "cold_p50_ms": statistics.median(latencies),
        "cold_p99_ms": latencies[int(len(latencies) * 0.99) - 1],
        "received": float(received),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--polls", type=int, default=1000)
    parser.add_argument("--duration", type=float, default=5.0)
    args = parser.parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="mqlite-herd-bench-"))
    servers: list[Server] = []
    token = "mqk_" + secrets.token_hex(32)
    try:
        port = free_port()
        start_server(
            "broker",
            [sys.executable, "-m", "mqlite.cli.main", "serve", "--addr", f"{HOST}:{port}"],
            broker_env(workdir, token, "WARNING"),
            port,
            workdir,
            lambda p: http_call(p, STATS, {"queue": "none"}, token)[0] in (200, 404),
            servers,
        )
        for q in ("hot-base", "hot-herd", "cold"):  # an empty hot queue per phase
            http_call(port, CREATE_QUEUE, {"name": q}, token)
        base = run_async(phase(port, token, "hot-base", 0, args.duration))
        herd = run_async(phase(port, token, "hot-herd", args.polls, args.duration))
        print(f"| figure | no polls | {args.polls} parked polls | ratio |")
        print("|---|---:|---:|---:|")
        for key, label in (
            ("hot_sends_per_s", "sends/s to the polled queue"),
            ("cold_p50_ms", "p50 ms, send to an unrelated queue"),
            ("cold_p99_ms", "p99 ms, send to an unrelated queue"),
        ):
            ratio = herd[key] / base[key] if base[key] else 0.0
            print(f"| {label} | {base[key]:,.2f} | {herd[key]:,.2f} | {ratio:.2f}x |")
        print(f"messages delivered to the parked polls: {herd['received']:.0f}")
    finally:
        for s in servers:
            s.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
