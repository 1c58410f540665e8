"""`make run` until the HTTP broker lands: open the database, run an embedded round trip,
and keep the broker's maintenance loops running until Ctrl-C.

    python -m mqlite.demo --db file:./data/mq.db
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import threading

from mqlite.config import DEFAULT_DB, sync_from_env
from mqlite.sdk.embedded import open_embedded
from mqlite.types import OutMessage, QueueConfig


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mqlite.demo")
    parser.add_argument(
        "--db", default=None, help="database DSN (default MQLITE_DB or file:./mq.db)"
    )
    parser.add_argument("--once", action="store_true", help="exit after the round trip")
    args = parser.parse_args(argv)
    db = args.db or os.environ.get("MQLITE_DB") or DEFAULT_DB
    mq = open_embedded(db, sync=sync_from_env(os.environ))
    try:
        mq.create_queue("demo", QueueConfig())
        seq = mq.send_one("demo", OutMessage(body=b"hello from mqlite"))
        for m in mq.receive("demo", max_messages=1, wait_ms=1000):
            print(f"sent seq {seq}, received {m.body.decode()!r} (delivery {m.delivery_count})")
            m.complete()
        print(f"embedded broker on {db}; stats: {mq.stats('demo')}")
        if args.once:
            return 0
        print("maintenance loops running; Ctrl-C to stop")
        stop = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
        with contextlib.suppress(KeyboardInterrupt):
            stop.wait()
        return 0
    finally:
        mq.close()


if __name__ == "__main__":
    raise SystemExit(main())
