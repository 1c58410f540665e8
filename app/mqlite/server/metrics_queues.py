"""The per-queue families of ``/metrics``, written as text directly: the queue gauges
(ten series a queue) and the zero-filled message events (twenty, plus the deprecated
completed alias), 31 of a scrape's series for every queue -- all but ~1,300 of them at
1,000 queues. ``generate_latest`` validates and escapes each sample's labels (about 8 us a
series: a 10,000-queue render took seconds of CPU under the GIL the event loop needs);
this writes each label value escaped once. The bytes are pinned equal to
prometheus-client's own rendering of the same families (tests/ops/test_exposition.py),
so this is a faster path, not a second format.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from itertools import groupby
from operator import attrgetter
from typing import cast

from prometheus_client.utils import floatToGoString

from mqlite.engine import observation as o

STATES = ("active", "locked", "deferred", "scheduled", "dead_lettered")
YIELD_EVERY = 256  # queues rendered between two pauses for the other threads

# (name, help, the value of a QueueGauges)
QUEUE_FAMILIES: tuple[tuple[str, str, Callable[[o.QueueGauges], float]], ...] = (
    ("mqlite_queue_retained_messages", "All retained rows.", lambda q: q.total),
    (
        "mqlite_queue_unexpected_messages",
        "Rows outside the normal states.",
        lambda q: q.unexpected,
    ),
    (
        "mqlite_queue_oldest_message_age_seconds",
        "Enqueue age of the oldest active or locked row, 0 if none.",
        lambda q: q.oldest_message_age_ms / 1000,
    ),
    (
        "mqlite_queue_total",
        "Deprecated: mqlite_queue_retained_messages.",
        lambda q: q.total,
    ),
    (
        "mqlite_queue_oldest_message_age_ms",
        "Deprecated: mqlite_queue_oldest_message_age_seconds x 1000.",
        lambda q: q.oldest_message_age_ms,
    ),
)
BY_STATE = ("mqlite_queue_messages", "Retained messages by state.")
EVENTS = ("mqlite_message_events", "Committed message effects.")
COMPLETED = (
    "mqlite_messages_completed",
    'Deprecated: mqlite_message_events_total{event="completed"}.',
)
# The library's own float text (Go's: 1e+06, +Inf), so the bytes match generate_latest.
_number = cast(Callable[[float], str], floatToGoString)


def _label_value(value: str) -> str:
    """A label value escaped as text format 0.0.4 requires (backslash, quote, newline)."""
    return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")


def _slices(n: int) -> Iterator[slice]:
    """``range(n)`` in slices of ``YIELD_EVERY``, letting other threads run between them:
    a render holds the GIL (hundreds of ms at 10,000 queues), and without a pause the
    event loop and the writer each wait up to the 5 ms switch interval for it at every
    hand-off, which is what a bystander's Send paid during a scrape."""
    for start in range(0, n, YIELD_EVERY):
        if start:
            time.sleep(0)
        yield slice(start, start + YIELD_EVERY)


def queue_gauges_text(queues: tuple[o.QueueGauges, ...]) -> str:
    """The per-queue gauge families in text format 0.0.4, each label value escaped once."""
    labels = [f'queue="{_label_value(q.queue)}"' for q in queues]
    name, doc = BY_STATE
    out = [f"# HELP {name} {doc}\n# TYPE {name} gauge\n"]
    for part in _slices(len(queues)):
        for q, label in zip(queues[part], labels[part], strict=True):
            for state in STATES:
                value = _number(getattr(q, state))
                out.append(f'{name}{{{label},state="{state}"}} {value}\n')
    for name, doc, value_of in QUEUE_FAMILIES:
        out.append(f"# HELP {name} {doc}\n# TYPE {name} gauge\n")
        for part in _slices(len(queues)):
            out.extend(
                f"{name}{{{label}}} {_number(value_of(q))}\n"
                for q, label in zip(queues[part], labels[part], strict=True)
            )
    return "".join(out)


def _count(n: int) -> str:
    return "0.0" if not n else _number(n)  # most rows are zero-fill: skip the call


def message_events_text(messages: tuple[o.MessageEffect, ...]) -> str:
    """``mqlite_message_events_total`` for every row of the observation (zero-filled per
    known queue, sorted by queue) and the deprecated ``mqlite_messages_completed_total``
    beside it, from the same rows."""
    name, doc = EVENTS
    alias, alias_doc = COMPLETED
    events = [f"# HELP {name}_total {doc}\n# TYPE {name}_total counter\n"]
    completed = [f"# HELP {alias}_total {alias_doc}\n# TYPE {alias}_total counter\n"]
    prefix: dict[str, str] = {}  # event -> the line up to the queue label
    for i, (queue, rows) in enumerate(groupby(messages, key=attrgetter("queue"))):
        if i and not i % YIELD_EVERY:
            time.sleep(0)  # let the loop and the writer run (``_slices``)
        label = f'queue="{_label_value(queue)}"}} '
        for m in rows:
            start = prefix.get(m.event)
            if start is None:
                start = prefix[m.event] = f'{name}_total{{event="{m.event}",'
            value = _count(m.count)
            events.append(f"{start}{label}{value}\n")
            if m.event == "completed":
                completed.append(f"{alias}_total{{{label}{value}\n")
    return "".join(events) + "".join(completed)
