"""The error envelope ``{"code": ..., "message": ...}`` in both directions.

The server writes ``error_body(exc)`` with ``exc.http_status``; the SDK turns any non-200
answer back into the same ``MQLiteError`` class via ``errors.BY_CODE`` (falling back on
the HTTP status when the body is not an envelope, e.g. from a proxy), so embedded and
remote callers catch the same exceptions.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from types import MappingProxyType

from mqlite import errors
from mqlite.errors import MQLiteError

from .api import dumps

# HTTP status -> class when the body carries no known code. 409 is deliberately absent:
# it has six meanings, and guessing one would let a caller "handle" the wrong conflict.
BY_STATUS: Mapping[int, type[MQLiteError]] = MappingProxyType(
    {
        400: errors.InvalidArgument,
        401: errors.Unauthenticated,
        403: errors.PermissionDenied,
        404: errors.NotFound,
        405: errors.Unimplemented,
        413: errors.MessageTooLarge,
        499: errors.Canceled,
        500: errors.Internal,
        503: errors.OutcomeUnknown,
    }
)

_SNIPPET = 200


def error_body(exc: MQLiteError) -> bytes:
    """The JSON envelope for ``exc`` (send it with ``exc.http_status``), newline-terminated."""
    return dumps({"code": exc.code, "message": exc.message})


def error_from_response(status: int, body: bytes) -> MQLiteError:
    """Rebuild the error a broker answered with ``status`` and ``body``."""
    code = message = ""
    try:
        value = json.loads(body)
    except (ValueError, RecursionError):
        value = None
    if isinstance(value, dict):
        if isinstance(value.get("code"), str):
            code = value["code"]
        if isinstance(value.get("message"), str):
            message = value["message"]
    cls = errors.BY_CODE.get(code) or BY_STATUS.get(status) or errors.Internal
    if not message and code not in errors.BY_CODE:
        text = body[:_SNIPPET].decode("utf-8", "replace").strip()
        message = f"HTTP {status}" + (f": {text}" if text else "")
    return cls(message or None)
