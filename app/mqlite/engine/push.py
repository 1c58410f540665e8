"""Push targets (docs/push.md): rows in ``push_targets``, one webhook per queue, delivered
by the push loop (mqlite.push) through this module's verbs.

The targets also live in memory (``PushRegistry``), published after the COMMIT that wrote
them, for two readers that must not pay SQL: Receive, which refuses a queue with a push
target (one consumer model per queue) by one dict lookup, and the delivery loop, which
asks for the set every tick. A target's delivery state (last status and error,
counters, next attempt) is in memory only: it describes this process's attempts, changes
on every POST, and writing it would put a transaction on every delivery.

The secret signs deliveries (Standard Webhooks): it is stored, handed to the delivery
loop, returned once by the CreatePush that generated it, and never listed or logged.
"""

from __future__ import annotations

import base64
import binascii
import os
from dataclasses import replace

from mqlite import defaults, errors
from mqlite.engine import audit, egress, queues
from mqlite.engine.audit import Actor
from mqlite.engine.core import serialized
from mqlite.engine.part import Part
from mqlite.engine.push_registry import SECRET_PREFIX, StoredPush
from mqlite.engine.validate import check_int
from mqlite.types import PushTarget

UPSERT_SQL = """
INSERT INTO push_targets (queue, url, secret, max_in_flight, timeout_ms, paused,
    created_at, updated_at)
VALUES (:queue, :url, :secret, :max_in_flight, :timeout_ms, :paused, :now, :now)
ON CONFLICT (queue) DO UPDATE SET url = excluded.url, secret = excluded.secret,
    max_in_flight = excluded.max_in_flight, timeout_ms = excluded.timeout_ms,
    paused = excluded.paused, updated_at = excluded.updated_at
RETURNING created_at
"""
DELETE_SQL = "DELETE FROM push_targets WHERE queue = ?"


def generate_secret() -> str:
    return SECRET_PREFIX + base64.b64encode(os.urandom(32)).decode("ascii")


def check_secret(secret: object) -> str:
    """``whsec_`` + base64 of 16..64 bytes (Standard Webhooks secrets are 24..64)."""
    if not isinstance(secret, str):
        raise errors.InvalidArgument("secret must be a string")
    if len(secret) > defaults.PUSH_MAX_SECRET_CHARS or not secret.startswith(SECRET_PREFIX):
        raise errors.InvalidArgument(
            "secret must be 'whsec_' followed by the base64 of 16..64 random bytes"
        )
    try:
        key = base64.b64decode(secret[len(SECRET_PREFIX) :], validate=True)
    except (binascii.Error, ValueError):
        key = b""
    if not 16 <= len(key) <= 64:
        raise errors.InvalidArgument(
            "secret must be 'whsec_' followed by the base64 of 16..64 random bytes"
        )
    return secret


class Pushes(Part):
    """CreatePush / ListPushes / DeletePush and the delivery loop's entry points."""

    def create_push(
        self,
        queue: str,
        url: str,
        secret: str = "",
        max_in_flight: int = defaults.PUSH_MAX_IN_FLIGHT,
        timeout_ms: int = defaults.PUSH_TIMEOUT_MS,
        paused: bool = False,
        *,
        actor: Actor | None = None,
    ) -> PushTarget:
        """Bind (upsert on ``queue``) a push target; the egress guard resolves ``url`` now
        (off the writer), and again at every connection. ``secret`` empty: a new target
        gets a generated one (in the answer's ``secret``, once), an existing one keeps
        its own (so pause/resume never rotates it)."""
        q = self._queue(queue)
        check_int("max_in_flight", max_in_flight, minimum=1)
        if max_in_flight > defaults.PUSH_MAX_IN_FLIGHT_LIMIT:
            raise errors.InvalidArgument(
                f"max_in_flight must be 1..{defaults.PUSH_MAX_IN_FLIGHT_LIMIT}"
            )
        check_int("timeout_ms", timeout_ms, minimum=0)
        if not defaults.PUSH_TIMEOUT_MIN_MS <= timeout_ms <= defaults.PUSH_TIMEOUT_MAX_MS:
            raise errors.InvalidArgument(
                f"timeout_ms must be {defaults.PUSH_TIMEOUT_MIN_MS}..{defaults.PUSH_TIMEOUT_MAX_MS}"
            )
        if not isinstance(paused, bool):
            raise errors.InvalidArgument("paused must be a boolean")
        existing = self.pushes.targets.get(q.name)
        generated = not secret and existing is None
        if not secret:  # kept on an update (pause, resume, a new url); made for a new one
            secret = existing.secret if existing is not None else generate_secret()
        else:
            secret = check_secret(secret)
        guard = self.pushes.egress
        target = guard.check_url(url)
        addresses = guard.check_addresses(target.host, egress.resolve(target.host, target.port))
        guard.check_plain_http(target, addresses)
        stored = self._store_push(
            q.name, target.url, secret, max_in_flight, timeout_ms, paused, actor
        )
        view = self.pushes.view(stored)
        return replace(view, secret=secret) if generated else view

    @serialized
    def _store_push(
        self,
        queue: str,
        url: str,
        secret: str,
        in_flight: int,
        timeout: int,
        paused: bool,
        actor: Actor | None,
    ) -> StoredPush:
        self._queue(queue)  # still there on the writer
        args = {"queue": queue, "url": url, "secret": secret, "max_in_flight": in_flight}
        args |= {"timeout_ms": timeout, "paused": int(paused)}
        with self._write() as (conn, now):
            (created,) = conn.execute(UPSERT_SQL, {**args, "now": now}).fetchone()
            stored = StoredPush(queue, url, secret, in_flight, timeout, paused, created, now)
            audit.record(conn, now, actor, "CreatePush", queue, url=url, paused=paused,
                         max_in_flight=in_flight, timeout_ms=timeout)  # fmt: skip
            self.store.after_commit(lambda: self.pushes.publish(queue, stored))
        return stored

    def list_pushes(self) -> list[PushTarget]:
        """Every target by queue name, with its delivery state; never a secret."""
        targets = self.pushes.targets
        return [self.pushes.view(targets[name]) for name in sorted(targets)]

    @serialized
    def delete_push(self, queue: str, *, actor: Actor | None = None) -> bool:
        """Unbind a queue's push target (False: there was none); the queue is a pull queue
        again. POSTs in flight finish and settle as usual."""
        name = queues.validate_name(queue)
        with self._write() as (conn, now):
            deleted = conn.execute(DELETE_SQL, (name,)).rowcount > 0
            if deleted:
                audit.record(conn, now, actor, "DeletePush", name)
            self.store.after_commit(lambda: self.pushes.publish(name, None))
        return deleted

    def push_targets(self) -> dict[str, StoredPush]:
        """The delivery loop's view (secrets included): an in-memory read, no SQL."""
        return self.pushes.targets

    def record_push(
        self,
        queue: str,
        *,
        outcome: str,
        status: int,
        error: str = "",
        seconds: float = 0.0,
        next_ms: int = 0,
    ) -> None:
        """One attempt's outcome (``delivered``, ``retry``, ``rejected``), by the loop."""
        self.pushes.record(
            queue,
            outcome=outcome,
            status=status,
            error=error,
            seconds=seconds,
            at_ms=self.clock.now_ms(),
            next_ms=next_ms,
        )
