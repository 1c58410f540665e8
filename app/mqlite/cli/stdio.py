"""The stdio probe every command runs first, in a module of its own so that ``mqlite serve``
(whose gunicorn master should stay small) does not import the wire and output layers."""

from __future__ import annotations

import os
import sys


def probe_stdio() -> bool:
    """True when stdout cannot deliver (closed at exec, or /dev/null).

    A closed standard descriptor is re-opened on /dev/null so that no file this process
    opens later can take its number (and receive our output).
    """
    undeliverable = False
    for fd in (0, 1, 2):
        try:
            st = os.fstat(fd)
        except OSError:
            os.dup2(os.open(os.devnull, os.O_RDWR), fd)
            undeliverable |= fd == 1
            continue
        if fd == 1:
            try:
                null = os.stat(os.devnull)
            except OSError:
                continue
            undeliverable |= (st.st_dev, st.st_ino) == (null.st_dev, null.st_ino)
    if sys.stdout is None:
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - lives for the process
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w")  # noqa: SIM115
    return undeliverable
