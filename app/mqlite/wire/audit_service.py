"""AdminService's audit trail (docs/operations.md "Audit trail"): ListAudit. One block, as
in ``admin_service``; ``ROUTES`` follows the schedules' in discovery order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any

from mqlite import types as t

from .base import I64, Doc, Request, Route, Snapshot, from_attributes

_M, _A = t.Permission.MANAGE, "AdminService"


class ListAuditRequest(Request):
    """A page of the audit trail in id order; page on with the last entry's id."""

    after_id: Annotated[I64, Doc("entries after this id (0 = from the oldest kept)")] = 0
    limit: Annotated[I64, Doc("default 100, at most 1000")] = 0
    queue: Annotated[str, Doc("only this queue's or topic's entries (absent = all)")] = ""
    since_ms: Annotated[I64, Doc("only entries at or after this epoch ms (0 = all)")] = 0


class AuditEntryJSON(Snapshot):
    """One change of state: every field always present."""

    id: Annotated[I64, Doc("increasing, never reused")]
    at_ms: Annotated[I64, Doc("when it committed (epoch ms)")]
    actor: Annotated[str, Doc("admin:<n> | key:<id> | anonymous | embedded")]
    request_id: Annotated[str, Doc("the request's X-Request-Id (empty: embedded)")]
    action: Annotated[str, Doc("the verb, e.g. CreateQueue, Purge, RevokeKey")]
    queue: Annotated[str, Doc("the queue or topic it touched (empty: keys)")]
    detail: Annotated[str, Doc("a JSON object: counts, target, config diff; never a secret")]

    def value(self) -> t.AuditEntry:
        return t.AuditEntry(
            self.id, self.at_ms, self.actor, self.request_id, self.action, self.queue, self.detail
        )


entry_of = from_attributes(AuditEntryJSON)


class ListAuditResponse(Snapshot):
    """Up to ``limit`` entries; fewer (or none) at the end of the trail."""

    entries: tuple[AuditEntryJSON, ...] = ()

    @classmethod
    def of(cls, entries: Sequence[t.AuditEntry]) -> ListAuditResponse:
        return cls(tuple([entry_of(e) for e in entries]))

    def values(self) -> list[t.AuditEntry]:
        return [e.value() for e in self.entries]


LIST_AUDIT = Route(
    _A,
    "ListAudit",
    _M,
    ListAuditRequest,
    ListAuditResponse,
    "Page through the audit trail (who changed what)",
)


ROUTES: tuple[Route[Any, Any], ...] = (LIST_AUDIT,)

__all__ = ["LIST_AUDIT", "AuditEntryJSON", "ListAuditRequest", "ListAuditResponse"]
