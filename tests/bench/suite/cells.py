"""One cell = one system × one scenario × one repetition, measured the same way for all.

Measured around the timed workload only (the queue is created and, for a drain, filled
before): wall time; CPU seconds of this process (the client, and for embedded systems the
whole engine) and of the broker's processes, from /proc; bytes the processes sent to
storage (/proc/<pid>/io write_bytes, this one included); peak RSS of each side (VmHWM,
reset just before); allocated bytes of the data directory before and after; per-message
latency where the workload acknowledges one message at a time.
"""

from __future__ import annotations

import gc
import os
import shutil
import statistics
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import probes
from side import Side

SCENARIOS = ("produce_1", "produce_64", "drain", "e2e")
# The original's produce_p4 and batch_16, on the sides that have ``produce_p4`` (threads,
# a connection each) and ``produce_batch`` (any batch size).
PRODUCE_MORE = ("produce_p4", "batch_16")
PRODUCE = ("produce_1", "produce_64", *PRODUCE_MORE)  # database bytes per message: these
MANY = ("e2e_4x4", "receiver_4x4", "sessions_64g", "longpoll")  # workloads.py, where offered
BODY_SIZES = (64, 4096, 65536, 1 << 20)  # the body-size sweep: send_one + drain of each


@dataclass
class Result:
    system: str
    scenario: str
    rep: int
    n: int
    body: int
    wall_s: float
    rate: float  # messages per second
    client_cpu_us: float  # per message
    broker_cpu_us: float | None  # per message; None for embedded systems
    client_peak_rss_kb: int | None
    broker_peak_rss_kb: int | None
    written_b: float  # bytes sent to storage per message, every process involved
    db_b: float | None  # growth of the data directory per message (produce scenarios)
    p50_us: float | None
    p99_us: float | None

    def row(self) -> dict[str, object]:
        return asdict(self)


def _quantile(sorted_lat: list[float], q: float) -> float:
    return sorted_lat[min(len(sorted_lat) - 1, int(q * len(sorted_lat)))] * 1e6


def run_cell(side: Side, scenario: str, rep: int, n: int, body: bytes, tmp: Path) -> Result:
    workdir = tmp / f"{side.name}-{scenario}-{rep}"
    workdir.mkdir()
    side.open(workdir, scenario.replace("_", "-"))
    try:
        if scenario.startswith("drain"):
            side.prefill(n, body)
        broker = side.broker_pids()
        me = [os.getpid()]
        gc.collect()
        probes.reset_peak_rss(me + broker)
        disk0 = probes.disk_bytes(side.data_paths())
        w0, b0 = probes.write_bytes(me + broker), probes.cpu_seconds(broker)
        c0, t0 = time.process_time(), time.perf_counter()
        if scenario == "produce_1":
            lat = side.produce_1(n, body)
        elif scenario == "produce_64":
            lat = side.produce_64(n, body)
        elif scenario == "produce_p4":
            lat = side.produce_p4(n, body)  # type: ignore[attr-defined]
        elif scenario == "batch_16":
            lat = side.produce_batch(n, body, 16)  # type: ignore[attr-defined]
        elif scenario == "e2e":
            lat = side.e2e(n, body)
        elif scenario in MANY:
            lat = getattr(side, scenario)(n, body)
        elif scenario.startswith("deliver_"):
            lat = side.produce_1(n, body)
            side.drain(n)
        else:
            lat = side.drain(n)
        wall = time.perf_counter() - t0
        client_cpu = time.process_time() - c0
        broker_cpu = probes.cpu_seconds(broker) - b0
        written = probes.write_bytes(me + broker) - w0
        disk1 = probes.disk_bytes(side.data_paths())
        client_rss = probes.peak_rss_kb(me)
        broker_rss = probes.peak_rss_kb(broker) if broker else None
    finally:
        side.close()
        shutil.rmtree(workdir, ignore_errors=True)
    lat_sorted = sorted(lat) if lat else []
    return Result(
        system=side.name,
        scenario=scenario,
        rep=rep,
        n=n,
        body=len(body),
        wall_s=round(wall, 4),
        rate=round(n / wall, 1),
        client_cpu_us=round(client_cpu / n * 1e6, 1),
        broker_cpu_us=round(broker_cpu / n * 1e6, 1) if broker else None,
        client_peak_rss_kb=client_rss,
        broker_peak_rss_kb=broker_rss,
        written_b=round(written / n, 1),
        db_b=round((disk1 - disk0) / n, 1) if scenario in PRODUCE else None,
        p50_us=round(_quantile(lat_sorted, 0.5), 1) if lat_sorted else None,
        p99_us=round(_quantile(lat_sorted, 0.99), 1) if lat_sorted else None,
    )


def median(xs: list[float]) -> float:
    return statistics.median(xs)
