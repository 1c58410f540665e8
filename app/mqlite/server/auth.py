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
from mqlite.types import AccessKey

# Everything a manage credential (or anyone, with auth off) may do; monitor included.
ALL = frozenset({"send", "listen", "manage", "monitor"})
EXEMPT_PATHS = frozenset({"/", "/healthz", "/openapi.json", "/ui"})


@dataclass(frozen=True, slots=True)
class Principal:
    """``access`` is manage/key/monitor/anonymous (auth off); ``permissions`` what it may do."""

    access: str
    permissions: frozenset[str]
    key_id: str = ""


ANONYMOUS = Principal("anonymous", ALL)
ADMIN = Principal("manage", ALL)
MONITOR = Principal("monitor", frozenset({"monitor"}))


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
        if not isinstance(token, str):
            return False
        candidate = _digest(token)
        found = False
        for digest in self._digests:  # no early exit: timing is independent of position
            found |= hmac.compare_digest(candidate, digest)
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
        if token in self._admins:
            return ADMIN
        if token in self._monitors:
            return MONITOR
        key = self._lookup_key(token)
        if key is None:
            raise refused(self._refusal(token) if self._refusal is not None else "invalid")
        perms = ALL if "manage" in key.permissions else frozenset(key.permissions) - {"monitor"}
        return Principal("manage" if "manage" in key.permissions else "key", perms, key.id)


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
