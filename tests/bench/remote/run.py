"""The engine on a remote store (sqld) next to a local file, and what group commit buys
over the network, in ONE run; writes docs/benchmarks-remote.md. Not run by pytest.

    .venv/bin/python tests/bench/remote/run.py [--quick | --tiny] [--delays 0,1,5]
        [--reps N] [--out results.json] [--docs docs/benchmarks-remote.md | --no-docs]
        [--baseline before.json] [--label "what this run is"] [--from results.json]

Starts one sqld (``tests/sqld_harness.py``: the pinned, verified binary on a free
loopback port, its own temporary data directory) and, for each non-zero delay, a
``delay_proxy.py`` process in front of it; stops them on the way out. Stores: ``file``
(a fresh local file per cell), ``sqld`` (direct), ``sqld+N ms`` (through the proxy).
Every repetition runs every scenario on every store in rotated order (interleaved), then
the group-commit cells likewise. Through a proxy the counts are smaller (each round trip
costs milliseconds), so those rows say their own n. It prints the tables and asserts
nothing about speed.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import groupcommit  # noqa: E402
import probes  # noqa: E402  (suite/probes.py)
import remote_report  # noqa: E402
import sides  # noqa: E402 (puts suite/ and tests/ on sys.path)

from mqlite.engine.hrana import HranaClient  # noqa: E402
from sqld_harness import Sqld, sqld_binary  # noqa: E402

REPO = HERE.parents[2]
SCENARIOS = ("produce_1", "produce_64", "drain", "e2e", "produce_p4", "e2e_4x4", "outbox")
DELAYED = ("produce_1", "produce_64", "drain", "outbox")  # through a proxy: the key ones
# Messages per cell, direct (file and sqld) and through a proxy (per scenario, at 1 ms;
# ``delayed_n`` scales them down for longer delays), the group-commit thread counts and
# messages per group cell (none: no group cells through a proxy), repetitions.
MODES: dict[str, dict[str, Any]] = {
    "tiny": {  # the smoke test's: the harness end to end, in seconds
        "n": {"produce_1": 8, "produce_64": 64, "drain": 64, "e2e": 8,
              "produce_p4": 8, "e2e_4x4": 8, "outbox": 8},
        "n_delayed": {"produce_1": 4, "produce_64": 64, "drain": 16, "outbox": 4},
        "threads": (1, 8), "group_n": 16, "group_n_delayed": 0, "reps": 2,
    },
    "quick": {
        "n": {"produce_1": 300, "produce_64": 2048, "drain": 2048, "e2e": 300,
              "produce_p4": 300, "e2e_4x4": 300, "outbox": 300},
        "n_delayed": {"produce_1": 48, "produce_64": 512, "drain": 256, "outbox": 48},
        "threads": (1, 4, 16, 64), "group_n": 512, "group_n_delayed": 64, "reps": 3,
    },
    "full": {
        "n": {"produce_1": 1000, "produce_64": 8192, "drain": 4096, "e2e": 1000,
              "produce_p4": 1000, "e2e_4x4": 1000, "outbox": 1000},
        "n_delayed": {"produce_1": 100, "produce_64": 1024, "drain": 512, "outbox": 100},
        "threads": (1, 4, 16, 64), "group_n": 1024, "group_n_delayed": 128, "reps": 3,
    },
}  # fmt: skip
BODY = b"x" * 256


def delayed_n(base: int, delay_ms: float) -> int:
    """Fewer messages where each round trip costs more: base at 1 ms, a third at 5 ms."""
    return max(8, round(base * 2 / (1 + delay_ms)))


def start_proxy(upstream_port: int, delay_ms: float) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, str(HERE / "delay_proxy.py"), str(upstream_port), str(delay_ms)],
        stdin=subprocess.PIPE,  # the proxy ends when this closes (this process died)
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    port = int(proc.stdout.readline())
    return proc, f"http://127.0.0.1:{port}"


def round_trip_us(url: str, n: int = 60) -> float:
    """Median µs of one ``SELECT 1`` round trip on a kept-alive connection: what the
    proxy really adds per round trip (its delay both ways plus its own cost)."""
    client = HranaClient(url, timeout_s=10.0)
    lat = []
    try:
        for _ in range(n):
            t0 = time.perf_counter()
            client.execute("SELECT 1", (), keep_stream=False)
            lat.append(time.perf_counter() - t0)
    finally:
        client.drop()
    return round(statistics.median(lat[5:]) * 1e6, 1)


def measure(side: Any, scenario: str, rep: int, n: int, tmp: Path) -> dict[str, Any]:
    """One cell: open a fresh queue, prefill for a drain, time the workload alone."""
    workdir = tmp / f"{side.name}-{scenario}-{rep}".replace(" ", "")
    workdir.mkdir()
    side.open(workdir, scenario.replace("_", "-"))
    try:
        if scenario == "drain":
            side.prefill(n, BODY)
        server = side.broker_pids()
        s0, c0, t0 = probes.cpu_seconds(server), time.process_time(), time.perf_counter()
        lat = side.timed(scenario, n, BODY)
        wall = time.perf_counter() - t0
        client_cpu, server_cpu = time.process_time() - c0, probes.cpu_seconds(server) - s0
    finally:
        side.close()
    lat = sorted(lat) if lat else []

    def q(p: float) -> float | None:
        return round(lat[min(len(lat) - 1, int(p * len(lat)))] * 1e6, 1) if lat else None

    return {
        "system": side.name,
        "scenario": scenario,
        "rep": rep,
        "n": n,
        "rate": round(n / wall, 1),
        "p50_us": q(0.5),
        "p99_us": q(0.99),
        "posts_per_msg": round(side.posts / n, 3),
        "commits_per_msg": round(side.commits / n, 3),
        "client_cpu_us": round(client_cpu / n * 1e6, 1),
        "server_cpu_us": round(server_cpu / n * 1e6, 1) if server else None,
    }


def run(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    mode = MODES[args.mode]
    reps = args.reps or mode["reps"]
    delays = [float(d) for d in args.delays.split(",") if d.strip()]
    sides.count_round_trips()
    server = Sqld(sqld_binary(), tmp / "sqld-data").start()
    assert server.proc is not None
    pids = [server.proc.pid]  # in the results: the smoke test checks they are gone
    proxies: list[subprocess.Popen[str]] = []
    try:
        stores: list[Any] = [sides.FileSide()]
        for d in delays:
            url, name = server.url, "sqld"
            if d > 0:
                proc, url = start_proxy(server.port, d)
                proxies.append(proc)
                pids.append(proc.pid)
                name = f"sqld+{d:g}ms"
            stores.append(sides.RemoteSide(name, url, server.url, pids[0], d))
        cells: list[dict[str, Any]] = []
        group: list[dict[str, Any]] = []
        rtt = {s.name: round_trip_us(s.url) for s in stores[1:]}  # type: ignore[attr-defined]
        for rep in range(reps):
            for i, scenario in enumerate(SCENARIOS):
                order = stores[(rep + i) % len(stores) :] + stores[: (rep + i) % len(stores)]
                for side in order:
                    delay = getattr(side, "delay_ms", 0)
                    if delay and scenario not in DELAYED:
                        continue
                    n = mode["n"][scenario]
                    if delay:
                        n = delayed_n(mode["n_delayed"][scenario], delay)
                    cells.append(measure(side, scenario, rep, n, tmp))
                    print(_line(cells[-1]), flush=True)
            for j, threads in enumerate(mode["threads"]):
                for k, side in enumerate(stores):
                    delay = getattr(side, "delay_ms", 0)
                    if delay and not mode["group_n_delayed"]:
                        continue
                    n = delayed_n(mode["group_n_delayed"], delay) if delay else mode["group_n"]
                    for batched in (True, False) if (rep + j + k) % 2 else (False, True):
                        workdir = tmp / f"group-{side.name}-{threads}-{batched}-{rep}"
                        g = groupcommit.cell(side, threads, batched, rep, n, BODY, workdir)
                        group.append(asdict(g))
                        print(f"group {g.store:10} T={threads:3} batched={batched!s:5} "
                              f"{g.rate:9,.0f} msg/s  rt/msg {g.posts_per_msg:.2f}  "
                              f"commits/msg {g.commits_per_msg:.3f}", flush=True)  # fmt: skip
    finally:
        for proc in proxies:
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGTERM)
                proc.wait(timeout=10)
        server.stop()
    return {
        "meta": {
            "mode": args.mode,
            "reps": reps,
            "delays_ms": delays,
            "stores": [s.name for s in stores],
            "sqld": _sqld_version(server.binary),
            "machine": f"{os.cpu_count()} cores, Python {platform.python_version()}, "
            f"SQLite {sqlite3.sqlite_version} (local side)",
            "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "loadavg": os.getloadavg(),
            "pids": pids,
            "command": shlex.join(["tests/bench/remote/run.py", *sys.argv[1:]]),
            "round_trip_us": rtt,
        },
        "cells": cells,
        "group": group,
    }


def _sqld_version(binary: Path) -> str:
    try:
        out = subprocess.run([str(binary), "--version"], capture_output=True, text=True)
        return out.stdout.strip().removeprefix("sqld ").removeprefix("sqld ") or "?"
    except OSError:
        return "?"


def _line(c: dict[str, Any]) -> str:
    return (f"{c['scenario']:10} {c['system']:10} n={c['n']:6} {c['rate']:10,.0f} msg/s  "
            f"rt/msg {c['posts_per_msg']:.2f}")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    size = ap.add_mutually_exclusive_group()
    size.add_argument("--quick", dest="mode", action="store_const", const="quick")
    size.add_argument("--tiny", dest="mode", action="store_const", const="tiny")
    ap.set_defaults(mode="full")
    ap.add_argument("--delays", default="0,1,5", help="one-way ms; 0 = sqld direct")
    ap.add_argument("--reps", type=int, default=0)
    ap.add_argument("--out", default="", help="also write the raw cells here (JSON)")
    ap.add_argument("--docs", default=str(REPO / "docs" / "benchmarks-remote.md"))
    ap.add_argument("--no-docs", action="store_true")
    ap.add_argument("--dir", default=None, help="where the local files go (default: a tmp dir)")
    ap.add_argument("--baseline", default="", help="a previous --out file: before/after table")
    ap.add_argument("--label", default="", help="what this run measures (kept in --out)")
    ap.add_argument("--from", dest="source", default="", help="render this --out file, no run")
    args = ap.parse_args()
    # SIGTERM unwinds like Ctrl-C: the finally blocks stop sqld and the proxies.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if args.source:  # the page again from a run's file (e.g. next to another --baseline)
        data = json.loads(Path(args.source).read_text())
        data["meta"]["command"] += "`, this page by `" + " ".join(
            ["tests/bench/remote/run.py", *sys.argv[1:]]
        )
    else:
        with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
            data = run(args, Path(tmp))
        data["meta"]["label"] = args.label
    if args.out:
        Path(args.out).write_text(json.dumps(data, indent=1))
    baseline = json.loads(Path(args.baseline).read_text()) if args.baseline else None
    text = remote_report.render(data, baseline=baseline)
    if not args.no_docs:
        Path(args.docs).write_text(text)
    print()
    print(text)


if __name__ == "__main__":
    main()
