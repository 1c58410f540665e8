"""Which instants a cron expression fires at (engine/cron.py): the DST rules, the grammar
and the 400s that name the failing position. Pure: no clock, no database."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from mqlite import errors
from mqlite.engine.cron import Cron, normalize, rfc3339

BERLIN = ZoneInfo("Europe/Berlin")


def ms(y: int, mo: int, d: int, h: int = 0, mi: int = 0, tz: ZoneInfo | None = None) -> int:
    return int(datetime(y, mo, d, h, mi, tzinfo=tz or UTC).timestamp()) * 1000


def slots(cron: Cron, start_ms: int, end_ms: int) -> list[int]:
    out, at = [], start_ms
    while (nxt := cron.next_slot(at)) is not None and nxt < end_ms:
        out.append(nxt)
        at = nxt
    return out


def utc(slot: int) -> str:
    return rfc3339(slot)


def test_berlin_0230_fires_exactly_once_on_every_day_of_a_year() -> None:
    cron = Cron.of("30 2 * * *", "Europe/Berlin")
    fired = slots(cron, ms(2026, 1, 1, tz=BERLIN), ms(2027, 1, 1, tz=BERLIN))
    days = Counter(datetime.fromtimestamp(s / 1000, BERLIN).date() for s in fired)
    assert len(days) == 365 and set(days.values()) == {1}
    assert len(fired) == len(set(fired)) == 365


def test_a_time_in_the_spring_forward_gap_fires_once_at_the_first_instant_after_it() -> None:
    cron = Cron.of("30 2 * * *", "Europe/Berlin")
    fired = slots(cron, ms(2026, 3, 28), ms(2026, 3, 31))
    # 2026-03-29 02:30 does not exist in Berlin: 02:00 CET jumped to 03:00 CEST (01:00Z).
    assert [utc(s) for s in fired] == [
        "2026-03-28T01:30:00Z",
        "2026-03-29T01:00:00Z",
        "2026-03-30T00:30:00Z",
    ]


def test_every_slot_in_the_gap_collapses_into_one_firing_at_the_gap_end() -> None:
    cron = Cron.of("*/30 * * * *", "Europe/Berlin")
    fired = slots(cron, ms(2026, 3, 28, 23, 59), ms(2026, 3, 29, 2, 1))
    assert [utc(s) for s in fired] == [
        "2026-03-29T00:00:00Z",  # 01:00 CET
        "2026-03-29T00:30:00Z",  # 01:30 CET
        "2026-03-29T01:00:00Z",  # 02:00, 02:30 (gap) and 03:00 CEST: one slot
        "2026-03-29T01:30:00Z",  # 03:30 CEST
        "2026-03-29T02:00:00Z",
    ]


def test_a_repeated_time_fires_once_at_its_first_occurrence() -> None:
    cron = Cron.of("30 2 * * *", "Europe/Berlin")
    fired = slots(cron, ms(2026, 10, 24), ms(2026, 10, 27))
    assert [utc(s) for s in fired] == [
        "2026-10-24T00:30:00Z",
        "2026-10-25T00:30:00Z",  # 02:30 CEST, not again at 02:30 CET (01:30Z)
        "2026-10-26T01:30:00Z",
    ]


def test_the_repeated_hour_of_a_frequent_cron_fires_once() -> None:
    cron = Cron.of("*/30 * * * *", "Europe/Berlin")
    fired = slots(cron, ms(2026, 10, 24, 23, 59), ms(2026, 10, 25, 2, 31))
    assert [utc(s) for s in fired] == [
        "2026-10-25T00:00:00Z",  # 02:00 CEST
        "2026-10-25T00:30:00Z",  # 02:30 CEST; 02:00 and 02:30 CET are repeats
        "2026-10-25T02:00:00Z",  # 03:00 CET
        "2026-10-25T02:30:00Z",
    ]


def test_a_clock_inside_the_second_pass_never_refires_the_first() -> None:
    cron = Cron.of("30 2 * * *", "Europe/Berlin")
    inside = ms(2026, 10, 25, 1, 15)  # 02:15 CET, the second 02:xx
    assert utc(cron.next_slot(inside) or 0) == "2026-10-26T01:30:00Z"


def test_new_york_gap_and_repeat() -> None:
    cron = Cron.of("30 2 * * *", "America/New_York")
    fired = slots(cron, ms(2026, 3, 7, 12), ms(2026, 3, 9, 12))
    assert [utc(s) for s in fired] == ["2026-03-08T07:00:00Z", "2026-03-09T06:30:00Z"]
    cron = Cron.of("30 1 * * *", "America/New_York")
    fired = slots(cron, ms(2026, 10, 31, 12), ms(2026, 11, 2, 12))
    assert [utc(s) for s in fired] == ["2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"]


@pytest.mark.parametrize(
    ("expr", "weekday"),
    [("0 9 * * 0", "Sun"), ("0 9 * * 7", "Sun"), ("0 9 * * sun", "Sun"), ("0 9 * * MON", "Mon")],
)
def test_day_of_week_is_crons_zero_and_seven_are_sunday(expr: str, weekday: str) -> None:
    slot = Cron.of(expr, "UTC").next_slot(ms(2026, 3, 25)) or 0  # a Wednesday
    assert datetime.fromtimestamp(slot / 1000, UTC).strftime("%a %H:%M") == f"{weekday} 09:00"


@pytest.mark.parametrize(
    ("alias", "expected"),
    [
        ("@hourly", "2026-03-25T01:00:00Z"),
        ("@daily", "2026-03-26T00:00:00Z"),
        ("@weekly", "2026-03-29T00:00:00Z"),
        ("@monthly", "2026-04-01T00:00:00Z"),
        ("@yearly", "2027-01-01T00:00:00Z"),
    ],
)
def test_aliases(alias: str, expected: str) -> None:
    assert utc(Cron.of(alias, "UTC").next_slot(ms(2026, 3, 25)) or 0) == expected


def test_lists_ranges_steps_and_month_names() -> None:
    cron = Cron.of("0,15 9-10/1 1 jan-feb *", "UTC")
    fired = slots(cron, ms(2026, 1, 1), ms(2026, 3, 1))
    assert [utc(s)[5:16] for s in fired] == [
        "01-01T09:00", "01-01T09:15", "01-01T10:00", "01-01T10:15",
        "02-01T09:00", "02-01T09:15", "02-01T10:00", "02-01T10:15",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("expr", "words"),
    [
        ("61 * * * *", ["field 1 (minute)", "'61'"]),
        ("* 24 * * *", ["field 2 (hour)"]),
        ("* * 0 * *", ["field 3 (day-of-month)"]),
        ("* * * 13 *", ["field 4 (month)"]),
        ("* * * * 8", ["field 5 (day-of-week)"]),
        ("*/0 * * * *", ["field 1 (minute)"]),
        ("* * * * mon#2", ["field 5 (day-of-week)", "may contain only"]),
        ("* * L * *", ["field 3 (day-of-month)", "may contain only"]),
        ("* * * foo *", ["field 4 (month)", "'foo' is not a month name"]),
        ("* * * * * *", ["expected 5 fields", "got 6"]),
        ("* * * *", ["expected 5 fields", "got 4"]),
        ("@often", ["unknown alias", "@hourly"]),
        ("0 0 30 2 *", ["never match a date"]),
        ("", ["non-empty"]),
        ("*" * 300, ["longer than 256"]),
    ],
)
def test_a_bad_expression_is_a_400_naming_the_failing_position(expr: str, words: list[str]) -> None:
    with pytest.raises(errors.InvalidArgument) as exc:
        normalize(expr)
    assert exc.value.http_status == 400
    for word in ["cron", *words]:
        assert word in exc.value.message


@pytest.mark.parametrize("zone", ["Mars/Olympus", "../etc/passwd", "", "x" * 65, 5])
def test_an_unknown_timezone_is_a_400_naming_the_field(zone: object) -> None:
    with pytest.raises(errors.InvalidArgument) as exc:
        Cron.of("* * * * *", zone)
    assert "timezone" in exc.value.message


def test_latest_slot_after_a_long_downtime_is_the_most_recent_one() -> None:
    cron = Cron.of("* * * * *", "UTC")
    since, now = ms(2026, 1, 1), ms(2026, 3, 1, 12, 0) + 30_000
    latest, following = cron.latest_slot(since, now)
    assert (utc(latest), utc(following or 0)) == ("2026-03-01T12:00:00Z", "2026-03-01T12:01:00Z")
    weekly = Cron.of("0 9 * * mon", "Europe/Berlin")
    latest, following = weekly.latest_slot(ms(2025, 1, 6, 8), ms(2026, 3, 25))
    assert (utc(latest), utc(following or 0)) == ("2026-03-23T08:00:00Z", "2026-03-30T07:00:00Z")
    assert weekly.latest_slot(ms(2026, 3, 23, 8), ms(2026, 3, 23, 8))[0] == ms(2026, 3, 23, 8)
