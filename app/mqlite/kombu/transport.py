"""The kombu transport: one mqlite client per kombu connection, an inbox that the
consumers' long polls fill and ``drain_events`` empties, and the lease renewer.

Registered as kombu's ``mqlite`` alias by ``import mqlite.kombu``; used as
``broker_url = "mqlite+http://127.0.0.1:6754"`` or ``"mqlite:///mq.db"`` (docs/celery.md).
Errors are ``mqlite.errors`` classes; the ones a reconnect can cure (the broker is
unreachable, overloaded or refused the credential) are kombu connection errors, so
Celery reports them and retries with its own backoff.
"""

from __future__ import annotations

import logging
import queue as stdqueue
import threading
from dataclasses import dataclass
from typing import Any

from kombu.transport import virtual

from mqlite import defaults, errors
from mqlite.clock import SYSTEM_CLOCK
from mqlite.kombu import channel as channels
from mqlite.kombu import clients, mapping
from mqlite.kombu.leases import Lease, LeaseBook
from mqlite.kombu.polling import Delivery, Poller
from mqlite.sdk.endpoint import ConnectionFailed, process_environ
from mqlite.sdk.protocol import Client
from mqlite.types import Message, OrderingMode, QueueConfig

log = logging.getLogger("mqlite.kombu")

TOPICS_TTL_MS = 5_000  # how long the set of subscribed topics is trusted for lossy traffic


def _seconds(options: dict[str, Any], name: str, default: float, low: float, high: float) -> float:
    value = options.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
        raise errors.InvalidArgument(
            f"broker_transport_options[{name!r}] must be a number of seconds in [{low}, {high}]"
        )
    return float(value)


@dataclass(frozen=True, slots=True)
class Options:
    """``broker_transport_options`` this transport reads (the rest are ignored)."""

    token: str | None
    queue_defaults: mapping.QueueDefaults
    wait_ms: int
    timeout_s: float

    @classmethod
    def parse(cls, options: dict[str, Any]) -> Options:
        lock_s = _seconds(options, "visibility_timeout", 30, 0.1, 86_400 * 7)
        dedup_s = _seconds(options, "dedup_window", 600, 0, 86_400 * 7)
        wait_s = _seconds(options, "wait_time_seconds", 20, 0, defaults.MAX_WAIT_MS / 1000)
        max_delivery = options.get("max_delivery_count", defaults.MAX_DELIVERY_COUNT)
        if isinstance(max_delivery, bool) or not isinstance(max_delivery, int) or max_delivery < 1:
            raise errors.InvalidArgument(
                "broker_transport_options['max_delivery_count'] must be a positive integer"
            )
        ordering = options.get("ordering_mode", OrderingMode.STANDARD)
        if ordering not in tuple(OrderingMode):
            raise errors.InvalidArgument(
                "broker_transport_options['ordering_mode'] must be one of "
                + ", ".join(OrderingMode)
            )
        qd = mapping.QueueDefaults(
            round(lock_s * 1000), max_delivery, round(dedup_s * 1000), str(ordering)
        )
        timeout_s = _seconds(options, "timeout", 30, 0.1, 3600)
        return cls(
            clients.resolve_token(options, process_environ()), qd, round(wait_s * 1000), timeout_s
        )

    def __repr__(self) -> str:  # never the token
        return f"Options(queue_defaults={self.queue_defaults!r}, wait_ms={self.wait_ms})"


class Transport(virtual.Transport):
    Channel = channels.Channel
    driver_type = "mqlite"
    driver_name = "mqlite"
    default_port = defaults.PORT  # type: ignore[assignment]
    polling_interval = None  # type: ignore[assignment]  # never sleeps: drain_events waits on the inbox
    implements = virtual.Transport.implements.extend(
        asynchronous=False,
        exchange_type=frozenset(["direct", "topic", "fanout"]),
        heartbeats=False,
    )
    connection_errors = (  # type: ignore[assignment]
        *virtual.Transport.connection_errors,
        ConnectionFailed,
        errors.Unavailable,
        errors.OutcomeUnknown,
        errors.Unauthenticated,
        errors.PermissionDenied,
    )
    channel_errors = (  # type: ignore[assignment]
        *virtual.Transport.channel_errors,
        errors.MQLiteError,
    )
    # What reconnecting can cure. Without these kombu counts every channel error as
    # recoverable too, and ``Connection._reraise_as_library_errors`` (Celery's send_task)
    # turned a configuration mistake (a priority, an unknown queue argument) into
    # kombu's ``OperationalError``, the connection-failure class, retried as an outage.
    # A refusal now reaches the caller as mqlite's own ``InvalidArgument``.
    recoverable_connection_errors = connection_errors
    recoverable_channel_errors = ()

    def __init__(self, client: Any, **kwargs: Any) -> None:
        super().__init__(client, **kwargs)
        self.target = clients.target(client.hostname, client.virtual_host)
        self.options = Options.parse(dict(client.transport_options or {}))
        self.queue_defaults = self.options.queue_defaults
        self.configs: dict[str, QueueConfig] = {}
        self.inbox: stdqueue.Queue[Delivery | BaseException] = stdqueue.Queue()
        self._mq: Client | None = None
        self._leases: LeaseBook | None = None
        self._holders = 0
        self._hold_lock = threading.Lock()
        self._topics: tuple[float, set[str]] | None = None
        self._warned_manage = False

    def __repr__(self) -> str:
        return f"<mqlite kombu transport {self.target.describe()}>"

    @property
    def default_connection_params(self) -> dict[str, Any]:
        return {"port": self.default_port, "hostname": ""}

    @property
    def mq(self) -> Client:
        if self._mq is None:
            raise errors.Closed("the kombu connection to mqlite is not open")
        return self._mq

    @property
    def leases(self) -> LeaseBook:
        if self._leases is None:
            self._leases = LeaseBook(self.mq, SYSTEM_CLOCK)
        return self._leases

    # -- connection lifecycle -------------------------------------------------------------

    def establish_connection(self) -> Transport:
        if self._mq is None:
            if self.target.remote:
                mq = clients.open_remote(
                    self.target.endpoint, self.options.token, self.options.timeout_s
                )
                try:
                    mq.status()  # fail fast on a wrong URL or token, as AMQP's handshake does
                except errors.PermissionDenied:
                    pass  # authenticated; the key just may not manage the broker
                except BaseException:
                    mq.close()
                    raise
            else:
                mq = clients.acquire_embedded(self.target.dsn)
            self._mq = mq
            self._holders = 1
        result: Transport = super().establish_connection()
        return result

    def close_connection(self, connection: Any) -> None:
        if self._mq is not None:
            for channel in list(self.channels):
                channel.stop_polling()
            self._give_back_inbox()
        super().close_connection(connection)
        if self._leases is not None:
            self._leases.stop()
        if self._mq is not None and not self.target.remote:
            clients.release_embedded(self.target.dsn)  # wakes its parked polls if last
            self._mq = None
            return
        self._drop()

    def _give_back_inbox(self) -> None:
        """Claimed but never handed to a consumer: back to the queue at once (AMQP
        requeues what a closed connection held), not when the locks expire."""
        while True:
            try:
                item = self.inbox.get_nowait()
            except stdqueue.Empty:
                return
            if isinstance(item, Delivery) and not item.poller.no_ack:
                self.settle(self._lease(item.poller.queue, item.message), "abandon")

    def _hold(self) -> None:
        with self._hold_lock:
            self._holders += 1

    def _drop(self) -> None:
        """A remote client closes when nothing uses it any more: a poll still parked
        when the connection closed may yet claim messages, which it must abandon."""
        with self._hold_lock:
            self._holders -= 1
            if self._holders > 0 or self._mq is None:
                return
            mq, self._mq = self._mq, None
        mq.close()

    # -- consuming ------------------------------------------------------------------------

    def start_poller(self, channel: channels.Channel, queue: str, no_ack: bool) -> Poller:
        remote = self.target.remote
        if remote:
            self._hold()
        poller = Poller(
            self.mq,
            queue,
            no_ack=no_ack,
            slots=channel.slots,
            inbox=self.inbox,
            wait_ms=self.options.wait_ms,
            on_claimed=lambda m: self.leases.add(self._lease(queue, m)),
            on_exit=self._drop if remote else (lambda: None),
        )
        poller.channel = channel  # type: ignore[attr-defined]
        poller.start()
        return poller

    @staticmethod
    def _lease(queue: str, m: Message) -> Lease:
        return Lease(queue, m.seq_number, m.lock_token, m.locked_until_ms)

    def lease_of(self, m: Message, renew: bool = False) -> Lease:
        lease = self._lease(m.queue, m)
        if renew:
            self.leases.add(lease)
        return lease

    def drain_events(self, connection: Any, timeout: float | None = None, **kwargs: Any) -> None:
        try:
            item = self.inbox.get(timeout=timeout)
        except stdqueue.Empty:
            raise TimeoutError() from None  # socket.timeout: what kombu's callers catch
        if isinstance(item, BaseException):
            raise item
        poller, m = item.poller, item.message
        channel: channels.Channel = poller.channel  # type: ignore[attr-defined]
        if poller.stopped or channel.closed:
            if not poller.no_ack:
                self.settle(self._lease(poller.queue, m), "abandon")
                poller.slots.give(1)
            return
        channel.deliver(poller, m)

    def settle(self, lease: Lease, verb: str, *reason: str) -> None:
        """Complete, abandon or reject one claimed message; a lost lock is a warning
        (the broker has redelivered it or will: at least once)."""
        if self._leases is not None:
            self._leases.discard(lease)
        mq = self._mq
        if mq is None:
            log.warning(
                "message %d in %r not settled: connection closed", lease.seq_number, lease.queue
            )
            return
        try:
            if verb == "complete":
                mq.complete(lease.queue, lease.seq_number, lease.lock_token)
            elif verb == "abandon":  # *reason: the error, if the channel had one
                mq.abandon(lease.queue, lease.seq_number, lease.lock_token, 0, *reason[:1])
            else:
                mq.reject(lease.queue, lease.seq_number, lease.lock_token, *reason)
        except errors.LockLost:
            log.warning(
                "%s of message %d in %r refused: its lock expired first, so it is (or will "
                "be) delivered again; make the task idempotent or raise visibility_timeout",
                verb,
                lease.seq_number,
                lease.queue,
            )
        except errors.Closed:
            log.warning(
                "message %d in %r not settled: client closed", lease.seq_number, lease.queue
            )

    # -- publishing and declaring ---------------------------------------------------------

    def publish(
        self, name: str, payload: Any, routing_key: str, *, topic: bool, lossy: bool = False
    ) -> None:
        """Send to queue ``name`` or, with ``topic``, to the topic an exchange maps to.

        ``lossy``: a transient message to a topic exchange (Celery's worker events, every
        2 s): sent only while the topic has subscribers (looked up at most every 5 s), so
        an unwatched worker costs the broker no failed request per heartbeat."""
        out = mapping.outgoing(payload, routing_key, SYSTEM_CLOCK.now_ms())
        if lossy and out.transient and not self._has_subscribers(name):
            return
        try:
            self._send(name, out)
        except errors.QueueNotFound:
            if not topic:
                raise
            # No subscription: AMQP drops what a fanout/topic exchange cannot route.
            log.debug("nothing subscribes to exchange %r: message dropped", name)
        except errors.DedupConflict as exc:
            raise errors.DedupConflict(
                f"{exc.message}: message id {out.message.message_id!r} was published with "
                "another body within the dedup window (a task id reused for other arguments)"
            ) from exc

    def _has_subscribers(self, topic: str) -> bool:
        now = SYSTEM_CLOCK.monotonic_ms()
        if self._topics is None or now >= self._topics[0]:
            try:
                names = {s.topic for s in self.mq.list_subscriptions()}
            except errors.PermissionDenied:
                return True  # cannot look: send, and let the broker drop it
            self._topics = (now + TOPICS_TTL_MS, names)
        return topic in self._topics[1]

    def _send(self, name: str, out: mapping.Outgoing) -> None:
        if out.at_ms is not None:
            try:
                self.mq.schedule(name, [out.message], out.at_ms, out.ttl_ms)
                return
            except errors.InvalidArgument:
                if out.at_ms > SYSTEM_CLOCK.now_ms():
                    raise
                # the ETA passed between mapping and the broker's check: send it now
        self.mq.send_one(name, out.message, out.ttl_ms)

    def subscribe(self, topic: str, name: str, expr: str, cfg: QueueConfig | None) -> None:
        """Make ``name`` a subscription of ``topic`` with ``expr``; a plain queue of that
        name is converted while it is empty (kombu declares a queue before binding it)."""
        mq = self.mq
        try:
            mq.subscribe(topic, name, expr)
        except errors.NameConflict as exc:
            owner = next((s.topic for s in mq.list_subscriptions() if s.name == name), None)
            if owner is not None and owner != topic:
                raise errors.NameConflict(
                    f"queue {name!r} is bound to exchange {owner!r} already; an mqlite "
                    f"subscription belongs to one topic, so it cannot be bound to {topic!r} too"
                ) from exc
            held = mq.stats(name).total
            if held:
                raise errors.NameConflict(
                    f"queue {name!r} holds {held} message(s) as a plain queue; it can become a "
                    f"subscription of exchange {topic!r} once drained (mqlite purge-dlq / "
                    "celery purge) or deleted"
                ) from exc
            mq.delete_queue(name)
            mq.subscribe(topic, name, expr)
        if cfg is not None:
            mq.create_queue(name, mapping.as_subscription(cfg))

    def note_cannot_manage(self, queue: str) -> None:
        if not self._warned_manage:
            self._warned_manage = True
            log.info(
                "the token cannot manage queues: %r and the others are used as an operator "
                "configured them",
                queue,
            )
