"""A soak consumer process: the SDK's ``Receiver`` over HTTP on one queue.

``python soak_consumer.py URL QUEUE LOG`` (token in MQLITE_TOKEN). Its handler appends
``H seq delivery_count handled_at_monotonic`` to LOG (flushed before it returns, so the
line is there even when the process is SIGKILLed right after) and raises for a poison
message: the Receiver abandons it with ``FixedBackoff``'s delay, and the queue's delivery
bound dead-letters it. ``time.monotonic`` is one clock for every process of the host.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

import mqlite
from mqlite.sdk.receiver import Backoff

POISON_DELAY_MS = 150  # times the delivery count


class FixedBackoff(Backoff):
    """No jitter: the drill checks the redelivery gap against exactly this delay."""

    def delay_ms(self, delivery_count: int) -> int:
        return POISON_DELAY_MS * delivery_count


class Poison(Exception):
    pass


def main() -> None:
    url, queue, log_path = sys.argv[1:4]
    client = mqlite.connect(url, os.environ.get("MQLITE_TOKEN") or None, timeout=10)
    log = open(log_path, "a", buffering=1)  # noqa: SIM115
    lock = threading.Lock()

    def handle(m: mqlite.Message) -> None:
        with lock:
            log.write(f"H {m.seq_number} {m.delivery_count} {time.monotonic():.6f}\n")
            log.flush()
        if m.properties.get("poison") == "1":
            raise Poison(m.seq_number)

    receiver = mqlite.Receiver(
        client,
        queue,
        handle,
        concurrency=4,
        wait_ms=1000,
        backoff=FixedBackoff(0, 1_000_000),
        on_error=lambda exc, m: None,
    )
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    receiver.start()
    stop.wait()
    receiver.stop(timeout=5)


if __name__ == "__main__":
    main()
