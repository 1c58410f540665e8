"""Collection, number-list, JSON and base64 builtins (split out of builtins.py).

Same rules as builtins.py: Go semantics, explicit type checks, FilterRuntimeError on bad
operands; memory-heavy results are charged to the evaluator's budget by the caller.
"""

from __future__ import annotations

import base64
import binascii
import json
from functools import cmp_to_key
from typing import TYPE_CHECKING, Any

from mqlite.filters.ops import lt
from mqlite.filters.values import (
    FilterRuntimeError,
    Location,
    Named,
    XDuration,
    XTime,
    equal,
    go_string,
    type_name,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from mqlite.filters.runtime import Evaluator

    Fn = Callable[[Evaluator, list[Any]], Any]


def _s(v: Any, fn: str) -> str:
    if type(v) is not str:
        raise FilterRuntimeError(f"invalid argument for {fn} (type {type_name(v)})")
    return str(v)


def _a(v: Any, fn: str) -> list[Any]:
    if type(v) is not list:
        raise FilterRuntimeError(f"invalid argument for {fn} (type {type_name(v)})")
    return list(v)


def _num(v: Any, fn: str) -> int | float:
    if type(v) is not int and type(v) is not float:
        raise FilterRuntimeError(f"invalid argument for {fn} (type {type_name(v)})")
    return float(v) if type(v) is float else int(v)


def numbers(a: list[Any], fn: str) -> list[int | float]:
    out: list[int | float] = []
    for v in a:
        if type(v) is list:
            out.extend(numbers(v, fn))
        else:
            out.append(_num(v, fn))
    return out


def extreme(biggest: bool) -> Fn:
    def extreme(ev: Evaluator, a: list[Any]) -> Any:
        values = numbers(a, "max" if biggest else "min")
        if not values:
            return None
        best = values[0]
        for v in values[1:]:
            if lt(best, v) if biggest else lt(v, best):
                best = v
        return best

    return extreme


def mean(ev: Evaluator, a: list[Any]) -> float:
    values = numbers(a, "mean")
    return float(sum(values)) / len(values) if values else 0.0


def median(ev: Evaluator, a: list[Any]) -> float:
    values = sorted(numbers(a, "median"))
    if not values:
        return 0.0
    mid = len(values) // 2
    return float(values[mid]) if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


def to_json(ev: Evaluator, a: list[Any]) -> str:
    def plain(v: Any) -> Any:
        if isinstance(v, XTime | XDuration | Named | Location):
            return go_string(v)
        if isinstance(v, dict):
            return {str(k): plain(x) for k, x in v.items()}
        if isinstance(v, list):
            return [plain(x) for x in v]
        return v

    try:
        return json.dumps(plain(a[0]), indent=2, sort_keys=True, ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise FilterRuntimeError(f"toJSON: {exc}") from None


def from_json(ev: Evaluator, a: list[Any]) -> Any:
    try:
        return json.loads(_s(a[0], "fromJSON"), parse_constant=_reject, parse_int=float)
    except ValueError as exc:
        raise FilterRuntimeError(f"fromJSON: {exc}") from None


def _reject(name: str) -> Any:
    raise ValueError(f"invalid JSON constant {name}")


def from_base64(ev: Evaluator, a: list[Any]) -> str:
    try:
        raw = base64.b64decode(_s(a[0], "fromBase64"), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise FilterRuntimeError(f"fromBase64: {exc}") from None
    return raw.decode("utf-8", "replace")


def get(ev: Evaluator, a: list[Any]) -> Any:
    obj, key = a
    if isinstance(obj, dict):
        return obj.get(key) if type(key) is str else None
    if type(obj) is list and type(key) is int and -len(obj) <= key < len(obj):
        return obj[key]
    return None


def uniq(ev: Evaluator, a: list[Any]) -> list[Any]:
    """First occurrences in order, linear time: each item is keyed so that two keys are
    equal exactly when ``equal`` holds (numbers across int/float at the top level and
    element-wise in arrays, strict types deeper); an unkeyable item is compared by scan."""
    items = _a(a[0], "uniq")
    ev.step(len(items))
    seen: set[Any] = set()
    odd: list[Any] = []  # items with no key (NaN, unknown types): compared the slow way
    out: list[Any] = []
    for x in items:
        key = equality_key(x)
        if key is None:
            if any(equal(x, y) for y in odd):
                continue
            odd.append(x)
        elif key in seen:
            continue
        else:
            seen.add(key)
        out.append(x)
    return out


def equality_key(x: Any, deep: bool = False) -> Any:
    """A hashable key consistent with ``equal`` (``deep_equal`` when ``deep``); None when
    the value has no such key (NaN never equals itself; unknown types)."""
    t = type(x)
    if t is bool:
        return ("bool", x)
    if t is int or t is float:
        if x != x:  # NaN
            return None
        if deep:
            return (t.__name__, x)
        return ("num", int(x) if t is float and x.is_integer() else x)
    if t is str:
        return ("str", x)
    if x is None:
        return ("nil",)
    if t is list:
        keys = tuple(equality_key(v, deep) for v in x)
        return None if any(k is None for k in keys) else ("list", keys)
    if isinstance(x, dict):
        pairs = [(k, equality_key(v, True)) for k, v in x.items()]
        return None if any(k is None for _, k in pairs) else ("map", t, frozenset(pairs))
    if isinstance(x, XTime | XDuration):
        return (t.__name__, x.ns)
    if isinstance(x, Named):
        return ("named", x.kind, x.value)
    return None


def sort(ev: Evaluator, a: list[Any]) -> list[Any]:
    order = _s(a[1], "sort") if len(a) > 1 else "asc"
    if order not in ("asc", "desc"):
        raise FilterRuntimeError(f"unknown order {order}, use asc or desc")
    items = _a(a[0], "sort")
    ev.step(len(items) * max(len(items).bit_length(), 1))  # comparisons, charged up front
    items.sort(key=cmp_to_key(lambda x, y: -1 if lt(x, y) else 1 if lt(y, x) else 0))
    return items[::-1] if order == "desc" else items


def flatten(v: list[Any]) -> list[Any]:
    out: list[Any] = []
    for x in v:
        out.extend(flatten(x) if type(x) is list else [x])
    return out
