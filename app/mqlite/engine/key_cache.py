"""Managed access keys held in memory, so checking a token costs no database read.

This process is the only writer of its database (file lock), so the database changes only
through ``create_key``/``revoke_key``, which update this map after their transaction
commits: a key revoked by one request is refused on the very next one (api-reference
"Revocation rejects subsequent authentication attempts immediately"), expiry is judged
against the engine clock at every check, and a request never waits for the writer just to
be authenticated. Only digests are held, never a token.
"""

from __future__ import annotations

import hashlib
import sqlite3

from mqlite.clock import Clock
from mqlite.engine import scopes
from mqlite.types import AccessKey

# Every key that can still authenticate (expired ones are rejected at check time).
LIVE_KEYS_SQL = """
SELECT token_sha256, id, name, permissions, created_at, expires_at, revoked_at,
       queues, rate_limit_per_s, burst
FROM access_keys WHERE revoked_at = 0
"""

# Digests of revoked keys: only to tell "revoked" from "invalid" in the refusal counts.
REVOKED_KEYS_SQL = "SELECT token_sha256 FROM access_keys WHERE revoked_at <> 0"

PERM_SEP = ","


def token_digest(token: str) -> str:
    """The SHA-256 hex digest stored in place of a token."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def row_to_key(row: tuple[str, str, str, int, int, int, str, int, int]) -> AccessKey:
    id_, name, perms, created, expires, revoked, queues, rate, burst = row
    return AccessKey(
        id_,
        name,
        tuple(perms.split(PERM_SEP)),
        created,
        expires,
        revoked,
        scopes.decode(queues),
        rate,
        burst,
    )


class KeyCache:
    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._by_digest: dict[str, AccessKey] = {}
        self._digest_by_id: dict[str, str] = {}
        self._revoked: set[str] = set()

    def load(self, conn: sqlite3.Connection) -> None:
        for digest, *rest in conn.execute(LIVE_KEYS_SQL):
            self.add(digest, row_to_key(tuple(rest)))
        self._revoked.update(row[0] for row in conn.execute(REVOKED_KEYS_SQL))

    def reload(self, conn: sqlite3.Connection) -> None:
        """Read every key again into fresh maps, then swap them in (after a commit of
        unknown outcome: a revocation may be stored but never applied here). Readers on
        other threads see the old maps or the new ones, never an empty cache."""
        fresh = KeyCache(self._clock)
        fresh.load(conn)
        self._by_digest, self._digest_by_id = fresh._by_digest, fresh._digest_by_id
        self._revoked = fresh._revoked

    def add(self, digest: str, key: AccessKey) -> None:
        self._by_digest[digest] = key
        self._digest_by_id[key.id] = digest

    def revoke(self, key_id: str) -> None:
        digest = self._digest_by_id.pop(key_id, None)
        if digest is not None:
            self._by_digest.pop(digest, None)
            self._revoked.add(digest)

    def refusal(self, token: str) -> str:
        """Why ``authenticate`` refused ``token``: expired, revoked or invalid."""
        try:
            digest = token_digest(token)
        except UnicodeEncodeError:
            return "invalid"
        if digest in self._by_digest:
            return "expired"
        return "revoked" if digest in self._revoked else "invalid"

    def authenticate(self, token: str) -> AccessKey | None:
        """The live key ``token`` belongs to, or None (unknown, revoked or expired)."""
        if not isinstance(token, str) or not token:
            return None
        try:
            key = self._by_digest.get(token_digest(token))
        except UnicodeEncodeError:
            return None
        if key is None:
            return None
        if key.expires_at_ms != 0 and key.expires_at_ms <= self._clock.now_ms():
            return None
        return key
