"""Runtime implementations of expr's plain builtins, MQLite's helpers and time methods.

Every callable a filter can reach is listed here explicitly: there is no fallback to
Python attributes or functions, so ``subject.__class__`` or ``body_json.items()`` can
never touch a Python object. Semantics follow Go (byte offsets, ``Atoi``, rounding half
away from zero, ``ToUpper`` leaving ``ß`` alone).
"""

from __future__ import annotations

import base64
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mqlite.filters import arrays, timefmt
from mqlite.filters.dates import parse_date
from mqlite.filters.ops import wrap
from mqlite.filters.values import (
    NS,
    FilterRuntimeError,
    Named,
    XDuration,
    go_string,
    type_name,
)

if TYPE_CHECKING:
    from mqlite.filters.runtime import Evaluator

Fn = Callable[["Evaluator", list[Any]], Any]
_UNITS = {"seconds": NS, "minutes": 60 * NS, "hours": 3600 * NS, "days": 86400 * NS}
_UNITS["weeks"] = 7 * _UNITS["days"]


def mqlite_function(name: str, args: list[Any]) -> XDuration:
    """``seconds() minutes() hours() days() weeks() duration()`` (MQLite's helpers)."""
    (arg,) = args
    if name == "duration":
        if type(arg) is not str:
            raise FilterRuntimeError(f"duration expects a string (got {type_name(arg)})")
        return XDuration(timefmt.parse_duration(arg))
    count = int(arg) if type(arg) in (int, float) else 0  # MQLite's toInt: anything else is 0
    return XDuration(wrap(count * _UNITS[name]))


def _s(v: Any, fn: str) -> str:
    if type(v) is not str:
        raise FilterRuntimeError(f"invalid argument for {fn} (type {type_name(v)})")
    return str(v)


def _i(v: Any, fn: str) -> int:
    if type(v) is not int:
        raise FilterRuntimeError(f"invalid argument for {fn} (type {type_name(v)})")
    return int(v)


def _a(v: Any, fn: str) -> list[Any]:
    if type(v) is not list:
        raise FilterRuntimeError(f"invalid argument for {fn} (type {type_name(v)})")
    return list(v)


def _m(v: Any, fn: str) -> dict[Any, Any]:
    if not isinstance(v, dict):
        raise FilterRuntimeError(f"invalid argument for {fn} (type {type_name(v)})")
    return v


def _num(v: Any, fn: str) -> int | float:
    if type(v) is not int and type(v) is not float:
        raise FilterRuntimeError(f"invalid argument for {fn} (type {type_name(v)})")
    return float(v) if type(v) is float else int(v)


def _len(ev: Evaluator, a: list[Any]) -> int:
    v = a[0]
    if type(v) in (str, list) or isinstance(v, dict):
        return len(v)
    raise FilterRuntimeError(f"invalid argument for len (type {type_name(v)})")


def _round(v: float) -> float:
    return math.floor(v + 0.5) if v >= 0 else -math.floor(-v + 0.5)


def _int(ev: Evaluator, a: list[Any]) -> int:
    v = a[0]
    if type(v) is int:
        return int(v)
    if type(v) is float:
        if math.isnan(v) or math.isinf(v):
            return -(2**63)
        return wrap(int(v))
    if type(v) is str:
        body = v[1:] if v[:1] in "+-" else v
        if not body.isascii() or not body.isdigit():
            raise FilterRuntimeError(f'strconv.Atoi: parsing "{v}": invalid syntax')
        return int(v)
    if isinstance(v, Named):
        return v.value
    if isinstance(v, XDuration):
        return v.ns
    raise FilterRuntimeError(f"invalid argument for int (type {type_name(v)})")


def _float(ev: Evaluator, a: list[Any]) -> float:
    v = a[0]
    if type(v) in (int, float):
        return float(v)
    if type(v) is str and "_" not in v and v.strip() == v:
        try:
            return float(v)
        except ValueError:
            pass
    raise FilterRuntimeError(f'strconv.ParseFloat: parsing "{v}": invalid syntax')


def _split(after: bool) -> Fn:
    def split(ev: Evaluator, a: list[Any]) -> list[str]:
        s, sep = _s(a[0], "split"), _s(a[1], "split")
        limit = _i(a[2], "split") if len(a) > 2 else -1
        if limit == 0:
            return []
        if sep == "":
            parts = list(s)
            if 0 < limit < len(parts):
                parts = [*parts[: limit - 1], "".join(parts[limit - 1 :])]
        else:
            parts = s.split(sep, limit - 1 if limit > 0 else -1)
            if after:
                parts = [p + sep for p in parts[:-1]] + parts[-1:]
        ev.charge(len(parts))
        return parts

    return split


def _repeat(ev: Evaluator, a: list[Any]) -> str:
    s, count = _s(a[0], "repeat"), _i(a[1], "repeat")
    if count < 0 or count > 1_000_000:
        raise FilterRuntimeError("invalid argument for repeat")
    ev.charge(len(s) * count)
    return s * count


def _replace(ev: Evaluator, a: list[Any]) -> str:
    s, old, new = _s(a[0], "replace"), _s(a[1], "replace"), _s(a[2], "replace")
    count = _i(a[3], "replace") if len(a) > 3 else -1
    # Charge the result's size BEFORE building it: "" as old matches between every char.
    found = s.count(old) if old else len(s) + 1
    if count >= 0:
        found = min(found, count)
    ev.charge(len(s) + found * max(len(new) - len(old), 0))
    return s.replace(old, new, count)


def _join(ev: Evaluator, a: list[Any]) -> str:
    glue = _s(a[1], "join") if len(a) > 1 else ""
    parts = [_s(x, "join") for x in _a(a[0], "join")]
    ev.charge(sum(map(len, parts)) + len(glue) * max(len(parts) - 1, 0))  # before building
    return glue.join(parts)


def _index_of(last: bool) -> Fn:
    def index_of(ev: Evaluator, a: list[Any]) -> int:
        s, sub = _s(a[0], "indexOf").encode(), _s(a[1], "indexOf").encode()
        return s.rfind(sub) if last else s.find(sub)

    return index_of


def _bits(fn: Callable[[int, int], int], name: str) -> Fn:
    def bits(ev: Evaluator, a: list[Any]) -> int:
        x, y = _i(a[0], name), _i(a[1], name)
        if name.startswith("bitsh") or name == "bitushr":
            if y < 0:
                raise FilterRuntimeError(f"invalid operation: negative shift count {y}")
            y = min(y, 64)
        return wrap(fn(x, y))

    return bits


BUILTINS: dict[str, Fn] = {
    "len": _len,
    "type": lambda ev, a: type_name(a[0]),
    "abs": lambda ev, a: wrap(abs(v)) if type(v := _num(a[0], "abs")) is int else abs(v),
    "ceil": lambda ev, a: float(math.ceil(_num(a[0], "ceil"))),
    "floor": lambda ev, a: float(math.floor(_num(a[0], "floor"))),
    "round": lambda ev, a: float(_round(_num(a[0], "round"))),
    "int": _int,
    "float": _float,
    "string": lambda ev, a: go_string(a[0]),
    "trim": lambda ev, a: _s(a[0], "trim").strip(_s(a[1], "trim") if len(a) > 1 else None),
    "trimPrefix": lambda ev, a: _s(a[0], "trimPrefix").removeprefix(a[1] if len(a) > 1 else " "),
    "trimSuffix": lambda ev, a: _s(a[0], "trimSuffix").removesuffix(a[1] if len(a) > 1 else " "),
    "upper": lambda ev, a: "".join(c if c == "ß" else c.upper() for c in _s(a[0], "upper")),
    "lower": lambda ev, a: _s(a[0], "lower").lower(),
    "split": _split(after=False),
    "splitAfter": _split(after=True),
    "replace": _replace,
    "repeat": _repeat,
    "join": _join,
    "indexOf": _index_of(last=False),
    "lastIndexOf": _index_of(last=True),
    "hasPrefix": lambda ev, a: _s(a[0], "hasPrefix").startswith(_s(a[1], "hasPrefix")),
    "hasSuffix": lambda ev, a: _s(a[0], "hasSuffix").endswith(_s(a[1], "hasSuffix")),
    "max": arrays.extreme(biggest=True),
    "min": arrays.extreme(biggest=False),
    "mean": arrays.mean,
    "median": arrays.median,
    "toJSON": arrays.to_json,
    "fromJSON": arrays.from_json,
    "toBase64": lambda ev, a: base64.b64encode(_s(a[0], "toBase64").encode()).decode(),
    "fromBase64": arrays.from_base64,
    "now": lambda ev, a: ev.now(),
    "date": lambda ev, a: parse_date(*[_s(x, "date") for x in a]),
    "timezone": lambda ev, a: timefmt.load_location(_s(a[0], "timezone")),
    "first": lambda ev, a: _a(a[0], "first")[0] if a[0] else None,
    "last": lambda ev, a: _a(a[0], "last")[-1] if a[0] else None,
    "get": arrays.get,
    "take": lambda ev, a: _a(a[0], "take")[: max(_i(a[1], "take"), 0)],
    "keys": lambda ev, a: sorted(_m(a[0], "keys"), key=str),
    "values": lambda ev, a: [v for _, v in sorted(_m(a[0], "values").items(), key=str)],
    "toPairs": lambda ev, a: [[k, v] for k, v in sorted(_m(a[0], "toPairs").items(), key=str)],
    "fromPairs": lambda ev, a: {p[0]: p[1] for p in _a(a[0], "fromPairs")},
    "reverse": lambda ev, a: _a(a[0], "reverse")[::-1],
    "uniq": arrays.uniq,
    "flatten": lambda ev, a: arrays.flatten(_a(a[0], "flatten")),
    "sort": arrays.sort,
    "concat": lambda ev, a: [x for arr in a for x in _a(arr, "concat")],
    "bitand": _bits(lambda x, y: x & y, "bitand"),
    "bitor": _bits(lambda x, y: x | y, "bitor"),
    "bitxor": _bits(lambda x, y: x ^ y, "bitxor"),
    "bitnand": _bits(lambda x, y: x & ~y, "bitnand"),
    "bitshl": _bits(lambda x, y: x << y, "bitshl"),
    "bitshr": _bits(lambda x, y: x >> y, "bitshr"),
    "bitushr": _bits(lambda x, y: (x % 2**64) >> y, "bitushr"),
    "bitnot": lambda ev, a: ~_i(a[0], "bitnot"),
}
