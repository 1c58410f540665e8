"""Celery and kombu on mqlite: ``import mqlite.kombu`` registers kombu's ``mqlite``
transport alias, so ``broker_url = "mqlite+http://127.0.0.1:6754"`` (a broker) or
``"mqlite:///mq.db"`` (the embedded engine) works in the process that imported it.

kombu has no entry point for transports (it resolves aliases from its own
``TRANSPORT_ALIASES`` table), hence the documented import. The optional extra
``mqlite[celery]`` installs Celery and kombu; ``import mqlite`` never loads them.

Modules: ``transport`` (the kombu Transport: client, inbox, drain_events), ``channel``
(AMQP verbs as mqlite requests, routing), ``mapping`` (pure message/queue/binding
translation), ``polling`` (one long poll per consumer), ``leases`` (renewal while a task
runs), ``clients`` (URL to client; one embedded client per file per process),
``dead_letter`` (a Celery task class that puts the task's exception into the DLQ reason).
See docs/celery.md.
"""

from __future__ import annotations

from kombu.transport import TRANSPORT_ALIASES

ALIAS = "mqlite"
TRANSPORT = "mqlite.kombu.transport:Transport"

TRANSPORT_ALIASES.setdefault(ALIAS, TRANSPORT)

__all__ = ["ALIAS", "TRANSPORT"]
