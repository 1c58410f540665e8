"""Cron expressions and their slots: which instants a schedule fires at (docs/cron.md).

The grammar (five fields, names, lists, ranges, steps, ``@hourly`` ...) is croniter's,
evaluated on naive LOCAL wall-clock times; mapping a wall time to an instant is ours,
with zoneinfo, because the rules are ours. APScheduler 3's ``CronTrigger`` (already a
dependency) was tried first and breaks them: past a fall-back it returns the repeated
time again and again (its next fire time stops advancing), it maps a spring-forward gap
to the instant one hour after the gap's end, and ``from_crontab`` reads day-of-week 0 as
Monday. The rules, pinned by tests/engine/test_cron_slots.py:

- a wall time that does not exist (the spring-forward gap) maps to the first valid
  instant after the gap (the transition itself), so every slot in the gap fires ONCE
  there (slots are instants: equal instants are the same slot);
- a wall time that repeats (fall back) maps to its first occurrence only.

A slot is an epoch-millisecond instant. Everything here is pure: no clock, no database.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from mqlite import errors

if TYPE_CHECKING:
    from croniter import croniter

FIELDS = ("minute", "hour", "day-of-month", "month", "day-of-week")
ALIASES = {
    "@hourly": "0 * * * *",
    "@daily": "0 0 * * *",
    "@weekly": "0 0 * * 0",
    "@monthly": "0 0 1 * *",
    "@yearly": "0 0 1 1 *",
}
MAX_CRON_CHARS = 256
MAX_TIMEZONE_CHARS = 64
NAMES = {
    "month": {"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"},
    "day-of-week": {"sun", "mon", "tue", "wed", "thu", "fri", "sat"},
}
_DIGITS = re.compile(r"^[0-9*,/-]+$")
_NAMED = re.compile(r"^[0-9A-Za-z*,/-]+$")
_WORD = re.compile(r"[A-Za-z]+")
# Walks past skipped wall times: a fall-back hour of an every-minute cron skips 60.
_MAX_STEPS = 1_000
# Catch-up probes: the latest slot at or before ``now`` is searched from the nearest of
# these windows back that holds one, so a long downtime costs a few steps, not one per slot.
_WINDOWS_MS = (61_000, 3_600_000, 2 * 86_400_000, 32 * 86_400_000, 367 * 86_400_000)


def _bad(message: str) -> errors.InvalidArgument:
    return errors.InvalidArgument(message)


def check_timezone(name: object) -> ZoneInfo:
    """The IANA zone named ``name``; 400 naming the field otherwise."""
    if not isinstance(name, str) or not name or len(name) > MAX_TIMEZONE_CHARS:
        raise _bad(f"timezone must be an IANA zone name of 1..{MAX_TIMEZONE_CHARS} characters")
    try:
        return _zone(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise _bad(f"timezone {name!r} is not a known IANA zone name") from None


@lru_cache(maxsize=1024)
def _zone(name: str) -> ZoneInfo:
    return ZoneInfo(name)


def normalize(expr: object) -> str:
    """The five-field form of a valid expression; 400 naming the failing position."""
    if not isinstance(expr, str) or not expr.strip():
        raise _bad("cron must be a non-empty string")
    if len(expr) > MAX_CRON_CHARS:
        raise _bad(f"cron is longer than {MAX_CRON_CHARS} characters")
    text = expr.strip()
    if text.startswith("@"):
        alias = ALIASES.get(text.lower())
        if alias is None:
            raise _bad(f"cron {text!r}: unknown alias; use one of {', '.join(ALIASES)}")
        return alias
    fields = text.split()
    if len(fields) != len(FIELDS):
        raise _bad(
            f"cron {text!r}: expected 5 fields (minute hour day-of-month month day-of-week), "
            f"got {len(fields)}"
        )
    for i, (name, value) in enumerate(zip(FIELDS, fields, strict=True)):
        _check_field(i, name, value, text)
    canonical = " ".join(fields)
    from croniter import CroniterError, croniter  # lazy: the idle worker never loads it

    try:
        croniter(canonical, datetime(2000, 1, 1))
    except CroniterError as exc:  # pragma: no cover - the per-field checks caught it
        raise _bad(f"cron {text!r}: {exc}") from None
    if _first_wall(canonical, datetime(2000, 1, 1)) is None:
        raise _bad(f"cron {text!r}: day-of-month and month never match a date")
    return canonical


def _check_field(i: int, name: str, value: str, text: str) -> None:
    where = f"cron {text!r}: field {i + 1} ({name}) {value!r}"
    names = NAMES.get(name)
    if not (_NAMED if names else _DIGITS).match(value):
        allowed = "digits, names, " if names else "digits, "
        raise _bad(f"{where} may contain only {allowed}'*', ',', '-' and '/'")
    for word in _WORD.findall(value):
        if word.lower() not in (names or ()):
            raise _bad(f"{where}: {word!r} is not a {name} name")
    probe = " ".join(value if j == i else "*" for j in range(len(FIELDS)))
    from croniter import CroniterError, croniter  # lazy (see normalize)

    try:
        croniter(probe, datetime(2000, 1, 1))
    except CroniterError as exc:
        reason = str(exc).split("is not acceptable", 1)[-1].strip(" ,") or str(exc)
        raise _bad(f"{where} is not valid: {reason}") from None


@lru_cache(maxsize=4096)
def _iterator(expr: str) -> tuple[threading.Lock, croniter]:
    """One parsed iterator per expression (parsing is most of croniter's cost), with the
    lock that keeps two threads from moving it at once. croniter (and dateutil, six) is
    imported here, not at module level: a broker with no schedule never loads it, which
    keeps the idle worker inside its RSS target (tests/appliance/test_image.py)."""
    from croniter import croniter

    return threading.Lock(), croniter(expr, datetime(2000, 1, 1))


def _first_wall(expr: str, after: datetime) -> datetime | None:
    """The first wall time strictly after ``after`` that ``expr`` matches (naive)."""
    from croniter import CroniterBadDateError

    lock, it = _iterator(expr)
    with lock:
        it.set_current(after, force=True)
        try:
            found: datetime = it.get_next(datetime)
        except CroniterBadDateError:
            return None
    return found


def _ms(moment: datetime) -> int:
    return int(moment.timestamp()) * 1000


def wall_to_slot(wall: datetime, zone: ZoneInfo) -> int:
    """The instant (epoch ms) a naive local wall time fires at, by the DST rules above."""
    first = wall.replace(tzinfo=zone, fold=0)
    as_utc = first.astimezone(UTC)
    if as_utc.astimezone(zone).replace(tzinfo=None) == wall:
        return _ms(as_utc)  # exists; fold=0 is the first occurrence of a repeated time
    # In a gap: fold=0 reads it with the offset before the jump (the later instant),
    # fold=1 with the offset after (the earlier one); the transition lies between them.
    lo = _ms(wall.replace(tzinfo=zone, fold=1).astimezone(UTC)) // 1000
    hi = _ms(as_utc) // 1000
    after = datetime.fromtimestamp(hi, UTC).astimezone(zone).utcoffset()
    while lo < hi:  # the first second whose offset is the one after the jump
        mid = (lo + hi) // 2
        if datetime.fromtimestamp(mid, UTC).astimezone(zone).utcoffset() == after:
            hi = mid
        else:
            lo = mid + 1
    return hi * 1000


@dataclass(frozen=True, slots=True)
class Cron:
    """A validated expression in a zone: the slots it fires at."""

    expr: str
    zone: ZoneInfo

    @classmethod
    def of(cls, expr: object, timezone: object) -> Cron:
        return cls(normalize(expr), check_timezone(timezone))

    def next_slot(self, after_ms: int) -> int | None:
        """The first slot strictly after ``after_ms``; None if there is none."""
        return _next_slot(self.expr, self.zone, after_ms)

    def latest_slot(self, since_ms: int, now_ms: int) -> tuple[int, int | None]:
        """The latest slot in ``[since_ms, now_ms]`` (``since_ms`` is a slot), and the
        first slot after ``now_ms`` (None if there is none)."""
        start = since_ms
        for window in _WINDOWS_MS:
            if now_ms - window <= start:
                break
            probe = self.next_slot(now_ms - window - 1)
            if probe is not None and probe <= now_ms:
                start = max(start, probe)
                break
        while True:
            nxt = self.next_slot(start)
            if nxt is None or nxt > now_ms:
                return start, nxt
            start = nxt


# Schedules that share an expression and zone share their slots: a minute in which
# thousands of ``0 * * * *`` schedules are due computes each next slot once.
@lru_cache(maxsize=4096)
def _next_slot(expr: str, zone: ZoneInfo, after_ms: int) -> int | None:
    local = datetime.fromtimestamp(after_ms // 1000, UTC).astimezone(zone)
    wall = local.replace(tzinfo=None, fold=0)
    for _ in range(_MAX_STEPS):
        found = _first_wall(expr, wall)
        if found is None:
            return None
        slot = wall_to_slot(found, zone)
        if slot > after_ms:
            return slot
        wall = found  # a repeated wall time whose first occurrence has passed
    return None  # pragma: no cover - more skipped wall times than any zone has


def rfc3339(slot_ms: int) -> str:
    """``2026-03-29T01:00:00Z``: the slot as the ``mqlite-slot`` property shows it."""
    moment = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=slot_ms)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
