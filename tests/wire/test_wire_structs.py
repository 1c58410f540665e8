"""The Struct declarations: documented, unique, decoders built once, and the omission
rules agree with what the OpenAPI document calls required."""

from __future__ import annotations

import contextlib
import json
from typing import Any

import msgspec
import msgspec.inspect as mi
import pytest

from mqlite import errors, wire


def _reachable() -> dict[type[msgspec.Struct], None]:
    found: dict[type[msgspec.Struct], None] = {}

    def visit(t: mi.Type) -> None:
        while isinstance(t, mi.Metadata):
            t = t.type
        if isinstance(t, mi.StructType):
            if t.cls not in found:
                found[t.cls] = None
                for f in t.fields:
                    visit(f.type)
        elif isinstance(t, mi.ListType | mi.VarTupleType):
            visit(t.item_type)
        elif isinstance(t, mi.DictType):
            visit(t.value_type)

    for route in wire.ROUTES:
        visit(mi.type_info(route.request))
        visit(mi.type_info(route.response))
    return found


STRUCTS = list(_reachable())
REQUESTS = [cls for cls in STRUCTS if issubclass(cls, wire.base.Request)]


def test_every_struct_is_a_request_or_a_response() -> None:
    for cls in STRUCTS:
        assert issubclass(cls, wire.base.Request) != issubclass(cls, wire.base.Response), cls


def test_struct_names_are_unique() -> None:
    """They are the OpenAPI component names."""
    assert len({cls.__name__ for cls in STRUCTS}) == len(STRUCTS)


@pytest.mark.parametrize("cls", STRUCTS, ids=lambda c: c.__name__)
def test_every_struct_says_what_it_is(cls: type[msgspec.Struct]) -> None:
    assert (cls.__doc__ or "").strip()


@pytest.mark.parametrize("cls", REQUESTS, ids=lambda c: c.__name__)
def test_every_request_field_is_documented(cls: type[msgspec.Struct]) -> None:
    """A JSON Schema per request (MCP tools, the console) is one call away, with a
    description for every input."""
    schema = msgspec.json.schema(cls)
    props = schema["$defs"][cls.__name__]["properties"]
    undocumented = [k for k, v in props.items() if "description" not in v and "$ref" not in v]
    assert not undocumented


def test_every_route_has_a_summary() -> None:
    assert all(r.summary for r in wire.ROUTES)


def test_decoders_are_built_once_at_import(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_new_decoders(*_: Any, **__: Any) -> None:
        raise AssertionError("a Decoder was built on the request path")

    monkeypatch.setattr(msgspec.json, "Decoder", no_new_decoders)
    for route in wire.ROUTES:
        with contextlib.suppress(errors.InvalidArgument):  # missing required fields
            wire.decode_request(route, b"{}")
        wire.decode_response(route, b"{}")
        wire.decode_response(route, b'{"x":null}')


@pytest.mark.parametrize("route", wire.ROUTES, ids=lambda r: r.method)
def test_a_zero_response_emits_exactly_the_required_fields(route: wire.Route[Any, Any]) -> None:
    """Decoding ``{}`` (every field absent: zero values) then encoding leaves exactly the
    fields the OpenAPI schema lists as required (always emitted)."""
    schema = wire.openapi_document("0")["components"]["schemas"][route.response.__name__]
    encoded = json.loads(wire.encode_response(route, wire.decode_response(route, b"{}")))
    assert set(encoded) == set(schema.get("required", []))


@pytest.mark.parametrize("route", wire.ROUTES, ids=lambda r: r.method)
def test_a_minimal_request_encodes_exactly_its_required_fields(
    route: wire.Route[Any, Any],
) -> None:
    schema = wire.openapi_document("0")["components"]["schemas"][route.request.__name__]
    required = schema.get("required", [])
    body = {}
    for f in mi.type_info(route.request).fields:  # type: ignore[attr-defined]
        if f.required:
            t = f.type
            while isinstance(t, mi.Metadata):
                t = t.type
            body[f.encode_name] = (
                "x" if isinstance(t, mi.StrType) else [] if isinstance(t, mi.VarTupleType) else 1
            )
    decoded = wire.decode_request(route, json.dumps(body).encode())
    assert list(json.loads(wire.encode_request(route, decoded))) == required
