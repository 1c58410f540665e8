"""The cron firing pass runs every second (scheduling.py); a broker with no schedule must
not take the writer for it each time, and skipping must never cost a slot once a schedule
is created. Writer acquisitions are counted (Writer.call is the door every ``@serialized``
method goes through), not timed; time moves only through the FakeClock."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import mqlite
from mqlite import OutMessage
from mqlite.clock import FakeClock
from mqlite.engine.writer import Writer
from mqlite.testing import engine as engine_of

START = 1_779_999_960_000  # 2026-05-28T20:26:00Z, a whole minute
TICKS = 120


@pytest.fixture
def mq(tmp_path: Path) -> Iterator[tuple[mqlite.EmbeddedClient, FakeClock]]:
    clock = FakeClock(START + 1)
    client = mqlite.open_embedded(f"file:{tmp_path / 'c.db'}", clock=clock, background=False)
    client.create_queue("q")
    yield client, clock
    client.close()


def count_writer_calls(monkeypatch: pytest.MonkeyPatch, writer: Writer) -> list[int]:
    calls = [0]
    real = writer.call

    def counted(fn: Any, *args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        return real(fn, *args, **kwargs)

    monkeypatch.setattr(writer, "call", counted)
    return calls


def test_the_cron_pass_takes_no_writer_while_no_schedule_exists(
    mq: tuple[mqlite.EmbeddedClient, FakeClock], monkeypatch: pytest.MonkeyPatch
) -> None:
    client, clock = mq
    engine = engine_of(client)
    calls = count_writer_calls(monkeypatch, engine.writer)
    for _ in range(TICKS):
        clock.advance(1_000)
        assert engine.fire_schedules() == 0
    assert calls[0] == 1  # the first pass found the table empty; the other 119 skipped


def test_a_schedule_created_after_idle_passes_fires_its_first_slot(
    mq: tuple[mqlite.EmbeddedClient, FakeClock], monkeypatch: pytest.MonkeyPatch
) -> None:
    client, clock = mq
    engine = engine_of(client)
    for _ in range(5):  # idle: the pass has learnt there is no schedule
        clock.advance(1_000)
        engine.fire_schedules()
    client.create_schedule("tick", "* * * * *", "q", OutMessage(b"run"))
    calls = count_writer_calls(monkeypatch, engine.writer)
    fired = 0
    for _ in range(TICKS):  # two minutes of passes: both slots fire, each once
        clock.advance(1_000)
        fired += engine.fire_schedules()
    assert fired == 2
    assert [m.properties["mqlite-slot"] for m in client.peek("q")] == [
        "2026-05-28T20:27:00Z",
        "2026-05-28T20:28:00Z",
    ]
    assert calls[0] >= TICKS  # with a schedule, every pass looks
    client.delete_schedule("tick")
    calls[0] = 0
    for _ in range(TICKS):
        clock.advance(1_000)
        engine.fire_schedules()
    assert calls[0] == 1  # deleted: one look, then idle again
