"""The building blocks every wire declaration uses: base Structs and annotated JSON types.

A wire message is ONE ``msgspec.Struct``: its fields, in JSON key order, with their types,
defaults and docs. From it come the strict request decoder, the lenient response decoder,
the encoder and the OpenAPI components (``codec``, ``openapi``).

- ``Request``: unknown fields are refused (a typo'd field is a 400, not a silent no-op);
  a field without a default is required; encoding omits fields equal to their default.
- ``Response``: unknown fields are ignored (an old SDK survives a newer broker); a field
  without a default is always emitted, one with a default is omitted while equal to it.
  ``Snapshot`` responses emit every field, defaults included (counts, flags).

``Doc("...")`` documents a field (OpenAPI ``description``; MCP tool schemas later).
``Route`` ties an RPC's path, permission and summary to its request/response Structs.

The ``mqlite.types`` values (``OutMessage``, ``Message``, ``QueueConfig``, ...) stay frozen
dataclasses: they are public API (``dataclasses.replace`` works on them) and the engine
relies on it; their wire shapes differ anyway (views, a flattened config). Each Struct's
``of``/``value`` converts, costing ~0.5 µs per Send message (``msgspec.convert``) and
~2.5 µs per received message (a 20-field frozen dataclass), measured in
``tests/wire/bench_wire_decode.py``; Structs as values would save most of that.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Generic, TypeVar

import msgspec

from mqlite.types import Permission

INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1


def Doc(text: str) -> msgspec.Meta:
    """The description of a field, for the OpenAPI document and JSON Schemas."""
    return msgspec.Meta(description=text)


# A JSON integer within Go's int64 (what the original broker and its SDK can hold).
I64 = Annotated[
    int, msgspec.Meta(ge=INT64_MIN, le=INT64_MAX, extra_json_schema={"format": "int64"})
]


class Request(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    """Base of every request object (and of the objects nested in one)."""


class Response(msgspec.Struct, omit_defaults=True):
    """Base of every response object whose optional fields are omitted while empty."""


class Snapshot(Response, omit_defaults=False):
    """A response that always emits every field (zero counts and false flags included)."""


S = TypeVar("S", bound=msgspec.Struct)
T = TypeVar("T")


def canonical(value: T, default: T) -> T:
    """``default`` itself when ``value`` equals it. msgspec's ``omit_defaults`` tests
    identity (``is``), not equality, for scalars: an equal ``30000`` or ``"standard"``
    read from SQLite would be emitted. Small ints, ``""``, ``b""`` and bools are
    singletons already; other non-empty defaults go through this in ``of``."""
    return default if value == default else value


def from_attributes(cls: type[S]) -> Callable[[Any], S]:
    """A fast ``value -> cls`` builder reading each field of ``cls`` as an attribute of
    the value (C ``attrgetter`` + positional Struct construction: a fraction of a
    microsecond, where ``msgspec.convert(from_attributes=True)`` costs several)."""
    names = cls.__struct_fields__
    if len(names) == 1:
        one = operator.attrgetter(names[0])
        return lambda value: cls(one(value))
    get = operator.attrgetter(*names)
    return lambda value: cls(*get(value))


Req = TypeVar("Req", bound=msgspec.Struct)
Resp = TypeVar("Resp", bound=msgspec.Struct)

PATH_PREFIX = "/mqlite.v1."


@dataclass(frozen=True, eq=False)
class Route(Generic[Req, Resp]):
    """One RPC: ``POST /mqlite.v1.<service>/<method>``."""

    service: str
    method: str
    permission: Permission
    request: type[Req]
    response: type[Resp]
    summary: str
    # Refused (403) while authentication is off, whatever the caller holds: managing keys
    # means nothing without it (the AuthService routes).
    requires_auth: bool = False

    @property
    def name(self) -> str:
        """``QueueService/Send``: the path minus ``/mqlite.v1.`` (log and metric label)."""
        return f"{self.service}/{self.method}"

    @property
    def path(self) -> str:
        return f"{PATH_PREFIX}{self.service}/{self.method}"

    @property
    def body_optional(self) -> bool:
        """Routes without request fields also accept an empty body (as ``{}``)."""
        return not self.request.__struct_fields__
