"""``complete_batch`` on a local file: one fenced DELETE and one receipt INSERT per chunk.

A drain settles every message here, so the batch is two statements, not two per pair
(``settle.COMPLETE_PAIR_SQL`` per pair, then a receipt per row, cost ~20,000 CPU
instructions per message more, of a drain's ~260,000; issue 29). The effects are those of
a Complete per pair:

- the DELETE carries every (seq, token) pair of the chunk and the fence of Complete
  (queue, ``state = 'locked'``, a live lease);
- receipts are looked up, for the pairs it did not remove, before any new one is written
  (a pair never vouches for itself within one batch);
- one receipt per removed row, as Complete writes it.

Which pairs the DELETE removed: when it removed as many rows as pairs were given, every
pair removed its own row (a row matches one pair; so no pair was stale, empty or given
twice) -- every drain's batch, known from the row count alone. Anything else (a retried
batch, a lapsed lease) is undone to a savepoint taken before it and deleted again with
``RETURNING`` the removed pairs: RETURNING costs ~7,800 CPU instructions per row, a
savepoint ~700 per message of a batch of 64 (a batch of fewer than eight pairs RETURNs
them at once).

Statement text depends on the chunk size only through a power-of-two bucket (padding
pairs are NULL: they match no row and write no receipt), so a drain of any batch sizes
keeps at most nine texts of each statement in the connection's statement cache.

The remote store's batch is ``settle_pipelined.py`` (one request with the COMMIT).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator, Sequence
from functools import cache
from itertools import chain
from operator import itemgetter
from typing import Any

from mqlite import defaults
from mqlite.engine.frozen import constructor
from mqlite.engine.settle import LOOKUP_RECEIPT_SQL, OP_COMPLETE
from mqlite.types import BatchResult

# Pairs per statement: a DELETE binds 3 x 256 + 2 parameters, under SQLite's historical
# limit of 999.
CHUNK = 256

# A BatchResult without its frozen __init__ (frozen.py): one per settled message.
make_result = constructor(BatchResult)
_RESULT_PARTS: Any = make_result  # (its instances take plain stores: _results)
_new = object.__new__


# Taken before a DELETE that does not say which pairs it removed (module docstring), in a
# batch of at least SAVEPOINT_MIN_PAIRS: its two statements cost ~45,000 instructions,
# what RETURNING costs for six rows.
SAVEPOINT = "complete_batch"
SAVEPOINT_MIN_PAIRS = 8


@cache
def delete_pairs_sql(n: int, returning: bool = True) -> str:
    """The fenced DELETE of ``n`` (seq, token) pairs (seqs first, then the pairs, then the
    queue and ``now``), RETURNING the pairs it removed when ``returning``.

    ``id IN (seqs)`` makes the plan a primary-key lookup per pair; the unary ``+`` keeps
    the planner from range-scanning every live lock of idx_msg_locked instead
    (tests/engine/test_plans.py)."""
    seqs = ",".join(["?"] * n)
    values = ",".join(["(?, ?)"] * n)
    return f"""
DELETE FROM messages
 WHERE id IN ({seqs}) AND (id, lock_token) IN (VALUES {values})
   AND queue = ? AND +state = 'locked' AND +locked_until > ?
{"RETURNING id, lock_token" if returning else ""}
"""


@cache
def insert_receipts_sql(n: int) -> str:
    """Complete's receipt for each of ``n`` (seq, token) pairs (queue, created, expires
    first); a NULL padding pair writes none."""
    values = ",".join(["(?, ?)"] * n)
    return f"""
INSERT OR REPLACE INTO settlement_receipts
    (lock_token, queue, seq_number, operation, args, created_at, expires_at)
SELECT column2, ?, column1, '{OP_COMPLETE}', '', ?, ? FROM (VALUES {values})
 WHERE column1 IS NOT NULL
"""


def bucket(n: int) -> int:
    """The smallest power of two >= n (1 <= n <= CHUNK)."""
    return 1 << (n - 1).bit_length()


def complete_batch(
    conn: sqlite3.Connection, now_ms: int, queue: str, pairs: Sequence[tuple[int, str]]
) -> tuple[list[BatchResult], int]:
    """Complete many pairs in the caller's transaction; per-item ok, never failing the batch.

    Keyed by the (seq, token) PAIR: the same seq with a stale and a live token is ok only
    for the live one; a duplicate pair is answered alike; an empty token is never ok.
    Returns the results and the rows deleted now."""
    live = list(pairs)
    if "" in map(itemgetter(1), live):  # (rare) an empty token: never ok, never sent
        live = [pair for pair in live if pair[1]]
    execute = conn.execute
    if len(live) == len(pairs) >= SAVEPOINT_MIN_PAIRS:
        execute(f"SAVEPOINT {SAVEPOINT}")
        removed = sum(
            execute(delete_pairs_sql((len(params) - 2) // 3, False), params).rowcount
            for params in _delete_params(live, queue, now_ms)
        )
        if removed == len(pairs):  # every pair removed its own row (module docstring)
            execute(f"RELEASE {SAVEPOINT}")
            _write_receipts(execute, queue, now_ms, live)
            return _results(pairs, True, set()), removed
        execute(f"ROLLBACK TO {SAVEPOINT}")  # which did? Asked again, RETURNING them
        execute(f"RELEASE {SAVEPOINT}")
    fresh: list[tuple[int, str]] = []
    for params in _delete_params(live, queue, now_ms):  # (a duplicate removes its row once)
        fresh += execute(delete_pairs_sql((len(params) - 2) // 3), params).fetchall()
    done = set(fresh)
    for seq, token in dict.fromkeys(live):  # the rest may hold a live receipt (a retry)
        if (seq, token) not in done and execute(
            LOOKUP_RECEIPT_SQL, (queue, seq, token, OP_COMPLETE, "", now_ms)
        ).fetchone():
            done.add((seq, token))
    _write_receipts(execute, queue, now_ms, fresh)
    return _results(pairs, False, done), len(fresh)


def _delete_params(pairs: list[tuple[int, str]], queue: str, now_ms: int) -> Iterator[list[object]]:
    """``delete_pairs_sql``'s parameters for each chunk of ``pairs``, padded to its
    bucket (3 x the bucket + 2 of them)."""
    for start in range(0, len(pairs), CHUNK):
        chunk = pairs[start : start + CHUNK]
        pad = [None] * (bucket(len(chunk)) - len(chunk))
        params: list[object] = [*map(itemgetter(0), chunk), *pad]
        params += [*chain.from_iterable(chunk), *pad, *pad, queue, now_ms]
        yield params


def _write_receipts(
    execute: Callable[..., sqlite3.Cursor],
    queue: str,
    now_ms: int,
    removed: list[tuple[int, str]],
) -> None:
    """Complete's receipt for every removed (seq, token) pair, a statement per chunk."""
    expires = now_ms + defaults.SETTLEMENT_RECEIPT_TTL_MS
    for start in range(0, len(removed), CHUNK):
        rows = removed[start : start + CHUNK]
        pad = [None] * (bucket(len(rows)) - len(rows))
        receipt = [queue, now_ms, expires, *chain.from_iterable(rows), *pad, *pad]
        execute(insert_receipts_sql(len(rows) + len(pad)), receipt)


def _results(
    pairs: Sequence[tuple[int, str]], everything: bool, done: set[tuple[int, str]]
) -> list[BatchResult]:
    """A BatchResult per pair, in order: ok iff ``everything`` or the pair is done. Built
    by plain slot stores (frozen.py; one per settled message: the drain's hot path)."""
    results: list[BatchResult] = []
    append = results.append
    for pair in pairs:
        r = _new(_RESULT_PARTS)
        r.seq_number = pair[0]
        r.ok = everything or pair in done
        r.locked_until_ms = 0
        r.__class__ = BatchResult
        append(r)
    return results
