"""The two stores under test, driven by the SAME workload code as ``make bench``
(``suite/sides_local.MqliteEmbedded``: produce_1, produce_64, drain, e2e, produce_p4,
e2e_4x4), plus the outbox: your own row and one message in one ``mq.tx()``.

- ``FileSide``: the embedded engine on a fresh local file (WAL, synchronous=NORMAL).
- ``RemoteSide``: the same engine on a real sqld over HTTP (``url``: the server itself,
  or a delaying proxy in front of it), on a database emptied before each cell
  (``sqld_harness.reset_database``: no server start per cell).

Round trips are counted where they happen: every HTTP request the remote store's client
sends goes through ``HttpConnection.post`` (``mqlite/engine/http1.py``), which
``count_round_trips()`` wraps once per process; a side reads the counter around each
timed workload (``posts``, and ``commits``: the requests that carry a COMMIT).
"""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "suite"))  # sides_local, workloads, probes
sys.path.insert(0, str(HERE.parents[1]))  # tests/sqld_harness.py

import sides_local  # noqa: E402

import mqlite  # noqa: E402
from mqlite import OutMessage  # noqa: E402
from mqlite.engine import http1  # noqa: E402
from sqld_harness import reset_database  # noqa: E402

Q = sides_local.Q


class Counter:
    """HTTP requests to the remote store, and those carrying a COMMIT, since start."""

    def __init__(self) -> None:
        self.posts = 0
        self.commits = 0
        self._lock = threading.Lock()

    def add(self, body: bytes) -> None:
        with self._lock:
            self.posts += 1
            self.commits += b'"sql":"COMMIT"' in body

    def snapshot(self) -> tuple[int, int]:
        with self._lock:
            return self.posts, self.commits


COUNTER = Counter()


def count_round_trips() -> None:
    """Wrap ``HttpConnection.post`` (idempotent): the bench's own instrument, not the
    engine's; it adds one lock and one ``in`` per request."""
    post = http1.HttpConnection.post
    if getattr(post, "counted", False):
        return

    def counted(self: http1.HttpConnection, head: bytes, body: bytes) -> tuple[int, bytes]:
        COUNTER.add(body)
        return post(self, head, body)

    counted.counted = True  # type: ignore[attr-defined]
    http1.HttpConnection.post = counted  # type: ignore[method-assign]


class Counted:
    """Round trips of the last timed workload (``posts``/``commits``, per cell)."""

    posts = 0
    commits = 0

    def timed(self, scenario: str, n: int, body: bytes) -> list[float] | None:
        start = COUNTER.snapshot()
        try:
            if scenario == "drain":
                return self.drain(n)  # type: ignore[attr-defined,no-any-return]
            return getattr(self, scenario)(n, body)  # type: ignore[no-any-return]
        finally:
            end = COUNTER.snapshot()
            self.posts, self.commits = end[0] - start[0], end[1] - start[1]

    def prefill(self, n: int, body: bytes) -> None:
        """n messages in batches of 64 and one of the rest (not timed, not counted)."""
        mq: Any = self.mq  # type: ignore[attr-defined]
        for start in range(0, n, 64):
            mq.send(Q, [OutMessage(body=body)] * min(64, n - start))

    def outbox(self, n: int, body: bytes) -> list[float]:
        """The transactional outbox: one business row and one message, one transaction
        (``mq.tx()``), n times, each timed."""
        mq: Any = self.mq  # type: ignore[attr-defined]
        msg = OutMessage(body=body)
        lat: list[float] = []
        clock = time.perf_counter
        for i in range(n):
            t0 = clock()
            with mq.tx() as tx:
                tx.execute("INSERT INTO orders (id, total) VALUES (?, ?)", (i, 42))
                tx.send_one(Q, msg)
            lat.append(clock() - t0)
        return lat


def _orders(mq: Any) -> None:
    with mq.tx() as tx:
        tx.execute("CREATE TABLE IF NOT EXISTS orders (id INTEGER PRIMARY KEY, total INTEGER)")


class FileSide(Counted, sides_local.MqliteEmbedded):
    """mqlite embedded on a local file (WAL, synchronous=NORMAL), as in ``make bench``."""

    def __init__(self) -> None:
        super().__init__()
        self.name = "file"

    def open(self, workdir: Path, cell: str) -> None:
        super().open(workdir, cell)
        _orders(self.mq)


class RemoteSide(Counted, sides_local.MqliteEmbedded):
    """mqlite embedded on sqld at ``url`` (direct, or through a delaying proxy)."""

    def __init__(
        self, name: str, url: str, admin_url: str, sqld_pid: int, delay_ms: float = 0
    ) -> None:
        super().__init__()
        self.name, self.delay_ms = name, delay_ms
        self.durability = "sqld (its own WAL file; loopback HTTP)"
        self.url, self.admin_url, self.sqld_pid = url, admin_url, sqld_pid

    def open(self, workdir: Path, cell: str) -> None:
        self.dir = workdir
        reset_database(self.admin_url)  # every table dropped: the lease row too
        self.mq = mqlite.open_embedded(self.url, background=False)
        self.mq.create_queue(Q, sides_local._config(cell))
        _orders(self.mq)

    def broker_pids(self) -> list[int]:
        return [self.sqld_pid]

    def data_paths(self) -> list[Path]:
        return []
