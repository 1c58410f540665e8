"""Kill points: the crash drill's deterministic SIGKILLs (``ops/drills/crash``). TEST-ONLY.

A kill point is a named place in the engine. Once one is armed, the process SIGKILLs
itself the ``nth`` time it gets there -- or ``delay_ms`` later, from a timer thread, so
the kill lands *during* what follows (a checkpoint). A real process death at an exact
moment: no exception, no ``finally``, no atexit, which is what a crash is and what a
random kill only hits by luck.

Production never arms one. In mqlite only ``mqlite serve`` calls ``arm``, and only when
``MQLITE_TEST_KILL_POINT`` is set AND ``MQLITE_TEST_HOOKS=on`` (``config.Settings``
refuses to serve with the first alone); an embedded process is armed only by its own
code calling ``arm`` (the drill's workers). Unarmed, ``reached`` is a global read and a
compare (tests/drills/test_killpoints.py pins all of this).

A spec is ``POINT[@N][+MSms][,once=PATH]``. With ``once``, the kill is recorded in PATH
(JSON, created exclusively just before the kill) and never happens again while PATH
exists: the broker's worker that gunicorn forks again after the kill inherits the armed
point from the master and must live.
"""

from __future__ import annotations

import json
import os
import re
import signal
import threading
from dataclasses import dataclass

from mqlite import errors

POINTS = {
    "commit.before": "inside an open transaction, every write done, just before COMMIT",
    "commit.after": "COMMIT returned, before any caller is answered",
    "batch.call": "inside a group-commit batch of 2+ calls, after a call ran, before COMMIT",
    "checkpoint": "a WAL checkpoint starts (with +MSms the kill lands while it runs)",
}
_SPEC = re.compile(r"(?P<point>[a-z.]+)(?:@(?P<nth>\d{1,9}))?(?:\+(?P<ms>\d{1,6})ms)?")


@dataclass(frozen=True, slots=True)
class KillPoint:
    point: str
    nth: int = 1
    delay_ms: int = 0
    once: str = ""  # the evidence file; "" = no record, the point fires once per process


def parse(spec: str) -> KillPoint:
    """``commit.after@25``, ``checkpoint@1+3ms``, ``batch.call@4,once=/tmp/fired``."""
    head, _, option = spec.strip().partition(",")
    m = _SPEC.fullmatch(head)
    once = ""
    if option:
        key, _, once = option.partition("=")
        if key != "once" or not once:
            m = None
    if m is None or m["point"] not in POINTS:
        raise errors.InvalidArgument(
            f"kill point {spec!r}: want POINT[@N][+MSms][,once=PATH] with POINT one of "
            f"{', '.join(POINTS)}"
        )
    nth = int(m["nth"] or 1)
    if nth < 1:
        raise errors.InvalidArgument(f"kill point {spec!r}: @N counts from 1")
    return KillPoint(m["point"], nth, int(m["ms"] or 0), once)


_armed: KillPoint | None = None
_arrivals = 0
_lock = threading.Lock()


def arm(kill_point: KillPoint) -> None:
    """Arm ``kill_point`` in this process (and in processes it forks afterwards)."""
    global _armed, _arrivals
    with _lock:
        _armed, _arrivals = kill_point, 0


def disarm() -> None:
    global _armed
    with _lock:
        _armed = None


def armed() -> KillPoint | None:
    return _armed


def reached(point: str, *where: int) -> None:
    """The engine passes ``point`` (``where``: e.g. call i of n in a batch); dies here if
    it is the armed point's n-th arrival."""
    global _armed, _arrivals
    kill_point = _armed
    if kill_point is None or kill_point.point != point:
        return
    with _lock:
        if _armed is not kill_point:
            return
        _arrivals += 1
        if _arrivals < kill_point.nth:
            return
        _armed = None  # one kill per arming
        arrival = _arrivals
    if kill_point.once and not _record(kill_point, arrival, where):
        return  # already fired (in the process this one was forked from, or before it)
    if kill_point.delay_ms:
        timer = threading.Timer(kill_point.delay_ms / 1000.0, _die)
        timer.daemon = True
        timer.start()
        return
    _die()


def _record(kill_point: KillPoint, arrival: int, where: tuple[int, ...]) -> bool:
    facts = {
        "point": kill_point.point,
        "arrival": arrival,
        "delay_ms": kill_point.delay_ms,
        "pid": os.getpid(),
        "where": list(where),
    }
    try:
        fd = os.open(kill_point.once, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w") as fh:
        fh.write(json.dumps(facts) + "\n")
    return True


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)
