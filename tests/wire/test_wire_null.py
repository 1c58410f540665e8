"""JSON ``null`` is "absent" in every optional request field (issue 28), derived from the
wire table: every route, every field with a default, nested objects and message items
included. The proto3 JSON mapping the original's ``mqlite.v1.*`` routes follow (and the
JavaScript and Go clients that write zero values as ``null``) rely on it. A ``null`` where
a value is required is still refused, with the same "want X, got null" 400.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec.inspect as mi
import pytest
from wire_cases import REQUEST_CASES

from mqlite import errors, wire

MINIMAL: dict[str, dict[str, Any]] = {}
for _route, _value, _json in REQUEST_CASES:
    if _route.name not in MINIMAL or len(_json) < len(MINIMAL[_route.name]):
        MINIMAL[_route.name] = _json


def _bare(t: mi.Type) -> mi.Type:
    while isinstance(t, mi.Metadata):
        t = t.type
    return t


def _fields(t: mi.Type) -> tuple[mi.Field, ...]:
    t = _bare(t)
    assert isinstance(t, mi.StructType)
    return t.fields


def _nested(t: mi.Type) -> tuple[mi.Type, bool] | None:
    """The Struct inside a field (``X``, ``X | UNSET`` or an array of ``X``), and
    whether it sits in an array."""
    t = _bare(t)
    if isinstance(t, mi.StructType):
        return t, False
    if isinstance(t, mi.VarTupleType | mi.ListType) and isinstance(
        _bare(t.item_type), mi.StructType
    ):
        return _bare(t.item_type), True
    return None


def _minimal(t: mi.Type) -> dict[str, Any]:
    """The smallest valid object of Struct ``t``: its required fields, typed."""
    out: dict[str, Any] = {}
    for f in _fields(t):
        if not f.required:
            continue
        ft = _bare(f.type)
        if isinstance(ft, mi.StrType):
            out[f.encode_name] = "q"
        elif isinstance(ft, mi.IntType):
            out[f.encode_name] = 1
        elif isinstance(ft, mi.VarTupleType | mi.ListType):
            out[f.encode_name] = []
        elif isinstance(ft, mi.StructType):
            out[f.encode_name] = _minimal(ft)
        else:  # pragma: no cover - a required field of a kind this test does not know
            raise AssertionError(f"no minimal value for {f.encode_name}: {ft!r}")
    return out


def _cases(required: bool) -> list[tuple[wire.Route[Any, Any], str, dict[str, Any], Any]]:
    """(route, path, body with the field null, body with it absent) for every field of
    every route's request (``required`` picks which), one level of nesting deep (a nested
    object or one array item), as the wire table declares them."""
    out = []
    for route in wire.ROUTES:
        top = mi.type_info(route.request)
        base = MINIMAL[route.name]
        for f in _fields(top):
            if f.required == required:
                absent = {k: v for k, v in base.items() if k != f.encode_name}
                out.append((route, f.encode_name, {**base, f.encode_name: None}, absent))
            inner = _nested(f.type)
            if inner is None:
                continue
            struct, in_array = inner
            for g in _fields(struct):
                if g.required != required:
                    continue
                item = _minimal(struct)
                nulled = {**item, g.encode_name: None}
                without = {k: v for k, v in item.items() if k != g.encode_name}
                wrap = (lambda v: [v]) if in_array else (lambda v: v)
                where = (
                    f"{f.encode_name}[0].{g.encode_name}"
                    if in_array
                    else (f"{f.encode_name}.{g.encode_name}")
                )
                out.append(
                    (
                        route,
                        where,
                        {**base, f.encode_name: wrap(nulled)},
                        {**base, f.encode_name: wrap(without)},
                    )
                )
    return out


OPTIONAL = _cases(required=False)
REQUIRED = _cases(required=True)


def _ids(cases: list[Any]) -> list[str]:
    return [f"{c[0].method}.{c[1]}" for c in cases]


def _body(value: Any) -> bytes:
    return json.dumps(value).encode()


def test_the_cases_cover_the_table() -> None:
    """Every route's optional fields are here, nested ones included (config, filter,
    the sample message, each message of a Send)."""
    paths = {(r.name, p) for r, p, _, _ in OPTIONAL}
    assert ("QueueService/Receive", "max_messages") in paths
    assert ("AdminService/CreateQueue", "config") in paths
    assert ("AdminService/CreateQueue", "config.lock_duration_ms") in paths
    assert ("QueueService/Send", "messages[0].group_id") in paths
    assert ("QueueService/Send", "messages[0].properties") in paths
    assert ("AdminService/TestFilter", "message.subject") in paths
    assert {r.name for r, _, _, _ in OPTIONAL} >= {
        r.name for r in wire.ROUTES if any(not f.required for f in _fields(mi.type_info(r.request)))
    }
    assert len(OPTIONAL) > 80


@pytest.mark.parametrize(("route", "path", "nulled", "absent"), OPTIONAL, ids=_ids(OPTIONAL))
def test_null_in_an_optional_field_is_absent(
    route: wire.Route[Any, Any], path: str, nulled: Any, absent: Any
) -> None:
    assert wire.decode_request(route, _body(nulled)) == wire.decode_request(route, _body(absent))


@pytest.mark.parametrize(("route", "path", "nulled", "absent"), REQUIRED, ids=_ids(REQUIRED))
def test_null_in_a_required_field_is_refused_naming_it(
    route: wire.Route[Any, Any], path: str, nulled: Any, absent: Any
) -> None:
    with pytest.raises(errors.InvalidArgument) as info:
        wire.decode_request(route, _body(nulled))
    assert info.value.http_status == 400
    message = info.value.message
    assert message.startswith(f"{path}: want ") and message.endswith(", got null"), message


def test_the_issue_s_examples() -> None:
    receive = wire.decode_request(wire.RECEIVE, b'{"queue":"q","max_messages":null}')
    assert receive == wire.ReceiveRequest(queue="q")
    create = wire.decode_request(wire.CREATE_QUEUE, b'{"name":"q","config":null}')
    assert create.queue_config is None  # absent: every default, as without "config"
    send = wire.decode_request(
        wire.SEND,
        b'{"queue":"q","messages":[{"body":"aGk=","group_id":null,"properties":null}],'
        b'"ttl_ms":null,"scheduled_enqueue_time_ms":null}',
    )
    assert send == wire.decode_request(wire.SEND, b'{"queue":"q","messages":[{"body":"aGk="}]}')


def test_null_does_not_hide_another_fault() -> None:
    """The walker still runs over the whole body: a null next to a real mistake, a
    repeated key or an unknown field gets that mistake's message."""
    for body, message in [
        (b'{"queue":"q","max_messages":null,"wait_time_ms":"5"}', "wait_time_ms: want integer"),
        (b'{"queue":"q","max_messages":null,"max_messages":null}', 'duplicate field "max_'),
        (b'{"queue":"q","max_messages":null,"bogus":null}', 'unknown field "bogus"'),
        (b'{"queue":"q","messages":[null]}', "messages[0]: want object, got null"),
        (b'{"queue":"q","messages":[{"properties":{"k":null}}]}', "properties.k: want string"),
    ]:
        route = wire.RECEIVE if b"max_messages" in body else wire.SEND
        with pytest.raises(errors.InvalidArgument, match=message.replace("[", r"\[")):
            wire.decode_request(route, body)


def test_a_body_without_null_still_takes_the_fast_path_only(monkeypatch: Any) -> None:
    """No cost for the common case: the slow walker is not called for a clean body."""
    from mqlite.wire import explain

    def boom(*_: Any, **__: Any) -> Any:
        raise AssertionError("slow path taken")

    monkeypatch.setattr(explain, "check", boom)
    assert wire.decode_request(wire.RECEIVE, b'{"queue":"q","max_messages":3}').max_messages == 3
