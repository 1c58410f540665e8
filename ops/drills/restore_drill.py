"""The restore drill: online snapshot under load, restore into a fresh directory, verify.

Without ``--db`` the drill builds its own source (restore_populate.py: every message
state, live leases, topics with filters, dedup, receipts, receive attempts, managed keys,
an outbox business table), serves it with a real ``mqlite serve`` and keeps HTTP writers
running while ``mqlite backup`` takes the snapshot. ``mqlite restore`` puts it in a fresh
directory, a broker starts on it, and the drill checks it all (see ``verify_restored``),
then the refusals: a snapshot beside a stale WAL, a foreign schema token (the file must
stay byte-identical), an older schema (migrated on open).

With ``--db PATH`` it rehearses the operator's own database: snapshot (read-only, beside
the running broker), restore, integrity and every table compared with the snapshot, a
broker on the copy and a canary. ``--endpoint URL`` (token in MQLITE_TOKEN) adds HTTP
writers against the broker that owns PATH, so the RPO is measured on the live service.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import drill_container
import drillkit
import restore_populate as pop
import restore_refusals

import mqlite

LOAD_QUEUE = "drill-restore-load"


def mqlite_cli(*argv: str, db: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = drillkit.clean_env({"MQLITE_DB": f"file:{db}"} if db else {})
    return subprocess.run(
        [sys.executable, "-m", "mqlite.cli.main", *argv],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def check_cli(
    report: drillkit.Report, what: str, command: str, done: subprocess.CompletedProcess[str]
) -> None:
    """One report line for a CLI step (its first line of output); a failed step ends the
    drill, since what follows needs its result."""
    text = (done.stdout or done.stderr).strip()
    report.check(what, done.returncode == 0, text.splitlines()[0] if text else "")
    if done.returncode != 0:
        raise drillkit.DrillError(f"mqlite {command} failed: {done.stderr.strip()}")


class Writers:
    """HTTP producers during the snapshot: each acknowledged seq with its ack time."""

    def __init__(self, url: str, token: str, threads: int = 2) -> None:
        self.url, self.token = url, token
        self.acked: list[tuple[int, float]] = []
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self.run) for _ in range(threads)]

    def __enter__(self) -> Writers:
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(timeout=60)

    def run(self) -> None:
        client = mqlite.connect(self.url, self.token or None)
        while not self.stop.is_set():
            seq = client.send_one(LOAD_QUEUE, mqlite.OutMessage(body=b"load"))
            with self.lock:
                self.acked.append((seq, time.monotonic()))
        client.close()


def table_digests(path: Path) -> dict[str, tuple[int, str]]:
    """Every table's row count and content hash (rows in rowid/primary-key order)."""
    conn = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
    try:
        names = [
            r[0]
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
            )
        ]
        out = {}
        for name in names:
            h, n = hashlib.sha256(), 0
            for row in conn.execute(f'SELECT * FROM "{name}" ORDER BY 1'):
                h.update(repr(row).encode())
                n += 1
            out[name] = (n, h.hexdigest()[:16])
        return out
    finally:
        conn.close()


def snapshot_under_load(
    report: drillkit.Report, source: Path, snap: Path, url: str, token: str
) -> tuple[float, list[tuple[int, float]]]:
    """``mqlite backup`` while writers run; (snapshot start, acknowledged sends)."""
    with mqlite.connect(url, token or None) as client:
        if LOAD_QUEUE not in {q.name for q in client.list_queues()}:
            client.create_queue(LOAD_QUEUE)
    with Writers(url, token) as writers:
        time.sleep(0.5)
        started = time.monotonic()
        done = mqlite_cli("backup", str(snap), db=source)
        took = time.monotonic() - started
        time.sleep(0.3)
    check_cli(report, "online snapshot (mqlite backup) while writers run", "backup", done)
    report.figure("snapshot_s", round(took, 2))
    report.figure("writes_acknowledged_during_drill", len(writers.acked))
    return started, writers.acked


def rpo(
    report: drillkit.Report, restored: Path, started: float, acked: list[tuple[int, float]]
) -> None:
    """Acknowledged writes the snapshot does not hold: all after the snapshot started."""
    conn = sqlite3.connect(f"file:{restored}?mode=ro", uri=True)
    try:
        held = {
            r[0] for r in conn.execute("SELECT id FROM messages WHERE queue = ?", (LOAD_QUEUE,))
        }
    finally:
        conn.close()
    missing = [(seq, t) for seq, t in acked if seq not in held]
    early = [seq for seq, t in missing if t < started]
    report.check(
        "every write acknowledged before the snapshot started is in it",
        not early,
        f"{len(early)} missing" if early else f"{len(acked) - len(missing)} of {len(acked)} held",
    )
    report.figure("rpo_acknowledged_writes_not_in_snapshot", len(missing))


def verify_restored(
    report: drillkit.Report, client: mqlite.HttpClient, db: Path, exp: pop.Expected
) -> None:
    """What the restored broker must show for the populated source."""
    import restore_checks

    restore_checks.run(report, client, db, exp)


def own_source(report: drillkit.Report, args: argparse.Namespace, work: Path) -> None:
    source, snap, fresh = work / "source.db", work / "snapshots" / "mq.db", work / "restored"
    snap.parent.mkdir(parents=True, exist_ok=True)
    report.progress(f"populating {source} ({args.per_state} messages per state)")
    mq = mqlite.open_embedded(f"file:{source}", background=False)
    exp = pop.populate(mq, args.per_state)
    mq.close()
    live = drill_container.broker(args.image, source, work)
    live.start()
    try:
        report.progress("snapshot while HTTP writers run")
        started, acked = snapshot_under_load(report, source, snap, live.url, live.token)
    finally:
        live.stop()
    age_from = time.monotonic()
    restore_and_serve(report, snap, fresh, work, started, acked, exp, age_from, args.image)
    restore_refusals.run(report, snap, work, mqlite_cli)


def restore_and_serve(
    report: drillkit.Report,
    snap: Path,
    fresh: Path,
    work: Path,
    started: float,
    acked: list[tuple[int, float]],
    exp: pop.Expected | None,
    age_from: float,
    image: str = "",
) -> None:
    report.progress(f"mqlite restore {snap} --data-dir {fresh}")
    began = time.monotonic()
    done = mqlite_cli("restore", str(snap), "--data-dir", str(fresh))
    check_cli(report, "mqlite restore into a fresh directory", "restore", done)
    restored = fresh / "mq.db"
    same = table_digests(snap) == table_digests(restored)
    report.check(
        "every table of the restored file equals the snapshot",
        same,
        f"{len(table_digests(restored))} tables compared",
    )
    broker = drill_container.broker(image, restored, work)
    stack = contextlib.ExitStack()
    broker.start()
    report.figure("recovery_time_s", round(time.monotonic() - began, 2))
    report.figure("restored_broker", broker.describe())
    report.figure("snapshot_age_s_at_restore", round(began - started, 2))
    try:
        client = stack.enter_context(mqlite.connect(broker.url, broker.token))
        conn = sqlite3.connect(f"file:{restored}?mode=ro", uri=True)
        try:
            check = [r[0] for r in conn.execute("PRAGMA integrity_check")]
        finally:
            conn.close()
        report.check(
            "integrity_check of the restored database", check == ["ok"], "; ".join(check[:3])
        )
        if exp is not None:
            verify_restored(report, client, restored, exp)
        canary(report, client)
    finally:
        stack.close()
        broker.stop()
    if acked:
        rpo(report, restored, started, acked)


def canary(report: drillkit.Report, client: mqlite.HttpClient) -> None:
    q = "drill-restore-canary"
    client.create_queue(q)
    seq = client.send_one(q, mqlite.OutMessage(body=b"canary"))
    got = client.receive(q, max_messages=1, wait_ms=2000)
    ok = len(got) == 1 and got[0].seq_number == seq and got[0].body == b"canary"
    if ok:
        client.complete(q, seq, got[0].lock_token)
        ok = client.stats(q).active == 0
    client.delete_queue(q)
    report.check("canary send / receive / complete on the restored broker", ok, f"seq {seq}")


def their_source(report: drillkit.Report, args: argparse.Namespace, work: Path) -> None:
    source = Path(args.db).resolve()
    if not source.exists():
        raise drillkit.DrillError(f"no database at {source}")
    snap, fresh = work / "snapshots" / "mq.db", work / "restored"
    snap.parent.mkdir(parents=True, exist_ok=True)
    if args.endpoint:
        started, acked = snapshot_under_load(
            report, source, snap, args.endpoint, os.environ.get("MQLITE_TOKEN", "")
        )
    else:
        started, acked = time.monotonic(), []
        done = mqlite_cli("backup", str(snap), db=source)
        report.check(
            "online snapshot (mqlite backup)",
            done.returncode == 0,
            (done.stdout or done.stderr).strip(),
        )
        if done.returncode:
            raise drillkit.DrillError(done.stderr.strip())
    restore_and_serve(report, snap, fresh, work, started, acked, None, time.monotonic(), args.image)
    restore_refusals.run(report, snap, work, mqlite_cli)


def main(argv: list[str] | None = None) -> int:
    p = drillkit.arguments("restore", __doc__.split("\n\n")[0] if __doc__ else "")
    p.add_argument("--db", default="", help="rehearse this database file (read-only)")
    p.add_argument("--endpoint", default="", help="with --db: the broker that owns it")
    p.add_argument("--per-state", type=int, default=500, help="messages per state (own source)")
    args = p.parse_args(argv)
    if args.quick:
        args.per_state = min(args.per_state, 20)

    def body(report: drillkit.Report, a: argparse.Namespace) -> None:
        work = drillkit.workdir(a, "restore")
        (their_source if a.db else own_source)(report, a, work)

    return drillkit.run_drill("restore", body, args)


if __name__ == "__main__":
    sys.exit(main())
