"""A checkpoint (or incremental vacuum) requested while other threads write runs outside
any transaction: the writer never puts it in a group-commit batch. Before, a checkpoint
that joined a batch failed with InvalidArgument "not allowed inside a transaction" --
nearly always under load (the crash drill's checkpoint kill point was never reached)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import pytest

import mqlite
from mqlite.engine.engine import Engine
from waiting import one_batch


def while_four_threads_send(send: Callable[[], object], action: Callable[[], object]) -> int:
    """Run ``action`` 40 times while four threads send one message each in a loop (so the
    writer forms group-commit batches); returns how many messages the threads sent."""
    stop = threading.Event()
    sent = [0] * 4

    def sender(i: int) -> None:
        while not stop.is_set():
            send()
            sent[i] += 1

    threads = [threading.Thread(target=sender, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    try:
        for _ in range(40):
            action()
    finally:
        stop.set()
        for t in threads:
            t.join()
    return sum(sent)


def test_checkpoints_and_vacuums_succeed_while_sends_are_group_committed(tmp_path: Path) -> None:
    mq = mqlite.open_embedded(f"file:{tmp_path / 'mq.db'}", background=False)
    mq.create_queue("q")
    sent = while_four_threads_send(
        lambda: mq.send_one("q", mqlite.OutMessage(body=b"x")),
        mq.vacuum,  # a WAL checkpoint, incremental_vacuum, a checkpoint again
    )
    assert mq.stats("q").active == sent > 0
    mq.close()


def test_the_reclaim_pass_of_the_scheduler_succeeds_while_sends_are_group_committed(
    tmp_path: Path,
) -> None:
    """The scheduler hands ``reclaim_pass`` to the writer (``call_on_thread``); the pass
    itself, not only the ``reclaim_free_pages`` it calls, must be kept out of a batch:
    inside one, incremental_vacuum failed with "not allowed inside a transaction" and the
    reclaim task was reported failed under load."""
    eng = Engine(f"file:{tmp_path / 'mq.db'}")
    eng.create_queue("q")
    sent = while_four_threads_send(
        lambda: eng.writer.call_on_thread(eng.send, "q", [mqlite.OutMessage(body=b"x")]),
        lambda: eng.writer.call_on_thread(eng.reclaim_pass),
    )
    assert eng.stats("q").active == sent > 0
    eng.close()


@pytest.mark.parametrize("action", ["checkpoint", "reclaim_pass", "vacuum_full"])
def test_a_maintenance_call_that_joins_a_batch_runs_after_it_outside_its_transaction(
    tmp_path: Path, action: str
) -> None:
    """The same, deterministically (the writer's test signals, ``waiting.one_batch``): three
    sends and the call queue behind the held writer and are taken as ONE batch; the sends
    commit together, the call runs alone after them and succeeds."""
    eng = Engine(f"file:{tmp_path / 'mq.db'}")
    eng.create_queue("q")
    failures: list[BaseException] = []

    def call(fn: Callable[[], object]) -> None:
        try:
            eng.writer.call_on_thread(fn)
        except BaseException as exc:  # handed to the test
            failures.append(exc)

    try:
        with one_batch(eng.writer, f"three sends and {action}") as run:
            for _ in range(3):
                run.start(lambda: call(lambda: eng.send("q", [mqlite.OutMessage(body=b"x")])))
            run.start(lambda: call(getattr(eng, action)))
        assert failures == []
        assert run.signals.batch_committed.values == [4]
        assert eng.stats("q").active == 3
    finally:
        eng.close()
