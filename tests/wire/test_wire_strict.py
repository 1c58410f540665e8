"""Strict request decoding: every failure is InvalidArgument with a precise message."""

from __future__ import annotations

import json
from typing import Any

import pytest
from wire_bad_cases import CASES
from wire_cases import REQUEST_CASES

from mqlite import errors, wire
from mqlite.wire.shape import Obj
from mqlite.wire.values import Base64, Bool, Int, List, Str, StrMap, WireType


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

REQUIRED = [(r, f.key) for r in wire.ROUTES for f in r.request.fields if f.required]
FIELDS = [(r, f.key, f.type) for r in wire.ROUTES for f in r.request.fields]


def _ids(items: list[Any]) -> list[str]:
    return [f"{item[0].method}.{item[1]}" for item in items]


@pytest.mark.parametrize(("route", "key"), REQUIRED, ids=_ids(REQUIRED))
def test_missing_required_field_is_named(route: wire.Route[Any, Any], key: str) -> None:
    body = {k: v for k, v in MINIMAL[route.name].items() if k != key}
    message = reject(route, json.dumps(body).encode())
    assert message == f'missing required field "{key}" in the request'


def _wrong(t: WireType) -> tuple[Any, str]:
    if isinstance(t, Str | Base64):
        return 7, "number"
    if isinstance(t, Int):
        return "7", "string"
    if isinstance(t, Bool):
        return 0, "number"
    if isinstance(t, List):
        return {}, "object"
    assert isinstance(t, Obj | StrMap)
    return [], "array"


@pytest.mark.parametrize(("route", "key", "typ"), FIELDS, ids=_ids(FIELDS))
def test_wrong_type_names_the_field(route: wire.Route[Any, Any], key: str, typ: WireType) -> None:
    value, got = _wrong(typ)
    body = {**MINIMAL[route.name], key: value}
    message = reject(route, json.dumps(body).encode())
    assert message.startswith(f"{key}: want ") and message.endswith(f", got {got}")


@pytest.mark.parametrize("route", wire.ROUTES, ids=[r.method for r in wire.ROUTES])
def test_unknown_top_level_field_on_every_route(route: wire.Route[Any, Any]) -> None:
    body = {**MINIMAL[route.name], "bogus": 1}
    assert reject(route, json.dumps(body).encode()) == 'unknown field "bogus" in the request'


@pytest.mark.parametrize(
    "route", [r for r in wire.ROUTES if not r.body_optional], ids=lambda r: r.method
)
def test_empty_body_is_rejected_where_fields_exist(route: wire.Route[Any, Any]) -> None:
    assert reject(route, b"") == "empty request body (want a JSON object)"
