"""Static types ("natures") of the checker, the MQLite environment and the method whitelist.

expr rejects at compile time what it can prove wrong; to report the same compile errors
we need a small type lattice. ``unknown`` stands for Go's ``any`` (values read from
``body_json``): an unknown operand passes almost every check and is verified at run time.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class T:
    kind: str
    elem: T | None = None
    key: T | None = None

    def __str__(self) -> str:
        if self.kind == "array":
            return f"[]{self.elem}"
        if self.kind == "map":
            return f"map[{self.key}]{self.elem}"
        return _GO_NAMES.get(self.kind, self.kind)


_GO_NAMES = {
    "unknown": "interface {}",
    "float": "float64",
    "time": "time.Time",
    "duration": "time.Duration",
    "month": "time.Month",
    "weekday": "time.Weekday",
    "location": "*time.Location",
}

UNKNOWN = T("unknown")
NIL = T("nil")
BOOL = T("bool")
INT = T("int")
FLOAT = T("float")
STRING = T("string")
TIME = T("time")
DURATION = T("duration")
MONTH = T("month")
WEEKDAY = T("weekday")
LOCATION = T("location")
ENV = T("env")
STRINGS = T("array", STRING)
PROPERTIES = T("map", STRING, STRING)
JSON_OBJECT = T("map", UNKNOWN, STRING)


def array_of(elem: T) -> T:
    return T("array", elem)


def map_of(key: T, elem: T) -> T:
    return T("map", elem, key)


def is_number(t: T) -> bool:
    return t.kind in ("int", "float")


def maybe_number(t: T) -> bool:
    return t.kind in ("int", "float", "unknown")


def maybe(t: T, *kinds: str) -> bool:
    """True when ``t`` is one of ``kinds`` or could be at run time (unknown)."""
    return t.kind == "unknown" or t.kind in kinds


ENVIRONMENT: dict[str, T] = {
    "subject": STRING,
    "properties": PROPERTIES,
    "group_id": STRING,
    "correlation_id": STRING,
    "reply_to": STRING,
    "message_id": STRING,
    "content_type": STRING,
    "enqueued_at": TIME,
    "visible_at": TIME,
    "subject_parts": STRINGS,
    "body_size": INT,
    "property_keys": STRINGS,
    "body_text": STRING,
    "body_json": JSON_OBJECT,
}

# MQLite's environment functions: name -> (argument type, result).
FUNCTIONS: dict[str, tuple[T, T]] = {
    "seconds": (INT, DURATION),
    "minutes": (INT, DURATION),
    "hours": (INT, DURATION),
    "days": (INT, DURATION),
    "weeks": (INT, DURATION),
    "duration": (STRING, DURATION),
}

# Whitelisted methods: receiver kind -> name -> (argument types, result).
METHODS: dict[str, dict[str, tuple[tuple[T, ...], T]]] = {
    "time": {
        **{m: ((), INT) for m in ("Year", "Day", "Hour", "Minute", "Second", "YearDay")},
        **{m: ((), INT) for m in ("Nanosecond", "Unix", "UnixMilli", "UnixMicro", "UnixNano")},
        "Month": ((), MONTH),
        "Weekday": ((), WEEKDAY),
        "Format": ((STRING,), STRING),
        "String": ((), STRING),
        "Before": ((TIME,), BOOL),
        "After": ((TIME,), BOOL),
        "Equal": ((TIME,), BOOL),
        "Compare": ((TIME,), INT),
        "IsZero": ((), BOOL),
        "Sub": ((TIME,), DURATION),
        "Add": ((DURATION,), TIME),
        "AddDate": ((INT, INT, INT), TIME),
        "Truncate": ((DURATION,), TIME),
        "Round": ((DURATION,), TIME),
        "In": ((LOCATION,), TIME),
        "UTC": ((), TIME),
    },
    "duration": {
        "Hours": ((), FLOAT),
        "Minutes": ((), FLOAT),
        "Seconds": ((), FLOAT),
        "Milliseconds": ((), INT),
        "Microseconds": ((), INT),
        "Nanoseconds": ((), INT),
        "String": ((), STRING),
        "Abs": ((), DURATION),
        "Round": ((DURATION,), DURATION),
        "Truncate": ((DURATION,), DURATION),
    },
    "month": {"String": ((), STRING)},
    "weekday": {"String": ((), STRING)},
    "location": {"String": ((), STRING)},
}


def assignable(value: T, target: T) -> bool:
    """Go assignability, loosened for ``unknown``/``nil`` the way expr's checker is."""
    if value == target or "unknown" in (value.kind, target.kind):
        return True
    return value.kind == "nil" and target.kind in ("array", "map", "unknown")


def comparable(left: T, right: T) -> bool:
    """May ``left == right`` compile? (expr checker rules, spec §4)."""
    if {"unknown", "nil"} & {left.kind, right.kind}:
        return True
    if is_number(left) and is_number(right):
        return True
    if left.kind == right.kind and left.kind in ("duration", "time", "array"):
        return True
    return left == right


def orderable(left: T, right: T) -> bool:
    kinds = ("int", "float", "string", "time", "duration")
    if left.kind == "unknown" or right.kind == "unknown":
        return maybe(left, *kinds) and maybe(right, *kinds)
    if is_number(left) and is_number(right):
        return True
    return left.kind == right.kind and left.kind in ("string", "time", "duration")


def unify(types: list[T]) -> T:
    """The common type of array elements / conditional branches, else unknown."""
    if types and all(t == types[0] for t in types):
        return types[0]
    return UNKNOWN
