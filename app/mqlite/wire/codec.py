"""Both directions of every route: the server decodes requests and encodes responses,
the HTTP SDK encodes requests and decodes responses. All through the same Structs.

Fast path: one ``msgspec.json.Decoder`` per type, built at import (no first-request
cost, no lazy-init race). It refuses malformed JSON, trailing data, NaN/Infinity, lone
surrogates, invalid UTF-8, unknown fields and wrong types itself; what it cannot see is
a repeated key, so a cheap count vouches for its absence (``_no_duplicate_keys``).
Anything it refuses, or that the count cannot vouch for, takes the slow path
(``explain``), which renders the exact pinned message, or, when the body's only fault
was an explicit ``null`` in an optional field (null = absent, the proto3 JSON mapping
the original's clients rely on), decodes the walker's cleaned copy: such a body costs
the slow path, a body without nulls costs nothing more. Request decoding raises
``InvalidArgument``; response decoding is lenient and raises ``Internal`` only for a
body that cannot be a response at all (not JSON, wrong types).
"""

from __future__ import annotations

import json
from typing import Any, TypeVar

import msgspec

from mqlite.errors import Internal, InvalidArgument

from . import explain, strict
from .base import Route
from .routes import ROUTES

S = TypeVar("S", bound=msgspec.Struct)

_ENCODER = msgspec.json.Encoder()
_REQUESTS: dict[type[Any], msgspec.json.Decoder[Any]] = {}
_RESPONSES: dict[type[Any], msgspec.json.Decoder[Any]] = {}
for _route in ROUTES:
    _REQUESTS.setdefault(_route.request, msgspec.json.Decoder(_route.request))
    _RESPONSES.setdefault(_route.response, msgspec.json.Decoder(_route.response))
del _route


def dumps(value: Any) -> bytes:
    """Compact JSON plus the trailing newline Go's ``json.Encoder`` writes."""
    buf = bytearray()
    _ENCODER.encode_into(value, buf)
    buf += b"\n"
    return bytes(buf)


def _no_duplicate_keys(body: bytes | bytearray, decoded: msgspec.Struct) -> bool:
    """True only if ``body`` (which msgspec accepted) repeats no key in any object.

    Every structural colon in the body follows one key, and every other colon sits in a
    string. Re-encoding the decoded value emits a subset of the keys that were present
    (a field at its default is omitted) and a subset of the strings, verbatim. So equal
    colon counts mean every key occurrence is a distinct present key: no duplicate. The
    one way a colon grows on re-encoding is a ``\\u003a`` escape, which opts out. A
    body this cannot vouch for (explicit defaults, dropped strings with colons) only
    costs the slow path, never a wrong answer.
    """
    return b"\\u003" not in body and body.count(b":") == _ENCODER.encode(decoded).count(b":")


def decode_request(route: Route[S, Any], body: bytes | bytearray) -> S:
    """Strictly decode a request body into the route's request Struct (server side)."""
    cls = route.request
    if route.body_optional and not body.strip():
        return cls()
    try:
        request: S = _REQUESTS[cls].decode(body)
    except msgspec.MsgspecError as exc:
        cleaned = _checked(cls, body)
        try:  # the walker found no fault: nulls of optional fields were all it had
            request = _REQUESTS[cls].decode(dumps(cleaned))
        except msgspec.MsgspecError:
            raise InvalidArgument(explain.fallback(exc)) from None
        return request
    if not _no_duplicate_keys(body, request):
        _checked(cls, body)
    return request


def _checked(cls: type[msgspec.Struct], body: bytes | bytearray) -> dict[str, Any]:
    """``body`` walked strictly: the contract's message as ``InvalidArgument``, or the
    parsed object with the nulls of optional fields dropped (they mean "absent")."""
    value = strict.parse(body)  # raises the JSON-level InvalidArgument itself
    try:
        return explain.check(cls, value, lenient=False)
    except explain.Bad as err:
        # for people: "in the request", not "MetricsRequest" to a Stats caller
        raise InvalidArgument(err.render("the request")) from None


def json_object(value: msgspec.Struct) -> dict[str, Any]:
    """``value`` as the JSON object the wire carries (bytes as base64, defaults omitted),
    for callers that embed it in a document of their own (the CLI's ``--json``)."""
    out: dict[str, Any] = msgspec.to_builtins(value)
    return out


def encode_request(route: Route[S, Any], request: S) -> bytes:
    """Encode a request (SDK side); optional fields at their default are omitted."""
    try:
        return dumps(request)
    except (TypeError, ValueError) as exc:
        raise InvalidArgument(f"cannot encode {route.name} request: {exc}") from None


def encode_response(route: Route[Any, S], response: S) -> bytes:
    """Encode a response (server side) with the omission rules of its Struct."""
    return dumps(response)


def decode_response(route: Route[Any, S], body: bytes) -> S:
    """Leniently decode a 200 response body (SDK side): unknown fields are ignored,
    ``null`` and absent fields take their zero value."""
    cls = route.response
    if not body.strip():
        body = b"{}"
    try:
        response: S = _RESPONSES[cls].decode(body)
        return response
    except msgspec.MsgspecError:
        pass
    try:
        value = json.loads(body)
    except (ValueError, RecursionError) as exc:
        raise Internal(f"malformed {route.name} response: {exc}") from None
    try:
        cleaned = explain.check(cls, value, lenient=True)
        converted: S = msgspec.convert(cleaned, cls)
    except explain.Bad as err:
        rendered = err.render(cls.__name__, "response body")
        raise Internal(f"malformed {route.name} response: {rendered}") from None
    except msgspec.MsgspecError as exc:
        raise Internal(f"malformed {route.name} response: {exc}") from None
    return converted
