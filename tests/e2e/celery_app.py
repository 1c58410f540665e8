"""The Celery app of the Celery tier: real tasks a real ``celery worker`` runs.

Configured from the environment (the worker is a separate process): ``CELERY_TEST_BROKER``
(the broker URL), ``CELERY_TEST_RESULTS`` (the filesystem result backend's directory),
``CELERY_TEST_LEDGER`` (a file every execution appends one line to: the idempotency
ledger the tests count), ``CELERY_TEST_QUEUE`` and ``CELERY_TEST_OPTIONS`` (JSON
``broker_transport_options``; the token rides there, never in the URL) and
``CELERY_TEST_QUEUE_ARGS`` (JSON kombu queue arguments of the task queue, e.g. a retry
policy: every process declares the queue with them).
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

from celery import Celery
from celery.exceptions import Reject

import mqlite.kombu  # noqa: F401  (registers the mqlite transport)
from kombu import Exchange, Queue
from mqlite.clock import SYSTEM_CLOCK


def make_app(
    broker: str,
    results: str,
    queue: str,
    options: dict[str, Any],
    queue_args: dict[str, Any] | None = None,
) -> Celery:
    app = Celery("celery_app", broker=broker, backend=f"file://{results}",
                 task_cls="mqlite.kombu.dead_letter:Task")  # fmt: skip
    app.conf.update(
        task_default_queue=queue,
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        broker_transport_options=options,
        broker_connection_retry_on_startup=True,
        worker_lost_wait=1.0,  # a crashed pool process is reported in 1 s, not 10
    )
    if queue_args:
        app.conf.task_queues = [Queue(queue, Exchange(queue), queue, queue_arguments=queue_args)]
    return app


app = make_app(
    os.environ.get("CELERY_TEST_BROKER", "mqlite:///unused.db"),
    os.environ.get("CELERY_TEST_RESULTS", "/nonexistent"),
    os.environ.get("CELERY_TEST_QUEUE", "celery"),
    json.loads(os.environ.get("CELERY_TEST_OPTIONS", "{}")),
    json.loads(os.environ.get("CELERY_TEST_QUEUE_ARGS", "{}")),
)


def record(*fields: object) -> None:
    """One line per execution, in ONE write on an O_APPEND file: lines of concurrent
    processes never interleave."""
    line = " ".join(str(f) for f in fields) + "\n"
    fd = os.open(os.environ["CELERY_TEST_LEDGER"], os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


@app.task
def add(x: int, y: int) -> int:
    return x + y


@app.task(bind=True, ignore_result=True)
def mark(self: Any, key: str) -> None:
    record("mark", key, self.request.hostname, os.getpid())


@app.task(bind=True)
def when(self: Any, key: str) -> int:
    now = SYSTEM_CLOCK.now_ms()
    record("when", key, now)
    return now


@app.task(bind=True)
def slow(self: Any, key: str, first_s: float, again_s: float) -> str:
    redelivered = bool(self.request.delivery_info.get("redelivered"))
    record("start", key, os.getpid(), redelivered)
    time.sleep(again_s if redelivered else first_s)
    record("done", key, os.getpid())
    return key


@app.task(bind=True)
def crash(self: Any, key: str) -> None:
    """Kills its pool process: WorkerLostError, and reject_on_worker_lost requeues it."""
    record("crash", key, bool(self.request.delivery_info.get("redelivered")))
    os._exit(1)


@app.task
def refuse(key: str) -> None:
    raise Reject(f"bad input {key}", requeue=False)


@app.task(acks_on_failure_or_timeout=False)
def fail(key: str) -> None:
    raise ValueError(f"cannot process {key}")


@app.task(bind=True)
def flaky(self: Any, key: str) -> None:
    """Fails every delivery, asking for a requeue: the queue's retry policy paces them."""
    record("flaky", key, SYSTEM_CLOCK.now_ms())
    raise Reject(f"attempt failed {key}", requeue=True)
