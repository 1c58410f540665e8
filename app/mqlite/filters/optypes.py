"""Result types of operators and predicate builtins (expr's checker table, spec §4).

Split from checker.py: this is the pure table part (types in, type or None out), the
checker supplies positions and messages.
"""

from __future__ import annotations

from mqlite.filters import natures as t
from mqlite.filters.natures import T

_ARITH = frozenset(["+", "-", "*", "/", "%", "**", "^"])


def predicate_result(name: str, coll: T, elem: T, body: T, has_pred: bool) -> T:
    if name in ("all", "any", "none", "one"):
        return t.BOOL
    if name in ("findIndex", "findLastIndex", "count"):
        return t.INT
    if name in ("find", "findLast"):
        return elem
    if name in ("filter", "sortBy"):
        return coll if coll.kind == "array" else t.array_of(t.UNKNOWN)
    if name == "map":
        return t.array_of(body)
    if name == "sum":
        summed = body if has_pred else elem
        return summed if t.is_number(summed) else t.UNKNOWN
    if name == "groupBy":
        return t.map_of(t.UNKNOWN, t.array_of(elem))
    return t.UNKNOWN  # reduce


def binary_type(op: str, left: T, right: T) -> T | None:
    """Result type of ``left op right`` or None when expr's checker rejects it."""
    lk, rk = left.kind, right.kind
    unknown = lk == "unknown" or rk == "unknown"
    if op in ("&&", "||", "and", "or"):
        return t.BOOL if t.maybe(left, "bool") and t.maybe(right, "bool") else None
    if op in ("==", "!="):
        return t.BOOL if t.comparable(left, right) else None
    if op in ("<", ">", "<=", ">="):
        return t.BOOL if t.orderable(left, right) else None
    if op == "??":
        return left if t.assignable(right, left) and lk != "nil" else t.UNKNOWN
    if op == "in":
        if rk == "map":
            return t.BOOL if t.assignable(left, right.key or t.UNKNOWN) else None
        if rk == "array":
            return t.BOOL if t.comparable(left, right.elem or t.UNKNOWN) else None
        return t.BOOL if rk in ("unknown", "nil") else None
    if op in ("contains", "startsWith", "endsWith", "matches"):
        return t.BOOL if t.maybe(left, "string") and t.maybe(right, "string") else None
    if op == "..":
        return t.array_of(t.INT) if t.maybe(left, "int") and t.maybe(right, "int") else None
    if op in _ARITH:
        return arith_type(op, left, right, unknown)
    return None


def arith_type(op: str, left: T, right: T, unknown: bool) -> T | None:
    lk, rk = left.kind, right.kind
    if t.is_number(left) and t.is_number(right):
        if op in ("/", "**", "^"):
            return t.FLOAT
        if op == "%":
            return t.INT if lk == rk == "int" else None
        return t.INT if lk == rk == "int" else t.FLOAT
    pair = (lk, rk)
    if op == "+" and pair in (("string", "string"),):
        return t.STRING
    if op == "+" and pair in (("time", "duration"), ("duration", "time")):
        return t.TIME
    if op in ("+", "-") and pair == ("duration", "duration"):
        return t.DURATION
    if op == "-" and pair == ("time", "time"):
        return t.DURATION
    if op == "-" and pair == ("time", "duration"):
        return t.TIME
    if op == "*" and "duration" in pair and all(k in ("duration", "int", "float") for k in pair):
        return t.DURATION
    if unknown:
        other = right if lk == "unknown" else left
        allowed = {
            "+": ("int", "float", "string", "time", "duration", "unknown"),
            "-": ("int", "float", "time", "duration", "unknown"),
            "*": ("int", "float", "duration", "unknown"),
            "%": ("int", "unknown"),
        }.get(op, ("int", "float", "unknown"))
        if other.kind in allowed:
            return t.FLOAT if op in ("/", "**", "^") else t.UNKNOWN
    return None
