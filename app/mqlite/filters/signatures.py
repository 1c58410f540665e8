"""Compile-time signatures of expr's plain builtins (``len``, ``upper``, ``split``...).

expr validates builtin arguments whose type it knows (``len(body_size)`` and
``upper(body_size)`` fail at Subscribe), so every builtin the runtime offers has a row
here: an argument-kind pattern and a result type. Predicate builtins live in checker.py.
"""

from __future__ import annotations

from collections.abc import Callable

from mqlite.filters import natures as t
from mqlite.filters.natures import T

# Argument kind letters: s string, i int, n number, a array, m map, * anything,
# d duration-or-number (int() accepts named integer types). Upper bound -1 = variadic.
_KINDS = {
    "s": ("string",),
    "i": ("int",),
    "n": ("int", "float"),
    "a": ("array",),
    "m": ("map",),
    "c": ("string", "array", "map"),
    "g": ("array", "map"),
    "d": ("int", "float", "string", "duration", "month", "weekday"),
    "f": ("int", "float", "string"),
    "l": ("location",),
    "x": ("int", "float", "array"),
}

Result = T | Callable[[list[T]], T]


def _same(args: list[T]) -> T:
    return args[0]


def _elem(args: list[T]) -> T:
    return (args[0].elem or t.UNKNOWN) if args[0].kind == "array" else t.UNKNOWN


def _get(args: list[T]) -> T:
    return (args[0].elem or t.UNKNOWN) if args[0].kind in ("array", "map") else t.UNKNOWN


def _keys(args: list[T]) -> T:
    return t.array_of((args[0].key or t.UNKNOWN) if args[0].kind == "map" else t.UNKNOWN)


def _values(args: list[T]) -> T:
    return t.array_of((args[0].elem or t.UNKNOWN) if args[0].kind == "map" else t.UNKNOWN)


def _abs(args: list[T]) -> T:
    return args[0] if t.is_number(args[0]) else t.UNKNOWN


_ANY_ARRAY = t.array_of(t.UNKNOWN)

SIGNATURES: dict[str, tuple[str, int, Result]] = {
    # name: (argument kinds, minimum count, result); len(kinds) is the maximum
    "len": ("c", 1, t.INT),
    "type": ("*", 1, t.STRING),
    "abs": ("n", 1, _abs),
    "ceil": ("n", 1, t.FLOAT),
    "floor": ("n", 1, t.FLOAT),
    "round": ("n", 1, t.FLOAT),
    "int": ("d", 1, t.INT),
    "float": ("f", 1, t.FLOAT),
    "string": ("*", 1, t.STRING),
    "trim": ("ss", 1, t.STRING),
    "trimPrefix": ("ss", 1, t.STRING),
    "trimSuffix": ("ss", 1, t.STRING),
    "upper": ("s", 1, t.STRING),
    "lower": ("s", 1, t.STRING),
    "split": ("ssi", 2, t.STRINGS),
    "splitAfter": ("ssi", 2, t.STRINGS),
    "replace": ("sssi", 3, t.STRING),
    "repeat": ("si", 2, t.STRING),
    "join": ("as", 1, t.STRING),
    "indexOf": ("ss", 2, t.INT),
    "lastIndexOf": ("ss", 2, t.INT),
    "hasPrefix": ("ss", 2, t.BOOL),
    "hasSuffix": ("ss", 2, t.BOOL),
    "toJSON": ("*", 1, t.STRING),
    "fromJSON": ("s", 1, t.UNKNOWN),
    "toBase64": ("s", 1, t.STRING),
    "fromBase64": ("s", 1, t.STRING),
    "now": ("", 0, t.TIME),
    "date": ("sss", 1, t.TIME),
    "timezone": ("s", 1, t.LOCATION),
    "first": ("a", 1, _elem),
    "last": ("a", 1, _elem),
    "get": ("g*", 2, _get),
    "take": ("ai", 2, _same),
    "keys": ("m", 1, _keys),
    "values": ("m", 1, _values),
    "toPairs": ("m", 1, t.array_of(_ANY_ARRAY)),
    "fromPairs": ("a", 1, t.map_of(t.UNKNOWN, t.UNKNOWN)),
    "reverse": ("a", 1, _same),
    "uniq": ("a", 1, _same),
    "flatten": ("a", 1, _ANY_ARRAY),
    "sort": ("as", 1, _same),
    "bitand": ("ii", 2, t.INT),
    "bitor": ("ii", 2, t.INT),
    "bitxor": ("ii", 2, t.INT),
    "bitnand": ("ii", 2, t.INT),
    "bitshl": ("ii", 2, t.INT),
    "bitshr": ("ii", 2, t.INT),
    "bitushr": ("ii", 2, t.INT),
    "bitnot": ("i", 1, t.INT),
}
VARIADIC: dict[str, tuple[str, T]] = {  # name -> (kind of every argument, result)
    "max": ("x", t.UNKNOWN),
    "min": ("x", t.UNKNOWN),
    "mean": ("x", t.FLOAT),
    "median": ("x", t.FLOAT),
    "concat": ("a", _ANY_ARRAY),
}


def check_builtin(name: str, args: list[T]) -> T | str:
    """The result type of ``name(args)`` or an error message."""
    if name in VARIADIC:
        kind, result = VARIADIC[name]
        if not args:
            return f"not enough arguments to call {name}"
        for arg in args:
            if not t.maybe(arg, *_KINDS[kind]):
                return f"invalid argument for {name} (type {arg})"
        return result
    kinds, minimum, res = SIGNATURES[name]
    if len(args) < minimum:
        return f"not enough arguments to call {name}"
    if len(args) > len(kinds):
        return f"too many arguments to call {name}"
    for kind, arg in zip(kinds, args, strict=False):
        if kind != "*" and not t.maybe(arg, *_KINDS[kind]):
            return f"invalid argument for {name} (type {arg})"
    return res(args) if callable(res) else res
