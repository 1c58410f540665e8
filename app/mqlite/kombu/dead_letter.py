"""A Celery task class whose rejected messages carry their reason into mqlite's DLQ.

Celery rejects a message through kombu's ``basic_reject(tag, requeue)``, which has no
room for a reason, while the exception that caused it is in hand one frame above, in the
worker's ``Request.on_failure``. This Request notes the exception on the message before
Celery rejects it, and the channel sends it as the dead-letter reason (the exception's
class) and description (its text; a ``Reject``'s own reason). Use it app-wide::

    app = Celery("proj", task_cls="mqlite.kombu.dead_letter:Task")

Without it a rejected task still lands in the DLQ, with reason ``rejected`` and the task's
name and id as the description (its exception is in the result backend).
"""

from __future__ import annotations

from typing import Any

from celery import Task as CeleryTask
from celery.exceptions import Reject
from celery.worker.request import Request as CeleryRequest

MAX_FIELD_CHARS = 1024  # a reason or description, cut (a traceback belongs in the results)


def reason_of(exc: BaseException) -> tuple[str, str]:
    """(reason, description) for the DLQ: the exception class and its message."""
    inner = getattr(exc, "exc", None)  # billiard's ExceptionWithTraceback wraps the real one
    if isinstance(inner, BaseException):
        exc = inner
    if isinstance(exc, Reject):
        why = exc.reason
        text = str(why) if why is not None else ""
        if isinstance(why, BaseException):
            return type(why).__name__[:MAX_FIELD_CHARS], text[:MAX_FIELD_CHARS]
        return "Reject", text[:MAX_FIELD_CHARS]
    return type(exc).__name__[:MAX_FIELD_CHARS], str(exc)[:MAX_FIELD_CHARS]


class Request(CeleryRequest):  # type: ignore[misc]
    def on_failure(
        self, exc_info: Any, send_failed_event: bool = True, return_ok: bool = False
    ) -> Any:
        message = self._message
        if hasattr(type(message), "dead_letter"):  # an mqlite message
            message.dead_letter = reason_of(exc_info.exception)
        return super().on_failure(exc_info, send_failed_event, return_ok)


class Task(CeleryTask):  # type: ignore[misc]
    """``celery.Task`` with the Request above; nothing else differs."""

    Request = "mqlite.kombu.dead_letter:Request"
