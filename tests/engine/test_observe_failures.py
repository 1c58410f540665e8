"""Failure is the normal path (observability "Availability and freshness", "Maintenance
failure diagnosis"): an unreadable database makes the collection unavailable (never
zeros), storage errors are counted by category with a generated explanation, maintenance
passes record failed steps, streaks and one recovery, and the diagnostic events carry
redacted detail only. The fault is the measured store's one seam: a driver error raised
where the database would raise it."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from mqlite import errors
from mqlite.clock import FakeClock
from mqlite.engine import Engine, diagnostics
from mqlite.engine.measured_store import MeasuredStore
from mqlite.engine.topics import filter_json
from mqlite.types import OutMessage

START = 1_700_000_000_000
SECRET = "mqk_" + "s" * 64


def io_error(kind: str) -> None:
    exc = sqlite3.OperationalError(f"disk I/O error at https://db.example/x?token={SECRET}")
    exc.sqlite_errorcode = 10  # type: ignore[attr-defined]
    raise exc


@pytest.fixture
def eng(tmp_path: Path) -> Iterator[Engine]:
    e = Engine(f"file:{tmp_path / 'mq.db'}", clock=FakeClock(START))
    try:
        yield e
    finally:
        MeasuredStore.fault = None
        e.close()


def events(caplog: pytest.LogCaptureFixture, kind: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records if getattr(r, "event", None) == kind]


def test_an_unreadable_database_is_unavailable_not_empty(eng: Engine) -> None:
    eng.create_queue("q")
    eng.send("q", [OutMessage(body=b"x")])
    ok = eng.observe()
    MeasuredStore.fault = staticmethod(io_error)
    o = eng.observe()
    MeasuredStore.fault = None
    assert o.collection.state == "unavailable" and o.collection.error_code == "io"
    assert o.queues is None and (o.queue_count, o.subscription_count) == (0, 0)
    assert o.collection.last_success_at_ms == ok.sampled_at_ms  # the last good one, kept
    assert not o.runtime.read_available and o.runtime.ping_seconds == 0
    assert {(m.queue, m.event): m.count for m in o.messages}["q", "enqueued"] == 1
    (read,) = [s for s in o.storage.operations if s.operation == "read" and s.error_code == "io"]
    assert read.count == 2 and read.outcome == "error"  # the probe and the collection
    assert read.last_error is not None
    assert read.last_error.explanation == "the database file could not be read or written"
    assert SECRET not in repr(o) and "example" not in repr(o)  # generated text only
    assert eng.observe().collection.state == "available"  # and back


def test_storage_failures_are_logged_redacted_and_rate_limited(
    eng: Engine, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "mqlite.diagnostics")
    eng.create_queue("q")
    MeasuredStore.fault = staticmethod(io_error)
    for _ in range(3):
        with pytest.raises(errors.StorageError) as raised:
            eng.send("q", [OutMessage(body=b"x")])
        assert raised.value.category == "io"
    MeasuredStore.fault = None
    (line,) = [r for r in events(caplog, "storage.failure") if r.operation == "transaction"]
    assert line.category == "io" and line.sqlite_code == 10
    assert SECRET not in line.detail and "<url>" in line.detail
    counted = {
        (s.operation, s.outcome, s.error_code): s.count for s in eng.observe().storage.operations
    }
    assert counted["transaction", "error", "io"] == 3


def test_maintenance_failures_streak_history_and_one_recovery(
    eng: Engine, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "mqlite.diagnostics")
    MeasuredStore.fault = staticmethod(io_error)
    for _ in range(10):
        with pytest.raises(errors.StorageError):
            eng.run_janitors()  # dedup, receipts (two steps), retention (two): all fail
    MeasuredStore.fault = None
    tasks = {t.task: t for t in eng.observe().maintenance}
    receipts = tasks["receipts"]
    assert receipts.failures == receipts.runs == 10  # once per pass
    assert receipts.consecutive_failures == 10 and receipts.last_outcome == "failed"
    assert len(receipts.diagnostics) == 8  # the latest eight failed steps
    assert {d.step for d in receipts.diagnostics} == {"settlement_receipts", "receive_attempts"}
    assert {d.category for d in receipts.diagnostics} == {"io"}
    assert len(events(caplog, "maintenance.failure")) == 10 * 5
    eng.run_janitors()
    eng.run_janitors()
    tasks = {t.task: t for t in eng.observe().maintenance}
    assert tasks["receipts"].consecutive_failures == 0
    assert (tasks["receipts"].runs, tasks["receipts"].failures) == (12, 10)
    assert tasks["receipts"].recovered_at_ms == tasks["receipts"].last_success_at_ms > 0
    assert len(tasks["receipts"].diagnostics) == 8  # history survives recovery
    recovered = events(caplog, "maintenance.recovered")
    assert sorted(r.task for r in recovered) == ["dedup", "receipts", "retention"]  # once each


def test_a_closing_engine_interrupts_a_pass(tmp_path: Path) -> None:
    e = Engine(f"file:{tmp_path / 'c.db'}", clock=FakeClock(START))
    e.close()
    with pytest.raises(errors.Closed):
        e.reap_locks()
    locks = {t.task: t for t in e.observe().maintenance}["locks"]
    assert (locks.runs, locks.interrupted, locks.failures, locks.last_success_at_ms) == (1, 1, 0, 0)
    o = e.observe()
    assert o.collection.error_code == "closed" and o.storage.pool.open == 0


def test_filter_failures_by_stage(tmp_path: Path) -> None:
    path = f"file:{tmp_path / 'f.db'}"
    e = Engine(path)
    e.subscribe("t", "div", "int(properties.n) > 0")
    e.send("t", [OutMessage(body=b"x", properties={"n": "not a number"})])  # fails closed
    stages = dict((f.stage, f.count) for f in e.observe().filters)
    assert stages == {"compile": 0, "evaluate": 1}
    with e.tx() as tx:  # a stored filter this binary can no longer compile
        tx.execute(
            "UPDATE subscriptions SET filter_json = ? WHERE subscription = 'div'",
            (filter_json("((("),),
        )
    e.close()
    e = Engine(path)
    try:
        assert dict((f.stage, f.count) for f in e.observe().filters)["compile"] == 1
    finally:
        e.close()


def test_redaction_and_fingerprints() -> None:
    text = f"Bearer abc.def password=hunter2 {SECRET} see https://u:p@host/db?x=1"
    out = diagnostics.redact(text)
    for secret in ("abc.def", "hunter2", SECRET, "u:p@host"):
        assert secret not in out
    assert len(diagnostics.redact("x" * 5000)) == diagnostics.MAX_DETAIL_CHARS
    exc = sqlite3.OperationalError("database or disk is full")
    exc.sqlite_errorcode = 13  # type: ignore[attr-defined]
    a, b = diagnostics.failure("dedup/prune", exc), diagnostics.failure("dedup/prune", exc)
    c = diagnostics.failure("ttl/expire", exc)
    assert a.fingerprint == b.fingerprint != c.fingerprint and a.category == "full"


def test_an_application_statement_failing_in_tx_is_logged_as_the_application_s(
    eng: Engine, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 31 item 9: the outbox's own INSERT failing (a duplicate id) rolls the block
    back; the log says the application's statement failed, never "storage ... failed"."""
    caplog.set_level(logging.INFO, "mqlite.diagnostics")
    eng.create_queue("q")
    with eng.tx() as tx:
        tx.execute("CREATE TABLE orders(id INTEGER PRIMARY KEY)")
        tx.execute("INSERT INTO orders(id) VALUES (42)")
    with pytest.raises(sqlite3.IntegrityError), eng.tx() as tx:
        tx.send_one("q", OutMessage(body=b"x"))
        tx.execute("INSERT INTO orders(id) VALUES (42)")
    assert not events(caplog, "storage.failure")
    (line,) = events(caplog, "transaction.application_error")
    assert line.getMessage() == (
        "transaction rolled back: the application's own statement failed "
        "(IntegrityError: UNIQUE constraint failed: orders.id); storage is fine"
    )
    assert eng.stats("q").total == 0  # the send rolled back with it
    counted = {
        (s.operation, s.outcome, s.error_code): s.count for s in eng.observe().storage.operations
    }
    assert counted["transaction", "rejected", "application"] == 1
    assert counted.get(("transaction", "error", "other"), 0) == 0
