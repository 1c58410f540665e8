"""``complete_batch`` on a local file: one fenced DELETE and one receipt INSERT per chunk.

A drain settles every message here, so the batch is two statements, not two per pair
(``settle.COMPLETE_PAIR_SQL`` per pair, then a receipt per row, cost ~18,000 CPU
instructions per message more: a third of what the drain cost beyond SQLite's own work
for the same rows; issue 29). The effects are those of a Complete per pair:

- the DELETE carries every (seq, token) pair of the chunk and the fence of Complete
  (queue, ``state = 'locked'``, a live lease) and RETURNs the pairs it removed;
- receipts are looked up, for the pairs it did not remove, before any new one is written
  (a pair never vouches for itself within one batch);
- one receipt per removed row, as Complete writes it.

Statement text depends on the chunk size only through a power-of-two bucket (padding
pairs are NULL: they match no row and write no receipt), so a drain of any batch sizes
keeps at most nine texts of each statement in the connection's statement cache.

The remote store's batch is ``settle_pipelined.py`` (one request with the COMMIT).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from functools import cache
from itertools import chain
from operator import itemgetter
from typing import Any

from mqlite import defaults
from mqlite.engine.frozen import constructor
from mqlite.engine.settle import LOOKUP_RECEIPT_SQL, OP_COMPLETE
from mqlite.types import BatchResult

# Pairs per statement: 2 x 256 + 2 parameters, under SQLite's historical 999 limit.
CHUNK = 256

# A BatchResult without its frozen __init__ (frozen.py): one per settled message.
make_result = constructor(BatchResult)
_RESULT_PARTS: Any = make_result  # (its instances take plain stores: _results)
_new = object.__new__


@cache
def delete_pairs_sql(n: int) -> str:
    """The fenced DELETE of ``n`` (seq, token) pairs (seqs first, then the pairs, then the
    queue and ``now``).

    ``id IN (seqs)`` makes the plan a primary-key lookup per pair; the unary ``+`` keeps
    the planner from range-scanning every live lock of idx_msg_locked instead
    (tests/engine/test_plans.py)."""
    seqs = ",".join(["?"] * n)
    values = ",".join(["(?, ?)"] * n)
    return f"""
DELETE FROM messages
 WHERE id IN ({seqs}) AND (id, lock_token) IN (VALUES {values})
   AND queue = ? AND +state = 'locked' AND +locked_until > ?
RETURNING id, lock_token
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
    fresh: list[tuple[int, str]] = []
    execute = conn.execute
    for start in range(0, len(live), CHUNK):  # (a duplicate pair removes its row once)
        chunk = live[start : start + CHUNK]
        pad = [None] * (bucket(len(chunk)) - len(chunk))
        params = [*map(itemgetter(0), chunk), *pad, *chain.from_iterable(chunk), *pad, *pad]
        params += (queue, now_ms)
        fresh += execute(delete_pairs_sql(len(chunk) + len(pad)), params).fetchall()
    # As many rows removed as pairs given: every pair removed its own row now (no empty
    # token, no duplicate), all ok -- a drain's batch, answered without a set of pairs.
    everything = len(fresh) == len(pairs)
    done: set[tuple[int, str]] = set() if everything else set(fresh)
    if not everything:  # a retried batch: the rest may hold a live receipt
        for seq, token in dict.fromkeys(live):
            if (seq, token) not in done and execute(
                LOOKUP_RECEIPT_SQL, (queue, seq, token, OP_COMPLETE, "", now_ms)
            ).fetchone():
                done.add((seq, token))
    expires = now_ms + defaults.SETTLEMENT_RECEIPT_TTL_MS
    for start in range(0, len(fresh), CHUNK):
        rows = fresh[start : start + CHUNK]
        pad = [None] * (bucket(len(rows)) - len(rows))
        receipt = [queue, now_ms, expires, *chain.from_iterable(rows), *pad, *pad]
        execute(insert_receipts_sql(len(rows) + len(pad)), receipt)
    return _results(pairs, everything, done), len(fresh)


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
