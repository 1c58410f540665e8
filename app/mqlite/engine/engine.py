"""The Engine facade: one core (``core.py``) and its parts, one per responsibility.

The parts (``part.py``) each hold the verbs of one responsibility over the shared core:
``queues`` (the catalog: queues and topics), ``messaging`` (send, claim, settle, the
outbox), ``admin`` (browse, dead letters, status), ``maintenance`` (reaper, TTL,
janitors, reclaim, the lease), ``access_keys``, ``observer``, ``schedules`` (cron: the
verbs) and ``schedule_firing`` (cron: the firing pass), ``audit`` and ``push_ops``.
A transport is handed the parts it uses; the facade only names each verb once, as the
part's own bound method (``_Verb``), for the embedded client and the tests, which use
the engine as one object.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Concatenate, Generic, ParamSpec, Self, TypeVar, overload

from mqlite.engine.admin import Admin
from mqlite.engine.audit_ops import Audit
from mqlite.engine.core import EngineCore
from mqlite.engine.keys import AccessKeys
from mqlite.engine.maintenance_ops import Maintenance
from mqlite.engine.messaging import Messaging
from mqlite.engine.observe import Observer
from mqlite.engine.push import Pushes
from mqlite.engine.queue_ops import Queues
from mqlite.engine.schedule_firing import ScheduleFiring
from mqlite.engine.schedules import Schedules

P = ParamSpec("P")
R = TypeVar("R")


class _Verb(Generic[P, R]):
    """``Engine.<verb>``: the same-named verb of one part. The facade binds every one of
    them on its instance when it is built (``Engine._compose``), so a call costs what a
    call of the part's method costs; mypy sees the part's signature through ``__get__``."""

    def __init__(self, part: str, verb: Callable[Concatenate[Any, P], R]) -> None:
        self.part = part
        self.verb = verb.__name__

    @overload
    def __get__(self, obj: None, owner: type[Any]) -> Self: ...

    @overload
    def __get__(self, obj: object, owner: type[Any]) -> Callable[P, R]: ...

    def __get__(self, obj: object, owner: type[Any]) -> Any:
        if obj is None:
            return self
        return getattr(getattr(obj, self.part), self.verb)


class Engine(EngineCore):
    """The broker core on one SQLite database. Thread-safe; knows nothing of HTTP."""

    queues: Queues
    messaging: Messaging
    admin: Admin
    schedules: Schedules
    schedule_firing: ScheduleFiring
    maintenance: Maintenance
    access_keys: AccessKeys
    observer: Observer
    audit: Audit
    push_ops: Pushes

    def _compose(self) -> None:
        self.queues = Queues(self)
        self.messaging = Messaging(self)
        self.admin = Admin(self)
        self.schedule_firing = ScheduleFiring(self, self.messaging)
        self.schedules = Schedules(self, self.schedule_firing)
        self.audit = Audit(self)
        self.maintenance = Maintenance(self, self.schedule_firing, self.audit)
        self.access_keys = AccessKeys(self)
        self.observer = Observer(self)
        self.push_ops = Pushes(self)
        for name, verb in vars(Engine).items():
            if isinstance(verb, _Verb):
                setattr(self, name, verb.__get__(self, Engine))

    # -- queues and topics (queue_ops.py) -------------------------------------------------
    create_queue = _Verb("queues", Queues.create_queue)
    ensure_queue = _Verb("queues", Queues.ensure_queue)
    list_queues = _Verb("queues", Queues.list_queues)
    get_queue = _Verb("queues", Queues.get_queue)
    delete_queue = _Verb("queues", Queues.delete_queue)
    topic_of = _Verb("queues", Queues.topic_of)
    has_filters = _Verb("queues", Queues.has_filters)
    subscribe = _Verb("queues", Queues.subscribe)
    unsubscribe = _Verb("queues", Queues.unsubscribe)
    list_subscriptions = _Verb("queues", Queues.list_subscriptions)
    test_filter = _Verb("queues", Queues.test_filter)

    # -- messaging (sending.py, messaging.py) ---------------------------------------------
    send = _Verb("messaging", Messaging.send)
    send_one = _Verb("messaging", Messaging.send_one)
    schedule = _Verb("messaging", Messaging.schedule)
    cancel = _Verb("messaging", Messaging.cancel)
    receive = _Verb("messaging", Messaging.receive)
    receive_args = _Verb("messaging", Messaging.receive_args)
    try_receive = _Verb("messaging", Messaging.try_receive)
    receive_deferred = _Verb("messaging", Messaging.receive_deferred)
    complete = _Verb("messaging", Messaging.complete)
    abandon = _Verb("messaging", Messaging.abandon)
    reject = _Verb("messaging", Messaging.reject)
    defer = _Verb("messaging", Messaging.defer)
    renew = _Verb("messaging", Messaging.renew)
    complete_batch = _Verb("messaging", Messaging.complete_batch)
    renew_batch = _Verb("messaging", Messaging.renew_batch)
    tx = _Verb("messaging", Messaging.tx)

    # -- browse, dead letters, status (admin.py) ------------------------------------------
    peek = _Verb("admin", Admin.peek)
    stats = _Verb("admin", Admin.stats)
    redrive = _Verb("admin", Admin.redrive)
    redrive_chunk = _Verb("admin", Admin.redrive_chunk)
    purge = _Verb("admin", Admin.purge)
    purge_chunk = _Verb("admin", Admin.purge_chunk)
    status = _Verb("admin", Admin.status)

    # -- maintenance (maintenance_ops.py) -------------------------------------------------
    reap_locks = _Verb("maintenance", Maintenance.reap_locks)
    activate_scheduled = _Verb("maintenance", Maintenance.activate_scheduled)
    expire_ttl = _Verb("maintenance", Maintenance.expire_ttl)
    run_janitors = _Verb("maintenance", Maintenance.run_janitors)
    reclaim_free_pages = _Verb("maintenance", Maintenance.reclaim_free_pages)
    reclaim_pass = _Verb("maintenance", Maintenance.reclaim_pass)
    checkpoint = _Verb("maintenance", Maintenance.checkpoint)
    vacuum_full = _Verb("maintenance", Maintenance.vacuum_full)
    catch_up = _Verb("maintenance", Maintenance.catch_up)
    renew_lease = _Verb("maintenance", Maintenance.renew_lease)
    run_maintenance_once = _Verb("maintenance", Maintenance.run_maintenance_once)
    tend_disk = _Verb("maintenance", Maintenance.tend_disk)

    # -- access keys (keys.py), observation (observe.py), cron (schedule*.py) -------------
    create_key = _Verb("access_keys", AccessKeys.create_key)
    list_keys = _Verb("access_keys", AccessKeys.list_keys)
    revoke_key = _Verb("access_keys", AccessKeys.revoke_key)
    key_refusal = _Verb("access_keys", AccessKeys.key_refusal)
    authenticate_key = _Verb("access_keys", AccessKeys.authenticate_key)
    observe = _Verb("observer", Observer.observe)
    create_schedule = _Verb("schedules", Schedules.create_schedule)
    list_schedules = _Verb("schedules", Schedules.list_schedules)
    delete_schedule = _Verb("schedules", Schedules.delete_schedule)
    fire_schedules = _Verb("schedule_firing", ScheduleFiring.fire_schedules)

    # -- the audit trail (audit_ops.py) ---------------------------------------------------
    list_audit = _Verb("audit", Audit.list_audit)
    prune_audit = _Verb("audit", Audit.prune_audit)

    # -- push targets (push.py; delivered by mqlite.push) ---------------------------------
    create_push = _Verb("push_ops", Pushes.create_push)
    list_pushes = _Verb("push_ops", Pushes.list_pushes)
    delete_push = _Verb("push_ops", Pushes.delete_push)
    push_targets = _Verb("push_ops", Pushes.push_targets)
    record_push = _Verb("push_ops", Pushes.record_push)
