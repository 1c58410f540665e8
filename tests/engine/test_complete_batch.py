"""complete_batch on a local file (engine/settle_batch.py): a batch whose every pair is
live is settled by a DELETE that does not say which rows it removed; any other batch is
undone to a savepoint and deleted again, RETURNING them. Both ways settle exactly the
live pairs, each once: one receipt per removed row, one ``completed`` effect per row."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from mqlite import errors
from mqlite.clock import FakeClock
from mqlite.engine import Engine, settle_batch
from mqlite.engine.rows import EXTERNAL_BODY_MIN_BYTES
from mqlite.types import Message, OutMessage, QueueConfig

LOCK = 30_000


@pytest.fixture
def eng(tmp_path: Path) -> Iterator[Engine]:
    e = Engine(f"file:{tmp_path / 'mq.db'}", clock=FakeClock(1_700_000_000_000))
    try:
        e.create_queue("q", QueueConfig(lock_duration_ms=LOCK))
        yield e
    finally:
        e.close()


def completed(e: Engine) -> int:
    return sum(m.count for m in e.observe().messages if m.event == "completed")


def receive_all(e: Engine, n: int) -> list[Message]:
    e.send("q", [OutMessage(body=b"%d" % i) for i in range(n)])
    got: list[Message] = []
    while batch := e.receive("q", max_messages=256):
        got += batch
    assert len(got) == n
    return got


def test_a_batch_of_live_pairs_over_several_chunks_completes_each_with_its_receipt(
    eng: Engine,
) -> None:
    n = settle_batch.CHUNK + 44  # two DELETE statements, the second padded to its bucket
    pairs = [(m.seq_number, m.lock_token) for m in receive_all(eng, n)]
    assert all(r.ok for r in eng.complete_batch("q", pairs))
    assert completed(eng) == n and eng.stats("q").total == 0
    # A retry (a lost answer) is answered from the receipts: ok, and nothing counted twice.
    again = eng.complete_batch("q", pairs)
    assert [r.seq_number for r in again] == [s for s, _ in pairs]
    assert all(r.ok for r in again) and completed(eng) == n
    eng.complete("q", *pairs[-1])  # and a single Complete finds the batch's receipt


def test_a_batch_with_a_stale_pair_settles_exactly_its_live_pairs_once(eng: Engine) -> None:
    a, c, *live = receive_all(eng, 10)
    eng.complete("q", a.seq_number, a.lock_token)
    items = [
        (a.seq_number, a.lock_token),  # completed before: its receipt answers
        (c.seq_number, "0" * 32),  # a stale token: its row stays locked
        *[(m.seq_number, m.lock_token) for m in live],
    ]
    assert len(items) >= settle_batch.SAVEPOINT_MIN_PAIRS  # (tried without RETURNING first)
    assert [r.ok for r in eng.complete_batch("q", items)] == [True, False] + [True] * 8
    assert completed(eng) == 9  # a, then the live 8: the undone first DELETE counted none
    assert eng.stats("q").total == 1
    eng.complete("q", live[0].seq_number, live[0].lock_token)  # its receipt was written
    with pytest.raises(errors.LockLost):
        eng.complete("q", c.seq_number, "0" * 32)
    eng.complete("q", c.seq_number, c.lock_token)


def test_large_bodies_go_with_their_rows_and_count_once(eng: Engine, tmp_path: Path) -> None:
    """A body over rows.EXTERNAL_BODY_MIN_BYTES lives in `bodies`, deleted by the foreign
    key's cascade: not a row the DELETE's count includes (sqlite3_changes), so the row
    count still proves every pair removed its own message."""
    big = [OutMessage(body=bytes([i]) * (EXTERNAL_BODY_MIN_BYTES + 1)) for i in range(10)]
    eng.send("q", big)
    got = eng.receive("q", max_messages=10)
    assert [m.body for m in got] == [m.body for m in big]
    assert all(r.ok for r in eng.complete_batch("q", [(m.seq_number, m.lock_token) for m in got]))
    assert completed(eng) == 10 and eng.stats("q").total == 0
    db = sqlite3.connect(tmp_path / "mq.db")
    try:
        assert db.execute("SELECT count(*) FROM bodies").fetchone() == (0,)
    finally:
        db.close()


def test_a_small_batch_returns_its_pairs_at_once(eng: Engine) -> None:
    a, b = receive_all(eng, 2)
    items = [(a.seq_number, a.lock_token), (b.seq_number, "0" * 32), (a.seq_number, a.lock_token)]
    assert [r.ok for r in eng.complete_batch("q", items)] == [True, False, True]
    assert completed(eng) == 1 and eng.stats("q").total == 1


def test_a_batch_inside_a_transaction_nests_its_savepoint_in_the_blocks(eng: Engine) -> None:
    msgs = receive_all(eng, 3)
    with eng.tx() as tx:
        assert all(r.ok for r in tx.complete_batch(msgs))
        tx.send_one("q", OutMessage(body=b"after"))
    assert eng.stats("q").total == 1 and completed(eng) == 3
    stale = eng.receive("q")
    with pytest.raises(errors.LockLost), eng.tx() as tx:
        tx.send_one("q", OutMessage(body=b"rolled back"))
        tx.complete_batch([stale[0], stale[0]])  # a duplicate: the RETURNING path
        tx.complete_batch([Message(stale[0].seq_number, "q", lock_token="1" * 32)])
    assert eng.stats("q").total == 1  # the whole block rolled back: stale[0] is back
