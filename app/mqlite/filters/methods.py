"""Whitelisted methods of time values (``enqueued_at.Hour()``, ``d.Hours()``...).

expr lets a filter call any exported Go method; Python has no such safe notion, so the
callable set is this explicit table keyed by receiver type and name. Anything else is a
runtime error (the checker already rejects it when the receiver type is known).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mqlite.filters import timefmt
from mqlite.filters.ops import wrap
from mqlite.filters.values import (
    NS,
    FilterRuntimeError,
    Location,
    Named,
    XDuration,
    XTime,
    type_name,
)


def _t(v: Any) -> XTime:
    if type(v) is not XTime:
        raise FilterRuntimeError(f"expected time.Time (got {type_name(v)})")
    return v


def _d(v: Any) -> XDuration:
    if type(v) is not XDuration:
        raise FilterRuntimeError(f"expected time.Duration (got {type_name(v)})")
    return v


def _round_to(ns: int, unit: int, mode: str) -> int:
    if unit <= 0:
        return ns
    rem = ns % unit if ns >= 0 else -((-ns) % unit)
    if mode == "trunc":
        return ns - rem
    if abs(rem) * 2 >= unit:
        return ns - rem + (unit if ns >= 0 else -unit)
    return ns - rem


def _add_date(t: XTime, years: int, months: int, days: int) -> XTime:
    dt = t.dt()
    month0 = dt.month - 1 + months
    year = dt.year + years + month0 // 12
    base = dt.replace(year=year, month=month0 % 12 + 1, day=1)
    from datetime import timedelta

    moved = base + timedelta(days=dt.day - 1 + days)
    delta_us = int((moved - dt).total_seconds()) * 1_000_000
    return XTime(t.ns + delta_us * 1000, t.loc)


_TIME: dict[str, Callable[..., Any]] = {
    "Year": lambda t: t.dt().year,
    "Month": lambda t: Named("month", t.dt().month),
    "Day": lambda t: t.dt().day,
    "Hour": lambda t: t.dt().hour,
    "Minute": lambda t: t.dt().minute,
    "Second": lambda t: t.dt().second,
    "Nanosecond": lambda t: t.ns % NS,
    "YearDay": lambda t: t.dt().timetuple().tm_yday,
    "Weekday": lambda t: Named("weekday", (t.dt().weekday() + 1) % 7),
    "Unix": lambda t: t.ns // NS,
    "UnixMilli": lambda t: t.ns // 1_000_000,
    "UnixMicro": lambda t: t.ns // 1_000,
    "UnixNano": lambda t: t.ns,
    "Format": lambda t, layout: timefmt.format_time(t, _str(layout)),
    "String": lambda t: timefmt.format_time(t, "2006-01-02 15:04:05.999999999 -0700 MST"),
    "Before": lambda t, u: t.ns < _t(u).ns,
    "After": lambda t, u: t.ns > _t(u).ns,
    "Equal": lambda t, u: t.ns == _t(u).ns,
    "Compare": lambda t, u: (t.ns > _t(u).ns) - (t.ns < u.ns),
    "IsZero": lambda t: False,
    "Sub": lambda t, u: XDuration(wrap(t.ns - _t(u).ns)),
    "Add": lambda t, d: XTime(t.ns + _d(d).ns, t.loc),
    "AddDate": lambda t, y, m, d: _add_date(t, _int(y), _int(m), _int(d)),
    "Truncate": lambda t, d: XTime(_round_to(t.ns, _d(d).ns, "trunc"), t.loc),
    "Round": lambda t, d: XTime(_round_to(t.ns, _d(d).ns, "round"), t.loc),
    "In": lambda t, loc: XTime(t.ns, _loc(loc)),
    "UTC": lambda t: XTime(t.ns),
}
_DURATION: dict[str, Callable[..., Any]] = {
    "Hours": lambda d: d.ns / (3600 * NS),
    "Minutes": lambda d: d.ns / (60 * NS),
    "Seconds": lambda d: d.ns / NS,
    "Milliseconds": lambda d: int(d.ns / 1_000_000),
    "Microseconds": lambda d: int(d.ns / 1_000),
    "Nanoseconds": lambda d: d.ns,
    "String": lambda d: timefmt.duration_string(d.ns),
    "Abs": lambda d: XDuration(abs(d.ns)),
    "Round": lambda d, u: XDuration(_round_to(d.ns, _d(u).ns, "round")),
    "Truncate": lambda d, u: XDuration(_round_to(d.ns, _d(u).ns, "trunc")),
}
_NAMED: dict[str, Callable[..., Any]] = {"String": lambda v: v.name()}
_LOCATION: dict[str, Callable[..., Any]] = {"String": lambda v: v.name}


def _str(v: Any) -> str:
    if type(v) is not str:
        raise FilterRuntimeError(f"expected string (got {type_name(v)})")
    return str(v)


def _int(v: Any) -> int:
    if type(v) is not int:
        raise FilterRuntimeError(f"expected int (got {type_name(v)})")
    return int(v)


def _loc(v: Any) -> Location:
    if type(v) is not Location:
        raise FilterRuntimeError(f"expected *time.Location (got {type_name(v)})")
    return v


def call_method(obj: Any, name: str, args: list[Any]) -> Any:
    to = type(obj)
    table = (
        _TIME
        if to is XTime
        else _DURATION
        if to is XDuration
        else _NAMED
        if to is Named
        else _LOCATION
        if to is Location
        else None
    )
    fn = table.get(name) if table is not None else None
    if fn is None:
        raise FilterRuntimeError(f"type {type_name(obj)} has no method {name}")
    try:
        return fn(obj, *args)
    except TypeError:
        raise FilterRuntimeError(f"wrong number of arguments to call {name}") from None
