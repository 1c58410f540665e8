"""The crash-injection drill: real processes SIGKILLed, restarted on the same file.

Phase 1 (embedded, ``--cycles``): a worker process (``crash_worker.py``) runs outbox
transactions, transactional consumption, concurrent plain sends (group-commit batches)
and checkpoints, and is SIGKILLed -- at random, or by itself at a deterministic kill
point (inside an open outbox transaction just before COMMIT, after COMMIT before the
answer, in the middle of a group-commit batch, during a checkpoint) or while it holds
250+ leases. After every kill the file is reopened (which recovers orphaned locks) and
checked: every commit the worker acknowledged survived, business rows and messages are
in exact bijection, no row is locked, nothing exceeds its delivery bound. At the end
everything left is consumed once more: every message exactly once, or dead-lettered at
its bound.

Phase 2 (HTTP, ``--serve-cycles``): HTTP producers against a real ``mqlite serve`` (or
``--endpoint`` with ``--kill-cmd``, e.g. a container with ``restart: unless-stopped``),
the service SIGKILLed at random or at a kill point, restarted; every acknowledged seq
must be there exactly once and no message twice.
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import drillkit

import mqlite

WORKER = str(Path(__file__).with_name("crash_worker.py"))
QUEUE, PLAIN = "drill-crash", "drill-crash-plain"
POINT_DEADLINE_S = 20.0
DETERMINISTIC = ["commit.before", "commit.after", "batch.call", "checkpoint", "locks"]


@dataclass
class Ledger:
    """What the workers acknowledged (printed after the call returned)."""

    acked: dict[str, int] = field(default_factory=dict)  # business key -> seq
    plain: set[int] = field(default_factory=set)
    done: Counter[str] = field(default_factory=Counter)

    def read(self, stdout: str) -> int:
        """Take a dead worker's lines; returns the LOCKED count (0 if none)."""
        locked = 0
        for line in stdout.splitlines():
            word, *rest = line.split()
            if word == "ACK":
                self.acked[rest[0]] = int(rest[1])
            elif word == "PLAIN":
                self.plain.add(int(rest[0]))
            elif word == "DONE":
                self.done[rest[0]] += 1
            elif word == "LOCKED":
                locked = int(rest[0])
        return locked


def reopen(db: Path) -> None:
    """Open and close the file the way a restarted broker does (orphaned locks recovered)."""
    mqlite.open_embedded(f"file:{db}", background=False).close()


def verify(db: Path, ledger: Ledger, *, locked_before: int = 0) -> dict[str, str]:
    """The invariants after a reopen; {check name: failure detail} (empty = all hold)."""
    bad: dict[str, str] = {}
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        locked = conn.execute("SELECT count(*) FROM messages WHERE state = 'locked'").fetchone()[0]
        if locked:
            bad["no row locked after reopen"] = f"{locked} locked row(s)"
        orders = dict(conn.execute("SELECT key, consumed FROM drill_orders").fetchall())
        live = conn.execute(
            "SELECT message_id, id, state, delivery_count, dead_letter_reason FROM messages "
            "WHERE queue = ? AND state != 'completed'",
            (QUEUE,),
        ).fetchall()
        bound = conn.execute(
            "SELECT max_delivery_count FROM queues WHERE name = ?", (QUEUE,)
        ).fetchone()[0]
        plain = {r[0] for r in conn.execute("SELECT id FROM messages WHERE queue = ?", (PLAIN,))}
    finally:
        conn.close()
    lost = [k for k in ledger.acked if k not in orders]
    lost_plain = sorted(ledger.plain - plain)
    if lost or lost_plain:
        bad["acknowledged commits survive"] = (
            f"{len(lost)} outbox commit(s) and {len(lost_plain)} send(s) lost, e.g. "
            f"{(lost + [str(s) for s in lost_plain])[:3]}"
        )
    by_id = Counter(r[0] for r in live)
    twice = [k for k, n in by_id.items() if n > 1]
    pending = {k for k, c in orders.items() if c == 0}
    orphans = set(by_id) - set(orders)
    missing = pending - set(by_id)
    zombies = {k for k, c in orders.items() if c > 0} & set(by_id)
    if twice or orphans or missing or zombies:
        bad["business rows and messages in bijection"] = (
            f"{len(missing)} row(s) without message, {len(orphans)} message(s) without row, "
            f"{len(twice)} duplicated, {len(zombies)} consumed but still queued"
        )
    over = [k for k, c in orders.items() if c > 1]
    undone = [k for k in ledger.done if orders.get(k) != 1]
    if over or undone:
        bad["consumed exactly once"] = (
            f"{len(over)} consumed twice, {len(undone)} acknowledged consumption(s) lost"
        )
    beyond = [r for r in live if r[3] > bound or (r[2] == "dead_lettered" and r[3] < bound)]
    if beyond:
        bad["delivery bound held"] = f"{len(beyond)} message(s) past or short of bound {bound}"
    if locked_before and len(live) < locked_before:
        bad["leased messages recovered"] = f"{locked_before} leased, {len(live)} back"
    return bad


def worker(db: Path, role: str, spec: str, *, hold: int = 300) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, WORKER, str(db), role, spec, str(hold)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=drillkit.clean_env({}),
    )


def kill_cycle(db: Path, point: str, rng: random.Random, ledger: Ledger) -> tuple[str, bool, int]:
    """One worker life; returns (what killed it, kill point fired as planned, LOCKED n)."""
    if point == "random":
        proc = worker(db, "mixed", "")
        assert proc.stdout is not None
        first = proc.stdout.readline()  # it is at work (or died: then "" and the check fails)
        time.sleep(rng.uniform(0.05, 1.0))
        proc.kill()
        out = first + proc.communicate(timeout=30)[0]
        return "random SIGKILL", bool(first), ledger.read(out)
    if point == "locks":
        proc = worker(db, "locks", "", hold=rng.randint(250, 400))
        assert proc.stdout is not None
        lines = []
        deadline = time.monotonic() + POINT_DEADLINE_S
        for line in proc.stdout:
            lines.append(line)
            if line.startswith("LOCKED") or time.monotonic() > deadline:
                break
        proc.kill()
        rest = proc.communicate(timeout=30)[0]
        locked = ledger.read("".join(lines) + rest)
        return f"SIGKILL holding {locked} leases", locked >= 250, locked
    nth = {"commit.before": rng.randint(5, 60), "commit.after": rng.randint(5, 60)}.get(
        point, rng.randint(1, 12)
    )
    spec = f"{point}@{nth}" + (f"+{rng.randint(0, 4)}ms" if point == "checkpoint" else "")
    proc = worker(db, "mixed", spec)
    try:
        out = proc.communicate(timeout=POINT_DEADLINE_S)[0]
    except subprocess.TimeoutExpired:
        proc.kill()
        out = proc.communicate(timeout=30)[0]
        ledger.read(out)
        return f"kill point {spec} never reached", False, 0
    ledger.read(out)
    return f"kill point {spec}", proc.returncode == -9, 0


def drain(db: Path, ledger: Ledger) -> tuple[int, int, int]:
    """Consume everything left once more; (consumed, dead-lettered, received twice)."""
    mq = mqlite.open_embedded(f"file:{db}", background=False)
    seen: Counter[str] = Counter()
    try:
        while got := mq.receive(QUEUE, max_messages=256, wait_ms=0):
            for m in got:
                key = m.body.decode()
                seen[key] += 1
                with mq.tx() as tx:
                    tx.execute(
                        "UPDATE drill_orders SET consumed = consumed + 1 WHERE key = ?", (key,)
                    )
                    tx.complete(m)
                ledger.done[key] += 1
        dead = len(mq.peek(QUEUE, state="dead_lettered", max=100_000))
    finally:
        mq.close()
    return sum(seen.values()), dead, sum(1 for n in seen.values() if n > 1)


def embedded_phase(report: drillkit.Report, db: Path, cycles: int, rng: random.Random) -> None:
    ledger = Ledger()
    failures: dict[str, list[str]] = {}
    planned_misses: list[str] = []
    kills: Counter[str] = Counter()
    recover_ms: list[float] = []
    for cycle in range(1, cycles + 1):
        point = DETERMINISTIC[(cycle // 2) % len(DETERMINISTIC)] if cycle % 2 else "random"
        what, as_planned, locked = kill_cycle(db, point, rng, ledger)
        kills[point] += 1
        if not as_planned:
            planned_misses.append(f"cycle {cycle}: {what}")
        began = time.monotonic()
        reopen(db)
        recover_ms.append((time.monotonic() - began) * 1000)
        for name, detail in verify(db, ledger, locked_before=locked).items():
            failures.setdefault(name, []).append(f"cycle {cycle} ({what}): {detail}")
        report.progress(
            f"cycle {cycle}/{cycles} {what}: {len(ledger.acked)} outbox acks, "
            f"{len(ledger.plain)} sends, {sum(ledger.done.values())} consumed, "
            f"{sum(len(v) for v in failures.values())} violation(s)"
        )
    consumed, dead, twice = drain(db, ledger)
    for name, detail in verify(db, ledger).items():
        failures.setdefault(name, []).append(f"after the final drain: {detail}")
    names = [
        "acknowledged commits survive",
        "business rows and messages in bijection",
        "no row locked after reopen",
        "consumed exactly once",
        "delivery bound held",
        "leased messages recovered",
    ]
    for name in names:
        found = failures.get(name, [])
        report.check(name, not found, "; ".join(found[:3]) or f"held over {cycles} kills")
    report.check(
        "every kill landed where planned",
        not planned_misses,
        "; ".join(planned_misses[:3]) or ", ".join(f"{k} x{n}" for k, n in sorted(kills.items())),
    )
    report.check(
        "final drain: each message once, or dead-lettered at its bound",
        twice == 0,
        f"{consumed} consumed ({twice} twice), {dead} dead-lettered",
    )
    report.figure("embedded_kills", cycles)
    report.figure("outbox_commits_acknowledged", len(ledger.acked))
    report.figure("plain_sends_acknowledged", len(ledger.plain))
    report.figure("reopen_ms_p50", round(sorted(recover_ms)[len(recover_ms) // 2], 1))
    report.figure("reopen_ms_max", round(max(recover_ms), 1))


def main(argv: list[str] | None = None) -> int:
    p = drillkit.arguments("crash", __doc__.split("\n\n")[0] if __doc__ else "")
    p.add_argument("--db", default="", help="database file to crash on (no broker may own it)")
    p.add_argument("--cycles", type=int, default=50, help="embedded kill cycles (default 50)")
    p.add_argument("--serve-cycles", type=int, default=10, help="HTTP broker kill cycles")
    p.add_argument("--endpoint", default="", help="a running broker (token: MQLITE_TOKEN)")
    p.add_argument("--kill-cmd", default="", help="with --endpoint: how to SIGKILL it")
    args = p.parse_args(argv)
    if args.quick:
        args.cycles, args.serve_cycles = min(args.cycles, 10), min(args.serve_cycles, 3)
    return drillkit.run_drill("crash", lambda r, a: run(r, a), args)


def run(report: drillkit.Report, args: argparse.Namespace) -> None:
    import crash_http

    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    rng = random.Random(seed)
    report.figure("seed", seed)
    work = drillkit.workdir(args, "crash")
    db = Path(args.db).resolve() if args.db else work / "crash.db"
    if args.cycles:
        report.progress(f"embedded phase: {args.cycles} kill cycles on {db}")
        embedded_phase(report, db, args.cycles, rng)
    if args.serve_cycles:
        crash_http.http_phase(report, args, work, rng)


if __name__ == "__main__":
    sys.exit(main())
