"""Conformance §10: storage and schema invariants (single writer per file, schema guard,
epoch-ms times from the injected clock), plus the error vocabulary the engine raises."""

from __future__ import annotations

import contextlib
import os

import pytest
from conformance_support import T0, counts, peek_one, send_bodies

import mqlite
from mqlite import OutMessage, QueueConfig, errors
from mqlite.clock import FakeClock
from mqlite.engine import SCHEMA_VERSION


def test_10_1_second_open_on_the_same_file_is_db_locked(mq, dsn, clock):
    with pytest.raises(errors.DBLocked):
        mqlite.open_embedded(dsn, clock=clock, background=False)
    mq.create_queue("q", QueueConfig())  # the first opener is unaffected
    mq.send_one("q", OutMessage(body=b"x"))


@pytest.mark.parametrize("store", ["file"])  # spellings of a local path: a file's concern
def test_10_1_single_writer_across_path_spellings(mq, db_path, tmp_path, monkeypatch, clock):
    link = tmp_path / "link.db"
    os.symlink(db_path, link)
    monkeypatch.chdir(tmp_path)
    spellings = [str(db_path), "file:" + str(db_path), "mq.db", "./mq.db", "file:mq.db", str(link)]
    for spelling in spellings:
        with pytest.raises(errors.DBLocked):
            mqlite.open_embedded(spelling, clock=clock, background=False)


def test_10_1_memory_db_never_locks(open_mq):
    a = open_mq(":memory:")
    b = open_mq(":memory:")
    a.create_queue("q", QueueConfig())
    b.create_queue("q", QueueConfig())
    a.send_one("q", OutMessage(body=b"a"))
    assert a.stats("q").total == 1
    assert b.stats("q").total == 0  # independent databases


def test_10_1_reopen_after_close_succeeds_and_keeps_data(open_mq):
    mq = open_mq()
    mq.create_queue("q", QueueConfig(max_delivery_count=7, ordering_mode="strict_fifo"))
    seq = mq.send_one("q", OutMessage(body=b"durable", group_id="g"))
    mq.close()
    mq2 = open_mq()
    (info,) = [i for i in mq2.list_queues() if i.name == "q"]
    assert info.config.max_delivery_count == 7
    assert info.config.ordering_mode == "strict_fifo"
    (m,) = mq2.receive("q")
    assert (m.seq_number, m.body, m.group_id) == (seq, b"durable", "g")


def test_10_2_schema_version_mismatch_is_refused(open_mq, raw_db):
    mq = open_mq()
    mq.create_queue("q", QueueConfig())
    mq.close()
    con = raw_db()
    assert con.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone() == (
        SCHEMA_VERSION,
    )
    con.execute("UPDATE meta SET value='4' WHERE key='schema_version'")
    con.commit()
    con.close()
    with pytest.raises(errors.SchemaVersionMismatch):
        open_mq()


def test_10_2_mismatch_is_refused_without_running_ddl(open_mq, raw_db):
    con = raw_db()
    con.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) STRICT")
    con.execute("INSERT INTO meta VALUES ('schema_version', '999')")
    con.commit()
    con.close()
    with pytest.raises(errors.SchemaVersionMismatch):
        open_mq()
    con = raw_db()
    tables = {
        r[0]
        for r in con.execute(  # sqlite_sequence may outlive a previous test on one server
            "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%'"
        )
    }
    con.close()
    assert tables == {"meta"}


def test_10_2_fresh_database_gets_the_guard_token(mq, raw_db):
    mq.create_queue("q", QueueConfig())
    con = raw_db()
    try:
        row = con.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
    finally:
        con.close()
    assert row == (SCHEMA_VERSION,)


def test_10_3_times_are_epoch_ms_from_the_injected_clock(mq, make_queue, clock):
    q = make_queue(lock_duration_ms=30_000, default_ttl_ms=90_000)
    seq = mq.send_one(q, OutMessage(body=b"x"))
    m = peek_one(mq, q, seq)
    assert m.enqueued_at_ms == T0
    assert m.expires_at_ms == T0 + 90_000
    clock.advance(1_234)
    assert mq.stats(q).oldest_message_age_ms == 1_234
    (got,) = mq.receive(q)
    assert got.enqueued_at_ms == T0
    assert got.locked_until_ms == T0 + 1_234 + 30_000
    assert mq.stats(q).oldest_message_age_ms == 1_234  # locked rows count too


def test_10_3_oldest_age_counts_only_active_and_locked(mq, make_queue, clock):
    q = make_queue()
    (m_seq,) = send_bodies(mq, q, [b"deferred"])
    (m,) = mq.receive(q)
    m.defer()
    clock.advance(5_000)
    send_bodies(mq, q, [b"fresh"])
    clock.advance(1_000)
    st = mq.stats(q)
    assert st.oldest_message_age_ms == 1_000
    assert (st.active, st.deferred, st.total) == (1, 1, 2)
    assert m_seq


def test_10_3_seq_numbers_are_global_increasing_and_never_reused(open_mq):
    mq = open_mq()
    mq.create_queue("a", QueueConfig())
    mq.create_queue("b", QueueConfig())
    s1 = mq.send_one("a", OutMessage(body=b"1"))
    s2 = mq.send_one("b", OutMessage(body=b"2"))
    s3 = mq.send_one("a", OutMessage(body=b"3"))
    assert s1 < s2 < s3
    for m in mq.receive("a", max_messages=10) + mq.receive("b", max_messages=10):
        m.complete()
    s4 = mq.send_one("a", OutMessage(body=b"4"))
    assert s4 > s3
    (m,) = mq.receive("a")
    m.complete()
    mq.close()
    mq2 = open_mq()
    assert mq2.send_one("b", OutMessage(body=b"5")) > s4


@pytest.mark.parametrize("sync", ["NORMAL", "FULL", "OFF", "EXTRA"])
def test_10_3_sync_modes_are_accepted(tmp_path, sync):
    mq = mqlite.open_embedded(
        "file:" + str(tmp_path / f"{sync}.db"), clock=FakeClock(T0), background=False, sync=sync
    )
    try:
        mq.create_queue("q", QueueConfig())
        assert mq.send_one("q", OutMessage(body=b"x")) > 0
    finally:
        mq.close()


def test_10_3_unknown_sync_mode_fails_startup(tmp_path):
    with pytest.raises((errors.MQLiteError, ValueError)):
        mqlite.open_embedded(
            "file:" + str(tmp_path / "x.db"), clock=FakeClock(T0), background=False, sync="FAST"
        )


def test_body_cap_is_message_too_large(open_mq, tmp_path):
    mq = open_mq("file:" + str(tmp_path / "cap.db"), max_message_bytes=1_000)
    mq.create_queue("q", QueueConfig())
    assert mq.send_one("q", OutMessage(body=b"x" * 1_000)) > 0
    with pytest.raises(errors.MessageTooLarge) as exc:
        mq.send_one("q", OutMessage(body=b"x" * 1_001))
    assert (exc.value.code, exc.value.http_status) == ("message_too_large", 413)
    with pytest.raises(errors.MessageTooLarge):
        mq.send("q", [OutMessage(body=b"ok"), OutMessage(body=b"x" * 1_001)])
    assert mq.stats("q").total == 1  # the batch rolled back as a whole


def test_default_body_cap_is_one_mebibyte(mq, make_queue):
    q = make_queue()
    assert mq.send_one(q, OutMessage(body=b"x" * (1 << 20))) > 0
    with pytest.raises(errors.MessageTooLarge):
        mq.send_one(q, OutMessage(body=b"x" * ((1 << 20) + 1)))


def test_empty_body_is_allowed(mq, make_queue):
    q = make_queue()
    seq = mq.send_one(q, OutMessage(body=b""))
    (m,) = mq.receive(q)
    assert (m.seq_number, m.body) == (seq, b"")


def test_unknown_queue_errors(mq, make_queue):
    make_queue()
    with pytest.raises(errors.QueueNotFound):
        mq.send_one("nope", OutMessage(body=b"x"))
    with pytest.raises(errors.QueueNotFound):
        mq.receive("nope")
    with pytest.raises(errors.QueueNotFound):
        mq.stats("nope")
    with pytest.raises(errors.QueueNotFound):
        mq.peek("nope", from_seq=0, max=32)
    assert list(mq.send("q", [])) == []
    assert issubclass(errors.QueueNotFound, errors.NotFound)
    assert errors.QueueNotFound.http_status == 404


def test_receive_clamps_max_messages(mq, make_queue):
    q = make_queue()
    send_bodies(mq, q, [b"%d" % i for i in range(300)])
    assert len(mq.receive(q, max_messages=0)) == 1
    assert len(mq.receive(q, max_messages=-5)) == 1
    assert len(mq.receive(q, max_messages=1_000)) == 256
    assert counts(mq, q)[:2] == (42, 258)
    empty = make_queue("empty")
    assert mq.receive(empty, max_messages=5, wait_ms=-1_000) == []  # clamped to 0: no wait


def test_peek_paging_and_clamps(mq, make_queue):
    q = make_queue()
    s = send_bodies(mq, q, [b"%d" % i for i in range(40)])
    assert [m.seq_number for m in mq.peek(q, from_seq=0, max=0)] == s[:32]
    assert [m.seq_number for m in mq.peek(q, from_seq=s[5], max=3)] == s[5:8]
    # an unknown state matches nothing upstream; refusing it is also acceptable
    with contextlib.suppress(errors.InvalidArgument):
        assert mq.peek(q, state="no-such-state", from_seq=0, max=32) == []
    assert len(mq.peek(q, state="active", from_seq=0, max=5_000)) == 40


def test_errors_carry_wire_code_and_status():
    table = {
        errors.LockLost: ("lock_lost", 409),
        errors.DedupConflict: ("already_exists", 409),
        errors.GroupRequired: ("group_required", 400),
        errors.NotFound: ("not_found", 404),
        errors.QueueNotFound: ("not_found", 404),
        errors.NameConflict: ("name_conflict", 409),
        errors.InvalidArgument: ("invalid_argument", 400),
        errors.MessageTooLarge: ("message_too_large", 413),
        errors.QueueNotEmpty: ("queue_not_empty", 409),
        errors.QueueChanged: ("queue_changed", 409),
    }
    for cls, (code, status) in table.items():
        assert issubclass(cls, errors.MQLiteError)
        assert (cls.code, cls.http_status) == (code, status)
    for cls in (errors.DBLocked, errors.SchemaVersionMismatch, errors.Closed):
        assert issubclass(cls, errors.MQLiteError)
