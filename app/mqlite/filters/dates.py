"""``date(s[, layout[, tz]])``: parse text with Go reference-time layouts.

The layout is compiled to a regular expression from the same chunks ``Format`` uses, so
the two stay consistent. Without a layout the Go defaults expr tries are used in order.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from mqlite.filters.timefmt import fixed_zone, layout_chunks, load_location
from mqlite.filters.values import NS, FilterRuntimeError, Location, XTime

DEFAULT_LAYOUTS = (
    "2006-01-02",
    "15:04:05",
    "2006-01-02 15:04:05",
    "2006-01-02T15:04:05Z07:00",  # RFC3339 (fractions are accepted after seconds)
    "02 Jan 06 15:04 MST",  # RFC822
    "Monday, 02-Jan-06 15:04:05 MST",  # RFC850
    "Mon, 02 Jan 2006 15:04:05 MST",  # RFC1123
)
_MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
_PATTERNS = {
    "January": r"(?P<monthname>[A-Za-z]+)", "Jan": r"(?P<monthname>[A-Za-z]{3})",
    "Monday": r"[A-Za-z]+", "Mon": r"[A-Za-z]{3}", "MST": r"(?P<zone>[A-Z]{3,5}|[+-]\d{2,4})",
    "2006": r"(?P<year>\d{4})", "06": r"(?P<year2>\d{2})", "01": r"(?P<month>\d{2})",
    "1": r"(?P<month>\d{1,2})", "02": r"(?P<day>\d{2})", "2": r"(?P<day>\d{1,2})",
    "_2": r" ?(?P<day>\d{1,2})", "002": r"(?P<yday>\d{3})", "__2": r" {0,2}(?P<yday>\d{1,3})",
    "15": r"(?P<hour>\d{1,2})", "03": r"(?P<hour12>\d{2})", "3": r"(?P<hour12>\d{1,2})",
    "04": r"(?P<minute>\d{2})", "4": r"(?P<minute>\d{1,2})", "05": r"(?P<second>\d{2})",
    "5": r"(?P<second>\d{1,2})", "PM": r"(?P<ampm>AM|PM)", "pm": r"(?P<ampm>am|pm)",
}  # fmt: skip


def _regex(layout: str) -> re.Pattern[str]:
    parts: list[str] = []
    seen: set[str] = set()
    for std, chunk in layout_chunks(layout):
        if not std:
            parts.append(re.escape(chunk))
        elif chunk[0] in ".,":
            parts.append(r"(?:[.,](?P<frac>\d+))?" if "frac" not in seen else "")
            seen.add("frac")
        elif chunk[0] in "-Z":
            parts.append(r"(?P<offset>Z|[+-]\d{2}(?::?\d{2}(?::?\d{2})?)?)")
        else:
            pattern = _PATTERNS[chunk]
            name = re.search(r"\?P<(\w+)>", pattern)
            if name and name.group(1) in seen:
                pattern = re.sub(r"\?P<\w+>", "?:", pattern)
            elif name:
                seen.add(name.group(1))
            parts.append(pattern)
            if chunk == "05" and "frac" not in seen:  # Go accepts fractions after seconds
                parts.append(r"(?:[.,](?P<frac>\d+))?")
                seen.add("frac")
    return re.compile("".join(parts))


def _days_from_civil(y: int, m: int, d: int) -> int:
    y -= m <= 2
    era = (y if y >= 0 else y - 399) // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    return era * 146097 + yoe * 365 + yoe // 4 - yoe // 100 + doy - 719468


def _build(groups: dict[str, str | None], loc: Location) -> XTime:
    g = {k: v for k, v in groups.items() if v is not None}
    year = int(g["year"]) if g.get("year") else 0
    if g.get("year2"):
        y2 = int(g["year2"])
        year = y2 + (1900 if y2 >= 69 else 2000)
    month = int(g["month"]) if g.get("month") else 1
    if g.get("monthname"):
        month = _MONTHS.index(g["monthname"][:3].lower()) + 1
    day = int(g["day"]) if g.get("day") else 1
    hour = int(g["hour"]) if g.get("hour") else 0
    if g.get("hour12"):
        hour = int(g["hour12"]) % 12 + (12 if (g.get("ampm") or "").lower() == "pm" else 0)
    minute, second = int(g.get("minute") or 0), int(g.get("second") or 0)
    if not (1 <= month <= 12 and 1 <= day <= 31 and hour < 24 and minute < 60 and second < 60):
        raise ValueError("out of range")
    if year > 0:
        datetime(year, month, day)  # validates the day of month
    secs = _days_from_civil(year, month, day) * 86400 + hour * 3600 + minute * 60 + second
    frac = (g.get("frac") or "")[:9].ljust(9, "0")
    offset = g.get("offset")
    if offset and offset != "Z":
        sign = -1 if offset[0] == "-" else 1
        digits = offset[1:].replace(":", "").ljust(6, "0")
        off = sign * (int(digits[:2]) * 3600 + int(digits[2:4]) * 60 + int(digits[4:6]))
        secs -= off
        loc = fixed_zone(off)
    elif offset is None and loc.name != "UTC":
        naive = datetime(max(year, 1), month, day, hour, minute, second)
        off = int((loc.tz.utcoffset(naive) or timedelta(0)).total_seconds())
        secs -= off
    return XTime(secs * NS + int(frac), loc)


def parse_date(text: str, layout: str | None = None, tz: str | None = None) -> XTime:
    loc = load_location(tz) if tz is not None else load_location("UTC")
    for candidate in (layout,) if layout is not None else DEFAULT_LAYOUTS:
        m = _regex(candidate).fullmatch(text)
        if m is not None:
            try:
                return _build(m.groupdict(), loc)
            except (ValueError, IndexError):
                break
    raise FilterRuntimeError(f"cannot parse {text!r} as a date")
