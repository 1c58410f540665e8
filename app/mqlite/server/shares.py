"""Each credential's share of the connection cap, so one key cannot take every slot.

A connection holds a slot of the cap (``protocol.py``) while a request of it is in flight,
and a long poll keeps its request in flight for up to 20 s: one listen key with enough
parked Receives held every slot, and nobody else -- the administrator included -- got a
request in. So, per credential (a managed key by its id; the configured monitor tokens
together), counted on the event loop when the request is authenticated:

- at most ``CREDENTIAL_SHARE_PERCENT`` of the cap in requests in flight, and
- at most ``PARKED_SHARE_PERCENT`` of the cap in long polls (a Receive with a wait),

each refused over it with ``503 unavailable`` naming the limit (retryable: the SDKs back
off). The configured administrator tokens have no share, and ``CONNECTION_RESERVE_PERCENT``
of the cap is kept for them and for ``/healthz`` (``protocol.py``). With auth off every
caller is the same anonymous loopback user: no shares (the cap alone applies).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from mqlite import defaults, errors
from mqlite.server.auth import Principal, TokenSet, bearer_token


def share_of(cap: int, percent: int) -> int:
    """``percent`` of ``cap``, at least 1."""
    return max(1, cap * percent // 100)


def reserve_for(admin_tokens: Sequence[str]) -> Callable[[bytes, list[tuple[bytes, bytes]]], bool]:
    """The requests the reserved slots are kept for (the protocol asks near the cap):
    ``/healthz``, and any request carrying a configured administrator token."""
    admins = TokenSet(admin_tokens)

    def privileged(target: bytes, headers: list[tuple[bytes, bytes]]) -> bool:
        if target.split(b"?", 1)[0] == b"/healthz":
            return True
        token = bearer_token(headers)
        return token is not None and token in admins

    return privileged


class Share:
    """One credential's requests in flight and long polls (on the event loop only)."""

    __slots__ = ("key", "parked", "requests")

    def __init__(self, key: str) -> None:
        self.key = key
        self.requests = 0
        self.parked = 0


class CredentialShares:
    """The counts of every credential with a request in flight (entries go at zero)."""

    def __init__(self, cap: int) -> None:
        self.cap = cap  # the effective connection cap (the worker sets it: fd limit)
        self._shares: dict[str, Share] = {}

    def enter(self, principal: Principal) -> Share | None:
        """Count a request of ``principal`` (None: it has no share), or raise 503."""
        if not principal.key_id and principal.access in ("manage", "anonymous"):  # tokens
            return None
        key = principal.key_id or principal.access
        share = self._shares.get(key)
        if share is None:
            share = self._shares[key] = Share(key)
        limit = share_of(self.cap, defaults.CREDENTIAL_SHARE_PERCENT)
        if share.requests >= limit:
            raise errors.Unavailable(
                f"this credential has {share.requests} requests in flight, its share of the "
                f"connection cap ({defaults.CREDENTIAL_SHARE_PERCENT}% = {limit}); retry shortly"
            )
        share.requests += 1
        return share

    def leave(self, share: Share | None) -> None:
        if share is not None:
            share.requests -= 1
            if share.requests <= 0:
                self._shares.pop(share.key, None)

    def park(self, share: Share | None) -> bool:
        """Count a long poll of ``share`` (False: none to count), or raise 503."""
        if share is None:
            return False
        limit = share_of(self.cap, defaults.PARKED_SHARE_PERCENT)
        if share.parked >= limit:
            raise errors.Unavailable(
                f"this credential has {share.parked} long polls waiting, its share of the "
                f"connection cap ({defaults.PARKED_SHARE_PERCENT}% = {limit}); retry shortly "
                "or poll with fewer connections"
            )
        share.parked += 1
        return True

    def unpark(self, share: Share | None) -> None:
        if share is not None:
            share.parked -= 1

    def in_flight(self) -> dict[str, tuple[int, int]]:
        """(requests, long polls) per credential with any in flight (tests, diagnostics)."""
        return {k: (s.requests, s.parked) for k, s in self._shares.items()}
