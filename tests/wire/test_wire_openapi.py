"""The OpenAPI 3.1 document is generated from the shapes and says exactly what is encoded."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import openapi_spec_validator
import pytest
from wire_bad_cases import CASES as BAD_CASES
from wire_cases import REQUEST_CASES, Case, case_id
from wire_response_cases import RESPONSE_CASES

from mqlite import errors, wire

ERROR_STATUSES = {
    *("400", "401", "403", "404", "405", "408", "409", "413", "415", "431", "499", "500", "503")
}


@pytest.fixture(scope="module")
def doc() -> dict[str, Any]:
    return wire.openapi_document("1.2.3")


def test_document_validates_as_openapi_31(doc: dict[str, Any]) -> None:
    openapi_spec_validator.validate(doc)


def test_document_is_plain_json_and_deterministic(doc: dict[str, Any]) -> None:
    again = wire.openapi_document("1.2.3")
    assert json.loads(json.dumps(doc)) == doc == again
    again["components"]["schemas"]["Error"]["x"] = 1
    assert "x" not in wire.openapi_document("1.2.3")["components"]["schemas"]["Error"]


def test_header(doc: dict[str, Any]) -> None:
    assert doc["openapi"] == "3.1.0"
    assert doc["info"]["version"] == "1.2.3"
    assert doc["components"]["securitySchemes"]["bearerAuth"] == {
        "type": "http",
        "scheme": "bearer",
    }
    assert doc["security"] == [{"bearerAuth": []}]


def test_every_route_is_a_post_with_its_schemas(doc: dict[str, Any]) -> None:
    rpc_paths = [p for p in doc["paths"] if p.startswith("/mqlite.v1.")]
    assert rpc_paths == [r.path for r in wire.ROUTES]
    for route in wire.ROUTES:
        op = doc["paths"][route.path]
        assert set(op) == {"post"}
        post = op["post"]
        body = post["requestBody"]
        assert body["required"] is not route.body_optional
        ref = body["content"]["application/json"]["schema"]["$ref"]
        assert ref == f"#/components/schemas/{route.request.__name__}"
        ok = post["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
        assert ok == f"#/components/schemas/{route.response.__name__}"
        assert set(post["responses"]) == ERROR_STATUSES | {"200"}
        for status in ERROR_STATUSES:
            schema = post["responses"][status]["content"]["application/json"]["schema"]
            assert schema == {"$ref": "#/components/schemas/Error"}
        assert post["x-mqlite-permission"] == route.permission.value
        assert "security" not in post  # the global bearer requirement applies


def test_open_endpoints(doc: dict[str, Any]) -> None:
    for path in ("/", "/healthz"):
        get = doc["paths"][path]["get"]
        assert get["security"] == []
        assert "200" in get["responses"]


def test_error_schema_lists_every_wire_code(doc: dict[str, Any]) -> None:
    err = doc["components"]["schemas"]["Error"]
    assert err["required"] == ["code", "message"]
    assert set(err["properties"]["code"]["enum"]) == set(errors.BY_CODE)
    assert (
        "`lock_lost`"
        in doc["paths"]["/mqlite.v1.QueueService/Complete"]["post"]["responses"]["409"][
            "description"
        ]
    )


def _refs(node: Any) -> set[str]:
    if isinstance(node, dict):
        found = {node["$ref"]} if "$ref" in node else set()
        for v in node.values():
            found |= _refs(v)
        return found
    if isinstance(node, list):
        return set().union(*(_refs(v) for v in node)) if node else set()
    return set()


def test_refs_resolve_and_every_schema_is_used(doc: dict[str, Any]) -> None:
    schemas = doc["components"]["schemas"]
    names = {r.removeprefix("#/components/schemas/") for r in _refs(doc)}
    assert names == set(schemas)


def test_request_schemas_are_closed_and_exact(doc: dict[str, Any]) -> None:
    schemas = doc["components"]["schemas"]
    send = schemas["SendRequest"]
    assert send["additionalProperties"] is False
    assert send["required"] == ["queue", "messages"]
    assert send["properties"]["ttl_ms"]["format"] == "int64"
    assert schemas["MessageJSON"]["properties"]["body"]["contentEncoding"] == "base64"
    assert schemas["MessageJSON"]["properties"]["properties"]["additionalProperties"] == {
        "type": "string"
    }
    assert schemas["DeleteQueueRequest"]["required"] == ["name", "generation"]
    assert schemas["ReceiveRequest"]["properties"]["receive_mode"]["enum"] == [0, 1]
    assert "required" not in schemas["QueueConfigJSON"]
    for route in wire.ROUTES:
        assert schemas[route.request.__name__]["additionalProperties"] is False


def test_response_required_means_always_emitted(doc: dict[str, Any]) -> None:
    schemas = doc["components"]["schemas"]
    assert "required" not in schemas["ReceivedMessage"]
    assert "required" not in schemas["PeekedMessage"]
    assert "lock_token" not in schemas["PeekedMessage"]["properties"]
    assert "state" not in schemas["ReceivedMessage"]["properties"]
    assert schemas["BatchResult"]["required"] == ["seq_number", "ok"]
    assert "generation" not in schemas["QueueInfoJSON"]["required"]
    assert schemas["SubscriptionJSON"]["required"] == ["topic", "name"]
    assert schemas["TestFilterResponse"]["required"] == ["valid", "ran", "matched"]
    assert schemas["ListKeysResponse"]["required"] == ["keys"]
    assert set(schemas["AccessKeyJSON"]["required"]) == {
        "id",
        "name",
        "permissions",
        "created_at_ms",
    }
    assert len(schemas["MetricsResponse"]["required"]) == 8
    assert len(schemas["StatusResponse"]["required"]) == 11


# -- the schemas agree with the codec (needs jsonschema, which the validator brings) ------


def _validator(doc: dict[str, Any], name: str) -> Any:
    root = {"$ref": f"#/components/schemas/{name}", "components": doc["components"]}
    return jsonschema.Draft202012Validator(root)


@pytest.mark.parametrize("case", REQUEST_CASES, ids=case_id)
def test_encoded_requests_match_their_schema(doc: dict[str, Any], case: Case) -> None:
    route, value, _ = case
    _validator(doc, route.request.__name__).validate(json.loads(wire.encode_request(route, value)))


@pytest.mark.parametrize("case", RESPONSE_CASES, ids=case_id)
def test_encoded_responses_match_their_schema(doc: dict[str, Any], case: Case) -> None:
    route, value, _ = case
    _validator(doc, route.response.__name__).validate(
        json.loads(wire.encode_response(route, value))
    )


_PARSER_LEVEL = ("invalid JSON", "empty request body", "unexpected data", "duplicate field")
_SCHEMA_BAD = [c for c in BAD_CASES if not c[3].startswith(_PARSER_LEVEL)]
# Stricter than JSON Schema can say: base64 *content* (contentEncoding is an annotation)
# and integer *spelling* (JSON Schema's integer is a value: 1.0 and 1e3 are integers there,
# while the decoder, like Go's, wants an integer literal).
_UNSAYABLE = [c for c in _SCHEMA_BAD if "base64" in c[3] and "want" not in c[3]]
_UNSAYABLE += [c for c in _SCHEMA_BAD if c[0] in ("float-integral", "exponent")]


@pytest.mark.parametrize(
    ("route", "body", "message"),
    [c[1:] for c in _SCHEMA_BAD if c not in _UNSAYABLE],
    ids=[c[0] for c in _SCHEMA_BAD if c not in _UNSAYABLE],
)
def test_what_the_decoder_rejects_the_schema_rejects(
    doc: dict[str, Any], route: wire.Route[Any, Any], body: bytes, message: str
) -> None:
    validator = _validator(doc, route.request.__name__)
    assert not validator.is_valid(json.loads(body)), message
