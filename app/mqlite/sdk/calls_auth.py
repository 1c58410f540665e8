"""The call table, AuthService: access keys (see ``mqlite.sdk.calls`` for the table's
rules and retry classes)."""

from __future__ import annotations

from collections.abc import Sequence

from mqlite import errors, wire
from mqlite.sdk.call import SAFE, UNSAFE, Steps, rpc, verb
from mqlite.types import (
    AccessKey,
)


@verb(wire.CREATE_KEY, UNSAFE)
def create_key(
    id: str,
    name: str,
    permissions: Sequence[str],
    expires_at_ms: int = 0,
    queues: Sequence[str] = (),
    rate_limit_per_s: int = 0,
    burst: int = 0,
) -> Steps[tuple[AccessKey, str]]:
    """Issue a key under your retained ``id`` (``mqlite.generate_key_id()``).

    ``queues``: queue-name patterns (exact, or a trailing ``*`` prefix) the key is confined
    to; empty = every queue. ``rate_limit_per_s``/``burst``: the key's token bucket (a Send
    costs its messages; 0 = the broker default). Never retried once sent: after an
    ambiguous failure, reconcile by ``id``."""
    for field, value in (("permissions", permissions), ("queues", queues)):
        if isinstance(value, str | bytes) or not isinstance(value, Sequence):
            raise errors.InvalidArgument(f"{field} must be a list of strings")
    req = wire.CreateKeyRequest(
        id,
        name,
        tuple(permissions),  # type: ignore[arg-type]
        expires_at_ms,
        tuple(queues),
        rate_limit_per_s,
        burst,
    )
    r = yield from rpc(wire.CREATE_KEY, req)
    return r.key.value(), r.token


@verb(wire.LIST_KEYS, SAFE)
def list_keys(
    after_id: str = "", limit: int = 100, sort: str = "id_asc"
) -> Steps[tuple[list[AccessKey], str]]:
    """A page of key metadata and the cursor of the next one ("" on the last page)."""
    r = yield from rpc(wire.LIST_KEYS, wire.ListKeysRequest(after_id, limit, sort))  # type: ignore[arg-type]
    return r.values()


@verb(wire.REVOKE_KEY, SAFE)
def revoke_key(id: str) -> Steps[None]:
    """Revoke an access key (revoking again succeeds)."""
    yield from rpc(wire.REVOKE_KEY, wire.RevokeKeyRequest(id))
