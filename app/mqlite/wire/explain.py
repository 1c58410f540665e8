"""The slow path: a walker derived from the Structs' type info (``msgspec.inspect``).

msgspec decodes fast but words its errors its own way, and takes a repeated key without
a word. When it refuses a body (or the fast duplicate check cannot vouch for it), the
body is parsed again by ``strict.parse`` and walked here, which renders the exact
messages our contract pins (``tests/wire/wire_bad_cases.py``) and finds duplicate keys
with their path. It is also the ONE place where a request's explicit ``null`` in an
optional field means "absent" (msgspec refuses it; the walker drops it and ``codec``
decodes the cleaned copy), while a ``null`` in a required field is refused. The same
walker cleans a response the lenient fast path refused (a ``null``, an absent
always-emitted field) so that msgspec can build it.

A failure is ``Bad``, which carries its JSON path: containers append their segment while
it unwinds, so the happy path never formats a path.
"""

from __future__ import annotations

import binascii
import json
import typing
from functools import cache
from typing import Any, Literal

import msgspec
import msgspec.inspect as mi

from .base import INT64_MAX, INT64_MIN
from .strict import DupDict

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


class Bad(Exception):
    """A decode failure; containers append their path segment while it propagates.

    ``where=False`` renders ``<path>: <detail>``; ``where=True`` renders
    ``<detail> in <object path>`` (unknown, duplicate and missing fields).
    """

    def __init__(self, detail: str, *, where: bool = False, hint: str = "") -> None:
        super().__init__(detail)
        self.detail = detail
        self.where = where
        self.hint = hint  # rendered last: ' (did you mean "x"?)'
        self.segments: list[str | int] = []

    def render(self, top: str, body: str = "request body") -> str:
        """The message; ``top`` names the outermost object, ``body`` the whole document."""
        path = ""
        for seg in reversed(self.segments):
            path += f"[{seg}]" if isinstance(seg, int) else (f".{seg}" if path else seg)
        if self.where:
            return f"{self.detail} in {path or top}{self.hint}"
        return f"{path or body}: {self.detail}"


def nearest(name: str, fields: dict[str, mi.Field]) -> str:
    """`` (did you mean "x"?)`` for the closest known field name, "" when none is close
    (an SDK argument name sent as a wire field: ``wait_ms`` for ``wait_time_ms``, or a
    nested object's field sent flat: ``expr`` for ``"filter": {"expr": …}``)."""
    if len(name) > 64:
        return ""
    for key, f in fields.items():
        for inner in _unwrap(f.type), *getattr(_unwrap(f.type), "types", ()):
            if isinstance(inner, mi.StructType) and name in _fields(inner.cls)[0]:
                return f' (did you mean "{key}": {{"{name}": …}}?)'
    lowered = {k.lower(): k for k in fields}
    import difflib  # only on a refused body: kept out of the worker's idle footprint

    match = difflib.get_close_matches(name.lower(), list(lowered), n=1, cutoff=0.6)
    return f' (did you mean "{lowered[match[0]]}"?)' if match else ""


def want(kind: str, value: object) -> Bad:
    return Bad(f"want {kind}, got {json_type(value)}")


def clip(s: str, n: int = 64) -> str:
    return s if len(s) <= n else s[:n] + "..."


def _object(v: Any) -> dict[str, Any]:
    if isinstance(v, DupDict):
        raise Bad(f'duplicate field "{v.dup}"', where=True)
    if type(v) is not dict:
        raise want("object", v)
    return v


def _unwrap(t: mi.Type) -> mi.Type:
    while isinstance(t, mi.Metadata):
        t = t.type
    return t


@cache
def _fields(cls: type[msgspec.Struct]) -> tuple[dict[str, mi.Field], bool]:
    info = mi.type_info(cls)
    assert isinstance(info, mi.StructType)
    return {f.encode_name: f for f in info.fields}, info.forbid_unknown_fields


def _zero(t: mi.Type) -> Any:
    """The JSON zero value of an always-emitted field an old broker left out."""
    t = _unwrap(t)
    if isinstance(t, mi.StrType | mi.BytesType):
        return ""
    if isinstance(t, mi.IntType):
        return 0
    if isinstance(t, mi.FloatType):
        return 0.0
    if isinstance(t, mi.BoolType):
        return False
    if isinstance(t, mi.DictType | mi.StructType):
        return walk(t, {}, lenient=True)
    return []


def walk(t: mi.Type, v: Any, *, lenient: bool) -> Any:
    """Check ``v`` against ``t`` with the contract's messages; returns ``v`` cleaned. In
    both modes an explicit ``null`` in a field with a default is dropped: it means "absent"
    (the proto3 JSON mapping the original follows), so the field takes its default; a
    ``null`` where a value is required is refused like any other wrong type. In lenient
    mode also unknown keys and every null are dropped and absent always-emitted fields
    zeroed."""
    t = _unwrap(t)
    if isinstance(t, mi.StructType):
        return _struct(t.cls, v, lenient)
    if isinstance(t, mi.StrType):
        if type(v) is not str:
            raise want("string", v)
    elif isinstance(t, mi.IntType):
        if type(v) is not int:
            raise want("integer", v)
        if not INT64_MIN <= v <= INT64_MAX:
            raise Bad("integer out of int64 range")
    elif isinstance(t, mi.FloatType):  # a JSON number; an integer is one too
        if type(v) not in (int, float):
            raise want("number", v)
    elif isinstance(t, mi.BoolType):
        if type(v) is not bool:
            raise want("boolean", v)
    elif isinstance(t, mi.BytesType):
        _base64(v)
    elif isinstance(t, mi.LiteralType):
        _literal(t.values, v, lenient)
    elif isinstance(t, mi.DictType):
        cleaned: dict[str, Any] = {}
        for k, x in _object(v).items():
            try:
                cleaned[k] = walk(t.value_type, x, lenient=lenient)
            except Bad as err:
                err.segments.append(k)
                raise
        return cleaned
    elif isinstance(t, mi.ListType | mi.VarTupleType):
        if type(v) is not list:
            raise want("array", v)
        out = []
        for i, x in enumerate(v):
            try:
                out.append(walk(t.item_type, x, lenient=lenient))
            except Bad as err:
                err.segments.append(i)
                raise
        return out
    else:  # pragma: no cover - a declaration using a type this walker does not know
        raise TypeError(f"no wire rule for {t!r}")
    return v


def check(cls: type[msgspec.Struct], v: Any, *, lenient: bool) -> dict[str, Any]:
    """Walk a parsed object against Struct ``cls`` (see ``walk``)."""
    return _struct(cls, v, lenient)


def _struct(cls: type[msgspec.Struct], v: Any, lenient: bool) -> dict[str, Any]:
    fields, forbid = _fields(cls)
    if v is None and lenient:
        v = {}
    out: dict[str, Any] = {}
    for k, x in _object(v).items():
        f = fields.get(k)
        if f is None:
            if forbid:
                raise Bad(f'unknown field "{clip(k)}"', where=True, hint=nearest(k, fields))
            continue
        if x is None and (lenient or not f.required):
            continue  # null = absent (proto3 JSON): the default; a required field says "want"
        try:
            out[k] = walk(f.type, x, lenient=lenient)
        except Bad as err:
            err.segments.append(k)
            raise
    for key, f in fields.items():
        if f.required and key not in out:
            if not lenient:
                raise Bad(f'missing required field "{key}"', where=True)
            out[key] = _zero(f.type)
    return out


def _base64(v: Any) -> None:
    """Standard, padded base64 (what Go does for ``[]byte``)."""
    if type(v) is not str:
        raise want("base64 string", v)
    try:
        binascii.a2b_base64(v, strict_mode=True)
    except ValueError as exc:
        raise Bad(f"invalid base64: {exc}") from None
    if len(v) % 4:  # binascii takes "AAAA=" (excess padding); msgspec and Go do not
        raise Bad("invalid base64: Excess padding")


@cache
def _declared_literals() -> dict[frozenset[Any], tuple[Any, ...]]:
    """Each ``Literal`` of the declarations in its declared order (``msgspec.inspect``
    sorts the values; the messages list them as the declaration does)."""
    from .routes import ROUTES

    found: dict[frozenset[Any], tuple[Any, ...]] = {}
    seen: set[type[Any]] = set()

    def visit(hint: Any) -> None:
        if typing.get_origin(hint) is Literal:
            found[frozenset(typing.get_args(hint))] = typing.get_args(hint)
        elif isinstance(hint, type) and issubclass(hint, msgspec.Struct):
            if hint not in seen:
                seen.add(hint)
                for h in typing.get_type_hints(hint).values():
                    visit(h)
        else:
            for arg in typing.get_args(hint):
                visit(arg)

    for route in ROUTES:
        visit(route.request)
    return found


def _literal(values: tuple[Any, ...], v: Any, lenient: bool) -> None:
    values = _declared_literals().get(frozenset(values), values)
    if isinstance(values[0], str):
        if type(v) is not str:
            raise want("string", v)
        if v not in values and not lenient:
            allowed = ", ".join(f'"{x}"' for x in values)
            raise Bad(f"want one of {allowed}, got {json.dumps(clip(v))}")
    else:
        if type(v) is not int:
            raise want("integer", v)
        if not INT64_MIN <= v <= INT64_MAX:
            raise Bad("integer out of int64 range")
        if v not in values and not lenient:
            raise Bad(f"want one of {', '.join(str(x) for x in values)}, got {v}")


def fallback(exc: msgspec.MsgspecError) -> str:
    """msgspec's own words, shaped like ours (``<path>: <detail>``), for a refusal the
    walker does not model; ``tests/wire`` keeps this path unreachable for known input."""
    text = str(exc)
    detail, sep, where = text.rpartition(" - at `")
    if not sep:
        return f"request body: {text}"
    path = where.rstrip("`").removeprefix("$").lstrip(".")
    return f"{path or 'request body'}: {detail}"
