"""Go time text: layouts (``2006-01-02 15:04``), ``Duration.String()`` and MQLite durations.

Filters written for the original use Go's reference-time layouts in ``Format``/``date``
and Go's duration syntax, so both are implemented here on integer nanoseconds.
"""

from __future__ import annotations

import re
from datetime import UTC, timedelta, timezone
from fractions import Fraction
from zoneinfo import ZoneInfo

from mqlite.filters.values import NS, FilterRuntimeError, Location, XTime

_UNITS = {
    "ns": 1,
    "us": 1_000,
    "µs": 1_000,
    "ms": 1_000_000,
    "s": NS,
    "m": 60 * NS,
    "h": 3600 * NS,
    "d": 86400 * NS,
    "w": 7 * 86400 * NS,
}
_DUR_PART = re.compile(r"([0-9]*\.?[0-9]+)(ns|us|µs|ms|s|m|h|d|w)")
_MAX_NS = 2**63 - 1


def parse_duration(text: str) -> int:
    """MQLite's ``duration()``: Go units plus ``d`` and ``w``, fractions and a sign."""
    body, sign = text, 1
    if body[:1] in ("+", "-"):
        sign = -1 if body[0] == "-" else 1
        body = body[1:]
    if body == "0":
        return 0
    if not body:
        raise FilterRuntimeError(f"time: invalid duration {text!r}")
    total, pos = Fraction(0), 0
    while pos < len(body):
        m = _DUR_PART.match(body, pos)
        if m is None:
            raise FilterRuntimeError(f"time: invalid duration {text!r}")
        total += Fraction(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    if total > _MAX_NS:
        raise FilterRuntimeError(f"time: invalid duration {text!r}")
    return sign * int(total)


def _frac(value: int, unit: int) -> str:
    whole, rest = divmod(value, unit)
    if not rest:
        return str(whole)
    width = len(str(unit)) - 1
    return f"{whole}.{str(rest).rjust(width, '0').rstrip('0')}"


def duration_string(ns: int) -> str:
    """Go ``Duration.String()``: ``2h0m0s``, ``1.5s``, ``100ms``, ``0s``."""
    if ns == 0:
        return "0s"
    u = abs(ns)
    if u < 1_000:
        out = f"{u}ns"
    elif u < 1_000_000:
        out = _frac(u, 1_000) + "µs"
    elif u < NS:
        out = _frac(u, 1_000_000) + "ms"
    else:
        hours, rest = divmod(u, 3600 * NS)
        minutes, rest = divmod(rest, 60 * NS)
        out = _frac(rest, NS) + "s"
        if hours or minutes:
            out = f"{minutes}m{out}"
        if hours:
            out = f"{hours}h{out}"
    return "-" + out if ns < 0 else out


# -- layouts -----------------------------------------------------------------------------
_CHUNKS = [  # longest first within each family, as Go's nextStdChunk tries them
    "January", "Jan", "Monday", "Mon", "MST", "2006", "002", "__2", "_2",
    "01", "02", "03", "04", "05", "06", "15", "1", "2", "3", "4", "5", "PM", "pm",
    "-07:00:00", "-070000", "-07:00", "-0700", "-07",
    "Z07:00:00", "Z070000", "Z07:00", "Z0700", "Z07",
]  # fmt: skip
_FRACTION = re.compile(r"[.,](0+|9+)(?![0-9])")


def layout_chunks(layout: str) -> list[tuple[bool, str]]:
    """Split a Go layout into (is_std, text) pieces."""
    out: list[tuple[bool, str]] = []
    i = 0
    while i < len(layout):
        m = _FRACTION.match(layout, i)
        if m:
            out.append((True, m.group(0)))
            i = m.end()
            continue
        for chunk in _CHUNKS:
            if layout.startswith(chunk, i):
                out.append((True, chunk))
                i += len(chunk)
                break
        else:
            out.append((False, layout[i]))
            i += 1
    return out


def _offset(total: int, chunk: str) -> str:
    if chunk.startswith("Z") and total == 0:
        return "Z"
    sign = "-" if total < 0 else "+"
    h, rest = divmod(abs(total), 3600)
    m, s = divmod(rest, 60)
    body = chunk.lstrip("Z-")
    colon = ":" in body
    parts = [f"{h:02d}"]
    if len(body) > 2:
        parts.append(f"{m:02d}")
    if len(body.replace(":", "")) > 4:
        parts.append(f"{s:02d}")
    return sign + (":" if colon else "").join(parts)


def format_time(t: XTime, layout: str) -> str:
    """Go ``Time.Format(layout)``."""
    dt = t.dt()
    off = dt.utcoffset() or timedelta(0)
    frac_ns = t.ns % NS
    out: list[str] = []
    for std, chunk in layout_chunks(layout):
        if not std:
            out.append(chunk)
        elif chunk[0] in ".," and chunk[1] in "09":
            digits = f"{frac_ns:09d}"[: len(chunk) - 1]
            if chunk[1] == "9":
                digits = digits.rstrip("0")
                out.append(chunk[0] + digits if digits else "")
            else:
                out.append(chunk[0] + digits)
        elif chunk[0] in "-Z":
            out.append(_offset(int(off.total_seconds()), chunk))
        else:
            out.append(_field(dt, chunk, t.loc))
    return "".join(out)


def _field(dt: object, chunk: str, loc: Location) -> str:
    from datetime import datetime

    assert isinstance(dt, datetime)
    h12 = dt.hour % 12 or 12
    values = {
        "January": dt.strftime("%B"),
        "Jan": dt.strftime("%b"),
        "Monday": dt.strftime("%A"),
        "Mon": dt.strftime("%a"),
        "MST": "UTC" if loc.tz is UTC else (dt.tzname() or ""),
        "2006": f"{dt.year:04d}",
        "06": f"{dt.year % 100:02d}",
        "01": f"{dt.month:02d}",
        "1": str(dt.month),
        "02": f"{dt.day:02d}",
        "2": str(dt.day),
        "_2": f"{dt.day:2d}",
        "002": f"{dt.timetuple().tm_yday:03d}",
        "__2": f"{dt.timetuple().tm_yday:3d}",
        "15": f"{dt.hour:02d}",
        "03": f"{h12:02d}",
        "3": str(h12),
        "04": f"{dt.minute:02d}",
        "4": str(dt.minute),
        "05": f"{dt.second:02d}",
        "5": str(dt.second),
        "PM": "PM" if dt.hour >= 12 else "AM",
        "pm": "pm" if dt.hour >= 12 else "am",
    }
    return values[chunk]


def load_location(name: str) -> Location:
    """``timezone(name)``; the host's local zone is never consulted ("Local" is UTC)."""
    if name in ("", "UTC", "Local"):
        return Location("UTC", UTC)
    try:
        return Location(name, ZoneInfo(name))
    except (ValueError, OSError, KeyError) as exc:
        raise FilterRuntimeError(f"unknown time zone {name}") from exc


def fixed_zone(seconds: int) -> Location:
    return Location("", timezone(timedelta(seconds=seconds)))
