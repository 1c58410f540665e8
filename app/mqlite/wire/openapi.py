"""The OpenAPI 3.1 document, generated from the route table and its Structs (never by hand).

``msgspec.json.schema_components`` gives the component schemas from the same Structs the
codec uses: request schemas are closed (``additionalProperties: false``) and require
exactly the fields ``decode_request`` requires; response schemas require exactly the
fields the encoder always emits (every field of a ``Snapshot``), so a schema-driven
fuzzer (Schemathesis) checks the real contract. Field docs become ``description``s.
"""

from __future__ import annotations

import copy
import json
from collections import defaultdict
from functools import cache
from typing import Any

import msgspec

from mqlite import errors

from .base import Route, Snapshot
from .routes import ROUTES

OPENAPI_VERSION = "3.1.0"

ERROR_STATUSES: dict[int, str] = {
    400: "Bad Request",
    401: "Unauthorized: missing or invalid Bearer token",
    403: "Forbidden: the credential lacks the permission",
    404: "Not Found: the queue or message does not exist, or no such path",
    405: "Method Not Allowed: RPCs are POST only",
    409: "Conflict",
    408: "Request Timeout: the request head or body did not arrive in time",
    413: "Content Too Large: a message body or the request body is over its cap",
    415: "Unsupported Media Type: RPCs take Content-Type: application/json",
    431: "Request Header Fields Too Large: request line and headers over 16 KiB",
    499: "Client Closed Request: the client canceled the request",
    500: "Internal Server Error",
    503: (
        "Service Unavailable: `unavailable` = at a capacity limit (or the disk is full: "
        "`storage_full`), not processed, retry; "
        "`outcome_unknown` = a remote write's outcome is unknown, reconcile, do not retry"
    ),
}

_ERROR = {
    "type": "object",
    "properties": {
        "code": {"type": "string", "enum": sorted(errors.BY_CODE)},
        "message": {"type": "string"},
        "reason": {
            "type": "string",
            "enum": sorted(errors.BY_REASON),
            "description": "refines the code where two errors share it (absent otherwise)",
        },
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


_REF = "#/components/schemas/{name}"


@cache
def _components() -> dict[str, Any]:
    """Every Struct reachable from the routes, as OpenAPI component schemas."""
    types = [t for route in ROUTES for t in (route.request, route.response)]
    _, components = msgspec.json.schema_components(types, ref_template=_REF)
    snapshots = {cls.__name__: cls for cls in _subclasses(Snapshot)}
    for name, schema in components.items():
        schema.pop("title", None)
        cls = snapshots.get(name)
        if cls is not None:  # every field is always emitted
            schema["required"] = [f.encode_name for f in _fields(cls)]
        if not schema.get("required"):
            schema.pop("required", None)
    # JSON-plain (tuple defaults become lists), as the document is served
    plain: dict[str, Any] = json.loads(json.dumps(components))
    return plain


def _subclasses(cls: type[Any]) -> list[type[Any]]:
    out = []
    for sub in cls.__subclasses__():
        out += [sub, *_subclasses(sub)]
    return out


def _fields(cls: type[msgspec.Struct]) -> tuple[msgspec.structs.FieldInfo, ...]:
    return msgspec.structs.fields(cls)


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
            "content": {"application/json": {"schema": _ref(route.request.__name__)}},
        },
        "responses": {"200": _json(_ref(route.response.__name__), "OK"), **_error_responses()},
    }


def openapi_document(version: str) -> dict[str, Any]:
    """The broker's API as an OpenAPI 3.1 document (a fresh dict on every call)."""
    paths: dict[str, Any] = {}
    for route in ROUTES:
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
    components = _components()
    schemas: dict[str, Any] = {name: copy.deepcopy(components[name]) for name in sorted(components)}
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
