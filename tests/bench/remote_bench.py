"""Per-statement latency on a real sqld: the remote store's own Hrana client
(``mqlite.engine.hrana`` behind ``RemoteConnection``) next to the PyPI ``libsql`` client it
replaced (0.1.11, the ``bench`` extra), in one run on one server; and the engine's
send/receive/complete on sqld next to a local file. Not run by pytest.

Run: .venv/bin/python tests/bench/remote_bench.py [--n 500] [--trials 3]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/sqld_harness.py

import mqlite
from mqlite import OutMessage, QueueConfig
from mqlite.engine.remote import RemoteConnection, parse_remote
from sqld_harness import Sqld, reset_database, sqld_binary


def per_op_us(fn: Callable[[int], object], n: int, trials: int) -> float:
    best = float("inf")
    for _ in range(trials):
        started = time.perf_counter()
        for i in range(n):
            fn(i)
        best = min(best, (time.perf_counter() - started) / n * 1e6)
    return best


def statements(url: str, n: int, trials: int) -> list[tuple[str, float, float | None]]:
    ours = RemoteConnection(parse_remote(url), "")
    ours.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, v BLOB)")
    ours.execute("INSERT INTO t(id, v) VALUES (1, x'00')")
    try:
        import libsql

        theirs: Any = libsql.connect(url, isolation_level=None)
    except ImportError:
        theirs = None
    rows: list[tuple[str, float, float | None]] = []

    def select(c: Any) -> Callable[[int], object]:
        return lambda i: c.execute("SELECT id, v FROM t WHERE id = ?", (1,)).fetchall()

    def inserts(c: Any, base: int) -> float:
        c.execute("BEGIN IMMEDIATE")
        us = per_op_us(
            lambda i: c.execute("INSERT INTO t(id, v) VALUES (?, ?)", (base + i, b"x" * 256)),
            n,
            1,
        )
        c.execute("COMMIT")
        return us

    mine = per_op_us(select(ours), n, trials)
    other = per_op_us(select(theirs), n, trials) if theirs is not None else None
    rows.append(("SELECT by key, autocommit", mine, other))
    mine = inserts(ours, 10**6)
    other = inserts(theirs, 10**8) if theirs is not None else None
    rows.append(("INSERT inside BEGIN IMMEDIATE .. COMMIT", mine, other))
    ours.close()
    if theirs is not None:
        theirs.close()
    return rows


def engine(dsn: str, n: int) -> dict[str, float]:
    with mqlite.open_embedded(dsn, background=False) as mq:
        mq.create_queue("q", QueueConfig())
        send = per_op_us(lambda i: mq.send_one("q", OutMessage(body=b"x" * 256)), n, 1)

        batch = [OutMessage(body=b"x" * 256) for _ in range(64)]
        per_batch = per_op_us(lambda i: mq.send("q", batch), max(n // 64, 3), 1)

        def cycle(i: int) -> None:
            (m,) = mq.receive("q", max_messages=1)
            mq.complete("q", m.seq_number, m.lock_token)

        return {
            "send_one": send,
            "send of 64, per message": per_batch / 64,
            "receive+complete": per_op_us(cycle, n, 1),
        }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=500)
    ap.add_argument("--trials", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        server = Sqld(sqld_binary(), Path(tmp) / "data").start()
        try:
            reset_database(server.url)
            rows = statements(server.url, args.n, args.trials)
            reset_database(server.url)
            remote = engine(server.url, args.n)
            local = engine("file:" + str(Path(tmp) / "mq.db"), args.n)
        finally:
            server.stop()
    print("| statement on sqld (loopback) | ours µs | libsql µs | libsql / ours |")
    print("|---|---|---|---|")
    for name, mine, other in rows:
        ratio = f"{other / mine:.2f}x" if other else "libsql not installed"
        theirs = f"{other:.0f}" if other else "-"
        print(f"| {name} | {mine:.0f} | {theirs} | {ratio} |")
    print()
    print("| engine verb | sqld µs | local file µs | sqld / local |")
    print("|---|---|---|---|")
    for verb, us in remote.items():
        print(f"| {verb} | {us:.0f} | {local[verb]:.0f} | {us / local[verb]:.1f}x |")


if __name__ == "__main__":
    main()
