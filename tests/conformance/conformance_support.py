"""Helpers shared by the conformance tests (imported as a plain module: pytest puts this
directory on sys.path because tests/conformance has no __init__.py)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from mqlite import OutMessage

T0 = 1_700_000_000_000
TOKEN_RE = re.compile(r"^[0-9a-f]{32}$")


def peek_all(mq: Any, queue: str, state: str | None = None) -> list[Any]:
    """Every message of ``queue`` (optionally only one state), by seq, without locking."""
    out: list[Any] = []
    from_seq = 0
    while True:
        if state is None:
            page = mq.peek(queue, from_seq=from_seq, max=1000)
        else:
            page = mq.peek(queue, state=state, from_seq=from_seq, max=1000)
        out.extend(page)
        if len(page) < 1000:
            return out
        from_seq = page[-1].seq_number + 1


def peek_one(mq: Any, queue: str, seq: int) -> Any | None:
    """The message with this seq, or None if the row is gone."""
    page = mq.peek(queue, from_seq=seq, max=1)
    if page and page[0].seq_number == seq:
        return page[0]
    return None


def state_of(mq: Any, queue: str, seq: int) -> str | None:
    m = peek_one(mq, queue, seq)
    return None if m is None else m.state


def states(mq: Any, queue: str) -> dict[int, str]:
    return {m.seq_number: m.state for m in peek_all(mq, queue)}


def send_bodies(mq: Any, queue: str, bodies: list[bytes], **fields: Any) -> list[int]:
    return list(mq.send(queue, [OutMessage(body=b, **fields) for b in bodies]))


def counts(mq: Any, queue: str) -> tuple[int, int, int, int, int, int]:
    """(active, locked, deferred, scheduled, dead_lettered, total) from Stats."""
    st = mq.stats(queue)
    return (st.active, st.locked, st.deferred, st.scheduled, st.dead_lettered, st.total)


def seqs(msgs: list[Any]) -> list[int]:
    return [m.seq_number for m in msgs]


# The five settle verbs, as (mq, queue, seq, token) -> None, for parametrized fencing tests.
SETTLE_VERBS: dict[str, Callable[[Any, str, int, str], Any]] = {
    "complete": lambda mq, q, s, t: mq.complete(q, s, t),
    "abandon": lambda mq, q, s, t: mq.abandon(q, s, t, delay_ms=0),
    "reject": lambda mq, q, s, t: mq.reject(q, s, t, reason="Bad", description="why"),
    "defer": lambda mq, q, s, t: mq.defer(q, s, t),
    "renew": lambda mq, q, s, t: mq.renew(q, s, t),
}

# The four settlements that write a receipt (Renew writes none).
SETTLEMENTS = ("complete", "abandon", "reject", "defer")

# The state a row is in after each successful settle verb (None = row deleted),
# for a message below its delivery limit.
STATE_AFTER = {
    "complete": None,
    "abandon": "active",
    "reject": "dead_lettered",
    "defer": "deferred",
    "renew": "locked",
}
