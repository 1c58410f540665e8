"""Operators with expr/Go semantics: int64 wrap-around, float division, truncated ``%``.

Python's operators differ from Go's in ways a filter can observe (``-7 % 3``, ``1/0``,
``True + 1``, ``"ab" * 2``), so simpleeval's default operator table is never used;
every operator is one of these functions, raising FilterRuntimeError on bad operands.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from mqlite.filters.values import (
    FilterRuntimeError,
    StrMap,
    XDuration,
    XTime,
    equal,
    order_key,
    type_name,
)

_LO, _HI, _SPAN = -(2**63), 2**63, 2**64


def wrap(v: int) -> int:
    """int64 two's-complement wrap-around, as Go integer arithmetic does."""
    if _LO <= v < _HI:
        return v
    return ((v - _LO) % _SPAN) + _LO


def _bad(op: str, a: object, b: object) -> FilterRuntimeError:
    return FilterRuntimeError(
        f"invalid operation: {op} (mismatched types {type_name(a)} and {type_name(b)})"
    )


def _nums(a: object, b: object) -> bool:
    ta, tb = type(a), type(b)
    return (ta is int or ta is float) and (tb is int or tb is float)


def add(a: Any, b: Any) -> Any:
    ta, tb = type(a), type(b)
    if ta is int and tb is int:
        return wrap(a + b)
    if ta is str and tb is str:
        return a + b
    if _nums(a, b):
        return float(a) + float(b)
    if ta is XTime and tb is XDuration:
        return XTime(a.ns + b.ns, a.loc)
    if ta is XDuration and tb is XTime:
        return XTime(a.ns + b.ns, b.loc)
    if ta is XDuration and tb is XDuration:
        return XDuration(wrap(a.ns + b.ns))
    raise _bad("+", a, b)


def sub(a: Any, b: Any) -> Any:
    ta, tb = type(a), type(b)
    if ta is int and tb is int:
        return wrap(a - b)
    if _nums(a, b):
        return float(a) - float(b)
    if ta is XTime and tb is XTime:
        return XDuration(wrap(a.ns - b.ns))
    if ta is XTime and tb is XDuration:
        return XTime(a.ns - b.ns, a.loc)
    if ta is XDuration and tb is XDuration:
        return XDuration(wrap(a.ns - b.ns))
    raise _bad("-", a, b)


def mul(a: Any, b: Any) -> Any:
    ta, tb = type(a), type(b)
    if ta is int and tb is int:
        return wrap(a * b)
    if _nums(a, b):
        return float(a) * float(b)
    if ta is XDuration and tb is XDuration:
        return XDuration(wrap(a.ns * b.ns))
    if ta is XDuration and tb is int:
        return XDuration(wrap(a.ns * b))
    if ta is int and tb is XDuration:
        return XDuration(wrap(a * b.ns))
    if ta is XDuration and tb is float:  # expr: Duration * float is a float64 at run time
        return float(a.ns) * b
    if ta is float and tb is XDuration:
        return a * float(b.ns)
    raise _bad("*", a, b)


def div(a: Any, b: Any) -> float:
    if not _nums(a, b):
        raise _bad("/", a, b)
    x, y = float(a), float(b)
    if y == 0.0:
        if x == 0.0 or math.isnan(x):
            return math.nan
        return math.copysign(math.inf, x) * math.copysign(1.0, y)
    return x / y


def mod(a: Any, b: Any) -> int:
    if type(a) is not int or type(b) is not int:
        raise _bad("%", a, b)
    if b == 0:
        raise FilterRuntimeError("integer divide by zero")
    r = abs(a) % abs(b)
    return -r if a < 0 else r


def power(a: Any, b: Any) -> float:
    if not _nums(a, b):
        raise _bad("**", a, b)
    x, y = float(a), float(b)
    try:
        return math.pow(x, y)
    except OverflowError:
        odd = y.is_integer() and int(y) % 2 == 1
        return -math.inf if x < 0 and odd else math.inf
    except ValueError:
        return math.inf if x == 0.0 else math.nan


def eq(a: Any, b: Any) -> bool:
    return equal(a, b)


def ne(a: Any, b: Any) -> bool:
    return not equal(a, b)


def lt(a: Any, b: Any) -> bool:
    x, y = order_key(a, b, "<")
    return bool(x < y)


def gt(a: Any, b: Any) -> bool:
    x, y = order_key(a, b, ">")
    return bool(x > y)


def le(a: Any, b: Any) -> bool:
    x, y = order_key(a, b, "<=")
    return bool(x <= y)


def ge(a: Any, b: Any) -> bool:
    x, y = order_key(a, b, ">=")
    return bool(x >= y)


def member_in(needle: Any, haystack: Any) -> bool:
    """``in``: key presence for maps, ``Equal`` membership for arrays, nil is false."""
    th = type(haystack)
    if th is StrMap or th is dict:
        if type(needle) is not str:
            raise FilterRuntimeError(f"cannot use {type_name(needle)} as a map[string] key")
        return needle in haystack
    if th is list:
        return any(equal(needle, x) for x in haystack)
    if haystack is None:
        return False
    raise FilterRuntimeError(f'operator "in" not defined on {type_name(haystack)}')


def _strings(op: str, a: Any, b: Any) -> bool:
    if type(a) is str and type(b) is str:
        return True
    if a is None or b is None:
        return False
    raise _bad(op, a, b)


def contains(a: Any, b: Any) -> bool:
    return _strings("contains", a, b) and b in a


def starts_with(a: Any, b: Any) -> bool:
    return _strings("startsWith", a, b) and a.startswith(b)


def ends_with(a: Any, b: Any) -> bool:
    return _strings("endsWith", a, b) and a.endswith(b)


EAGER: dict[str, Callable[[Any, Any], Any]] = {
    "==": eq,
    "!=": ne,
    "<": lt,
    ">": gt,
    "<=": le,
    ">=": ge,
    "+": add,
    "-": sub,
    "*": mul,
    "/": div,
    "%": mod,
    "**": power,
    "^": power,
    "in": member_in,
    "contains": contains,
    "startsWith": starts_with,
    "endsWith": ends_with,
}


def to_index(key: Any, length: int) -> int:
    tk = type(key)
    if tk is int:
        i = key
    elif tk is float:
        i = int(key)
    else:
        raise FilterRuntimeError(f"array index must be an integer (got {type_name(key)})")
    if i < 0:
        i += length
    if not 0 <= i < length:
        raise FilterRuntimeError(f"index out of range: {key} (array length is {length})")
    return int(i)


def fetch(obj: Any, key: Any) -> Any:
    """``obj[key]`` / ``obj.key``: a key lookup, never Python attribute access."""
    to = type(obj)
    if to is StrMap:
        if type(key) is not str:
            raise FilterRuntimeError(f"cannot use {type_name(key)} as a map[string] key")
        return obj.get(key, "")
    if to is dict:
        if isinstance(key, list | dict):
            raise FilterRuntimeError(f"cannot use {type_name(key)} as a map key")
        return obj.get(key)  # groupBy maps have non-string keys
    if to is list:
        return obj[to_index(key, len(obj))]
    if obj is None:
        raise FilterRuntimeError(f"cannot fetch {key} from <nil>")
    raise FilterRuntimeError(f"cannot fetch {key} from {type_name(obj)}")


def _bound(v: Any, default: int, length: int) -> int:
    if v is None:
        return default
    if type(v) is not int and type(v) is not float:
        raise FilterRuntimeError(f"slice index must be an integer (got {type_name(v)})")
    i = int(v)
    if i < 0:
        i += length
    return min(max(i, 0), length)


def slice_value(obj: Any, lo: Any, hi: Any) -> Any:
    """Go-style clamped slicing; strings slice by UTF-8 byte offsets."""
    if type(obj) is list:
        n = len(obj)
        b = _bound(hi, n, n)
        return obj[min(_bound(lo, 0, n), b) : b]
    if type(obj) is str:
        raw = obj.encode()
        n = len(raw)
        b = _bound(hi, n, n)
        return raw[min(_bound(lo, 0, n), b) : b].decode("utf-8", "replace")
    raise FilterRuntimeError(f"cannot slice {type_name(obj)}")
