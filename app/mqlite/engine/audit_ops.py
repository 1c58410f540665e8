"""ListAudit and the audit trail's retention, a part of the engine (rows: ``audit.py``).

Retention runs as a step of the maintenance task ``retention`` (so it is in Observe's
maintenance rows with the DLQ's, and in the same closed task vocabulary old clients
decode): by age and by count, at most ``PRUNE_CHUNK_ROWS`` rows per transaction and
``PRUNE_CHUNKS_PER_PASS`` transactions per pass, so a long backlog (a lowered bound) is
worked off over several passes instead of holding the writer.
"""

from __future__ import annotations

import sqlite3

from mqlite.engine import audit
from mqlite.engine.core import EngineCore, serialized
from mqlite.engine.part import Part
from mqlite.types import AuditEntry

MIN_AUDIT_SINCE_SQL = "SELECT min(id) FROM audit_log WHERE at >= ?"


class Audit(Part):
    def __init__(self, core: EngineCore) -> None:
        super().__init__(core)
        self._core = core

    # Bounds of the retention pass (0 = none), set on the engine from MQLITE_AUDIT_RETENTION
    # / MQLITE_AUDIT_MAX_ROWS by the server (core.py holds them and their defaults).
    @property
    def audit_max_age_ms(self) -> int:
        return self._core.audit_max_age_ms

    @property
    def audit_max_rows(self) -> int:
        return self._core.audit_max_rows

    def list_audit(
        self, after_id: int = 0, limit: int = 100, queue: str = "", since_ms: int = 0
    ) -> list[AuditEntry]:
        """One page of the audit trail in id order: rows after ``after_id``, at or after
        ``since_ms`` (epoch ms), of ``queue`` only when given; ``limit`` 1..1000 (0 = 100).
        Page on with the last entry's id; an empty page is the end (for now)."""
        n = audit.check_list_args(after_id, limit, queue, since_ms)

        def read(conn: sqlite3.Connection) -> list[AuditEntry]:
            after = after_id
            if since_ms:  # start at the first row that recent (idx_audit_at), not id 1
                first = conn.execute(MIN_AUDIT_SINCE_SQL, (since_ms,)).fetchone()
                if first is None or first[0] is None:
                    return []
                after = max(after, int(first[0]) - 1)
            return audit.list_entries(conn, after, n, queue, since_ms)

        return self._read_stale(read)

    def prune_audit(self) -> int:
        """The retention step: bounded chunks until a chunk comes back short."""
        deleted = 0
        for _ in range(audit.PRUNE_CHUNKS_PER_PASS):
            n = self._prune_audit_chunk()
            deleted += n
            if n < audit.PRUNE_CHUNK_ROWS:
                break
        return deleted

    @serialized
    def _prune_audit_chunk(self) -> int:
        with self._write() as (conn, now):
            return audit.prune_chunk(conn, now, self.audit_max_age_ms, self.audit_max_rows)
