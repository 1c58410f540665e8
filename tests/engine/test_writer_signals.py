"""The writer's test signals (``mqlite.engine.signals``): off unless a test attaches them;
once attached, a queued call, a formed batch and a committed batch are each signalled,
the commit before any caller of the batch is answered, and a batch whose commit failed is
not signalled as committed."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from mqlite import OutMessage, errors
from mqlite.clock import FakeClock
from mqlite.engine import Engine
from mqlite.engine.signals import WriterSignals
from waiting import one_batch


@pytest.fixture
def eng(tmp_path: Path) -> Iterator[Engine]:
    e = Engine(f"file:{tmp_path / 'signals.db'}", clock=FakeClock())
    e.create_queue("q")
    try:
        yield e
    finally:
        e.close()


def test_signals_are_off_unless_attached_and_an_inline_call_fires_none(eng: Engine) -> None:
    assert eng.writer.signals is None
    signals = WriterSignals.attach(eng.writer)
    eng.send_one("q", OutMessage(b"inline"))  # the writer is free: runs on this thread
    assert (signals.queued.values, signals.batch_formed.values) == ([], [])
    WriterSignals.detach(eng.writer)
    assert eng.writer.signals is None


def test_a_batch_is_signalled_queued_formed_then_committed_before_its_callers_return(
    eng: Engine,
) -> None:
    seen_by_callers: list[list[int]] = []

    def caller() -> None:
        eng.send_one("q", OutMessage(b"x"))
        seen_by_callers.append(run.signals.batch_committed.values)

    with one_batch(eng.writer) as run:
        for _ in range(3):
            run.start(caller)
    assert run.signals.queued.values[-1] == 3
    assert run.signals.batch_formed.values == [3]
    assert run.signals.batch_committed.values == [3]
    assert seen_by_callers == [[3]] * 3  # committed was signalled before any answer
    assert eng.stats("q").active == 3


def test_a_batch_whose_commit_failed_is_formed_but_never_committed(
    eng: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    def disk_full(conn: sqlite3.Connection) -> None:
        err = sqlite3.OperationalError("database or disk is full")
        err.sqlite_errorcode = 13  # type: ignore[attr-defined]
        raise err

    failures: list[BaseException] = []

    def caller() -> None:
        with pytest.raises(errors.StorageFull) as raised:
            eng.send_one("q", OutMessage(b"lost"))
        failures.append(raised.value)

    with one_batch(eng.writer) as run:
        monkeypatch.setattr(eng.store, "_commit", disk_full)
        for _ in range(2):
            run.start(caller)
    monkeypatch.undo()
    assert len(failures) == 2
    assert run.signals.batch_formed.values == [2]
    assert run.signals.batch_committed.values == []  # it would have come before the answers
