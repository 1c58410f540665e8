"""Wire value types (string, int64, boolean, base64, string map, list) and decode errors.

Each type decodes a parsed JSON value (strict for requests, lenient for responses),
encodes a Python value and describes itself as JSON Schema. A decode failure is ``Bad``,
which carries its JSON path: containers append their segment while it unwinds, so the
happy path never formats a path.
"""

from __future__ import annotations

import binascii
import json
from collections.abc import Callable
from typing import Any

Decoder = Callable[[Any], Any]
Encoder = Callable[[Any], Any]

INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1

_JSON_TYPE = {
    type(None): "null",
    bool: "boolean",
    int: "number",
    float: "number",
    str: "string",
    list: "array",
    dict: "object",
}


def json_type(value: object) -> str:
    """The JSON type name of a parsed value (``null``, ``boolean``, ``number`` ...)."""
    if isinstance(value, dict):
        return "object"
    return _JSON_TYPE.get(type(value), type(value).__name__)


class DupDict(dict[str, Any]):
    """A parsed JSON object that repeated a key; the shape decoder reports it with its path."""

    dup: str = ""


class Bad(Exception):
    """A decode failure; containers append their path segment while it propagates.

    ``where=False`` renders ``<path>: <detail>``; ``where=True`` renders
    ``<detail> in <object path>`` (unknown, duplicate and missing fields).
    """

    def __init__(self, detail: str, *, where: bool = False) -> None:
        super().__init__(detail)
        self.detail = detail
        self.where = where
        self.segments: list[str | int] = []

    def render(self, top: str, body: str = "request body") -> str:
        """The message; ``top`` names the outermost object, ``body`` the whole document."""
        path = ""
        for seg in reversed(self.segments):
            path += f"[{seg}]" if isinstance(seg, int) else (f".{seg}" if path else seg)
        if self.where:
            return f"{self.detail} in {path or top}"
        return f"{path or body}: {self.detail}"


def want(kind: str, value: object) -> Bad:
    return Bad(f"want {kind}, got {json_type(value)}")


class WireType:
    """One JSON value type: how to decode, encode and describe it."""

    def decoder(self, lenient: bool) -> Decoder:
        raise NotImplementedError

    def encoder(self) -> Encoder | None:
        """``None`` means the Python value is already its JSON form."""
        return None

    def zero(self) -> Any:
        raise NotImplementedError

    def schema(self) -> dict[str, Any]:
        raise NotImplementedError


class Str(WireType):
    def __init__(self, enum: tuple[str, ...] = ()) -> None:
        self.enum = enum

    def decoder(self, lenient: bool) -> Decoder:
        enum = frozenset(self.enum)
        allowed = ", ".join(f'"{e}"' for e in self.enum)

        def dec(v: Any) -> Any:
            if type(v) is not str:
                raise want("string", v)
            if enum and v not in enum and not lenient:
                raise Bad(f"want one of {allowed}, got {json.dumps(clip(v))}")
            return v

        return dec

    def zero(self) -> Any:
        return ""

    def schema(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "string"}
        if self.enum:
            out["enum"] = list(self.enum)
        return out


class Int(WireType):
    def __init__(self, enum: tuple[int, ...] = ()) -> None:
        self.enum = enum

    def decoder(self, lenient: bool) -> Decoder:
        enum = frozenset(self.enum)
        allowed = ", ".join(str(e) for e in self.enum)

        def dec(v: Any) -> Any:
            if type(v) is not int:
                raise want("integer", v)
            if not INT64_MIN <= v <= INT64_MAX:
                raise Bad("integer out of int64 range")
            if enum and v not in enum and not lenient:
                raise Bad(f"want one of {allowed}, got {v}")
            return v

        return dec

    def zero(self) -> Any:
        return 0

    def schema(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "integer", "format": "int64"}
        if self.enum:
            out["enum"] = list(self.enum)
        else:
            out["minimum"], out["maximum"] = INT64_MIN, INT64_MAX
        return out


class Bool(WireType):
    def decoder(self, lenient: bool) -> Decoder:
        def dec(v: Any) -> Any:
            if type(v) is not bool:
                raise want("boolean", v)
            return v

        return dec

    def zero(self) -> Any:
        return False

    def schema(self) -> dict[str, Any]:
        return {"type": "boolean"}


class Base64(WireType):
    """``bytes`` as standard, padded base64 (what Go does for ``[]byte``)."""

    def decoder(self, lenient: bool) -> Decoder:
        a2b = binascii.a2b_base64

        def dec(v: Any) -> Any:
            if type(v) is not str:
                raise want("base64 string", v)
            try:
                return a2b(v, strict_mode=True)
            except ValueError as exc:
                raise Bad(f"invalid base64: {exc}") from None

        return dec

    def encoder(self) -> Encoder | None:
        b2a = binascii.b2a_base64

        def enc(v: Any) -> Any:
            return b2a(v, newline=False).decode("ascii")

        return enc

    def zero(self) -> Any:
        return b""

    def schema(self) -> dict[str, Any]:
        return {"type": "string", "contentEncoding": "base64"}


class StrMap(WireType):
    """A JSON object of string values (message ``properties``)."""

    def decoder(self, lenient: bool) -> Decoder:
        def dec(v: Any) -> Any:
            if type(v) is not dict:
                check_object(v)
            for k, x in v.items():
                if type(x) is not str:
                    err = want("string", x)
                    err.segments.append(k)
                    raise err
            return v

        return dec

    def zero(self) -> Any:
        return {}

    def schema(self) -> dict[str, Any]:
        return {"type": "object", "additionalProperties": {"type": "string"}}


class List(WireType):
    """A JSON array; decodes to a tuple."""

    def __init__(self, item: WireType) -> None:
        self.item = item

    def decoder(self, lenient: bool) -> Decoder:
        item = self.item.decoder(lenient)

        def dec(v: Any) -> Any:
            if type(v) is not list:
                raise want("array", v)
            out = []
            for i, x in enumerate(v):
                try:
                    out.append(item(x))
                except Bad as err:
                    err.segments.append(i)
                    raise
            return tuple(out)

        return dec

    def encoder(self) -> Encoder | None:
        item = self.item.encoder()
        if item is None:
            return list
        return lambda v: [item(x) for x in v]

    def zero(self) -> Any:
        return ()

    def schema(self) -> dict[str, Any]:
        return {"type": "array", "items": self.item.schema()}


def check_object(v: Any) -> None:
    """Raise the right error for a value that is not a plain parsed object."""
    if isinstance(v, DupDict):
        raise Bad(f'duplicate field "{v.dup}"', where=True)
    if type(v) is not dict:
        raise want("object", v)


def clip(s: str, n: int = 64) -> str:
    return s if len(s) <= n else s[:n] + "..."
