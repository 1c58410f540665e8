"""Both directions between a tool and the wire, driven by the Structs' own schemas.

- ``to_wire``: tool arguments back to the wire's JSON, walking the route's
  ``wire_schema``: a bytes field given as text (``"body": "hello"``) is UTF-8 encoded to
  base64, one given as ``body_base64`` is passed as is; ``nest`` undoes ``flatten``.
- ``result_json``: a decoded response Struct as the tool's structured result: every
  bytes field ``X`` comes back base64-encoded as ``X``, as the wire and the original's
  tools answer it, and also as ``X_text`` when it is valid UTF-8, so an agent reads the
  text without decoding (and can send it again as ``body``).
- ``renamed`` / ``without_nulls``: an argument offered under the original tool's name
  back to its field; ``null`` in an optional argument dropped (absent, as on the wire).

Everything else is the wire's JSON unchanged: the broker's documented field names and
values (the api reference), fields at their zero value omitted as the broker omits them.
"""

from __future__ import annotations

import base64
import contextlib
from collections.abc import Mapping
from typing import Any

import msgspec

from mqlite import errors

from .schema import BASE64_SUFFIX, is_bytes

TEXT_SUFFIX = "_text"


def to_wire(schema: Mapping[str, Any], value: Any) -> Any:
    """Arguments as the tool's schema offers them → the JSON the wire Struct decodes."""
    props = schema.get("properties")
    if isinstance(value, dict) and isinstance(props, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            base = key.removesuffix(BASE64_SUFFIX)
            if base != key and is_bytes(props.get(base)):
                if base in value:
                    raise errors.InvalidArgument(f"give {base} or {key}, not both")
                out[base] = item
            elif is_bytes(props.get(key)):
                out[key] = _text_to_base64(key, item)
            elif key in props:
                out[key] = to_wire(props[key], item)
            else:
                out[key] = item  # the strict decoder names the unknown field
        return out
    items = schema.get("items")
    if isinstance(value, list) and isinstance(items, dict):
        return [to_wire(items, item) for item in value]
    return value


def _text_to_base64(name: str, value: Any) -> Any:
    if not isinstance(value, str):
        return value  # the decoder says what it wanted
    try:
        raw = value.encode("utf-8")
    except UnicodeEncodeError:
        raise errors.InvalidArgument(
            f"{name} is not valid Unicode text (give {name}{BASE64_SUFFIX} for binary data)"
        ) from None
    return base64.b64encode(raw).decode("ascii")


def renamed(arguments: Mapping[str, Any], names: Mapping[str, str]) -> dict[str, Any]:
    """Undo ``schema.renamed``: each argument ``arg`` of ``names`` back to its field."""
    out: dict[str, Any] = {}
    for key, value in arguments.items():
        wire_name = names.get(key, key)
        if wire_name in out or (wire_name != key and wire_name in arguments):
            raise errors.InvalidArgument(f"give {key} or {wire_name}, not both")
        out[wire_name] = value
    return out


def without_nulls(schema: Mapping[str, Any], value: Any) -> Any:
    """``null`` in an optional argument means "absent", as on the wire (issue 28):
    dropped before the schema check, at any depth the schema describes. A ``null``
    where a value is required stays, and the check names it."""
    props = schema.get("properties")
    if isinstance(value, dict) and isinstance(props, dict):
        required = set(schema.get("required", ()))
        return {
            k: without_nulls(props.get(k, {}), v)
            for k, v in value.items()
            if v is not None or k in required or k not in props  # unknown: refused
        }
    items = schema.get("items")
    if isinstance(value, list) and isinstance(items, dict):
        return [without_nulls(items, v) for v in value]
    return value


def nest(arguments: Mapping[str, Any], field: str, item: Mapping[str, Any]) -> dict[str, Any]:
    """Undo ``schema.flatten``: the arguments of the array item (by its wire schema
    ``item``, a bytes field in either spelling) become ``field: [item]``."""
    props = item.get("properties", {})

    def of_item(key: str) -> bool:
        base = key.removesuffix(BASE64_SUFFIX)
        return key in props or (base != key and is_bytes(props.get(base)))

    one = {k: v for k, v in arguments.items() if of_item(k)}
    rest = {k: v for k, v in arguments.items() if not of_item(k)}
    return {**rest, field: [one]}


def result_json(value: Any) -> Any:
    """A response Struct (or a value inside one) as plain JSON, bytes as base64 + text."""
    if isinstance(value, msgspec.Struct):
        shown = msgspec.to_builtins(value)
        out: dict[str, Any] = {}
        for f in msgspec.structs.fields(value):
            v = getattr(value, f.name)
            if f.encode_name not in shown:
                continue  # omitted on the wire (an empty body included): omitted here
            if isinstance(v, bytes):
                out[f.encode_name] = shown[f.encode_name]  # the wire's base64
                with contextlib.suppress(UnicodeDecodeError):  # binary: base64 only
                    out[f.encode_name + TEXT_SUFFIX] = v.decode("utf-8")
            else:
                out[f.encode_name] = result_json(v)
        return out
    if isinstance(value, list | tuple):
        return [result_json(v) for v in value]
    if isinstance(value, dict):
        return {k: result_json(v) for k, v in value.items()}
    return msgspec.to_builtins(value)
