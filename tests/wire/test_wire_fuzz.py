"""Property tests: hostile input is only ever InvalidArgument (server) or Internal (SDK)."""

from __future__ import annotations

import json
from typing import Any

import msgspec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mqlite import errors, wire
from mqlite.types import OutMessage

ROUTES = st.sampled_from(wire.ROUTES)
SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(1 << 70), max_value=1 << 70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4)
    ),
    max_leaves=20,
)


def _field_names(route: wire.Route[Any, Any]) -> list[str]:
    names = [f.encode_name for f in msgspec.structs.fields(route.request)]
    return [*names, "body", "properties", "seq_number", "lock_token", "expr", "kind", "x"]


@st.composite
def near_miss_bodies(draw: st.DrawFn) -> tuple[wire.Route[Any, Any], bytes]:
    """Objects made of the route's own field names with arbitrary values: deep paths."""
    route = draw(ROUTES)
    keys = st.sampled_from(_field_names(route))
    nested = st.recursive(
        json_scalars,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(keys, inner, max_size=4),
        max_leaves=15,
    )
    return route, json.dumps(draw(st.dictionaries(keys, nested, max_size=6))).encode()


def _decode_or_invalid(route: wire.Route[Any, Any], body: bytes) -> None:
    try:
        wire.decode_request(route, body)
    except errors.InvalidArgument as exc:
        assert type(exc) is errors.InvalidArgument and exc.message


@SETTINGS
@given(route=ROUTES, body=st.binary(max_size=200))
def test_arbitrary_bytes(route: wire.Route[Any, Any], body: bytes) -> None:
    _decode_or_invalid(route, body)


@SETTINGS
@given(route=ROUTES, value=json_values)
def test_arbitrary_json(route: wire.Route[Any, Any], value: Any) -> None:
    _decode_or_invalid(route, json.dumps(value).encode())


@SETTINGS
@given(case=near_miss_bodies())
def test_near_miss_objects(case: tuple[wire.Route[Any, Any], bytes]) -> None:
    _decode_or_invalid(*case)


@SETTINGS
@given(route=ROUTES, body=st.text(alphabet='{}[]":,0123456789.eE-+ \\unlrtfaNIy', max_size=60))
def test_json_shaped_garbage(route: wire.Route[Any, Any], body: str) -> None:
    _decode_or_invalid(route, body.encode())


@SETTINGS
@given(route=ROUTES, value=json_values)
def test_response_decoding_is_value_or_internal(route: wire.Route[Any, Any], value: Any) -> None:
    try:
        wire.decode_response(route, json.dumps(value).encode())
    except errors.Internal as exc:
        assert exc.message.startswith(f"malformed {route.name} response")


@SETTINGS
@given(status=st.integers(min_value=100, max_value=599), body=st.binary(max_size=100))
def test_error_from_response_always_builds_an_error(status: int, body: bytes) -> None:
    assert isinstance(wire.error_from_response(status, body), errors.MQLiteError)


text = st.text(max_size=10)
out_messages = st.builds(
    OutMessage,
    body=st.binary(max_size=40),
    message_id=text,
    group_id=text,
    subject=text,
    correlation_id=text,
    reply_to=text,
    content_type=text,
    properties=st.dictionaries(text, text, max_size=3),
)
int64 = st.integers(min_value=-(1 << 63), max_value=(1 << 63) - 1)


@SETTINGS
@given(
    queue=text,
    messages=st.lists(out_messages, max_size=5),
    at=int64,
    ttl=int64,
)
def test_send_round_trip(queue: str, messages: list[OutMessage], at: int, ttl: int) -> None:
    req = wire.SendRequest(queue, tuple(wire.MessageJSON.of(m) for m in messages), at, ttl)
    assert wire.decode_request(wire.SEND, wire.encode_request(wire.SEND, req)) == req


@SETTINGS
@given(messages=st.lists(out_messages, max_size=3))
def test_send_decode_is_byte_for_byte_stable(messages: list[OutMessage]) -> None:
    wired = tuple(wire.MessageJSON.of(m) for m in messages)
    body = wire.encode_request(wire.SEND, wire.SendRequest("q", wired))
    again = wire.encode_request(wire.SEND, wire.decode_request(wire.SEND, body))
    assert again == body
