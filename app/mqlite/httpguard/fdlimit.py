"""How many connections the worker can hold: the cap, bounded by its descriptor limit.

Every connection holds a file descriptor; when they run out, ``accept`` fails and every
new client is locked out (1,100 idle sockets did it under a 1024 limit). So the worker
raises its soft ``RLIMIT_NOFILE`` towards the hard limit as far as the cap needs (as
Go's runtime does for every program), and caps connections below whatever limit it got,
keeping ``FD_RESERVE`` descriptors for the database, its WAL, logs and the listener.
The systemd unit sets ``LimitNOFILE=8192``, above the default cap plus the reserve
(tests/ops/test_drift.py keeps them consistent).
"""

from __future__ import annotations

import logging
import resource

from mqlite import defaults

log = logging.getLogger("mqlite.server")


def connection_cap(configured: int) -> int:
    """The effective connection cap for ``configured`` (``MQLITE_MAX_CONNECTIONS``)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = configured + defaults.FD_RESERVE
    if soft != resource.RLIM_INFINITY and soft < wanted:
        target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):
            pass
    if soft == resource.RLIM_INFINITY:
        return configured
    cap = max(1, min(configured, soft - defaults.FD_RESERVE))
    if cap < configured:
        log.warning(
            "connection cap lowered to the descriptor limit",
            extra={"max_connections": cap, "configured": configured, "nofile": soft},
        )
    return cap
