"""A bystander's Send latency while an unpaced Redrive or Purge of a big DLQ runs (issue
26: one transaction for 200,000 dead letters held other queues' Sends for 2.5 s / 0.85 s).

Seeds two DLQs of ``--n`` dead letters straight into a fresh database file, opens the
engine, and while one thread redrives the first (cross-queue) and then purges the second,
another thread sends one message at a time to a third queue and records each latency.
Prints one line per operation: its duration and the bystander's p50 / p99 / max.

    .venv/bin/python tests/bench/dlq_bench.py                 # 200,000 per DLQ
    PYTHONPATH=/path/to/other/app .venv/bin/python tests/bench/dlq_bench.py   # another tree
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from mqlite import OutMessage, QueueConfig
from mqlite.engine.engine import Engine


def seed(path: Path, queues: list[str], n: int) -> None:
    """``n`` dead letters in each of ``queues`` (which the engine created), one INSERT."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("BEGIN")
    for q in queues:
        conn.execute(
            "WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < ?) "
            "INSERT INTO messages (queue, state, enqueued_at, body, delivery_count, "
            "dead_letter_reason) SELECT ?, 'dead_lettered', i, randomblob(64), 10, 'bench' "
            "FROM s",
            (n, q),
        )
    conn.execute("COMMIT")
    conn.close()


def measure(eng: Engine, op: Callable[[], int]) -> tuple[int, float, list[float]]:
    """Run ``op`` while a bystander sends; (its result, seconds, bystander latencies)."""
    stop = threading.Event()
    latencies: list[float] = []

    def bystander() -> None:
        while not stop.is_set():
            started = time.perf_counter()
            eng.send("other", [OutMessage(body=b"x")])
            latencies.append(time.perf_counter() - started)
            time.sleep(0.001)

    thread = threading.Thread(target=bystander)
    thread.start()
    time.sleep(0.05)
    latencies.clear()  # only the sends that overlap the operation
    started = time.perf_counter()
    result = op()
    seconds = time.perf_counter() - started
    stop.set()
    thread.join()
    return result, seconds, latencies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=200_000, help="dead letters per DLQ")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "mq.db"
        eng = Engine(f"file:{path}")
        for q in ("dlq", "dlq2", "target", "other"):
            eng.create_queue(q, QueueConfig())
        eng.close()
        seed(path, ["dlq", "dlq2"], args.n)
        eng = Engine(f"file:{path}")
        try:
            print(
                f"| operation ({args.n:,} dead letters) | seconds | bystander sends "
                "| p50 ms | p99 ms | max ms |"
            )
            print("|---|---|---|---|---|---|")
            for name, op in (
                ("unpaced cross-queue Redrive", lambda: eng.redrive("dlq", target="target")),
                ("Purge (all)", lambda: eng.purge("dlq2")),
            ):
                result, seconds, lat = measure(eng, op)
                assert result == args.n, result
                ms = sorted(x * 1000 for x in lat)
                p99 = ms[min(len(ms) - 1, int(len(ms) * 0.99))] if ms else 0.0
                print(
                    f"| {name} | {seconds:.2f} | {len(ms)} | "
                    f"{statistics.median(ms) if ms else 0:.1f} | {p99:.1f} | "
                    f"{max(ms, default=0):.1f} |"
                )
        finally:
            eng.close()


if __name__ == "__main__":
    main()
