"""Replication lag, read from Litestream's control socket (docs/replication.md).

Under ``MQLITE_REPLICA_URL`` the broker is Litestream's child and finds the socket in
``MQLITE_REPLICA_SOCKET``. ``GET /list`` answers each database's ``last_sync_at``: the end
of the last *successful* sync to the replica. It advances every sync interval while S3
answers, idle or not, and stops while S3 is unreachable -- so its age is how much of the
broker's history exists only on this volume right now (the RPO if the volume died now).

One short request per observation (a scrape); a Litestream that does not answer within
the timeout makes replication ``unavailable`` (lag unknown: absent, never zero).
"""

from __future__ import annotations

import json
import logging
import socket
import subprocess
from collections.abc import Callable, Mapping
from datetime import datetime

from mqlite.config import ConfigError
from mqlite.engine import observation as o
from mqlite.replica import find_litestream

TIMEOUT_S = 0.5
MAX_ANSWER = 1 << 20
# The final sync at a graceful stop: within the supervisors' 15 s after the drain's 10 s.
FINAL_SYNC_TIMEOUT_S = 4

log = logging.getLogger("mqlite.server")


def _get(path: str, socket_path: str) -> bytes:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(TIMEOUT_S)
        s.connect(socket_path)
        s.sendall(f"GET {path} HTTP/1.0\r\nHost: litestream\r\n\r\n".encode())
        raw = b""
        while len(raw) <= MAX_ANSWER and (chunk := s.recv(65536)):
            raw += chunk
    head, _, body = raw.partition(b"\r\n\r\n")
    if not head.startswith(b"HTTP/1.") or head.split(b" ", 2)[1] != b"200":
        raise ValueError("litestream answered an error")
    return body


def parse_last_sync_ms(answer: bytes, db_path: str | None) -> int | None:
    """The database's ``last_sync_at`` in epoch ms (None before the first sync)."""
    doc = json.loads(answer)
    for db in doc.get("databases") or ():
        if db_path is None or db.get("path") == db_path:
            text = db.get("last_sync_at")
            if not text:
                return None
            # Go's RFC 3339 with nanoseconds: Python parses at most microseconds.
            whole, _, frac = text.rstrip("Z").partition(".")
            stamp = datetime.fromisoformat(f"{whole}.{(frac + '000000')[:6]}+00:00")
            return int(stamp.timestamp() * 1000)
    raise ValueError("litestream does not replicate this database")


class ReplicationProbe:
    def __init__(self, socket_path: str, db_path: str | None, now_ms: Callable[[], int]) -> None:
        self.socket_path = socket_path
        self.db_path = db_path
        self.now_ms = now_ms

    @classmethod
    def from_env(
        cls, environ: Mapping[str, str], db_path: str | None, now_ms: Callable[[], int]
    ) -> ReplicationProbe | None:
        path = environ.get("MQLITE_REPLICA_SOCKET", "").strip()
        return cls(path, db_path, now_ms) if path else None

    def final_sync(self, environ: Mapping[str, str]) -> bool:
        """Ship everything committed to the replica before the broker exits: called after
        the engine closed, so no write can follow. Litestream's own shutdown sync missed
        writes acknowledged before its first periodic sync (a stop within ~1 s of start
        left the replica empty in 2 of 6 runs); ``litestream sync -wait`` does not."""
        if self.db_path is None:
            return False
        try:
            litestream = find_litestream(environ)
        except ConfigError as exc:
            log.warning("final sync to the replica failed: %s", exc)
            return False
        argv = [litestream, "sync", "-wait", "-timeout", str(FINAL_SYNC_TIMEOUT_S)]
        argv += ["-socket", self.socket_path, self.db_path]
        try:
            done = subprocess.run(
                argv, capture_output=True, text=True, timeout=FINAL_SYNC_TIMEOUT_S + 1
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            log.warning("final sync to the replica failed: %s", exc)
            return False
        if done.returncode != 0:
            log.warning("final sync to the replica failed: %s", done.stderr.strip()[-500:])
            return False
        log.info("final sync to the replica done")
        return True

    def snapshot(self) -> o.Replication:
        try:
            last = parse_last_sync_ms(_get("/list", self.socket_path), self.db_path)
        except (OSError, ValueError, KeyError, TypeError, AttributeError, IndexError):
            return o.Replication("unavailable", None, None)
        if last is None:  # replicating, nothing synced yet: the lag is the broker's age
            return o.Replication("unavailable", None, None)
        return o.Replication("available", last, max(self.now_ms() - last, 0) / 1000)
