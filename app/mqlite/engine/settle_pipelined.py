"""``complete_batch`` on a remote store: ONE request with the transaction's COMMIT
(``settle_batch.py`` on a local file: a DELETE per chunk of pairs, then the
receipts, each answered in microseconds; over the network each would be a round trip).

The statements do not depend on each other's answers, so they are queued
(``RemoteConnection.defer``) and travel with the COMMIT:

- first every pair's receipt lookup (before any new receipt is written, so a pair never
  vouches for itself within one batch, as in settle_batch.py);
- then per pair its fenced delete and its receipt, written only if that delete removed
  the row (``changes()``: the rows the statement before it changed, on the same
  connection, in the same transaction);
- duplicates are sent once and answered alike; a pair without a token is never ok.

The per-pair answers and the count of rows deleted now are filled in when the server
answered (before the call returns; the effect counters read the count after COMMIT).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from mqlite import defaults
from mqlite.engine.remote import RemoteConnection, RemoteCursor
from mqlite.engine.remote import pipelined as pipelined
from mqlite.engine.settle import COMPLETE_PAIR_SQL, LOOKUP_RECEIPT_SQL, OP_COMPLETE
from mqlite.types import BatchResult

# The receipt of a pair whose delete (the statement just before) removed its row.
INSERT_RECEIPT_IF_DELETED_SQL = """
INSERT OR REPLACE INTO settlement_receipts
    (lock_token, queue, seq_number, operation, args, created_at, expires_at)
SELECT ?, ?, ?, ?, ?, ?, ? WHERE changes() > 0
"""


def complete_batch(
    conn: RemoteConnection,
    now_ms: int,
    queue: str,
    pairs: Sequence[tuple[int, str]],
    after_commit: Callable[[Callable[[], None]], None],
    completed: Callable[[str, int], None],
) -> list[BatchResult]:
    """The results (filled in once the server answered, before the call returns); the
    rows deleted now are reported to ``completed`` after COMMIT (the effect counters)."""
    results = [BatchResult(seq, False) for seq, _ in pairs]
    deleted = [0]
    unique = list(dict.fromkeys((seq, token) for seq, token in pairs if token))
    if not unique:
        return results

    def count() -> None:
        if deleted[0]:
            completed(queue, deleted[0])

    after_commit(count)
    done: set[tuple[int, str]] = set()
    expires = now_ms + defaults.SETTLEMENT_RECEIPT_TTL_MS

    def receipt_found(pair: tuple[int, str]) -> Callable[[RemoteCursor], None]:
        def seen(cur: RemoteCursor) -> None:
            if cur.fetchone() is not None:
                done.add(pair)

        return seen

    def row_deleted(pair: tuple[int, str]) -> Callable[[RemoteCursor], None]:
        def seen(cur: RemoteCursor) -> None:
            if cur.rowcount > 0:
                done.add(pair)
                deleted[0] += 1

        return seen

    def answer(_: RemoteCursor) -> None:  # the last answer: every one before it is in
        results[:] = [BatchResult(seq, (seq, token) in done) for seq, token in pairs]

    for seq, token in unique:
        lookup = (queue, seq, token, OP_COMPLETE, "", now_ms)
        conn.defer(LOOKUP_RECEIPT_SQL, lookup, receipt_found((seq, token)))
    for i, (seq, token) in enumerate(unique, 1):
        conn.defer(COMPLETE_PAIR_SQL, (seq, queue, token, now_ms), row_deleted((seq, token)))
        receipt = (token, queue, seq, OP_COMPLETE, "", now_ms, expires)
        conn.defer(INSERT_RECEIPT_IF_DELETED_SQL, receipt, answer if i == len(unique) else None)
    return results
