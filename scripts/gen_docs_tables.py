"""Rewrite the generated reference sections of the docs (never edited by hand):

- docs/http.md "RPC reference": every RPC's request and response fields, types,
  defaults and limits, rendered from the OpenAPI document the broker serves (itself
  generated from the wire table's Structs and their ``Doc``s);
- docs/operations.md "Environment variables": every ``MQLITE_*`` variable, from
  ``mqlite.env_reference``.

Each section sits between ``<!-- generated:NAME -->`` and ``<!-- /generated:NAME -->``.
Run from the repository root after changing a wire Struct or a variable:

    .venv/bin/python scripts/gen_docs_tables.py          # rewrite
    .venv/bin/python scripts/gen_docs_tables.py --check  # exit 1 if a section is stale

``tests/e2e/test_http_reference.py`` checks the HTTP section against a running broker's
``/openapi.json``; ``tests/repo/test_docs_tables.py`` checks both sections are current.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
HTTP_PAGE = REPO / "docs" / "http.md"
OPS_PAGE = REPO / "docs" / "operations.md"
I64 = (-(1 << 63), (1 << 63) - 1)


def _cell(text: str) -> str:
    return " ".join(text.replace("|", "\\|").replace("``", "`").split())


def _type(schema: dict[str, Any]) -> str:
    if "$ref" in schema:
        return schema["$ref"].rsplit("/", 1)[1]
    if "enum" in schema:
        return " \\| ".join(f"`{v!r}`" if isinstance(v, str) else f"`{v}`" for v in schema["enum"])
    if "anyOf" in schema:
        return " or ".join(_type(s) for s in schema["anyOf"])
    kind = schema.get("type", "any")
    if kind == "array":
        return f"[{_type(schema.get('items', {}))}]"
    if kind == "string" and schema.get("contentEncoding") == "base64":
        return "string (base64)"
    return str(kind)


def _limits(schema: dict[str, Any]) -> str:
    parts = []
    lo, hi = schema.get("minimum"), schema.get("maximum")
    if (lo, hi) != I64:
        if lo is not None:
            parts.append(f"≥ {lo}")
        if hi is not None:
            parts.append(f"≤ {hi}")
    for key, what in (("maxLength", "chars"), ("maxItems", "items"), ("maxProperties", "keys")):
        if key in schema:
            parts.append(f"≤ {schema[key]} {what}")
    return ", ".join(parts)


def _fields(schema: dict[str, Any]) -> list[str]:
    required = set(schema.get("required", ()))
    rows = ["| field | type | default | meaning |", "|---|---|---|---|"]
    for name, field in schema.get("properties", {}).items():
        if name in required:
            default = "required"
        elif "default" in field:
            default = f"`{_json(field['default'])}`"
        else:
            default = "absent"
        meaning = "; ".join(x for x in (field.get("description", ""), _limits(field)) if x)
        rows.append(f"| `{name}` | {_type(field)} | {default} | {_cell(meaning)} |")
    if len(rows) == 2:
        rows.append("| (none: `{}`) | | | |")
    return rows


def _json(value: Any) -> str:
    import json

    return json.dumps(value, separators=(",", ":"))


def _refs(schema: Any) -> set[str]:
    found: set[str] = set()
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key == "$ref":
                found.add(value.rsplit("/", 1)[1])
            else:
                found |= _refs(value)
    elif isinstance(schema, list):
        for value in schema:
            found |= _refs(value)
    return found


def render_http(document: dict[str, Any]) -> str:
    """The RPC reference from an OpenAPI document (the served one, or its generator)."""
    schemas = document["components"]["schemas"]
    out = [
        "Generated from the wire table (`scripts/gen_docs_tables.py`): the same Structs "
        "serve `/openapi.json`, decode requests and word their errors. A request field "
        "marked *absent* may be omitted; integers are JSON numbers in Go's int64 "
        "range. The engine's limits ([Limits](#limits)) apply beside the ones listed.",
        "",
    ]
    nested: set[str] = set()
    for path, item in document["paths"].items():
        op = item.get("post")
        if op is None:
            continue
        request = op["requestBody"]["content"]["application/json"]["schema"]["$ref"]
        response = op["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
        req_name, resp_name = request.rsplit("/", 1)[1], response.rsplit("/", 1)[1]
        req, resp = schemas[req_name], schemas[resp_name]
        nested |= _refs(req) | _refs(resp)
        answer = (
            ", ".join(f"`{n}` {_type(f)}" for n, f in resp.get("properties", {}).items()) or "`{}`"
        )
        out += [
            f"### `{path.removeprefix('/mqlite.v1.')}`",
            "",
            f"{op['summary']}. `POST {path}`, permission `{op['x-mqlite-permission']}`. "
            f"Request `{req_name}`:",
            "",
            *_fields(req),
            "",
            f"Answer `{resp_name}`: {answer}.",
            "",
        ]
    seen: set[str] = set()
    todo = sorted(nested)
    objects: list[str] = []
    while todo:
        name = todo.pop(0)
        if name in seen:
            continue
        seen.add(name)
        schema = schemas[name]
        todo += sorted(_refs(schema) - seen)
        objects += [
            f"#### `{name}`",
            "",
            _cell(schema.get("description", "")),
            "",
            *_fields(schema),
            "",
        ]
    out += ["### Objects inside requests and answers", "", *objects]
    return "\n".join(out).rstrip() + "\n"


def render_env() -> str:
    from mqlite.env_reference import markdown_table

    return markdown_table()


def _section(text: str, name: str) -> re.Match[str]:
    pattern = re.compile(rf"(<!-- generated:{name} -->\n)(.*?)(<!-- /generated:{name} -->)", re.S)
    match = pattern.search(text)
    if match is None:
        raise SystemExit(f"no <!-- generated:{name} --> section")
    return match


def current(page: Path, name: str) -> str:
    return _section(page.read_text(), name).group(2)


def _write(page: Path, name: str, body: str, check: bool) -> bool:
    text = page.read_text()
    match = _section(text, name)
    if match.group(2) == body:
        return True
    if check:
        print(f"stale: {page.relative_to(REPO)} section {name}", file=sys.stderr)
        return False
    page.write_text(text[: match.start(2)] + body + text[match.end(2) :])
    print(f"wrote {page.relative_to(REPO)} section {name}")
    return True


def main(argv: list[str]) -> int:
    from mqlite import wire
    from mqlite.version import VERSION

    check = "--check" in argv
    ok = _write(HTTP_PAGE, "rpc-reference", render_http(wire.openapi_document(VERSION)), check)
    ok = _write(OPS_PAGE, "env-vars", render_env(), check) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
