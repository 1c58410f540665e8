"""How a cron schedule is stored: the ``schedules`` rows and their SQL, the checks a
schedule passes before it is written, and the message one slot sends. Shared by the verbs
that edit schedules (``schedules.py``) and the pass that fires them (``schedule_firing.py``).
"""

from __future__ import annotations

import json
import re
from typing import Any

from mqlite import defaults, errors
from mqlite.engine import send
from mqlite.engine.cron import Cron, rfc3339
from mqlite.types import OutMessage, Schedule

CATCH_UP = ("latest", "skip")
NAME_RE = re.compile(r"^[A-Za-z0-9._-]+$")
SCHEDULE_PROPERTY = "mqlite-schedule"
SLOT_PROPERTY = "mqlite-slot"
_COLUMNS = (
    "name, cron, timezone, queue, body, subject, content_type, correlation_id, reply_to, "
    "group_id, properties, catch_up, paused, next_fire_at, last_slot, last_fired_at, fired, "
    "created_at, updated_at"
)

LIST_SCHEDULES_SQL = f"SELECT {_COLUMNS} FROM schedules ORDER BY name"
GET_SCHEDULE_SQL = f"SELECT {_COLUMNS} FROM schedules WHERE name = ?"
COUNT_SCHEDULES_SQL = "SELECT COUNT(*) FROM schedules"
ANY_SCHEDULE_SQL = "SELECT 1 FROM schedules LIMIT 1"
DELETE_SCHEDULE_SQL = "DELETE FROM schedules WHERE name = ?"
SCHEDULE_QUEUE_SQL = "SELECT queue FROM schedules WHERE name = ?"

UPSERT_SCHEDULE_SQL = """
INSERT INTO schedules (name, cron, timezone, queue, body, subject, content_type,
    correlation_id, reply_to, group_id, properties, catch_up, paused, next_fire_at,
    created_at, updated_at)
VALUES (:name, :cron, :timezone, :queue, :body, :subject, :content_type, :correlation_id,
    :reply_to, :group_id, :properties, :catch_up, :paused, :next_fire_at, :now, :now)
ON CONFLICT (name) DO UPDATE SET
    cron = excluded.cron, timezone = excluded.timezone, queue = excluded.queue,
    body = excluded.body, subject = excluded.subject, content_type = excluded.content_type,
    correlation_id = excluded.correlation_id, reply_to = excluded.reply_to,
    group_id = excluded.group_id, properties = excluded.properties,
    catch_up = excluded.catch_up, paused = excluded.paused,
    next_fire_at = excluded.next_fire_at, updated_at = excluded.updated_at
"""

# The firing pass: due, unpaused schedules in (next_fire_at, name) order, keyset-paged
# (a schedule that failed this pass is not met again in it). Seeks idx_schedules_due.
DUE_SCHEDULES_SQL = f"""
SELECT {_COLUMNS} FROM schedules
WHERE paused = 0 AND next_fire_at <= :now AND (next_fire_at, name) > (:at, :name)
ORDER BY next_fire_at, name LIMIT :limit
"""

# Record a fired slot: compare-and-swap on the next_fire_at the pass planned from, so a
# concurrent upsert (or a second pass) cannot make it fire twice.
FIRE_SQL = """
UPDATE schedules SET next_fire_at = :next, last_slot = :slot, last_fired_at = :now,
    fired = fired + 1
WHERE name = :name AND next_fire_at = :expected AND paused = 0
"""

# Move past slots that do not fire (catch_up=skip, a missing target, a refused send).
ADVANCE_SQL = """
UPDATE schedules SET next_fire_at = :next
WHERE name = :name AND next_fire_at = :expected AND paused = 0
"""

NEVER = 1 << 62  # next_fire_at of a schedule with no future slot: never due


def check_name(name: object) -> str:
    limit = defaults.MAX_SCHEDULE_NAME_CHARS
    if not isinstance(name, str) or not name:
        raise errors.InvalidArgument("name is required")
    if len(name) > limit or not NAME_RE.match(name):
        raise errors.InvalidArgument(
            f"name must be 1..{limit} characters of A-Z, a-z, 0-9, '.', '_' and '-'"
        )
    return name


def slot_message(message: OutMessage, name: str, slot_ms: int) -> OutMessage:
    """The message one slot sends: its id and the two properties name the slot."""
    props = {**message.properties, SCHEDULE_PROPERTY: name, SLOT_PROPERTY: rfc3339(slot_ms)}
    return OutMessage(
        message.body,
        f"cron:{name}:{slot_ms}",
        message.group_id,
        message.subject,
        message.correlation_id,
        message.reply_to,
        message.content_type,
        props,
    )


def schedule_of(row: tuple[Any, ...]) -> Schedule:
    """A ``schedules`` row (``_COLUMNS`` order) as the Schedule the verbs return."""
    (name, cron, tz, queue, body, subject, ctype, corr, reply, group, props) = row[:11]
    (catch_up, paused, next_at, last_slot, last_at, fired, created, updated) = row[11:]
    message = OutMessage(bytes(body), "", group, subject, corr, reply, ctype, json.loads(props))
    return Schedule(
        name, cron, queue, message, tz, catch_up, bool(paused), next_at, last_at,
        last_slot, fired, "paused" if paused else "active", created, updated,
    )  # fmt: skip


def next_fire_at(cron: Cron, after_ms: int) -> int:
    """The first slot after ``after_ms`` (``NEVER`` when there is none)."""
    nxt = cron.next_slot(after_ms)
    return NEVER if nxt is None else nxt


def check_message(message: object, max_bytes: int) -> OutMessage:
    if not isinstance(message, OutMessage):
        raise errors.InvalidArgument("message must be an OutMessage")
    if message.message_id:
        raise errors.InvalidArgument(
            "message.message_id must be empty: each firing's is cron:<name>:<slot ms>"
        )
    try:
        (msg,) = send.validate_messages([message], max_bytes)
    except (errors.InvalidArgument, errors.MessageTooLarge) as exc:
        raise type(exc)(exc.message.replace("messages[0]", "message")) from None
    return msg
