"""Embedded-engine benchmark: mqlite next to raw sqlite3 doing the equivalent statements.

Run from the repository root (not collected by pytest)::

    .venv/bin/python tests/bench/engine_bench.py [--quick] [--dir DIR] [--check]

Every figure is measured in one run, in CPU time of this process (``time.process_time``:
user + system, so SQLite's writes count; on a shared machine wall time measures the
neighbours -- issue 29 saw 0.04x for a batch at a load average of 25), on a file
database with ``synchronous=NORMAL`` and 256-byte bodies, once through the engine and
once through a bare ``sqlite3`` connection on a database created from the same
``app/mqlite/engine/schema.sql`` (so the partial indexes match) with the engine's
PRAGMAs. Each figure gets a fresh database on both sides; trials alternate engine/raw
and the best of ``--trials`` (default 5) is reported. The raw side is
the floor: what SQLite itself costs through Python's ``sqlite3`` for the same work, without the
engine's validation, receipts and object mapping.

Figures and targets:

* send_one msg/s             >= 0.8x raw (one INSERT + COMMIT per row; issue 29)
* send batch of 64 msg/s     >= 0.7x raw (64-row INSERT transactions)
* receive 64 + complete_batch drain msg/s
                             >= 0.7x raw (64 claim UPDATE...RETURNING in one transaction,
                               then one fenced DELETE transaction)
* claim latency growth from a 1k to a 200k backlog: <= 2 (receive(max=1); the claim seeks
  idx_msg_active, so a deep backlog must not slow it down)
"""

from __future__ import annotations

import argparse
import gc
import platform
import secrets
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "app"))

import mqlite  # noqa: E402
from mqlite import OutMessage, QueueConfig  # noqa: E402

SCHEMA = REPO / "app" / "mqlite" / "engine" / "schema.sql"
Q = "bench"
BODY = bytes(range(256))  # 256-byte body
LOCK_MS = 30_000

INSERT_SQL = (
    "INSERT INTO messages(queue, state, visible_at, enqueued_at, expires_at, message_id, "
    "correlation_id, reply_to, group_id, content_type, subject, properties, body) "
    "VALUES (?, 'active', ?, ?, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, ?)"
)

# The claim statement of mqlite-docs "Claiming" with the head-of-line probes written one
# EXISTS per state (mqlite-docs "Staying fast"), exactly what a conformant engine runs.
CLAIM_SQL = """
UPDATE messages
   SET state = 'locked', locked_until = :until, lock_token = :token,
       delivery_count = delivery_count + 1
 WHERE id = (
   SELECT m.id FROM messages m
    WHERE m.queue = :queue AND m.state = 'active' AND m.visible_at <= :now
      AND (m.expires_at = 0 OR m.expires_at > :now)
      AND (m.group_id IS NULL OR NOT (
            EXISTS (SELECT 1 FROM messages b WHERE b.queue = m.queue
                      AND b.group_id = m.group_id AND b.state = 'deferred' AND b.id < m.id)
         OR EXISTS (SELECT 1 FROM messages b WHERE b.queue = m.queue
                      AND b.group_id = m.group_id AND b.state = 'scheduled' AND b.id < m.id)
         OR EXISTS (SELECT 1 FROM messages b WHERE b.queue = m.queue
                      AND b.group_id = m.group_id AND b.state = 'locked' AND b.id < m.id)))
    ORDER BY m.id ASC
    LIMIT 1)
RETURNING id, queue, state, visible_at, locked_until, lock_token, delivery_count,
          enqueued_at, expires_at, message_id, correlation_id, reply_to, group_id,
          content_type, subject, properties, body
"""


cpu = time.process_time  # see the module docstring


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def delete_sql(n: int) -> str:
    pairs = ", ".join(["(?, ?)"] * n)
    return (
        "DELETE FROM messages WHERE queue = ? AND state = 'locked' AND locked_until > ? "
        f"AND (id, lock_token) IN (VALUES {pairs}) RETURNING id, lock_token"
    )


# -- the two sides -----------------------------------------------------------------------


class Raw:
    """A bare sqlite3 connection on a database built from the engine's schema.sql."""

    def __init__(self, path: Path) -> None:
        self.con = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
        for pragma in (
            "PRAGMA auto_vacuum=INCREMENTAL",
            "PRAGMA journal_mode=WAL",
            "PRAGMA synchronous=NORMAL",
            "PRAGMA busy_timeout=5000",
            "PRAGMA foreign_keys=ON",
            "PRAGMA temp_store=MEMORY",
        ):
            self.con.execute(pragma).fetchall()
        self.con.executescript(SCHEMA.read_text())
        t = now_ms()
        self.con.execute(
            "INSERT INTO queues(name, lock_duration_ms, max_delivery_count, created_at, "
            "updated_at) VALUES (?, ?, 10, ?, ?)",
            (Q, LOCK_MS, t, t),
        )

    def close(self) -> None:
        self.con.close()

    def send_one(self) -> None:
        t = now_ms()
        self.con.execute("BEGIN IMMEDIATE")
        self.con.execute(INSERT_SQL, (Q, t, t, BODY))
        self.con.execute("COMMIT")

    def send_batch(self, n: int) -> None:
        t = now_ms()
        self.con.execute("BEGIN IMMEDIATE")
        self.con.executemany(INSERT_SQL, [(Q, t, t, BODY)] * n)
        self.con.execute("COMMIT")

    def claim(self, n: int) -> list[tuple[int, str]]:
        t = now_ms()
        out: list[tuple[int, str]] = []
        self.con.execute("BEGIN IMMEDIATE")
        for _ in range(n):
            params = {"queue": Q, "now": t, "until": t + LOCK_MS, "token": secrets.token_hex(16)}
            rows = self.con.execute(CLAIM_SQL, params).fetchall()
            if not rows:
                break
            out.append((rows[0][0], rows[0][5]))
        self.con.execute("COMMIT")
        return out

    def complete(self, pairs: list[tuple[int, str]]) -> None:
        flat: list[Any] = [Q, now_ms()]
        for seq, token in pairs:
            flat += [seq, token]
        self.con.execute("BEGIN IMMEDIATE")
        deleted = self.con.execute(delete_sql(len(pairs)), flat).fetchall()
        self.con.execute("COMMIT")
        assert len(deleted) == len(pairs)


class Engine:
    def __init__(self, path: Path) -> None:
        self.mq = mqlite.open_embedded("file:" + str(path), background=False, sync="NORMAL")
        self.mq.create_queue(Q, QueueConfig(lock_duration_ms=LOCK_MS))

    def close(self) -> None:
        self.mq.close()

    def send_one(self) -> None:
        self.mq.send_one(Q, OutMessage(body=BODY))

    def send_batch(self, n: int) -> None:
        self.mq.send(Q, [OutMessage(body=BODY) for _ in range(n)])

    def claim(self, n: int) -> list[tuple[int, str]]:
        return [(m.seq_number, m.lock_token) for m in self.mq.receive(Q, max_messages=n)]

    def complete(self, pairs: list[tuple[int, str]]) -> None:
        results = self.mq.complete_batch(Q, pairs)
        assert all(r.ok for r in results)


Side = Raw | Engine


# -- workloads (each returns a number; fresh database per call) ---------------------------


@dataclass
class Sizes:
    send_one: int
    batches: int
    drain: int
    claims: int
    small_backlog: int
    deep_backlog: int
    trials: int


FULL = Sizes(
    send_one=4_000,
    batches=300,
    drain=12_800,
    claims=800,
    small_backlog=1_000,
    deep_backlog=200_000,
    trials=5,
)
QUICK = Sizes(
    send_one=500, batches=40, drain=2_560, claims=200, small_backlog=1_000, deep_backlog=20_000,
    trials=1,
)  # fmt: skip


def prefill(side: Side, n: int, chunk: int = 500) -> None:
    for start in range(0, n, chunk):
        side.send_batch(min(chunk, n - start))


def run_send_one(side: Side, sz: Sizes) -> float:
    for _ in range(50):
        side.send_one()  # warm-up
    t0 = cpu()
    for _ in range(sz.send_one):
        side.send_one()
    return sz.send_one / (cpu() - t0)


def run_send_batch(side: Side, sz: Sizes) -> float:
    side.send_batch(64)
    t0 = cpu()
    for _ in range(sz.batches):
        side.send_batch(64)
    return sz.batches * 64 / (cpu() - t0)


def run_drain(side: Side, sz: Sizes) -> float:
    prefill(side, sz.drain)
    done = 0
    t0 = cpu()
    while True:
        pairs = side.claim(64)
        if not pairs:
            break
        side.complete(pairs)
        done += len(pairs)
    elapsed = cpu() - t0
    assert done == sz.drain, f"drained {done} of {sz.drain}"
    return done / elapsed


def claim_latency_us(side: Side, sz: Sizes, backlog: int) -> float:
    assert sz.claims + 20 <= backlog
    prefill(side, backlog)
    for _ in range(20):
        side.claim(1)  # warm-up
    samples = []
    for _ in range(sz.claims):
        t0 = cpu()
        got = side.claim(1)
        samples.append(cpu() - t0)
        assert len(got) == 1
    return statistics.median(samples) * 1e6


# -- driver ------------------------------------------------------------------------------


def measure(
    workdir: Path, factory: Callable[[Path], Side], fn: Callable[[Side], float], tag: str
) -> float:
    path = workdir / f"{tag}-{secrets.token_hex(4)}.db"
    side = factory(path)
    gc.collect()
    try:
        return fn(side)
    finally:
        side.close()
        for suffix in ("", "-wal", "-shm", ".lock"):
            Path(str(path) + suffix).unlink(missing_ok=True)


def best_of(
    workdir: Path, trials: int, fn: Callable[[Side], float], tag: str, higher_is_better: bool
) -> tuple[float, float]:
    eng: list[float] = []
    raw: list[float] = []
    for _ in range(trials):
        eng.append(measure(workdir, Engine, fn, tag + "-mq"))
        raw.append(measure(workdir, Raw, fn, tag + "-raw"))
    pick = max if higher_is_better else min
    return pick(eng), pick(raw)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes (smoke run, ~10 s)")
    ap.add_argument("--dir", help="directory for the database files (default: a temp dir)")
    ap.add_argument("--trials", type=int, help="trials per figure (best is reported)")
    ap.add_argument("--check", action="store_true", help="exit 1 if a target is missed")
    args = ap.parse_args(argv)
    sz = QUICK if args.quick else FULL
    if args.trials:
        sz.trials = args.trials

    workdir = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="mqlite-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    rows: list[tuple[str, str, str, str, str, bool | None]] = []
    try:
        mq, raw = best_of(workdir, sz.trials, lambda s: run_send_one(s, sz), "send1", True)
        rows.append(_throughput("send_one (msg/s)", mq, raw, 0.8))
        mq, raw = best_of(workdir, sz.trials, lambda s: run_send_batch(s, sz), "batch", True)
        rows.append(_throughput("send batch of 64 (msg/s)", mq, raw, 0.7))
        mq, raw = best_of(workdir, sz.trials, lambda s: run_drain(s, sz), "drain", True)
        rows.append(_throughput("receive 64 + complete_batch drain (msg/s)", mq, raw, 0.7))

        small_mq, small_raw = best_of(
            workdir, sz.trials, lambda s: claim_latency_us(s, sz, sz.small_backlog), "c1k", False
        )
        deep_mq, deep_raw = best_of(
            workdir, 1, lambda s: claim_latency_us(s, sz, sz.deep_backlog), "cdeep", False
        )
        k_small, k_deep = f"{sz.small_backlog // 1000}k", f"{sz.deep_backlog // 1000}k"
        for label, m, r in ((k_small, small_mq, small_raw), (k_deep, deep_mq, deep_raw)):
            rows.append(
                (f"claim latency, {label} backlog (median µs)", f"{m:,.0f}", f"{r:,.0f}",
                 f"{m / r:.2f}x raw", "—", None)
            )  # fmt: skip
        growth_mq, growth_raw = deep_mq / small_mq, deep_raw / small_raw
        rows.append(
            (f"claim latency growth {k_deep}/{k_small}", f"{growth_mq:.2f}", f"{growth_raw:.2f}",
             f"{growth_mq:.2f}", "≤ 2", growth_mq <= 2.0)
        )  # fmt: skip
    finally:
        if not args.dir:
            shutil.rmtree(workdir, ignore_errors=True)

    print(
        f"mqlite engine bench — python {platform.python_version()}, sqlite "
        f"{sqlite3.sqlite_version}, file DB, synchronous=NORMAL, 256 B bodies, "
        f"best of {sz.trials} trial(s){' (quick)' if args.quick else ''}"
    )
    print()
    print("| figure | mqlite | raw sqlite3 | ratio | target | met |")
    print("|---|---:|---:|---:|---|---|")
    for fig, m, r, ratio, target, ok in rows:
        met = "—" if ok is None else ("yes" if ok else "NO")
        print(f"| {fig} | {m} | {r} | {ratio} | {target} | {met} |")
    print()
    print(f"total runtime {time.perf_counter() - started:.1f} s")
    missed = [row[0] for row in rows if row[5] is False]
    if missed:
        print("targets missed: " + "; ".join(missed))
    return 1 if (args.check and missed) else 0


def _throughput(
    figure: str, mq: float, raw: float, target: float
) -> tuple[str, str, str, str, str, bool | None]:
    ratio = mq / raw
    return (
        figure,
        f"{mq:,.0f}",
        f"{raw:,.0f}",
        f"{ratio:.2f}x",
        f"≥ {target}x raw",
        ratio >= target,
    )


if __name__ == "__main__":
    sys.exit(main())
