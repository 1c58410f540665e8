"""Strict request decoding: every failure is InvalidArgument with a precise message."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import msgspec.inspect as mi
import pytest
from wire_bad_cases import CASES
from wire_cases import REQUEST_CASES

from mqlite import errors, wire
from mqlite.wire import explain


def reject(route: wire.Route[Any, Any], body: bytes) -> str:
    with pytest.raises(errors.InvalidArgument) as info:
        wire.decode_request(route, body)
    assert type(info.value) is errors.InvalidArgument
    assert info.value.http_status == 400 and info.value.code == "invalid_argument"
    return info.value.message


@pytest.mark.parametrize(
    ("route", "body", "message"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_strict_decoding_error(route: wire.Route[Any, Any], body: bytes, message: str) -> None:
    assert reject(route, body) == message


# -- generated from the shapes: every route, every field ------------------------------

MINIMAL: dict[str, dict[str, Any]] = {}
for _route, _value, _json in REQUEST_CASES:
    if _route.name not in MINIMAL or len(_json) < len(MINIMAL[_route.name]):
        MINIMAL[_route.name] = _json


def _info(route: wire.Route[Any, Any]) -> tuple[mi.Field, ...]:
    info = mi.type_info(route.request)
    assert isinstance(info, mi.StructType)
    return info.fields


REQUIRED = [(r, f.encode_name) for r in wire.ROUTES for f in _info(r) if f.required]
FIELDS = [(r, f.encode_name, f.type) for r in wire.ROUTES for f in _info(r)]


def _ids(items: list[Any]) -> list[str]:
    return [f"{item[0].method}.{item[1]}" for item in items]


@pytest.mark.parametrize(("route", "key"), REQUIRED, ids=_ids(REQUIRED))
def test_missing_required_field_is_named(route: wire.Route[Any, Any], key: str) -> None:
    body = {k: v for k, v in MINIMAL[route.name].items() if k != key}
    message = reject(route, json.dumps(body).encode())
    assert message == f'missing required field "{key}" in the request'


def _wrong(t: mi.Type) -> tuple[Any, str]:
    while isinstance(t, mi.Metadata):
        t = t.type
    if isinstance(t, mi.StrType | mi.BytesType):
        return 7, "number"
    if isinstance(t, mi.LiteralType):
        return ("7", "string") if isinstance(t.values[0], int) else (7, "number")
    if isinstance(t, mi.IntType):
        return "7", "string"
    if isinstance(t, mi.BoolType):
        return 0, "number"
    if isinstance(t, mi.VarTupleType | mi.ListType):
        return {}, "object"
    assert isinstance(t, mi.StructType | mi.DictType), t
    return [], "array"


@pytest.mark.parametrize(("route", "key", "typ"), FIELDS, ids=_ids(FIELDS))
def test_wrong_type_names_the_field(route: wire.Route[Any, Any], key: str, typ: mi.Type) -> None:
    value, got = _wrong(typ)
    body = {**MINIMAL[route.name], key: value}
    message = reject(route, json.dumps(body).encode())
    assert message.startswith(f"{key}: want ") and message.endswith(f", got {got}")


@pytest.mark.parametrize("route", wire.ROUTES, ids=[r.method for r in wire.ROUTES])
def test_unknown_top_level_field_on_every_route(route: wire.Route[Any, Any]) -> None:
    # A name close to no field of any route ("bogus" is one edit from CreateKey's "burst",
    # which earns a did-you-mean hint).
    body = {**MINIMAL[route.name], "zzqx": 1}
    assert reject(route, json.dumps(body).encode()) == 'unknown field "zzqx" in the request'


@pytest.mark.parametrize(
    "route", [r for r in wire.ROUTES if not r.body_optional], ids=lambda r: r.method
)
def test_empty_body_is_rejected_where_fields_exist(route: wire.Route[Any, Any]) -> None:
    assert reject(route, b"") == "empty request body (want a JSON object)"


# -- the fast path and the slow path agree ------------------------------------------------


def test_every_pinned_case_is_refused_by_the_fast_path_too() -> None:
    """msgspec itself refuses every bad body except repeated keys, which only the count
    check catches: no pinned rejection depends on the slow walker alone."""
    for name, route, body, _ in CASES:
        if route.body_optional and not body.strip():
            continue
        try:
            decoded = msgspec.json.decode(body, type=route.request)
        except msgspec.MsgspecError:
            continue
        assert name.startswith("duplicate"), name
        assert not wire.codec._no_duplicate_keys(body, decoded), name


@pytest.mark.parametrize(
    "body",
    [
        b'{"queue":"q","queue":"q","messages":[]}',
        b'{"queue":"q","messages":[],"ttl_ms":0,"ttl_ms":0}',
        b'{"queue":"q" , "queue" : "q","messages":[]}',
        b'{"queue":"a:b","queue":"a:b","messages":[]}',
        b'{"queue":"q","messages":[{"properties":{"k":"v","k":"v"}}]}',
        b'{"queue":"q","messages":[{"lock_token":"x","lock_token":"x"}]}',
        b'{"queue":"q","messages":[],"queue":"\\u003a"}',
    ],
)
def test_same_value_duplicates_are_caught(body: bytes) -> None:
    """A key repeated with an identical value decodes to the same Struct as the single
    key: only the colon count (or the slow walker behind it) can see it."""
    assert reject(wire.SEND, body).startswith('duplicate field "')


@pytest.mark.parametrize(
    "body",
    [
        b'{"queue":"q","messages":[]}',
        b'{"queue" : "q:1" ,\n "messages" : [ {"subject":"a:b","body":""} ] }',
        b'{"queue":"q","messages":[],"ttl_ms":0}',
        b'{"queue":"q\\u003a","messages":[{"properties":{"a":"\\"x\\":"}}]}',
    ],
)
def test_bodies_the_count_cannot_vouch_for_still_decode(body: bytes) -> None:
    """Explicit defaults, colons in strings and escapes only cost the slow path."""
    req = wire.decode_request(wire.SEND, body)
    assert req.queue.startswith("q")


def test_the_fallback_wording_of_an_unmodelled_refusal() -> None:
    """A refusal the walker does not model still names the path, in msgspec's words."""
    try:
        msgspec.json.decode(b'{"ttl_ms":1.5}', type=wire.SendRequest)
    except msgspec.ValidationError as exc:
        assert explain.fallback(exc) == "ttl_ms: Expected `int`, got `float`"
    try:
        msgspec.json.decode(b'{"queue":', type=wire.SendRequest)
    except msgspec.DecodeError as exc:
        assert explain.fallback(exc) == "request body: Input data was truncated"
