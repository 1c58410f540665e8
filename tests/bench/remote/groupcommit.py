"""What group commit buys: T threads, each calling ``send_one`` in a loop, on ONE engine.

The writer (``mqlite/engine/writer.py``) runs the calls that queue while it is busy in
one outer transaction of up to ``MAX_BATCH`` calls (each its own savepoint) and commits
once. ``MAX_BATCH`` is a module constant read on every batch, so setting it to 1 in this
process is the knob that turns batching off without touching the engine: every call is
then its own BEGIN .. COMMIT, still serialized on the one connection. Each figure runs
with the writer as shipped (``batched``) and with ``MAX_BATCH = 1`` (``unbatched``),
interleaved, and 1 thread is the serial baseline (nothing ever queues, so both are the
same code path there).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path

from sides import COUNTER, Counted, FileSide, RemoteSide

from mqlite import OutMessage
from mqlite.engine import writer

BATCHED = writer.MAX_BATCH  # an AttributeError here: the knob moved, update this file


@dataclass
class GroupCell:
    store: str  # file, sqld, sqld+1ms, ...
    threads: int
    batched: bool
    rep: int
    n: int
    rate: float  # acknowledged messages per second
    posts_per_msg: float  # HTTP requests to sqld per message (0 on a file)
    commits_per_msg: float  # requests that carry a COMMIT, per message


def senders(side: Counted, threads: int, n: int, body: bytes) -> float:
    """``threads`` threads send n messages in all, one ``send_one`` each time; wall s."""
    mq = side.mq  # type: ignore[attr-defined]
    msg = OutMessage(body=body)
    go = threading.Barrier(threads + 1)
    errors: list[BaseException] = []

    def run(count: int) -> None:
        go.wait()
        try:
            for _ in range(count):
                mq.send_one("bench", msg)
        except BaseException as exc:  # re-raised on the caller's thread
            errors.append(exc)

    shares = [n // threads + (i < n % threads) for i in range(threads)]
    pool = [threading.Thread(target=run, args=(c,), daemon=True) for c in shares]
    for t in pool:
        t.start()
    go.wait()
    t0 = time.perf_counter()
    for t in pool:
        t.join(600)
    wall = time.perf_counter() - t0
    if errors:
        raise errors[0]
    return wall


def cell(
    side: FileSide | RemoteSide,
    threads: int,
    batched: bool,
    rep: int,
    n: int,
    body: bytes,
    workdir: Path,
) -> GroupCell:
    workdir.mkdir(parents=True, exist_ok=True)
    side.open(workdir, "group")
    writer.MAX_BATCH = BATCHED if batched else 1
    try:
        p0, c0 = COUNTER.snapshot()
        wall = senders(side, threads, n, body)
        p1, c1 = COUNTER.snapshot()
    finally:
        writer.MAX_BATCH = BATCHED
        side.close()
    return GroupCell(
        store=side.name,
        threads=threads,
        batched=batched,
        rep=rep,
        n=n,
        rate=round(n / wall, 1),
        posts_per_msg=round((p1 - p0) / n, 3),
        commits_per_msg=round((c1 - c0) / n, 3),
    )
