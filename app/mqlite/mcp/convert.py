"""Both directions between a tool and the wire, driven by the Structs' own schemas.

- ``to_wire``: tool arguments back to the wire's JSON, walking the route's
  ``wire_schema``: a bytes field given as text (``"body": "hello"``) is UTF-8 encoded to
  base64, one given as ``body_base64`` is passed as is; ``nest`` undoes ``flatten``.
- ``result_json``: a decoded response Struct as the tool's structured result: every
  bytes field ``X`` comes back as ``X_base64``, and also as ``X`` text when it is valid
  UTF-8 (the mirror of the input, so a peeked message can be sent again as it reads).

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
    """A response Struct (or a value inside one) as plain JSON, bytes as text + base64."""
    if isinstance(value, msgspec.Struct):
        shown = msgspec.to_builtins(value)
        out: dict[str, Any] = {}
        for f in msgspec.structs.fields(value):
            v = getattr(value, f.name)
            if isinstance(v, bytes):
                with contextlib.suppress(UnicodeDecodeError):  # binary: base64 only
                    out[f.encode_name] = v.decode("utf-8")
                out[f.encode_name + BASE64_SUFFIX] = base64.b64encode(v).decode("ascii")
            elif f.encode_name in shown:
                out[f.encode_name] = result_json(v)
        return out
    if isinstance(value, list | tuple):
        return [result_json(v) for v in value]
    if isinstance(value, dict):
        return {k: result_json(v) for k, v in value.items()}
    return msgspec.to_builtins(value)
