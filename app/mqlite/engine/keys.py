"""Managed access keys: create, list, revoke and authenticate (api-reference "Auth").

The broker generates every secret and stores only its SHA-256 digest, so a database (or a
backup of it) never holds a usable credential and no later call can reveal one: the token
exists only in ``create_key``'s return value. Metadata (``AccessKey``) carries neither the
token nor the digest. Authentication is one lookup on the unique digest index per request,
with no cache, so a revocation takes effect for the very next request.
"""

from __future__ import annotations

import re
import secrets
import sqlite3
from collections.abc import Iterable, Mapping, Sequence

from mqlite import errors
from mqlite.engine import audit, scopes
from mqlite.engine.audit import Actor
from mqlite.engine.core import serialized
from mqlite.engine.key_cache import PERM_SEP, row_to_key, token_digest
from mqlite.engine.part import Part
from mqlite.engine.validate import MAX_INT64, check_int
from mqlite.types import AccessKey, Permission

TOKEN_PREFIX = "mqk_"
MAX_NAME_BYTES = 128
DEFAULT_LIST_LIMIT = 100
MAX_LIST_LIMIT = 1000
MAX_RATE = 1_000_000  # rate_limit_per_s and burst: a bound, not a recommendation
SORT_ID_ASC = "id_asc"
SORT_CREATED_DESC = "created_desc"

_ID_RE = re.compile(r"[0-9a-f]{32}")
# The Unicode White_Space property (what "leading/trailing whitespace" means for a name).
# Spelled out because str.isspace() also counts the ASCII separators U+001C..U+001F.
_WHITESPACE = frozenset(
    "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)
# What a managed key may hold: monitor is configuration-only (api-reference "Permissions").
_PERMISSIONS = frozenset(p.value for p in Permission) - {Permission.MONITOR.value}
# Stored form of the normalized permission tuple: "manage", "listen", "send", "listen,send".
_PERM_SEP = PERM_SEP
# A position after every key in created_desc order: ids are lowercase hex, all < "g".
_CREATED_DESC_START = (MAX_INT64, "g")

_KEY_COLUMNS = (
    "id, name, permissions, created_at, expires_at, revoked_at, queues, rate_limit_per_s, burst"
)

INSERT_KEY_SQL = """
INSERT INTO access_keys(
    id, name, token_sha256, permissions, created_at, expires_at, queues, rate_limit_per_s, burst
)
VALUES (:id, :name, :digest, :permissions, :now, :expires_at, :queues, :rate, :burst)
"""

# id_asc: the primary-key index; the cursor need not exist (lookup by predecessor works).
LIST_BY_ID_SQL = f"""
SELECT {_KEY_COLUMNS} FROM access_keys
WHERE id > :after_id
ORDER BY id
LIMIT :limit
"""

# created_desc: a row-value bound seeks idx_access_keys_created and walks it backwards;
# ties on created_at fall back to id descending, so the order is total and stable.
LIST_BY_CREATED_SQL = f"""
SELECT {_KEY_COLUMNS} FROM access_keys
WHERE (created_at, id) < (:created_at, :after_id)
ORDER BY created_at DESC, id DESC
LIMIT :limit
"""

KEY_CREATED_AT_SQL = "SELECT created_at FROM access_keys WHERE id = :id"

# Guarded on revoked_at = 0 so a repeated revocation keeps the first timestamp.
REVOKE_KEY_SQL = """
UPDATE access_keys SET revoked_at = :now
WHERE id = :id AND revoked_at = 0
"""

KEY_EXISTS_SQL = "SELECT 1 FROM access_keys WHERE id = :id"


# -- pure helpers ----------------------------------------------------------------------


def generate_key_id() -> str:
    """A new public key id: 32 lowercase hex characters (128 random bits)."""
    return secrets.token_hex(16)


def generate_token() -> str:
    """A new secret: ``mqk_`` + 64 lowercase hex characters (256 random bits)."""
    return TOKEN_PREFIX + secrets.token_hex(32)


def validate_key_id(value: object, field: str = "id") -> str:
    """Exactly 32 lowercase hex characters."""
    if not isinstance(value, str) or not _ID_RE.fullmatch(value):
        raise errors.InvalidArgument(f"{field} must be 32 lowercase hexadecimal characters")
    return value


def validate_key_name(value: object) -> str:
    """Nonempty UTF-8, at most 128 bytes, no leading/trailing whitespace, no NUL."""
    if not isinstance(value, str) or not value:
        raise errors.InvalidArgument("name must be a non-empty string")
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError:
        raise errors.InvalidArgument("name must be valid UTF-8") from None
    if size > MAX_NAME_BYTES:
        raise errors.InvalidArgument(f"name is longer than {MAX_NAME_BYTES} bytes")
    if value[0] in _WHITESPACE or value[-1] in _WHITESPACE:
        raise errors.InvalidArgument("name must not start or end with whitespace")
    if "\x00" in value:
        raise errors.InvalidArgument("name must not contain NUL")
    return value


def normalize_permissions(perms: object) -> tuple[str, ...]:
    """``manage`` absorbs the others; otherwise sorted and de-duplicated; never empty."""
    if isinstance(perms, str | bytes | bytearray | Mapping) or not isinstance(perms, Iterable):
        raise errors.InvalidArgument("permissions must be a list of strings")
    found: set[str] = set()
    for p in perms:
        if not isinstance(p, str) or p not in _PERMISSIONS:
            raise errors.InvalidArgument(f"unknown permission {p!r} (want send, listen or manage)")
        found.add(str(p))
    if not found:
        raise errors.InvalidArgument("permissions must not be empty")
    if Permission.MANAGE.value in found:
        return (Permission.MANAGE.value,)
    return tuple(sorted(found))


def _list_limit(limit: object) -> int:
    n = check_int("limit", limit)
    if n < 0 or n > MAX_LIST_LIMIT:
        raise errors.InvalidArgument(f"limit must be between 0 and {MAX_LIST_LIMIT}, got {n}")
    return n or DEFAULT_LIST_LIMIT


# -- the engine mixin ------------------------------------------------------------------


class AccessKeys(Part):
    """CreateKey / ListKeys / RevokeKey plus the per-request managed-token check."""

    @serialized
    def create_key(
        self,
        id: str,
        name: str,
        permissions: Sequence[str],
        expires_at_ms: int = 0,
        queues: Sequence[str] = (),
        rate_limit_per_s: int = 0,
        burst: int = 0,
        *,
        actor: Actor | None = None,
    ) -> tuple[AccessKey, str]:
        """Register a key under the caller's retained ``id``; returns (metadata, token).

        ``queues`` confines the key to those queue-name patterns (``scopes``; empty = every
        queue). ``rate_limit_per_s``/``burst``: its token bucket (0 = the broker default;
        at most ``MAX_RATE``).

        The token is returned once and never stored. A duplicate id (or, astronomically,
        digest) is ``KeyConflict``: a retried creation never replays or reveals a secret.
        """
        key_id = validate_key_id(id)
        key_name = validate_key_name(name)
        perms = normalize_permissions(permissions)
        expires = check_int("expires_at_ms", expires_at_ms, minimum=0)
        scope = scopes.normalize(queues)
        rate = check_int("rate_limit_per_s", rate_limit_per_s, minimum=0)
        bucket = check_int("burst", burst, minimum=0)
        for field, value in (("rate_limit_per_s", rate), ("burst", bucket)):
            if value > MAX_RATE:
                raise errors.InvalidArgument(f"{field} must be at most {MAX_RATE}")
        token = generate_token()
        digest = token_digest(token)
        try:
            with self._write() as (conn, now):
                # Judged against the clock read under the writer, the same instant as created_at.
                if expires and expires <= now:
                    raise errors.InvalidArgument("expires_at_ms must be 0 or in the future")
                conn.execute(
                    INSERT_KEY_SQL,
                    {
                        "id": key_id,
                        "name": key_name,
                        "digest": digest,
                        "permissions": _PERM_SEP.join(perms),
                        "now": now,
                        "expires_at": expires,
                        "queues": scopes.encode(scope),
                        "rate": rate,
                        "burst": bucket,
                    },
                )
                key = AccessKey(key_id, key_name, perms, now, expires, 0, scope, rate, bucket)
                facts = {"id": key_id, "name": key_name, "permissions": list(perms),
                         "queues": list(scope), "expires_at_ms": expires,
                         "rate_limit_per_s": rate, "burst": bucket}  # fmt: skip
                audit.record(conn, now, actor, "CreateKey", "", **facts)
                self.store.after_commit(lambda: self.keys.add(digest, key))
        except sqlite3.IntegrityError:
            raise errors.KeyConflict() from None
        return key, token

    @serialized
    def list_keys(
        self,
        after_id: str = "",
        limit: int = DEFAULT_LIST_LIMIT,
        sort: str = SORT_ID_ASC,
    ) -> tuple[list[AccessKey], str]:
        """One page of key metadata (expired and revoked included) and ``next_after_id``.

        ``next_after_id`` is "" once the page reaches the end. ``id_asc`` accepts any valid
        id as cursor; ``created_desc`` needs the cursor to name an existing key, since its
        position is that key's (created_at, id).
        """
        if not isinstance(sort, str) or sort not in ("", SORT_ID_ASC, SORT_CREATED_DESC):
            raise errors.InvalidArgument(
                f"unknown sort {sort!r} (want {SORT_ID_ASC} or {SORT_CREATED_DESC})"
            )
        if not isinstance(after_id, str):
            raise errors.InvalidArgument("after_id must be a string")
        if after_id:
            validate_key_id(after_id, "after_id")
        n = _list_limit(limit)
        # One extra row tells whether another page exists, so the last page has no cursor.
        params: dict[str, object] = {"after_id": after_id, "limit": n + 1}
        with self.store.transaction() as conn:
            if sort == SORT_CREATED_DESC:
                if after_id:
                    row = conn.execute(KEY_CREATED_AT_SQL, {"id": after_id}).fetchone()
                    if row is None:
                        raise errors.InvalidArgument("after_id does not identify a key")
                    params["created_at"] = row[0]
                else:
                    params["created_at"], params["after_id"] = _CREATED_DESC_START
                rows = conn.execute(LIST_BY_CREATED_SQL, params).fetchall()
            else:
                rows = conn.execute(LIST_BY_ID_SQL, params).fetchall()
        page = [row_to_key(r) for r in rows[:n]]
        return page, page[-1].id if len(rows) > n else ""

    @serialized
    def revoke_key(self, id: str, *, actor: Actor | None = None) -> None:
        """Revoke permanently; revoking again succeeds and keeps the first timestamp."""
        key_id = validate_key_id(id)
        with self._write() as (conn, now):
            # revoked_at 0 means "not revoked", so a clock at or before the epoch must not
            # write 0 (or a negative) and silently leave the key valid.
            cur = conn.execute(REVOKE_KEY_SQL, {"id": key_id, "now": max(now, 1)})
            if (
                cur.rowcount == 0
                and conn.execute(KEY_EXISTS_SQL, {"id": key_id}).fetchone() is None
            ):
                raise errors.NotFound(f"access key {key_id} not found")
            if cur.rowcount:  # revoking again changes nothing: no second row
                audit.record(conn, now, actor, "RevokeKey", "", id=key_id)
            self.store.after_commit(lambda: self.keys.revoke(key_id))

    def key_refusal(self, token: str) -> str:
        """Why ``authenticate_key`` refused ``token`` (expired, revoked or invalid): the
        authentication outcome counted for it. A memory read, like the check itself."""
        return self.keys.refusal(token)

    def authenticate_key(self, token: str) -> AccessKey | None:
        """The key a managed token belongs to, if it is neither revoked nor expired; else None.

        A memory read (``KeyCache``): safe on any thread, never waits for the writer. A
        closed engine raises ``Closed``: a failure is never mistaken for an anonymous pass.
        """
        if self.closed:
            raise errors.Closed()
        return self.keys.authenticate(token)
