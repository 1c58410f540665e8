"""Runtime value model: Go-flavoured times, durations and equality/ordering/formatting.

Filters must behave like expr over Go values, not like Python: ``true == 1`` is false,
``1 == 1.0`` is true, maps compare without numeric coercion, time needs nanosecond
resolution, and ``string(x)`` prints Go's ``%v``. Python's ``datetime``/``timedelta`` are
used only to compute calendar fields, never as the values a filter sees.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta, tzinfo
from decimal import Decimal
from typing import Any

import re2

NS = 1_000_000_000
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False
MONTHS = "January February March April May June July August September October November December"
WEEKDAYS = "Sunday Monday Tuesday Wednesday Thursday Friday Saturday"


class FilterRuntimeError(Exception):
    """A filter failed while evaluating one message: the message is not routed (fail-closed)."""


class RegexError(Exception):
    """A pattern RE2 (Go's regexp syntax) rejects."""


MAX_REGEX_PROGRAM = 20_000  # RE2 instructions; typical < 100, Unicode classes ~1200 (\pL)


def compile_regex(pattern: str) -> Any:
    """Compile with RE2 (linear-time matching), refusing programs over MAX_REGEX_PROGRAM:
    search time grows with program size x text length, so the size is bounded at
    Subscribe and the search is charged against the evaluator's regex budget."""
    try:
        compiled = re2.compile(pattern, options=_RE2_OPTIONS)
    except re2.error as exc:
        detail = exc.args[0] if exc.args else exc
        if isinstance(detail, bytes):
            detail = detail.decode("utf-8", "replace")
        raise RegexError(str(detail)) from None
    except (TypeError, ValueError) as exc:
        raise RegexError(str(exc)) from None
    size = int(compiled.programsize)
    if size > MAX_REGEX_PROGRAM:
        raise RegexError(
            f"pattern too complex (RE2 program size {size}, at most {MAX_REGEX_PROGRAM})"
        )
    return compiled


class StrMap(dict[str, str]):
    """``properties``: Go ``map[string]string``, whose absent keys read as ``""``."""

    __slots__ = ()


class Location:
    __slots__ = ("name", "tz")

    def __init__(self, name: str, tz: tzinfo) -> None:
        self.name = name
        self.tz = tz


UTC_LOCATION = Location("UTC", UTC)


class XTime:
    """Go ``time.Time``: epoch nanoseconds plus a location (UTC unless ``.In(...)``)."""

    __slots__ = ("_dt", "loc", "ns")

    def __init__(self, ns: int, loc: Location = UTC_LOCATION) -> None:
        self.ns = ns
        self.loc = loc
        self._dt: datetime | None = None

    @classmethod
    def from_ms(cls, ms: int) -> XTime:
        return cls(ms * 1_000_000)

    def dt(self) -> datetime:
        """The calendar view (microsecond precision suffices for calendar fields)."""
        if self._dt is None:
            utc = _EPOCH + timedelta(microseconds=self.ns // 1000)
            self._dt = utc.astimezone(self.loc.tz)
        return self._dt


class XDuration:
    """Go ``time.Duration``: integer nanoseconds, kept distinct from plain numbers."""

    __slots__ = ("ns",)

    def __init__(self, ns: int) -> None:
        self.ns = ns


class Named:
    """``time.Month`` / ``time.Weekday``: integers of a named type (``int(m)`` to compare)."""

    __slots__ = ("kind", "value")

    def __init__(self, kind: str, value: int) -> None:
        self.kind = kind
        self.value = value

    def name(self) -> str:
        names = (MONTHS if self.kind == "month" else WEEKDAYS).split()
        offset = 1 if self.kind == "month" else 0
        return names[self.value - offset]


def equal(a: object, b: object) -> bool:
    """``runtime.Equal``: numbers across int/float, arrays element-wise, else strict."""
    ta, tb = type(a), type(b)
    if ta is tb and (ta is str or ta is int or ta is bool):
        return a == b
    if (ta is int or ta is float) and (tb is int or tb is float):
        return a == b
    if ta is list and tb is list:
        la, lb = a, b
        assert isinstance(la, list) and isinstance(lb, list)
        return len(la) == len(lb) and all(equal(x, y) for x, y in zip(la, lb, strict=True))
    return deep_equal(a, b)


def deep_equal(a: object, b: object) -> bool:
    """Go ``reflect.DeepEqual``: same dynamic types all the way down."""
    if type(a) is not type(b):
        return False
    if isinstance(a, XTime) and isinstance(b, XTime):
        return a.ns == b.ns
    if isinstance(a, XDuration) and isinstance(b, XDuration):
        return a.ns == b.ns
    if isinstance(a, Named) and isinstance(b, Named):
        return a.kind == b.kind and a.value == b.value
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(deep_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(deep_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, Location) and isinstance(b, Location):
        return a.name == b.name
    return a is None or a == b


def order_key(a: object, b: object, op: str) -> tuple[Any, Any]:
    """Operands of ``< > <= >=`` as comparable Python values, or a runtime error."""
    ta, tb = type(a), type(b)
    if (ta is int or ta is float) and (tb is int or tb is float):
        return a, b
    if ta is str and tb is str:
        return a.encode(), b.encode()  # type: ignore[attr-defined]  # Go compares bytes
    if ta is tb and (ta is XTime or ta is XDuration):
        return a.ns, b.ns  # type: ignore[attr-defined]
    raise FilterRuntimeError(
        f"invalid operation: {type_name(a)} {op} {type_name(b)} (mismatched types)"
    )


def type_name(v: object) -> str:
    """expr's ``type()`` builtin."""
    if v is None:
        return "nil"
    tv = type(v)
    if tv is bool or tv is int or tv is str:
        return tv.__name__.replace("str", "string")
    if tv is float:
        return "float"
    if tv is list:
        return "array"
    if isinstance(v, dict):
        return "map"
    if isinstance(v, XTime):
        return "time.Time"
    if isinstance(v, XDuration):
        return "time.Duration"
    if isinstance(v, Named):
        return f"time.{v.kind.capitalize()}"
    if isinstance(v, Location):
        return "*time.Location"
    return "func"


def go_float(f: float) -> str:
    """Go ``%v`` for float64: shortest digits, exponent form when exp < -4 or exp >= 6."""
    if math.isnan(f):
        return "NaN"
    if math.isinf(f):
        return "+Inf" if f > 0 else "-Inf"
    if f == 0:
        return "-0" if math.copysign(1.0, f) < 0 else "0"
    sign, digits_t, exp = Decimal(repr(f)).normalize().as_tuple()
    digits = "".join(map(str, digits_t))
    assert isinstance(exp, int)
    x = len(digits) + exp - 1
    if x < -4 or x >= 6:
        mant = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        out = f"{mant}e{'+' if x >= 0 else '-'}{abs(x):02d}"
    else:
        out = format(Decimal(repr(f)).copy_abs().normalize(), "f")
    return "-" + out if sign else out


def go_string(v: object) -> str:
    """Go ``fmt.Sprintf("%v", v)`` for the values a filter can hold."""
    from mqlite.filters.timefmt import duration_string, format_time

    if v is None:
        return "<nil>"
    tv = type(v)
    if tv is str:
        return v  # type: ignore[return-value]
    if tv is bool:
        return "true" if v else "false"
    if tv is int:
        return str(v)
    if tv is float:
        return go_float(v)  # type: ignore[arg-type]
    if tv is list:
        return "[" + " ".join(go_string(x) for x in v) + "]"  # type: ignore[attr-defined]
    if isinstance(v, dict):
        items = sorted(v.items(), key=lambda kv: go_string(kv[0]))
        return "map[" + " ".join(f"{go_string(k)}:{go_string(x)}" for k, x in items) + "]"
    if isinstance(v, XTime):
        return format_time(v, "2006-01-02 15:04:05.999999999 -0700 MST")
    if isinstance(v, XDuration):
        return duration_string(v.ns)
    if isinstance(v, Named):
        return v.name()
    if isinstance(v, Location):
        return v.name
    return "<func>"
