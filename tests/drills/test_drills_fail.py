"""Each drill says FAIL when the thing it checks is broken: real evidence (a real
worker's file and ledger, a real restored database, real broker answers) with one
property broken at a time."""

from __future__ import annotations

import random
import shutil
import sqlite3
from pathlib import Path

import crash_drill
import crash_http
import drillkit
import restore_checks
import restore_drill
import restore_populate
import soak_drill
from drills_support import checks, drill

import mqlite


def crashed_db(tmp_path: Path, point: str = "random") -> tuple[Path, crash_drill.Ledger, int]:
    db, ledger = tmp_path / "crash.db", crash_drill.Ledger()
    _, _, locked = crash_drill.kill_cycle(db, point, random.Random(1), ledger)
    return db, ledger, locked


def test_crash_drill_fails_when_orphaned_locks_are_not_recovered(tmp_path: Path) -> None:
    db, ledger, locked = crashed_db(tmp_path, "locks")
    assert locked >= 250
    # no reopen: what a broker that skipped lock recovery would leave
    assert "no row locked after reopen" in crash_drill.verify(db, ledger, locked_before=locked)
    crash_drill.reopen(db)
    assert crash_drill.verify(db, ledger, locked_before=locked) == {}


def test_crash_drill_fails_on_a_lost_commit_and_a_broken_bijection(tmp_path: Path) -> None:
    db, ledger, _ = crashed_db(tmp_path)
    crash_drill.reopen(db)
    assert ledger.acked and crash_drill.verify(db, ledger) == {}
    conn = sqlite3.connect(db)
    # A key whose order the DATABASE says is unconsumed, so its message is queued. Not "no
    # done line in the worker's ledger": a consumption can commit just before the SIGKILL
    # that stops the ledger's line, and deleting that row broke nothing (a fresh loaded run).
    pending = {k for (k,) in conn.execute("SELECT key FROM drill_orders WHERE consumed = 0")}
    key = next(k for k in ledger.acked if k in pending)
    conn.execute("DELETE FROM drill_orders WHERE key = ?", (key,))  # the row, not its message
    conn.commit()
    conn.close()
    bad = crash_drill.verify(db, ledger)
    assert "acknowledged commits survive" in bad
    assert "business rows and messages in bijection" in bad


def test_crash_drill_cli_exits_1_with_fail_on_a_database_already_out_of_bijection(
    tmp_path: Path,
) -> None:
    db, _, _ = crashed_db(tmp_path)
    conn = sqlite3.connect(db)  # a message with no business row: an outbox that split
    conn.execute(
        "INSERT INTO messages (queue, enqueued_at, body, message_id) "
        "VALUES ('drill-crash', 1, x'00', 'orphan')"
    )
    conn.commit()
    conn.close()
    status, report, _ = drill("crash", "--db", str(db), "--cycles", "1", "--serve-cycles", "0")
    assert status == 1 and report["result"] == "FAIL"
    assert checks(report)["business rows and messages in bijection"] is False


def test_crash_http_check_fails_on_a_lost_or_duplicated_send() -> None:
    report = drillkit.Report("crash")
    crash_http.verify_http(report, {"a": 1, "b": 2}, [("a", 1), ("c", 3), ("c", 4)])
    assert checks(report.as_dict()) == {
        "HTTP: every acknowledged send survives": False,
        "HTTP: no message stored twice": False,
    }


def test_restore_checks_fail_on_a_changed_body_and_a_lost_lock_recovery(tmp_path: Path) -> None:
    source = tmp_path / "source.db"
    mq = mqlite.open_embedded(f"file:{source}", background=False)
    exp = restore_populate.populate(mq, 3)
    mq.close()
    copy = tmp_path / "restored.db"
    shutil.copyfile(source, copy)
    seq = next(iter(exp.recovered_dlq))
    victim = next(s for s, v in exp.messages.items() if v[2] == "deferred")
    conn = sqlite3.connect(copy)
    conn.execute("UPDATE messages SET body = x'00' WHERE id = ?", (victim,))
    conn.execute("UPDATE messages SET delivery_count = 1 WHERE id = ?", (seq,))  # below bound
    conn.commit()
    conn.close()
    broker = drillkit.Broker(copy, tmp_path)
    broker.start()
    try:
        report = drillkit.Report("restore")
        with mqlite.connect(broker.url, broker.token) as client:
            restore_checks.run(report, client, copy, exp)
    finally:
        broker.stop()
    result = checks(report.as_dict())
    assert result["every message identity and body hash"] is False
    assert result["orphaned locks recovered: to active below the bound, to the DLQ at it"] is False
    assert result["receive attempts replay"] is True  # only what was broken fails


def test_restore_rpo_fails_when_a_write_acknowledged_before_the_snapshot_is_missing(
    tmp_path: Path,
) -> None:
    db = tmp_path / "mq.db"
    mq = mqlite.open_embedded(f"file:{db}", background=False)
    mq.create_queue(restore_drill.LOAD_QUEUE)
    held = mq.send_one(restore_drill.LOAD_QUEUE, mqlite.OutMessage(body=b"x"))
    mq.close()
    report = drillkit.Report("restore")
    restore_drill.rpo(report, db, 10.0, [(held, 1.0), (held + 1, 11.0)])
    assert checks(report.as_dict())["every write acknowledged before the snapshot started is in it"]
    assert report.figures["rpo_acknowledged_writes_not_in_snapshot"] == 1
    report = drillkit.Report("restore")
    restore_drill.rpo(report, db, 10.0, [(held, 1.0), (held + 1, 9.0)])
    assert not report.passed


def soak_fixture() -> soak_drill.Sent:
    sent = soak_drill.Sent()
    for seq in (1, 2, 3, 4):
        sent.queue[seq], sent.at[seq] = soak_drill.STD, 0.0
        sent.group[seq] = "g"
    sent.queue[5], sent.at[5] = soak_drill.STD, 0.0
    sent.poison.add(5)
    return sent


def dead_poison() -> list[mqlite.Message]:
    return [
        mqlite.Message(
            5,
            state="dead_lettered",
            delivery_count=soak_drill.BOUND,
            dead_letter_reason="MaxDeliveryCountExceeded",
        )
    ]


def soak_verdict(
    handled: list[tuple[int, int, float]], dead: list[mqlite.Message]
) -> dict[str, bool]:
    report = drillkit.Report("soak")
    left = {soak_drill.STD: mqlite.Stats(soak_drill.STD)}
    soak_drill.verify(report, soak_fixture(), handled, left, dead)
    return checks(report.as_dict())


POISON = [(5, n, n * 1.0) for n in range(1, soak_drill.BOUND + 1)]  # 1 s apart: backoff ok


def test_soak_checks_pass_on_a_clean_ledger() -> None:
    handled = [(1, 1, 0.1), (2, 1, 0.2), (2, 2, 3.5), (3, 1, 3.6), (4, 1, 3.7), *POISON]
    assert all(soak_verdict(handled, dead_poison()).values())


def test_soak_fails_when_a_group_message_overtakes_an_earlier_one() -> None:
    handled = [(1, 1, 0.1), (3, 1, 0.2), (2, 1, 0.3), (4, 1, 0.4), *POISON]
    assert (
        soak_verdict(handled, dead_poison())["group order held (none overtakes an earlier one)"]
        is False
    )


def test_soak_fails_on_a_delivery_handed_out_twice_or_a_message_never_handled() -> None:
    handled = [(1, 1, 0.1), (1, 1, 0.2), (2, 1, 0.3), (3, 1, 0.4), *POISON]
    assert (
        soak_verdict(handled, dead_poison())[
            "every message completed exactly once or dead-lettered"
        ]
        is False
    )


def test_soak_fails_when_poison_is_redelivered_before_its_backoff_or_not_dead_lettered() -> None:
    handled = [(1, 1, 0.1), (2, 1, 0.2), (3, 1, 0.3), (4, 1, 0.4), (5, 1, 1.0), (5, 2, 1.01)]
    verdict = soak_verdict(handled, [])
    assert verdict["poison backoff respected"] is False
    assert verdict["poison messages, and only they, dead-lettered at the bound"] is False


def test_an_unexpected_error_inside_a_drill_is_a_fail_report_not_a_traceback() -> None:
    """A restored broker without a queue the drill expects raises inside the body: the
    operator gets FAIL (exit 1) naming the error, as with any broken check."""

    def body(report: drillkit.Report, args: object) -> None:
        report.check("a check before it broke", True)
        raise mqlite.errors.QueueNotFound("queue 'drill-restore' not found")

    args = drillkit.arguments("restore", "").parse_args(["--json"])
    assert drillkit.run_drill("restore", body, args) == 1
    assert drillkit.run_drill("restore", lambda r, a: r.check("ok", True), args) == 0
