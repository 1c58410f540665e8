"""The OpenAPI 3.1 document, generated from the route table and shapes (never by hand).

Request schemas are closed (``additionalProperties: false``) and list exactly the fields
``decode_request`` requires; response schemas list as required exactly the fields the
encoder always emits, so a schema-driven fuzzer (Schemathesis) checks the real contract.
"""

from __future__ import annotations

import copy
from collections import defaultdict
from typing import Any

from mqlite import errors

from .routes import ROUTES, Route
from .shape import Obj, Shape
from .values import List, WireType

OPENAPI_VERSION = "3.1.0"

ERROR_STATUSES: dict[int, str] = {
    400: "Bad Request",
    401: "Unauthorized: missing or invalid Bearer token",
    403: "Forbidden: the credential lacks the permission",
    404: "Not Found: the queue or message does not exist, or no such path",
    405: "Method Not Allowed: RPCs are POST only",
    409: "Conflict",
    413: "Content Too Large: a message body or the request body is over its cap",
    499: "Client Closed Request: the client canceled the request",
    500: "Internal Server Error",
    503: "Service Unavailable: a remote write's outcome is unknown; reconcile, do not retry",
}

_ERROR = {
    "type": "object",
    "properties": {
        "code": {"type": "string", "enum": sorted(errors.BY_CODE)},
        "message": {"type": "string"},
    },
    "required": ["code", "message"],
    "description": "The error envelope of every non-2xx answer.",
}

_DISCOVERY = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "const": "mqlite"},
        "description": {"type": "string"},
        "version": {"type": "string"},
        "status": {"type": "string", "const": "ok"},
        "auth": {"type": "string", "enum": ["bearer", "none"]},
        "docs": {"type": "string"},
        "endpoints": {"type": "array", "items": {"type": "string"}},
        "health": {"type": "string"},
        "metrics": {"type": "string"},
        "ui": {"type": "string"},
    },
    "required": ["name", "description", "version", "status", "auth", "docs", "endpoints", "health"],
}


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _json(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _collect(shape: Shape[Any], into: dict[str, Shape[Any]]) -> None:
    """Register ``shape`` and every shape nested in it under their unique names."""
    seen = into.get(shape.name)
    if seen is shape:
        return
    if seen is not None:
        raise ValueError(f"two different shapes are both named {shape.name!r}")
    into[shape.name] = shape
    for f in shape.fields:
        t: WireType = f.type
        while isinstance(t, List):
            t = t.item
        if isinstance(t, Obj):
            _collect(t.shape, into)


def _error_responses() -> dict[str, Any]:
    codes: dict[int, list[str]] = defaultdict(list)
    for code, cls in errors.BY_CODE.items():
        codes[cls.http_status].append(code)
    out: dict[str, Any] = {}
    for status, title in ERROR_STATUSES.items():
        names = ", ".join(f"`{c}`" for c in codes.get(status, []))
        out[str(status)] = _json(_ref("Error"), f"{title} ({names})" if names else title)
    return out


def _operation(route: Route[Any, Any]) -> dict[str, Any]:
    return {
        "operationId": f"{route.service}_{route.method}",
        "tags": [route.service],
        "summary": route.summary,
        "description": f"Requires the `{route.permission.value}` permission.",
        "x-mqlite-permission": route.permission.value,
        "requestBody": {
            "required": not route.body_optional,
            "content": {"application/json": {"schema": _ref(route.request.name)}},
        },
        "responses": {"200": _json(_ref(route.response.name), "OK"), **_error_responses()},
    }


def openapi_document(version: str) -> dict[str, Any]:
    """The broker's API as an OpenAPI 3.1 document (a fresh dict on every call)."""
    shapes: dict[str, Shape[Any]] = {}
    paths: dict[str, Any] = {}
    for route in ROUTES:
        _collect(route.request, shapes)
        _collect(route.response, shapes)
        paths[route.path] = {"post": _operation(route)}
    paths["/"] = {
        "get": {
            "operationId": "discovery",
            "tags": ["Open"],
            "summary": "Discovery card: what this broker is and every RPC path",
            "security": [],
            "responses": {"200": _json(_ref("DiscoveryCard"), "The discovery card")},
        }
    }
    paths["/healthz"] = {
        "get": {
            "operationId": "healthz",
            "tags": ["Open"],
            "summary": "Liveness",
            "security": [],
            "responses": {
                "200": {
                    "description": "Alive",
                    "content": {"text/plain": {"schema": {"type": "string"}}},
                }
            },
        }
    }
    schemas: dict[str, Any] = {name: shapes[name].schema() for name in sorted(shapes)}
    schemas["Error"] = copy.deepcopy(_ERROR)
    schemas["DiscoveryCard"] = copy.deepcopy(_DISCOVERY)
    return {
        "openapi": OPENAPI_VERSION,
        "info": {
            "title": "mqlite",
            "version": version,
            "description": (
                "Connect-style JSON over HTTP: every RPC is a POST of a JSON object to "
                "/mqlite.v1.<Service>/<Method>. Request decoding is strict (unknown fields, "
                "wrong types and trailing data are 400 invalid_argument)."
            ),
        },
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {"bearerAuth": {"type": "http", "scheme": "bearer"}},
        },
        "security": [{"bearerAuth": []}],
    }
