"""The transactional Receiver next to a plain Receiver whose handler commits on its own.

Run from the repository root (not collected by pytest)::

    .venv/bin/python tests/bench/inbox_bench.py [--messages 5000] [--concurrency 1]

Both consume the same number of 256-byte messages from a file database and write one
business row per message. The plain one: the handler commits its row in its own
``mq.tx()``, then the Receiver completes the message (two transactions, and a crash in
between processes the message twice). The transactional one: the row and the completion
in ONE transaction (``Receiver(..., transactional=True)``). It prints messages/s for each
and the ratio, best of ``--rounds`` interleaved rounds; it asserts nothing.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "app"))

import mqlite  # the repo's app/ first
from mqlite import OutMessage, Receiver


def run(directory: Path, n: int, transactional: bool, concurrency: int) -> float:
    db = directory / f"inbox-{transactional}-{time.monotonic_ns()}.db"
    mq = mqlite.open_embedded(f"file:{db}", background=False)
    try:
        mq.create_queue("q")
        with mq.tx() as tx:
            tx.execute("CREATE TABLE done (id INTEGER PRIMARY KEY, src INTEGER)")
        for _ in range(n // 500):
            mq.send("q", [OutMessage(body=bytes(256))] * 500)

        def plain(m: Any) -> None:
            with mq.tx() as tx:
                tx.execute("INSERT INTO done (src) VALUES (?)", (m.seq_number,))

        def in_tx(m: Any, tx: Any) -> None:
            tx.execute("INSERT INTO done (src) VALUES (?)", (m.seq_number,))

        handler = in_tx if transactional else plain
        r = Receiver(
            mq, "q", handler, transactional=transactional, concurrency=concurrency, wait_ms=0
        )
        started = time.perf_counter()
        with r:
            while r.stats().completed < n:
                time.sleep(0.005)
        return n / (time.perf_counter() - started)
    finally:
        mq.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=5000)
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="mqlite-inbox-"))
    best = {False: 0.0, True: 0.0}
    try:
        for _ in range(args.rounds):
            for transactional in (False, True):
                rate = run(work, args.messages, transactional, args.concurrency)
                best[transactional] = max(best[transactional], rate)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"| Receiver (concurrency {args.concurrency}, {args.messages} messages) | msgs/s |")
    print("|---|---:|")
    print(f"| plain: handler commits its row, then complete | {best[False]:,.0f} |")
    print(f"| transactional: row + completion in one transaction | {best[True]:,.0f} |")
    print(f"| ratio transactional / plain | {best[True] / best[False]:.2f}x |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
