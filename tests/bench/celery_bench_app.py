"""The Celery app of celery_bench.py: one trivial task, configured from the environment
(``BENCH_BROKER``, ``BENCH_LEDGER``, ``BENCH_OPTIONS`` as JSON transport options)."""

from __future__ import annotations

import json
import os

from celery import Celery

import mqlite.kombu  # noqa: F401  (registers the mqlite transport)

app = Celery("celery_bench_app", broker=os.environ.get("BENCH_BROKER", "memory://"))
app.conf.update(
    task_acks_late=True,  # at least once on every broker: the same work per task
    task_ignore_result=True,
    broker_transport_options=json.loads(os.environ.get("BENCH_OPTIONS", "{}")),
    broker_connection_retry_on_startup=True,
)


@app.task
def mark(key: int) -> None:
    fd = os.open(os.environ["BENCH_LEDGER"], os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        os.write(fd, f"{key}\n".encode())
    finally:
        os.close(fd)
