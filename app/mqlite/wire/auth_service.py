"""AuthService: managed access keys. Each RPC is one block below: its request Struct, its
response Struct and its ``Route``. ``ROUTES`` lists them in discovery order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal

from mqlite import types as t

from .base import I64, Doc, Request, Response, Route, from_attributes
from .queue_service import SettleResponse

_M, _K = t.Permission.MANAGE, "AuthService"

PermissionName = Literal["send", "listen", "manage"]


# -- CreateKey ---------------------------------------------------------------------------


class CreateKeyRequest(Request):
    """Issue a managed access key under a caller-retained id."""

    id: Annotated[str, Doc("32 lowercase hex characters, generated and retained by the caller")]
    name: Annotated[str, Doc("a label, up to 128 bytes")]
    permissions: Annotated[tuple[PermissionName, ...], Doc("send, listen and/or manage")]
    expires_at_ms: Annotated[I64, Doc("epoch ms; 0 = never")] = 0
    queues: Annotated[
        tuple[str, ...],
        Doc(
            "queue-name patterns the key is confined to: exact names or a trailing '*' "
            "prefix; at most 32, each at most 260 characters; empty = every queue"
        ),
    ] = ()
    rate_limit_per_s: Annotated[
        I64, Doc("requests (a Send: messages) per second; 0 = the broker default")
    ] = 0
    burst: Annotated[I64, Doc("bucket size; 0 = rate_limit_per_s")] = 0


class AccessKeyJSON(Response):
    """A managed access key's metadata: never the token, never its digest."""

    id: str
    name: str
    permissions: tuple[str, ...]
    created_at_ms: I64
    expires_at_ms: Annotated[I64, Doc("0/absent = never")] = 0
    revoked_at_ms: Annotated[I64, Doc("0/absent = not revoked")] = 0
    queues: Annotated[tuple[str, ...], Doc("absent = every queue")] = ()
    rate_limit_per_s: Annotated[I64, Doc("0/absent = the broker default")] = 0
    burst: Annotated[I64, Doc("0/absent = rate_limit_per_s")] = 0

    def value(self) -> t.AccessKey:
        return t.AccessKey(
            self.id,
            self.name,
            self.permissions,
            self.created_at_ms,
            self.expires_at_ms,
            self.revoked_at_ms,
            self.queues,
            self.rate_limit_per_s,
            self.burst,
        )


access_key_of = from_attributes(AccessKeyJSON)


class CreateKeyResponse(Response):
    """The key's metadata and its secret, returned exactly once."""

    key: AccessKeyJSON
    token: Annotated[str, Doc("the secret; shown once")]

    @classmethod
    def of(cls, key: t.AccessKey, token: str) -> CreateKeyResponse:
        return cls(access_key_of(key), token)


CREATE_KEY = Route(
    _K,
    "CreateKey",
    _M,
    CreateKeyRequest,
    CreateKeyResponse,
    "Issue a managed access key",
    requires_auth=True,
)


# -- ListKeys ----------------------------------------------------------------------------


class ListKeysRequest(Request):
    """``limit`` 0 = 100; ``sort`` "" = ``id_asc``."""

    after_id: Annotated[str, Doc("the previous page's next_after_id")] = ""
    limit: Annotated[I64, Doc("default 100, at most 1000")] = 0
    sort: Annotated[Literal["", "id_asc", "created_desc"], Doc("default id_asc")] = ""


class ListKeysResponse(Response):
    """A page of key metadata; ``next_after_id`` absent on the last page."""

    keys: tuple[AccessKeyJSON, ...]
    next_after_id: Annotated[str, Doc("absent on the last page")] = ""

    @classmethod
    def of(cls, keys: Sequence[t.AccessKey], next_after_id: str) -> ListKeysResponse:
        return cls(tuple([access_key_of(k) for k in keys]), next_after_id)

    def values(self) -> tuple[list[t.AccessKey], str]:
        return [k.value() for k in self.keys], self.next_after_id


LIST_KEYS = Route(
    _K,
    "ListKeys",
    _M,
    ListKeysRequest,
    ListKeysResponse,
    "Page through access key metadata",
    requires_auth=True,
)


# -- RevokeKey ---------------------------------------------------------------------------


class RevokeKeyRequest(Request):
    """Revoke an access key (revoking again succeeds)."""

    id: Annotated[str, Doc("the key's public id")]


REVOKE_KEY = Route(
    _K,
    "RevokeKey",
    _M,
    RevokeKeyRequest,
    SettleResponse,
    "Revoke an access key",
    requires_auth=True,
)


ROUTES: tuple[Route[Any, Any], ...] = (CREATE_KEY, LIST_KEYS, REVOKE_KEY)

__all__ = [
    "CREATE_KEY",
    "LIST_KEYS",
    "REVOKE_KEY",
    "AccessKeyJSON",
    "CreateKeyRequest",
    "CreateKeyResponse",
    "ListKeysRequest",
    "ListKeysResponse",
    "RevokeKeyRequest",
]
