"""Tool input schemas, derived from the wire's request Structs (never written by hand).

``msgspec.json.schema(Request)`` is the broker's own contract: every field with its type,
default and ``Doc``. Two views are built from it:

- ``wire_schema``: that contract with its ``$ref``s inlined (agent hosts handle flat
  schemas best, and ``convert`` walks it to find the bytes fields), minus the noise a
  model pays tokens for and cannot use (titles, the int64 bounds on every integer);
- ``agent_schema``: what a tool offers. Output-only message fields (the broker ignores
  them) are dropped, and every bytes field ``X`` (base64 on the wire) becomes ``X``, UTF-8
  text, plus ``X_base64`` for binary data, so an agent sends ``"body": "hello"``.

``flatten`` (one item of an array field offered as top-level arguments: ``send`` takes
one message), ``keep`` (a subset of the fields), ``renamed`` (an argument under the name
the original's tool used: reject's ``reason``), ``narrowed`` (a tool's tighter bounds or
words on an argument) and ``with_property`` (a tool-only argument such as purge's
``all``) reshape a schema per tool; ``tools`` says which.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

import msgspec

from mqlite.wire.base import INT64_MAX, INT64_MIN

Schema = dict[str, Any]

BASE64_SUFFIX = "_base64"
_OUTPUT_ONLY = "output-only"
_INT64 = (INT64_MIN, INT64_MAX)


def is_bytes(prop: Mapping[str, Any] | None) -> bool:
    """A bytes field: base64 text on the wire."""
    return prop is not None and prop.get("contentEncoding") == "base64"


def _rst(text: str) -> str:
    """Docstrings use reST ``literals``; a model reads Markdown."""
    return text.replace("``", "`")


def _inline(node: Any, defs: Mapping[str, Any]) -> Any:
    if isinstance(node, list):
        return [_inline(v, defs) for v in node]
    if not isinstance(node, dict):
        return node
    out: Schema = {}
    ref = node.get("$ref")
    if isinstance(ref, str):
        target = _inline(defs[ref.rsplit("/", 1)[-1]], defs)
        doc = node.get("description")
        if doc and target.get("description"):
            target["description"] = f"{doc}. {target['description']}"
        elif doc:
            target["description"] = doc
        out.update(target)
        node = {k: v for k, v in node.items() if k not in ("$ref", "description")}
    for key, value in node.items():
        if key == "title":
            continue
        if key == "description" and isinstance(value, str):
            out[key] = _rst(value)
        elif key == "properties" and isinstance(value, dict):
            out[key] = {name: _inline(prop, defs) for name, prop in value.items()}
        else:
            out[key] = _inline(value, defs)
    if out.get("format") == "int64" and (out.get("minimum"), out.get("maximum")) == _INT64:
        del out["minimum"], out["maximum"], out["format"]
    return out


def wire_schema(cls: type[msgspec.Struct]) -> Schema:
    """The request Struct's JSON Schema, ``$ref``s inlined, the top-level doc dropped
    (the tool's description says what the call does)."""
    raw = msgspec.json.schema(cls)
    schema: Schema = _inline({"$ref": raw["$ref"]}, raw.get("$defs", {}))
    schema.pop("description", None)
    return schema


def agent_schema(schema: Mapping[str, Any]) -> Schema:
    """The wire schema as a tool offers it: bytes as text or base64, no output-only fields."""
    node: Schema = copy.deepcopy(dict(schema))
    _agentize(node)
    return node


def _agentize(node: Any) -> None:
    if isinstance(node, list):
        for item in node:
            _agentize(item)
        return
    if not isinstance(node, dict):
        return
    props = node.get("properties")
    if isinstance(props, dict):
        reshaped: Schema = {}
        for name, prop in props.items():
            if str(prop.get("description", "")).startswith(_OUTPUT_ONLY):
                continue
            if is_bytes(prop):
                reshaped[name] = {
                    "description": f"the {name} as UTF-8 text (for binary data give "
                    f"{name}{BASE64_SUFFIX} instead)",
                    "type": "string",
                }
                wire_doc = prop.get("description", name)
                reshaped[name + BASE64_SUFFIX] = {
                    **prop,
                    "description": f"{wire_doc} (instead of {name})",
                }
                continue
            _agentize(prop)
            reshaped[name] = prop
        node["properties"] = reshaped
        if "required" in node:
            node["required"] = [r for r in node["required"] if r in reshaped]
    for key in ("items", "anyOf", "oneOf", "allOf"):
        if key in node:
            _agentize(node[key])


def flatten(schema: Mapping[str, Any], field: str) -> Schema:
    """Offer ONE item of the array ``field`` as top-level arguments, where ``field`` was."""
    item = schema["properties"][field]["items"]
    props: Schema = {}
    for name, prop in schema["properties"].items():
        if name == field:
            props.update(item["properties"])
        else:
            props[name] = prop
    required = [r for r in schema.get("required", []) if r != field]
    required += list(item.get("required", []))
    return {**schema, "properties": props, "required": required}


def keep(schema: Mapping[str, Any], fields: Iterable[str]) -> Schema:
    """Only ``fields`` (in the Struct's order); a name the Struct lacks is an error."""
    wanted = list(fields)
    missing = [f for f in wanted if f not in schema["properties"]]
    if missing:
        raise KeyError(f"no such request fields: {missing}")
    props = {k: v for k, v in schema["properties"].items() if k in wanted}
    required = [r for r in schema.get("required", []) if r in props]
    return {**schema, "properties": props, "required": required}


def with_property(schema: Mapping[str, Any], name: str, prop: Mapping[str, Any]) -> Schema:
    """A tool-only argument (it never reaches the wire: the tool consumes it)."""
    if name in schema["properties"]:
        raise KeyError(f"{name} is already a request field")
    return {**schema, "properties": {**schema["properties"], name: dict(prop)}}


def renamed(schema: Mapping[str, Any], names: Mapping[str, str]) -> Schema:
    """Offer request field ``names[arg]`` as argument ``arg`` (same place, same schema)."""
    back = {wire: arg for arg, wire in names.items()}
    missing = [w for w in back if w not in schema["properties"]]
    if missing:
        raise KeyError(f"no such request fields: {missing}")
    props = {back.get(k, k): v for k, v in schema["properties"].items()}
    if len(props) != len(schema["properties"]):
        raise KeyError(f"a new name clashes with a request field: {sorted(names)}")
    required = [back.get(r, r) for r in schema.get("required", [])]
    return {**schema, "properties": props, "required": required}


def narrowed(schema: Mapping[str, Any], changes: Mapping[str, Mapping[str, Any]]) -> Schema:
    """JSON Schema keywords laid over offered arguments (``minimum``, ``default``, a
    ``description`` in the tool's terms): the tool refuses what it would not mean."""
    props = dict(schema["properties"])
    for name, keywords in changes.items():
        if name not in props:
            raise KeyError(f"{name} is not an argument")
        props[name] = {**props[name], **keywords}
    return {**schema, "properties": props}
