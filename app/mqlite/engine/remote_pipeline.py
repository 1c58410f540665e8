"""The remote store's pipelined transaction: statements whose answers nobody needs yet
wait on the client and travel with the next statement that is sent, so a transaction
costs one round trip per statement whose answer is read, not one per statement.

Over the network every request is a round trip (~1 ms in a region, more across one), and
a transaction used to be one per statement: ``send_one`` was BEGIN, INSERT, COMMIT -- 3.
Here (``RemoteConnection`` uses it):

- **Control statements wait**: ``BEGIN`` (outside a transaction), and the engine's own
  savepoints (``SAVEPOINT spN``, ``RELEASE spN``, ``ROLLBACK TO spN``) are queued, not
  sent. A savepoint released with nothing after it, a block rolled back before anything of
  it was sent, and a transaction that ends before any statement reached the server cost
  no round trip at all.
- **Deferred writes wait**: a write the engine queues with ``RemoteConnection.defer``
  (its answer -- a seq, a row count -- is read only after COMMIT) rides with the next
  request; its answer is handed to its callback then.
- **Everything queued goes in ONE Hrana batch** with the statement that needs an answer,
  each step run only if the one before it succeeded (``hrana.HranaClient.steps``): a
  failing queued statement stops the rest, and its error is raised by the statement that
  carried it, exactly as if it had been raised where it was queued -- so a deferred
  statement's error must not need handling where it was queued (the engine defers only
  writes whose failure fails the whole call), and a savepoint block never leaves its
  writes queued past its ``RELEASE`` (which is sent when it carries them: a failing
  write fails its own block, never the next one's).
- **COMMIT carries what is queued**: BEGIN, the writes and COMMIT in one request. Its
  answer lost is ``OutcomeUnknown`` as before (``store.py``): the rule is the COMMIT's,
  whatever travels with it; nothing that carried a write is ever sent twice.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from mqlite.engine.hrana import Step

# What a statement does to the transaction (``classify``).
BEGIN, COMMIT, ROLLBACK, SAVEPOINT, RELEASE, ROLLBACK_TO, OTHER = range(7)
CONTROL = frozenset({BEGIN, SAVEPOINT, RELEASE, ROLLBACK_TO})

# Only the engine's own savepoints (store.py names them spN) are queued: a savepoint in
# the caller's SQL (``tx.execute``) is sent as written, its errors where it stands.
_SAVEPOINTS = re.compile(
    r"\s*(SAVEPOINT|RELEASE(?:\s+SAVEPOINT)?|ROLLBACK\s+TO(?:\s+SAVEPOINT)?)\s+(sp\w*)\s*;?\s*$",
    re.I,
)

_SAVEPOINT_KINDS = {"SAVEPOINT": SAVEPOINT, "RELEASE": RELEASE, "ROLLBACK": ROLLBACK_TO}


def classify(sql: str) -> tuple[int, str]:
    """(kind, savepoint name or "") of a statement."""
    head = sql.lstrip()[:12].upper()
    if head.startswith("BEGIN"):
        return BEGIN, ""
    if head.startswith(("COMMIT", "END")):
        return COMMIT, ""
    if head.startswith(("SAVEPOINT", "RELEASE", "ROLLBACK")):
        m = _SAVEPOINTS.match(sql)
        if m is not None:
            verb = m.group(1).split()[0].upper()
            return _SAVEPOINT_KINDS[verb], m.group(2)
        if head.startswith("ROLLBACK") and not re.match(r"\s*ROLLBACK\s+TO\b", sql, re.I):
            return ROLLBACK, ""
    return OTHER, ""


@dataclass(slots=True)
class Queued:
    """One queued statement (or an ``executemany``: several steps, one answer)."""

    kind: int
    name: str  # the savepoint's, for SAVEPOINT/RELEASE/ROLLBACK TO
    steps: list[Step]
    then: Callable[[Sequence[Any]], None] | None = None  # gets the step outcomes


class Pending:
    """The statements waiting for the next request, in order."""

    __slots__ = ("items",)

    def __init__(self) -> None:
        self.items: list[Queued] = []

    def __bool__(self) -> bool:
        return bool(self.items)

    def add(self, item: Queued) -> None:
        self.items.append(item)

    def take(self) -> list[Queued]:
        items, self.items = self.items, []
        return items

    def clear(self) -> None:
        self.items = []

    def has_data(self) -> bool:
        return any(item.kind not in CONTROL for item in self.items)

    def began_here(self) -> bool:
        """The transaction's BEGIN is still queued: nothing of it reached the server."""
        return bool(self.items) and self.items[0].kind == BEGIN

    def cancel_savepoint(self, name: str) -> bool:
        """``RELEASE name`` right after its queued ``SAVEPOINT``: both vanish."""
        items = self.items
        if items and items[-1].kind == SAVEPOINT and items[-1].name == name:
            items.pop()
            return True
        return False

    def rewind_to(self, name: str) -> bool:
        """``ROLLBACK TO name`` with its ``SAVEPOINT`` still queued: what followed it is
        dropped unsent (the savepoint stays, for the ``RELEASE`` that follows)."""
        for i in range(len(self.items) - 1, -1, -1):
            item = self.items[i]
            if item.kind == SAVEPOINT and item.name == name:
                del self.items[i + 1 :]
                return True
        return False
