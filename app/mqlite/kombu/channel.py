"""The kombu channel on mqlite: AMQP's verbs as mqlite requests, one request per verb.

| kombu | mqlite |
|---|---|
| ``queue_declare`` | ``create_queue`` with the config the declaration asks for (``mapping``) |
| publish | ``send_one`` (``schedule`` for a future ETA) to the queue the binding names |
| ``basic_consume`` | a long-poll thread (``polling``); ``no_ack`` = receive-and-delete |
| ``basic_ack`` | ``complete`` |
| ``basic_reject(requeue=True)`` | ``abandon`` with the task's error (the queue's retry policy) |
| ``basic_reject(requeue=False)`` | ``reject``: the DLQ, with the reason |
| ``queue_purge`` | receive-and-delete in batches of 256, then cancel scheduled messages |
| ``queue_delete`` | drain, then ``delete_queue`` / ``unsubscribe`` |

Routing: a fanout or topic exchange, or any exchange declared ``durable=False`` (kombu's
reply exchanges), is an mqlite TOPIC of the same name, and a queue bound to it is a
subscription whose filter matches the binding keys on ``subject`` (the routing key): the
broker routes, across processes. A durable direct exchange routes in this process by the
bindings the app declared (Celery declares its task queues in every process), as kombu's
other virtual transports do; a routing key no binding matches is refused, not dropped.
"""

from __future__ import annotations

import logging
import uuid
from typing import TYPE_CHECKING, Any

from kombu.exceptions import ContentDisallowed, DecodeError
from kombu.transport import virtual
from kombu.transport.base import to_rabbitmq_queue_arguments
from kombu.transport.virtual import exchange as vexchange

from mqlite import errors
from mqlite.defaults import MAX_ERROR_BYTES
from mqlite.kombu import mapping
from mqlite.kombu.leases import Lease
from mqlite.kombu.polling import Poller, Slots
from mqlite.types import Message as MqMessage
from mqlite.types import QueueConfig, ReceiveMode, State

if TYPE_CHECKING:
    from mqlite.kombu.transport import Transport
    from mqlite.sdk.protocol import Client

log = logging.getLogger("mqlite.kombu")

DRAIN_BATCH = 256
DELETE_ATTEMPTS = 3
UNROUTABLE = (
    "cannot route a message for exchange {exchange!r} with routing key {key!r}: this "
    "process declared no queue bound to it (mqlite routes a durable direct exchange by the "
    "bindings the app declares: add the queue to task_queues, or publish to it by name)"
)


class KombuMessage(virtual.Message):
    """A delivered message; ``dead_letter`` = (reason, description) for a reject.

    A body that does not decode as its content type says (or whose content type the
    consumer does not accept) is noted here when the consumer decodes it, and the ack
    Celery then sends to drop it ("cannot decode message body") dead-letters it with the
    reason instead: nothing is decoded twice, and nothing undecodable is lost."""

    dead_letter: tuple[str, str] | None = None
    undecodable: bool = False

    def _decode(self) -> Any:
        try:
            return super()._decode()
        except DecodeError as exc:
            what = f"the body is not {self.content_type or 'its content type'}: {exc}"
            self.dead_letter = (mapping.MALFORMED_BODY, what[: mapping.MAX_DESCRIPTION])
            self.undecodable = True
            raise
        except ContentDisallowed as exc:
            self.dead_letter = ("ContentDisallowed", str(exc)[: mapping.MAX_DESCRIPTION])
            raise

    def ack(self, multiple: bool = False) -> None:
        if self.undecodable and self.channel.holds(self.delivery_tag):  # not a no_ack one
            self.reject(requeue=False)
            return
        super().ack(multiple)


class DirectExchange(vexchange.DirectExchange):
    """Local bindings, unless the exchange is transient (then the broker routes)."""

    def deliver(self, message: Any, exchange: str, routing_key: str, **kwargs: Any) -> None:
        channel: Channel = self.channel
        if channel.broker_routed(exchange):
            channel._put_fanout(exchange, message, routing_key)
            return
        for queue in channel._lookup(exchange, routing_key):
            channel._put(queue, message)


class TopicExchange(vexchange.TopicExchange):
    """Always broker-routed: the binding patterns are the subscriptions' filters."""

    def deliver(self, message: Any, exchange: str, routing_key: str, **kwargs: Any) -> None:
        self.channel._put_fanout(exchange, message, routing_key)


class Channel(virtual.Channel):
    Message = KombuMessage
    do_restore = False  # unacked messages stay locked in the broker: nothing to re-put
    supports_fanout = True  # every binding reaches _queue_bind
    body_encoding = None  # type: ignore[assignment]  # bytes, never base64 inside JSON
    from_transport_options = ()  # type: ignore[assignment]  # Options parses ours
    exchange_types = {  # noqa: RUF012  (kombu instantiates it per channel)
        "direct": DirectExchange,
        "topic": TopicExchange,
        "fanout": vexchange.FanoutExchange,
    }

    connection: Transport

    def __init__(self, connection: Transport, **kwargs: Any) -> None:
        super().__init__(connection, **kwargs)
        self.qos.restore_at_shutdown = False
        self.slots = Slots()
        self._leases: dict[str, tuple[Lease, bool]] = {}  # delivery tag -> (lease, slotted)
        self._pollers: dict[str, Poller] = {}  # consumer tag -> its long poll
        self._auto_delete: set[str] = set()
        self._pending: dict[str, QueueConfig] = {}  # auto-delete queues not created yet

    @property
    def mq(self) -> Client:
        return self.connection.mq

    # -- declarations ---------------------------------------------------------------------

    def broker_routed(self, exchange: str) -> bool:
        declared = self.state.exchanges.get(exchange)
        if declared is None:
            return False
        return declared["type"] in ("topic", "fanout") or not declared["durable"]

    def prepare_queue_arguments(self, arguments: Any, **kwargs: Any) -> Any:
        """kombu's ``Queue(message_ttl=, expires=, max_priority=, ...)`` as the AMQP
        arguments ``mapping.queue_config`` maps or refuses (as RabbitMQ's transports do)."""
        return to_rabbitmq_queue_arguments(arguments, **kwargs)

    def _new_queue(self, queue: str, **kwargs: Any) -> None:
        cfg = mapping.queue_config(queue, kwargs.get("arguments"), self.connection.queue_defaults)
        self.connection.configs[queue] = cfg
        if kwargs.get("auto_delete"):
            # A consumer's private queue (remote control, replies, broadcasts): created
            # when bound or used, so a broadcast queue is born a subscription.
            self._auto_delete.add(queue)
            self._pending[queue] = cfg
            return
        self._create(queue, cfg)

    def _create(self, queue: str, cfg: QueueConfig) -> None:
        self._pending.pop(queue, None)
        try:
            try:
                self.mq.create_queue(queue, cfg)
            except errors.NameConflict:  # already a subscription: keep it one
                self.mq.create_queue(queue, mapping.as_subscription(cfg))
        except errors.PermissionDenied:
            self.connection.note_cannot_manage(queue)

    def _ensure(self, queue: str) -> None:
        cfg = self._pending.get(queue)
        if cfg is not None:
            self._create(queue, cfg)

    def _queue_bind(self, exchange: str, routing_key: str, pattern: Any, queue: str) -> None:
        if not self.broker_routed(exchange):
            self._ensure(queue)
            return
        keys = [b.routing_key for b in self.state.queue_bindings(queue) if b.exchange == exchange]
        expr = mapping.binding_filter(self.state.exchanges[exchange]["type"], keys)
        cfg = self._pending.pop(queue, None) or self.connection.configs.get(queue)
        self.connection.subscribe(exchange, queue, expr, cfg)

    def _has_queue(self, queue: str, **kwargs: Any) -> bool:
        if queue in self._pending:
            return True
        try:
            self.mq.stats(queue)
        except errors.QueueNotFound:
            return False
        return True

    def _size(self, queue: str) -> int:
        if queue in self._pending:
            return 0
        try:
            return self.mq.stats(queue).active
        except errors.QueueNotFound:
            return 0

    # -- publishing -----------------------------------------------------------------------

    def _lookup(self, exchange: str, routing_key: str, default: Any = None) -> list[str]:
        if not exchange:  # the default exchange: the routing key names the queue
            return [routing_key]
        try:
            table = self.get_table(exchange)
        except KeyError:
            table = []
        queues = self.typeof(exchange).lookup(table, exchange, routing_key, None)
        if not queues:
            raise errors.InvalidArgument(UNROUTABLE.format(exchange=exchange, key=routing_key))
        return sorted(queues)

    def _put(self, queue: str, message: Any, **kwargs: Any) -> None:
        key = message["properties"].get("delivery_info", {}).get("routing_key") or ""
        self._ensure(queue)
        self.connection.publish(queue, message, key, topic=False)

    def _put_fanout(self, exchange: str, message: Any, routing_key: str, **kwargs: Any) -> None:
        lossy = self.state.exchanges.get(exchange, {}).get("type") == "topic"
        self.connection.publish(exchange, message, routing_key or "", topic=True, lossy=lossy)

    # -- consuming ------------------------------------------------------------------------

    def basic_qos(
        self, prefetch_size: int = 0, prefetch_count: int = 0, apply_global: bool = False
    ) -> None:
        super().basic_qos(prefetch_size, prefetch_count, apply_global)
        self.slots.set_limit(prefetch_count or 0)

    def basic_consume(
        self, queue: str, no_ack: bool, callback: Any, consumer_tag: str, **kwargs: Any
    ) -> Any:
        self._ensure(queue)
        result = super().basic_consume(queue, no_ack, callback, consumer_tag, **kwargs)
        self._pollers[consumer_tag] = self.connection.start_poller(self, queue, no_ack)
        return result

    def basic_cancel(self, consumer_tag: str) -> Any:
        poller = self._pollers.pop(consumer_tag, None)
        if poller is not None:
            poller.stop()
        return super().basic_cancel(consumer_tag)

    def deliver(self, poller: Poller, m: MqMessage) -> None:
        """Hand a claimed message to its consumer's callback (from ``drain_events``)."""
        tag = uuid.uuid4().hex
        if not poller.no_ack:
            self._leases[tag] = (self.connection.lease_of(m), True)
        else:
            self.slots.give(1)
        callback = self.connection._callbacks.get(poller.queue)
        if callback is None:  # the consumer went away meanwhile
            self._settle_tag(tag, "abandon")
            return
        payload = self._mapped(m, tag)
        if payload is not None:
            callback(payload)

    def _mapped(self, m: MqMessage, tag: str) -> dict[str, Any] | None:
        """The kombu payload of one delivery, or None when it cannot be mapped: then the
        message is dead-lettered at once (a no_ack delivery is already gone) and only it;
        the consumer and the messages claimed beside it go on."""
        try:
            return mapping.incoming(m, tag)
        except mapping.Malformed as exc:
            log.warning(
                "queue %s: message %s (seq %d) dead-lettered, %s: %s",
                m.queue, m.message_id, m.seq_number, exc.reason, exc,
            )  # fmt: skip
            self._settle_tag(tag, "reject", exc.reason, str(exc)[: mapping.MAX_DESCRIPTION])
            return None

    def basic_get(self, queue: str, no_ack: bool = False, **kwargs: Any) -> Any:
        self._ensure(queue)
        mode = ReceiveMode.RECEIVE_AND_DELETE if no_ack else ReceiveMode.PEEK_LOCK
        got = self.mq.receive(queue, 1, 0, mode)
        if not got:
            return None
        tag = uuid.uuid4().hex
        if not no_ack:
            self._leases[tag] = (self.connection.lease_of(got[0], renew=True), False)
        payload = self._mapped(got[0], tag)
        if payload is None:
            return None
        message = self.Message(payload, channel=self)
        if not no_ack:
            self.qos.append(message, tag)
        return message

    def _get(self, queue: str, timeout: float | None = None) -> Any:
        raise NotImplementedError("mqlite consumes by long poll (basic_consume / basic_get)")

    # -- settling -------------------------------------------------------------------------

    def basic_ack(self, delivery_tag: str, multiple: bool = False) -> None:
        self._settle_tag(delivery_tag, "complete")
        super().basic_ack(delivery_tag)

    def basic_reject(self, delivery_tag: str, requeue: bool = False) -> None:
        if requeue:  # no delay: the queue's retry policy (if any) decides when
            self._settle_tag(delivery_tag, "abandon", self._requeue_error(delivery_tag))
        else:
            reason, description = self._dead_letter_reason(delivery_tag)
            self._settle_tag(delivery_tag, "reject", reason, description)
        self.qos.ack(delivery_tag)  # kombu's bookkeeping only: mqlite did the requeue

    def basic_recover(self, requeue: bool = False) -> None:
        for tag in list(self._leases):
            self._settle_tag(tag, "abandon")

    def _requeue_error(self, tag: str) -> str:
        """The failure a requeued task noted (``dead_letter.Request``), as Abandon's
        ``error`` (the message's last_error); empty when none was noted."""
        try:
            noted: tuple[str, str] | None = self.qos.get(tag).dead_letter
        except KeyError:
            return ""
        if noted is None:
            return ""
        reason, description = noted
        text = f"{reason}: {description}" if description else reason
        return text.encode("utf-8")[:MAX_ERROR_BYTES].decode("utf-8", "ignore")

    def _dead_letter_reason(self, tag: str) -> tuple[str, str]:
        try:
            message = self.qos.get(tag)
        except KeyError:
            return "rejected", ""
        noted: tuple[str, str] | None = message.dead_letter
        if noted is not None:
            return noted
        headers = message.headers or {}
        task = headers.get("task")
        what = f"task {task}[{headers.get('id')}]" if task else "the message"
        return "rejected", f"{what} was rejected by its consumer without requeue"

    def holds(self, tag: str) -> bool:
        """Whether ``tag`` is a delivery this channel still has to settle."""
        return tag in self._leases

    def _settle_tag(self, tag: str, verb: str, *reason: str) -> None:
        entry = self._leases.pop(tag, None)
        if entry is None:
            return
        lease, slotted = entry
        if slotted:
            self.slots.give(1)
        self.connection.settle(lease, verb, *reason)

    # -- teardown -------------------------------------------------------------------------

    def queue_delete(
        self, queue: str, if_unused: bool = False, if_empty: bool = False, **kwargs: Any
    ) -> None:
        if if_empty and self._size(queue):
            return
        self._remove(queue)
        self.state.queue_bindings_delete(queue)

    def _remove(self, queue: str) -> None:
        if self._pending.pop(queue, None) is not None:
            return
        topic = next((s.topic for s in self.mq.list_subscriptions() if s.name == queue), None)
        for attempt in range(DELETE_ATTEMPTS):
            self._purge_active(queue)
            try:
                if topic is None:
                    self.mq.delete_queue(queue)
                else:
                    self.mq.unsubscribe(topic, queue)
                return
            except (errors.QueueNotFound, errors.NotFound):
                return
            except errors.QueueNotEmpty:
                if attempt == DELETE_ATTEMPTS - 1:
                    raise

    def _purge(self, queue: str) -> int:
        if queue in self._pending:
            return 0
        n = self._purge_active(queue)
        from_seq = 0
        while True:  # ETA tasks wait in the broker as scheduled messages: purge them too
            page = self.mq.peek(queue, State.SCHEDULED, from_seq, 1000)
            for m in page:
                try:
                    self.mq.cancel(queue, m.seq_number)
                    n += 1
                except errors.NotFound:
                    pass  # became due (or was cancelled) meanwhile
            if len(page) < 1000:
                return n
            from_seq = page[-1].seq_number + 1

    def _purge_active(self, queue: str) -> int:
        n = 0
        while True:
            try:
                got = self.mq.receive(queue, DRAIN_BATCH, 0, ReceiveMode.RECEIVE_AND_DELETE)
            except errors.QueueNotFound:
                return n
            n += len(got)
            if not got:
                return n

    def stop_polling(self) -> None:
        for poller in self._pollers.values():
            poller.stop()
        self.slots.close()

    def close(self) -> None:
        if self.closed:
            return
        self.stop_polling()
        if self.connection is not None:
            try:
                # AMQP requeues what a closed channel held; auto-delete queues go with it.
                self.basic_recover(requeue=True)
                for queue in sorted(self._auto_delete):
                    self._remove(queue)
            except errors.MQLiteError as exc:
                log.warning("closing an mqlite channel: %s", exc)
        super().close()
