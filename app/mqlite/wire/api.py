"""Both directions of every route: the server decodes requests and encodes responses,
the HTTP SDK encodes requests and decodes responses. All through the same shapes.

Request decoding is strict and raises ``InvalidArgument`` with a precise message;
response decoding is lenient and raises ``Internal`` only for a body that cannot be a
response at all (not JSON, wrong types).
"""

from __future__ import annotations

import json
from typing import Any, TypeVar

from mqlite.errors import Internal, InvalidArgument

from . import strict
from .routes import Route
from .values import Bad

Req = TypeVar("Req")
Resp = TypeVar("Resp")

_ENCODER = json.JSONEncoder(separators=(",", ":"), allow_nan=False)


def dumps(value: Any) -> bytes:
    """Compact JSON plus the trailing newline Go's ``json.Encoder`` writes."""
    return (_ENCODER.encode(value) + "\n").encode("utf-8")


def decode_request(route: Route[Req, Any], body: bytes) -> Req:
    """Strictly decode a request body into the route's request value (server side)."""
    shape = route.request
    if route.body_optional and not body.strip():
        value: Any = {}
    else:
        value = strict.parse(body)
    try:
        result: Req = shape.decoder(False)(value)
    except Bad as err:
        # For people: "the request", not the shape's class name ("MetricsRequest" means
        # nothing to someone calling Stats).
        raise InvalidArgument(err.render("the request")) from None
    return result


def encode_request(route: Route[Req, Any], request: Req) -> bytes:
    """Encode a request value (SDK side); optional fields at their default are omitted."""
    try:
        return dumps(route.request.encode(request))
    except (TypeError, ValueError, AttributeError, KeyError) as exc:
        raise InvalidArgument(f"cannot encode {route.name} request: {exc}") from None


def encode_response(route: Route[Any, Resp], response: Resp) -> bytes:
    """Encode a response value (server side) with the omission rules of its shape."""
    return dumps(route.response.encode(response))


def decode_response(route: Route[Any, Resp], body: bytes) -> Resp:
    """Leniently decode a 200 response body (SDK side): unknown fields are ignored."""
    shape = route.response
    try:
        value = json.loads(body) if body.strip() else {}
    except (ValueError, RecursionError) as exc:
        raise Internal(f"malformed {route.name} response: {exc}") from None
    try:
        result: Resp = shape.decoder(True)(value)
    except Bad as err:
        rendered = err.render(shape.name, "response body")
        raise Internal(f"malformed {route.name} response: {rendered}") from None
    return result
