"""A deep backlog on the embedded engine: drain rate and claim latency against the depth,
and the file's bloat then reclaim (the original's ``drain_4c`` 200k prefill and
``bloat_50k``, measured on one queue, once per run after the repetitions).

Fill: ``depth`` messages of 256 B in Sends of 64 (timed, reported as the fill rate).
Drain: ``receive(64)`` + ``complete_batch`` until empty, cut into ``WINDOWS`` windows by
depth; each window gives its drain rate and the p50/p99 of the ``receive`` call alone
(the claim). Sizes: the database file and the whole footprint (db + WAL + SHM) when
empty, filled, drained (the WAL as the drain left it), and after ``vacuum()``
(incremental: checkpoint, ``incremental_vacuum``, checkpoint; the footprint checkpointed
just before the reclaim is recorded too) -- the file grows with the
backlog and must give the space back once it is gone.
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path
from typing import Any

import mqlite
from mqlite import OutMessage, QueueConfig

WINDOWS = 20
Q = "backlog"


def _sizes(workdir: Path) -> dict[str, int]:
    db = workdir / "mq.db"
    files = [db, Path(f"{db}-wal"), Path(f"{db}-shm")]
    return {
        "db_bytes": db.stat().st_size,
        "footprint_bytes": sum(f.stat().st_size for f in files if f.exists()),
    }


def _q(sorted_s: list[float], q: float) -> float:
    return round(sorted_s[min(len(sorted_s) - 1, int(q * len(sorted_s)))] * 1e6, 1)


def run(workdir: Path, depth: int, body: bytes) -> dict[str, Any]:
    workdir.mkdir(parents=True, exist_ok=True)
    mq = mqlite.open_embedded(f"file:{workdir}/mq.db", background=False)
    try:
        mq.create_queue(Q, QueueConfig(lock_duration_ms=3_600_000))
        sizes = {"empty": _sizes(workdir)}
        batch = [OutMessage(body=body)] * 64
        t0 = time.perf_counter()
        for _ in range(depth // 64):
            mq.send(Q, batch)
        fill_s = time.perf_counter() - t0
        depth = depth // 64 * 64
        sizes["filled"] = _sizes(workdir)
        points, left = [], depth
        per_window = max(64, depth // WINDOWS)
        while left > 0:
            claims, done, t0 = [], 0, time.perf_counter()
            while done < per_window and left - done > 0:
                c0 = time.perf_counter()
                got = mq.receive(Q, max_messages=64)
                claims.append(time.perf_counter() - c0)
                if not got:
                    raise RuntimeError(f"backlog: empty with {left - done} left")
                mq.complete_batch(Q, [(m.seq_number, m.lock_token) for m in got])
                done += len(got)
            wall = time.perf_counter() - t0
            claims.sort()
            p50, p99 = _q(claims, 0.5), _q(claims, 0.99)
            points.append(
                {
                    "depth": left,
                    "rate": round(done / wall, 1),
                    "claim_p50_us": p50,
                    "claim_p99_us": p99,
                }
            )
            left -= done
        sizes["drained"] = _sizes(workdir)  # the WAL as the drain left it
        vac = mq.vacuum()  # checkpoint, incremental_vacuum, checkpoint
        sizes["reclaimed"] = _sizes(workdir)
    finally:
        mq.close()
    rates = [p["rate"] for p in points]
    return {
        "depth": depth,
        "body": len(body),
        "fill_rate": round(depth / fill_s, 1),
        "drain_rate_median": round(statistics.median(rates), 1),
        "pages_reclaimed": vac.pages_reclaimed,
        "footprint_checkpointed_before_reclaim": vac.before_bytes,
        "points": points,
        "sizes": sizes,
    }
