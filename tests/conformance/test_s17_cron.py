"""Conformance §17: cron schedules (docs/cron.md). Time moves only through the FakeClock
and ``run_maintenance_once`` (the pass ``serve`` runs every second)."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest
from conformance_support import peek_all

from mqlite import OutMessage, QueueConfig, defaults, errors
from mqlite.clock import FakeClock
from mqlite.engine import send
from mqlite.testing import engine as engine_of
from mqlite.testing import run_maintenance_once

BERLIN = ZoneInfo("Europe/Berlin")
MINUTE, HOUR = 60_000, 3_600_000


def at(y: int, mo: int, d: int, h: int = 0, mi: int = 0, tz: ZoneInfo | None = None) -> int:
    return int(datetime(y, mo, d, h, mi, tzinfo=tz or UTC).timestamp()) * 1000


def iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def slots_of(mq, queue: str) -> list[str]:
    return [m.properties["mqlite-slot"] for m in peek_all(mq, queue)]


@pytest.fixture
def dated(open_mq):
    """``dated(ms)``: an engine whose FakeClock starts at ``ms``, with queue ``q``."""

    def _open(start_ms: int):
        clock = FakeClock(start_ms)
        mq = open_mq(clock=clock)
        mq.create_queue("q", QueueConfig())
        return mq, clock

    return _open


def test_17_1_a_due_slot_fires_in_the_maintenance_pass_at_the_clocks_time(dated):
    mq, clock = dated(at(2026, 5, 4, 9, 0) + 1)
    mq.create_schedule("tick", "*/5 * * * *", "q", OutMessage(b"run"))
    clock.set(at(2026, 5, 4, 9, 5) - 1)
    assert run_maintenance_once(mq).schedules_fired == 0
    assert peek_all(mq, "q") == []
    clock.set(at(2026, 5, 4, 9, 5))
    assert run_maintenance_once(mq).schedules_fired == 1
    (m,) = mq.receive("q")
    assert m.body == b"run"
    (s,) = mq.list_schedules()
    assert (s.fired, s.last_slot_ms, s.last_fired_at_ms) == (
        1,
        at(2026, 5, 4, 9, 5),
        clock.now_ms(),
    )
    assert s.next_fire_at_ms == at(2026, 5, 4, 9, 10)


def test_17_2_one_message_per_slot_with_its_id_and_properties(dated):
    mq, clock = dated(at(2026, 5, 4, 9, 0))
    msg = OutMessage(b"x", subject="s", content_type="text/plain", properties={"k": "v"})
    mq.create_schedule("job.1", "* * * * *", "q", msg)
    for _ in range(3):
        clock.advance(MINUTE)
        run_maintenance_once(mq)
        run_maintenance_once(mq)  # a second pass at the same time fires nothing more
    got = peek_all(mq, "q")
    slot = at(2026, 5, 4, 9, 1)
    assert [m.message_id for m in got] == [f"cron:job.1:{slot + i * MINUTE}" for i in range(3)]
    first = got[0]
    assert first.properties == {
        "k": "v",
        "mqlite-schedule": "job.1",
        "mqlite-slot": "2026-05-04T09:01:00Z",
    }
    assert (first.subject, first.content_type, first.body) == ("s", "text/plain", b"x")


def test_17_2_the_slot_is_recorded_in_the_same_transaction_as_the_send(dated, monkeypatch):
    mq, clock = dated(at(2026, 5, 4, 9, 0))
    mq.create_schedule("s", "* * * * *", "q", OutMessage(b"x"))
    clock.advance(MINUTE)
    real = send.insert

    def crash(*args, **kwargs):
        real(*args, **kwargs)  # the message row is written ...
        raise RuntimeError("crash before COMMIT")  # ... and the transaction dies

    monkeypatch.setattr(send, "insert", crash)
    with pytest.raises(RuntimeError):
        run_maintenance_once(mq)
    (s,) = mq.list_schedules()
    assert (s.fired, s.last_slot_ms, peek_all(mq, "q")) == (0, 0, [])  # neither happened
    monkeypatch.setattr(send, "insert", real)
    run_maintenance_once(mq)
    assert [m.message_id for m in peek_all(mq, "q")] == [f"cron:s:{at(2026, 5, 4, 9, 1)}"]
    assert mq.list_schedules()[0].fired == 1


def test_17_2_reopening_the_database_never_refires_a_recorded_slot(dated, open_mq, dsn):
    mq, clock = dated(at(2026, 5, 4, 9, 0))
    mq.create_schedule("s", "0 * * * *", "q", OutMessage(b"x"))
    clock.advance(HOUR)
    run_maintenance_once(mq)
    mq.close()
    again = open_mq(dsn, clock=clock)
    run_maintenance_once(again)
    clock.advance(MINUTE)
    run_maintenance_once(again)
    assert slots_of(again, "q") == ["2026-05-04T10:00:00Z"]


@pytest.mark.parametrize("store", ["file"])  # zone arithmetic: not a store's concern
def test_17_3_berlin_0230_fires_exactly_once_on_every_day_of_a_year(dated, store):
    mq, clock = dated(at(2026, 1, 1, tz=BERLIN))
    mq.create_schedule("nightly", "30 2 * * *", "q", OutMessage(b"n"), timezone="Europe/Berlin")
    end = at(2027, 1, 1, tz=BERLIN)
    while (nxt := mq.list_schedules()[0].next_fire_at_ms) < end:
        clock.set(nxt)  # exactly at each slot, so a second firing on a day would show
        run_maintenance_once(mq)
        clock.advance(30 * MINUTE)  # and half an hour on: the fall-back repeat is here
        run_maintenance_once(mq)
    fired = [datetime.fromisoformat(s) for s in slots_of(mq, "q")]
    days = Counter(f.astimezone(BERLIN).date() for f in fired)
    assert len(fired) == 365 and len(days) == 365 and set(days.values()) == {1}
    by_day = {
        f.astimezone(BERLIN).date().isoformat(): iso(int(f.timestamp() * 1000)) for f in fired
    }
    assert by_day["2026-03-29"] == "2026-03-29T01:00:00Z"  # the gap: 03:00 CEST, once
    assert by_day["2026-10-25"] == "2026-10-25T00:30:00Z"  # the repeat: its first 02:30


@pytest.mark.parametrize("store", ["file"])  # zone arithmetic: not a store's concern
def test_17_3_a_repeated_hour_fires_once_even_when_the_pass_runs_through_it(dated, store):
    mq, clock = dated(at(2026, 10, 24, 22, 0))
    mq.create_schedule("half", "*/30 * * * *", "q", OutMessage(b"h"), timezone="Europe/Berlin")
    while clock.now_ms() < at(2026, 10, 25, 3, 0):
        clock.advance(MINUTE)
        run_maintenance_once(mq)
    assert slots_of(mq, "q") == [
        "2026-10-24T22:30:00Z",  # 00:30 CEST
        "2026-10-24T23:00:00Z",
        "2026-10-24T23:30:00Z",
        "2026-10-25T00:00:00Z",  # 02:00 CEST
        "2026-10-25T00:30:00Z",  # 02:30 CEST; 02:00 and 02:30 CET (01:00Z, 01:30Z) are repeats
        "2026-10-25T02:00:00Z",  # 03:00 CET
        "2026-10-25T02:30:00Z",
        "2026-10-25T03:00:00Z",
    ]


@pytest.mark.parametrize("store", ["file"])  # zone arithmetic: not a store's concern
def test_17_3_slots_in_the_spring_gap_fire_once_at_its_end(dated, store):
    mq, clock = dated(at(2026, 3, 28, 23, 40))
    mq.create_schedule("quarter", "*/15 * * * *", "q", OutMessage(b"g"), timezone="Europe/Berlin")
    while clock.now_ms() < at(2026, 3, 29, 1, 20):
        clock.advance(MINUTE)
        run_maintenance_once(mq)
    assert slots_of(mq, "q") == [
        "2026-03-28T23:45:00Z",
        "2026-03-29T00:00:00Z",  # 01:00 CET
        "2026-03-29T00:15:00Z",
        "2026-03-29T00:30:00Z",
        "2026-03-29T00:45:00Z",  # 01:45 CET; 02:00..02:45 do not exist
        "2026-03-29T01:00:00Z",  # 03:00 CEST: the gap's slots and its own, once
        "2026-03-29T01:15:00Z",
    ]


@pytest.mark.parametrize(
    ("catch_up", "expected"),
    [
        ("latest", ["2026-05-04T14:00:00Z", "2026-05-04T15:00:00Z"]),
        ("skip", ["2026-05-04T15:00:00Z"]),
    ],
)
def test_17_4_after_downtime_latest_fires_the_most_recent_slot_once_and_skip_none(
    dated, catch_up, expected
):
    mq, clock = dated(at(2026, 5, 4, 9, 30))
    mq.create_schedule("h", "0 * * * *", "q", OutMessage(b"h"), catch_up=catch_up)
    clock.set(at(2026, 5, 4, 14, 20))  # down through 10:00 .. 14:00
    run_maintenance_once(mq)
    clock.set(at(2026, 5, 4, 15, 0))  # both resume on the next slot
    run_maintenance_once(mq)
    assert slots_of(mq, "q") == expected


def test_17_4_skip_still_fires_a_slot_found_within_the_grace(dated):
    mq, clock = dated(at(2026, 5, 4, 9, 30))
    mq.create_schedule("h", "0 * * * *", "q", OutMessage(b"h"), catch_up="skip")
    clock.set(at(2026, 5, 4, 10, 0) + defaults.CRON_SKIP_GRACE_MS)
    run_maintenance_once(mq)
    assert slots_of(mq, "q") == ["2026-05-04T10:00:00Z"]


def test_17_5_a_topic_target_fans_out_like_a_publish(dated):
    mq, clock = dated(at(2026, 5, 4, 9, 0))
    mq.subscribe("events", "a")
    mq.subscribe("events", "b", "subject == 'other'")
    mq.create_schedule("fan", "* * * * *", "events", OutMessage(b"e", subject="tick"))
    clock.advance(MINUTE)
    assert run_maintenance_once(mq).schedules_fired == 1
    assert [m.message_id for m in peek_all(mq, "a")] == [f"cron:fan:{at(2026, 5, 4, 9, 1)}"]
    assert peek_all(mq, "b") == []  # its filter refused it, as it would a publish


def test_17_6_a_deleted_target_reports_target_missing_and_stops_firing(dated):
    mq, clock = dated(at(2026, 5, 4, 9, 0))
    mq.create_queue("gone", QueueConfig())
    mq.create_schedule("s", "* * * * *", "gone", OutMessage(b"x"))
    mq.delete_queue("gone")
    clock.advance(MINUTE)
    assert run_maintenance_once(mq).schedules_fired == 0
    (s,) = mq.list_schedules()
    assert (s.status, s.fired) == ("target missing", 0)
    mq.create_queue("gone", QueueConfig())  # back: it fires again from the next slot
    assert mq.list_schedules()[0].status == "active"
    clock.advance(MINUTE)
    run_maintenance_once(mq)
    assert slots_of(mq, "gone") == ["2026-05-04T09:02:00Z"]


def test_17_6_an_unknown_target_is_refused_at_creation(mq):
    with pytest.raises(errors.QueueNotFound):
        mq.create_schedule("s", "* * * * *", "nope", OutMessage(b"x"))


def test_17_7_at_most_10000_schedules(dated, raw_db):
    mq, _ = dated(at(2026, 5, 4, 9, 0))
    conn = raw_db()
    rows = [(f"bulk{i}", "0 0 1 1 *", "q", b"", 1 << 62, 1, 1) for i in range(9_999)]
    for i in range(0, len(rows), 500):
        conn.executemany(
            "INSERT INTO schedules (name, cron, queue, body, next_fire_at, created_at,"
            " updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            rows[i : i + 500],
        )
    conn.commit()
    mq.create_schedule("the-last", "@daily", "q", OutMessage())  # the 10,000th
    with pytest.raises(errors.InvalidArgument) as exc:
        mq.create_schedule("one-more", "@daily", "q", OutMessage())
    assert "at most 10000 schedules" in exc.value.message
    mq.create_schedule("the-last", "@hourly", "q", OutMessage())  # an upsert still works
    assert len(mq.list_schedules()) == defaults.MAX_SCHEDULES


def test_17_8_upsert_keeps_the_history_and_pause_stops_firing(dated):
    mq, clock = dated(at(2026, 5, 4, 9, 0))
    mq.create_schedule("s", "* * * * *", "q", OutMessage(b"1"))
    clock.advance(MINUTE)
    run_maintenance_once(mq)
    paused = mq.create_schedule("s", "* * * * *", "q", OutMessage(b"2"), paused=True)
    assert (paused.status, paused.next_fire_at_ms, paused.fired) == ("paused", 0, 1)
    clock.advance(10 * MINUTE)
    run_maintenance_once(mq)
    resumed = mq.create_schedule("s", "* * * * *", "q", OutMessage(b"2"))
    assert resumed.next_fire_at_ms == at(2026, 5, 4, 9, 12)  # the paused slots never fire
    clock.advance(MINUTE)
    run_maintenance_once(mq)
    assert [m.body for m in peek_all(mq, "q")] == [b"1", b"2"]
    assert mq.delete_schedule("s") is True and mq.delete_schedule("s") is False
    clock.advance(MINUTE)
    run_maintenance_once(mq)
    assert len(peek_all(mq, "q")) == 2


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"name": "bad name"}, "name must be"),
        ({"name": "x" * 129}, "name must be 1..128"),
        ({"cron": "* * 32 * *"}, "field 3 (day-of-month)"),
        ({"timezone": "Nowhere/City"}, "timezone"),
        ({"catch_up": "all"}, "catch_up"),
        ({"message": OutMessage(b"x", message_id="m")}, "message.message_id"),
        ({"message": OutMessage(b"x" * (defaults.MAX_MESSAGE_BYTES + 1))}, "message.body"),
    ],
)
def test_17_9_a_bad_schedule_is_refused_naming_the_field(mq, make_queue, kwargs, words):
    make_queue("q")
    args = {"name": "s", "cron": "* * * * *", "queue": "q", "message": OutMessage(b"x")}
    with pytest.raises((errors.InvalidArgument, errors.MessageTooLarge)) as exc:
        mq.create_schedule(**{**args, **kwargs})
    assert words in exc.value.message
    assert mq.list_schedules() == []


def test_17_10_a_stale_pass_cannot_fire_a_slot_twice(dated):
    """The slot is compare-and-swapped on next_fire_at: a pass that planned from a row
    another pass already advanced fires nothing."""
    mq, clock = dated(at(2026, 5, 4, 9, 0))
    mq.create_schedule("s", "* * * * *", "q", OutMessage(b"x"))
    clock.advance(MINUTE)
    eng = engine_of(mq)
    now = clock.now_ms()
    rows = eng.schedule_firing._due_schedules(now, (-1, ""))
    assert eng.fire_schedules() == 1
    from mqlite.engine.schedule_firing import plan
    from mqlite.engine.schedule_rows import schedule_of

    stale = [plan(schedule_of(r), now) for r in rows]
    assert eng.schedule_firing._commit_firings(stale) == 0
    assert len(peek_all(mq, "q")) == 1
