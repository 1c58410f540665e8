"""Who is calling, and may they: Bearer parsing, constant-time token checks, permissions.

Configured administrator tokens are checked first (constant time, every token compared,
no early exit), then configured monitor tokens, then managed access keys by SHA-256
digest in the database. 401 = no usable credential; 403 = a valid credential without the
permission the route needs (api-reference "Permissions").
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from mqlite import errors
from mqlite.engine import scopes
from mqlite.types import AccessKey

# Everything a manage credential (or anyone, with auth off) may do; monitor included.
ALL = frozenset({"send", "listen", "manage", "monitor"})
EXEMPT_PATHS = frozenset({"/", "/healthz", "/openapi.json", "/ui"})


@dataclass(frozen=True, slots=True)
class Principal:
    """``access`` is manage/key/monitor/anonymous (auth off); ``permissions`` what it may do;
    ``scope`` the queue-name patterns a managed key is confined to (empty = every queue)."""

    access: str
    permissions: frozenset[str]
    key_id: str = ""
    scope: tuple[str, ...] = ()
    rate_limit_per_s: int = 0  # a managed key's own bucket (0 = the broker default)
    burst: int = 0
    # Who the audit trail names (engine/audit.py): admin:<n> (the n-th configured token,
    # from 1), key:<id>, monitor, anonymous. Never the token.
    actor: str = "anonymous"


ANONYMOUS = Principal("anonymous", ALL)
ADMIN = Principal("manage", ALL, actor="admin:1")
MONITOR = Principal("monitor", frozenset({"monitor"}), actor="monitor")


def admin(position: int) -> Principal:
    """The principal of the configured token at ``position`` (from 0)."""
    return ADMIN if position == 0 else Principal("manage", ALL, actor=f"admin:{position + 1}")


def refused(outcome: str) -> errors.Unauthenticated:
    """The 401 every refusal gets (one message: no oracle), tagged with its outcome for
    the authentication counts (``http_metrics``)."""
    exc = errors.Unauthenticated("missing or invalid Bearer token")
    exc.auth_outcome = outcome  # type: ignore[attr-defined]
    return exc


def outcome_of(exc: errors.Unauthenticated) -> str:
    return str(getattr(exc, "auth_outcome", "invalid"))


def is_exempt(path: str) -> bool:
    return path in EXEMPT_PATHS or path.startswith("/ui/")


def bearer_token(headers: Sequence[tuple[bytes, bytes]]) -> str | None:
    """Exactly one ``Authorization: Bearer <token>`` header, else None.

    Bare tokens, other schemes, a lowercase ``bearer``, empty tokens and duplicate
    Authorization headers are all rejected (401): ambiguity is never resolved in the
    caller's favour.
    """
    values = [v for k, v in headers if k.lower() == b"authorization"]
    if len(values) != 1:
        return None
    raw = values[0]
    if not raw.startswith(b"Bearer "):
        return None
    token = raw[len(b"Bearer ") :]
    if not token or b" " in token or b"\t" in token:
        return None
    try:
        return token.decode("ascii")
    except UnicodeDecodeError:
        return None


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8")).digest()


class TokenSet:
    """Configured tokens held as digests; membership is checked in constant time."""

    def __init__(self, tokens: Sequence[str]) -> None:
        self._digests = [_digest(t) for t in tokens]

    def __contains__(self, token: object) -> bool:
        return self.position(token) >= 0

    def position(self, token: object) -> int:
        """Where ``token`` is in the configured list (from 0), -1 if absent: the audit
        trail names an administrator by it. Every digest is compared, no early exit:
        timing is independent of the position."""
        if not isinstance(token, str):
            return -1
        candidate = _digest(token)
        found = -1
        for i, digest in enumerate(self._digests):
            if hmac.compare_digest(candidate, digest):
                found = i
        return found


class Authenticator:
    def __init__(
        self,
        admin_tokens: Sequence[str] | None,
        monitor_tokens: Sequence[str],
        lookup_key: Callable[[str], AccessKey | None],
        refusal: Callable[[str], str] | None = None,
    ) -> None:
        self.enabled = admin_tokens is not None
        self._admins = TokenSet(admin_tokens or ())
        self._admin_principals = [admin(i) for i in range(len(admin_tokens or ()))]
        self._monitors = TokenSet(monitor_tokens)
        self._lookup_key = lookup_key
        self._refusal = refusal

    async def principal(self, headers: Sequence[tuple[bytes, bytes]]) -> Principal:
        """Resolve the caller or raise ``Unauthenticated`` (never a bypass on failure)."""
        if not self.enabled:
            return ANONYMOUS
        token = bearer_token(headers)
        if token is None:
            present = any(k.lower() == b"authorization" for k, _ in headers)
            raise refused("invalid" if present else "missing")
        position = self._admins.position(token)
        if position >= 0:
            return self._admin_principals[position]
        if token in self._monitors:
            return MONITOR
        key = self._lookup_key(token)
        if key is None:
            raise refused(self._refusal(token) if self._refusal is not None else "invalid")
        perms = ALL if "manage" in key.permissions else frozenset(key.permissions) - {"monitor"}
        access = "manage" if "manage" in key.permissions else "key"
        return Principal(
            access, perms, key.id, key.queues, key.rate_limit_per_s, key.burst, f"key:{key.id}"
        )


def authorize(principal: Principal, permission: str, *, auth_enabled: bool) -> None:
    """Raise ``PermissionDenied`` unless ``principal`` holds ``permission``."""
    if permission == "manage_keys":
        if not auth_enabled:
            raise errors.PermissionDenied("key management requires authentication to be enabled")
        permission = "manage"
    if permission not in principal.permissions:
        # The route table holds ``Permission`` members: name the wire word ("manage"), never
        # the enum's repr -- this text reaches people in HTTP bodies and CLI errors.
        name = getattr(permission, "value", permission)
        raise errors.PermissionDenied(f"this credential lacks the {name} permission")


# -- key scopes (issue 35) ----------------------------------------------------------------

# Request fields that name a queue, topic or subscription, on any route.
QUEUE_FIELDS = ("queue", "target", "topic")
# Routes whose ``name`` field is a queue or subscription name (elsewhere ``name`` is a label).
NAMED_QUEUE_ROUTES = frozenset(
    {
        "AdminService/CreateQueue",
        "AdminService/EnsureQueue",
        "AdminService/DeleteQueue",
        "AdminService/Subscribe",
        "AdminService/Unsubscribe",
    }
)
# Routes a scoped key may call though they name no queue: their answers are filtered to the
# scope (ListQueues, ListSubscriptions) or touch no queue at all (TestFilter).
SCOPE_FILTERED = frozenset(
    {"AdminService/ListQueues", "AdminService/ListSubscriptions", "AdminService/TestFilter"}
)
# Routes a scoped key may call though they name no queue, whose handler checks the scope
# against the queue the named object targets (DeleteSchedule: the schedule's queue).
SCOPE_CHECKED_BY_HANDLER = frozenset({"AdminService/DeleteSchedule"})
# Broker-wide reads a scoped key may not call even though they can name a queue: the audit
# trail also holds keys' rows and other scopes' history (like keys and Observe).
UNSCOPED_ONLY = frozenset({"AdminService/ListAudit"})


def in_scope(scope: tuple[str, ...], name: str, topic_of: Callable[[str], str | None]) -> bool:
    """``name`` matches the scope by its own name, or (a subscription) by its topic's."""
    if scopes.matches(scope, name):
        return True
    topic = topic_of(name)
    return topic is not None and scopes.matches(scope, topic)


def queue_names(route_name: str, req: object) -> list[str]:
    """Every queue, topic or subscription name ``req`` addresses (empty strings skipped)."""
    names = [getattr(req, f, "") for f in QUEUE_FIELDS]
    if route_name in NAMED_QUEUE_ROUTES:
        names.append(getattr(req, "name", ""))
    return [n for n in names if isinstance(n, str) and n]


def authorize_scope(
    principal: Principal,
    route_name: str,
    req: object,
    topic_of: Callable[[str], str | None],
) -> None:
    """THE scope check, run for every RPC of a scoped key once its body is decoded.

    Every name the request addresses must be in scope, else ``403`` naming it -- whether
    or not it exists, so a scoped key learns nothing about queues outside its scope (no
    404 oracle). A route that names no queue is refused unless it is in ``SCOPE_FILTERED``:
    keys, Status and Observe (and any later broker-wide route) stay with unscoped keys.
    """
    if not principal.scope:
        return
    if route_name in UNSCOPED_ONLY:
        raise errors.PermissionDenied(f"{route_name} needs a credential not scoped to queues")
    names = queue_names(route_name, req)
    if not names:
        if route_name in SCOPE_FILTERED or route_name in SCOPE_CHECKED_BY_HANDLER:
            return
        raise errors.PermissionDenied(f"{route_name} needs a credential not scoped to queues")
    for name in names:
        if not in_scope(principal.scope, name, topic_of):
            shown = name if len(name) <= 64 else name[:64] + "..."
            raise errors.PermissionDenied(f"this credential is not scoped to queue {shown!r}")
