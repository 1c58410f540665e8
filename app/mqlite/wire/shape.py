"""Shapes: one declaration per JSON object drives decoding, encoding and JSON Schema.

A ``Shape`` lists its ``Field``s. From it we compile a *strict* decoder (requests:
unknown/duplicate fields, wrong types and missing required fields are errors), a
*lenient* decoder (responses: unknown fields ignored, ``null``/absent take the zero value,
so an old client survives a newer broker), an encoder (optional fields equal to their
default are omitted, required ones never are) and the schema for the OpenAPI document.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar

from .values import Bad, Decoder, Encoder, Str, WireType, check_object, clip, want

T = TypeVar("T")

_UNSET: Any = object()


class Field:
    """One JSON member: ``key``, type, presence rule and the Python attribute it maps to.

    ``required``: a request must carry it; a response always emits it. An optional field
    is omitted on encode while equal to ``default``, which must be what the built value
    holds when the field is absent (test_wire_shapes pins that for every shape).
    ``attr=None`` marks an accepted-and-ignored input (output-only Message fields on Send).
    """

    __slots__ = ("attr", "default", "doc", "key", "required", "type")

    def __init__(
        self,
        key: str,
        type: WireType,
        *,
        required: bool = False,
        default: Any = _UNSET,
        attr: str | None = "",
        doc: str = "",
    ) -> None:
        self.key = key
        self.type = type
        self.required = required
        self.default = type.zero() if default is _UNSET else default
        self.attr = key if attr == "" else attr
        self.doc = doc


def _plain_str(t: WireType) -> bool:
    return isinstance(t, Str) and not t.enum


class Shape(Generic[T]):
    """A JSON object type: its fields and how to build/flatten the Python value.

    ``build(**attrs)`` makes the value from decoded attributes; ``flatten(value)`` gives
    them back for encoding (default: ``getattr`` per field).
    """

    def __init__(
        self,
        name: str,
        fields: tuple[Field, ...],
        build: Callable[..., T],
        flatten: Callable[[T], Mapping[str, Any]] | None = None,
        doc: str = "",
    ) -> None:
        self.name = name
        self.fields = fields
        self.build = build
        self.flatten = flatten
        self.doc = doc
        self._decoders: dict[bool, Decoder] = {}
        encoded = [f for f in fields if f.attr is not None]
        self._attrs: tuple[str, ...] = tuple(f.attr for f in encoded if f.attr is not None)
        self._get = operator.attrgetter(*self._attrs) if len(encoded) > 1 else None
        # (key, omit rule, default, encoder): rule 0 = always, 1 = omit falsy, 2 = omit == default
        self._plan = tuple(
            (f.key, 0 if f.required else (2 if f.default else 1), f.default, f.type.encoder())
            for f in encoded
        )

    def decoder(self, lenient: bool) -> Decoder:
        dec = self._decoders.get(lenient)
        if dec is None:
            dec = self._decoders[lenient] = self._compile(lenient)
        return dec

    def _compile(self, lenient: bool) -> Decoder:
        return self._lenient() if lenient else self._strict()

    def _strict(self) -> Decoder:
        """Requests: the hot path (a Send decodes one Message object per message)."""
        # A plain string field is checked inline (``fn`` None): most Message fields are.
        table = {
            f.key: (f.attr, None if _plain_str(f.type) else f.type.decoder(False))
            for f in self.fields
        }
        required = tuple((f.attr, f.key) for f in self.fields if f.required and f.attr)
        build = self.build

        def dec(v: Any) -> Any:
            if type(v) is not dict:
                check_object(v)
            kw: dict[str, Any] = {}
            for k, x in v.items():
                try:
                    attr, fn = table[k]
                except KeyError:
                    raise Bad(f'unknown field "{clip(k)}"', where=True) from None
                if fn is None:
                    if type(x) is not str:
                        err = want("string", x)
                        err.segments.append(k)
                        raise err
                else:
                    try:
                        x = fn(x)
                    except Bad as err:
                        err.segments.append(k)
                        raise
                if attr is not None:
                    kw[attr] = x
            for attr, key in required:
                if attr not in kw:
                    raise Bad(f'missing required field "{key}"', where=True)
            return build(**kw)

        return dec

    def _lenient(self) -> Decoder:
        """Responses: unknown fields skipped; absent or null fields take their zero value."""
        table = {f.key: (f.attr, f.type.decoder(True)) for f in self.fields}
        required = tuple((f.attr, f.type) for f in self.fields if f.required and f.attr)
        build = self.build

        def dec(v: Any) -> Any:
            if v is None:
                v = {}
            elif type(v) is not dict:
                check_object(v)
            kw: dict[str, Any] = {}
            for k, x in v.items():
                entry = table.get(k)
                if entry is None or x is None:
                    continue
                try:
                    x = entry[1](x)
                except Bad as err:
                    err.segments.append(k)
                    raise
                if entry[0] is not None:
                    kw[entry[0]] = x
            for attr, typ in required:
                if attr not in kw:
                    kw[attr] = typ.zero()
            return build(**kw)

        return dec

    def encode(self, value: T) -> dict[str, Any]:
        """The JSON object for ``value``: optional fields equal to their default omitted."""
        if self.flatten is not None:
            attrs = self.flatten(value)
            values: tuple[Any, ...] = tuple(attrs[a] for a in self._attrs)
        elif self._get is not None:
            values = self._get(value)
        else:
            values = tuple(getattr(value, a) for a in self._attrs)
        out: dict[str, Any] = {}
        for (key, rule, default, enc), v in zip(self._plan, values, strict=True):
            if rule and (not v if rule == 1 else v == default):
                continue
            out[key] = v if enc is None else enc(v)
        return out

    def schema(self) -> dict[str, Any]:
        """The JSON Schema of this shape (requests closed and exact; responses exact)."""
        props: dict[str, Any] = {}
        for f in self.fields:
            s = f.type.schema()
            if f.doc:
                s = {**s, "description": f.doc} if "$ref" not in s else s
            props[f.key] = s
        out: dict[str, Any] = {"type": "object", "properties": props}
        req = [f.key for f in self.fields if f.required]
        if req:
            out["required"] = req
        out["additionalProperties"] = False
        if self.doc:
            out["description"] = self.doc
        return out


class Obj(WireType, Generic[T]):
    """A nested object of a declared shape."""

    def __init__(self, shape: Shape[T]) -> None:
        self.shape = shape

    def decoder(self, lenient: bool) -> Decoder:
        return self.shape.decoder(lenient)

    def encoder(self) -> Encoder | None:
        return self.shape.encode

    def zero(self) -> Any:
        return self.shape.decoder(True)({})

    def schema(self) -> dict[str, Any]:
        return {"$ref": f"#/components/schemas/{self.shape.name}"}
