"""The three schedule verbs on every client (docs/cron.md): embedded, ``mqlite.connect``
and the asyncio client return the same values, and refuse a message id the wire would
otherwise drop."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from sdk_support import Broker

import mqlite
import mqlite.aio
from mqlite import OutMessage, Schedule, errors

Names = Callable[[str], str]


def test_create_list_delete_on_each_client(mq: Any, names: Names) -> None:
    q, name = names("reports"), names("nightly")
    mq.create_queue(q)
    msg = OutMessage(b"run", subject="nightly", properties={"team": "ops"})
    s = mq.create_schedule(name, "30 2 * * *", q, msg, timezone="Europe/Berlin", catch_up="skip")
    assert isinstance(s, Schedule)
    assert (s.name, s.cron, s.queue, s.timezone, s.catch_up, s.paused, s.status) == (
        name, "30 2 * * *", q, "Europe/Berlin", "skip", False, "active",
    )  # fmt: skip
    assert (s.message.body, s.message.subject, s.message.properties) == (
        b"run", "nightly", {"team": "ops"},
    )  # fmt: skip
    assert s.next_fire_at_ms > 0 and s.fired == 0
    assert [x for x in mq.list_schedules() if x.name == name] == [s]
    paused = mq.create_schedule(name, "30 2 * * *", q, msg, "Europe/Berlin", "skip", True)
    assert (paused.status, paused.next_fire_at_ms) == ("paused", 0)
    assert mq.delete_schedule(name) is True
    assert mq.delete_schedule(name) is False
    with pytest.raises(errors.InvalidArgument, match="message_id"):
        mq.create_schedule(name, "@daily", q, OutMessage(b"x", message_id="m"))
    with pytest.raises(errors.InvalidArgument, match="field 1 \\(minute\\)"):
        mq.create_schedule(name, "99 * * * *", q, msg)
    with pytest.raises(errors.QueueNotFound):
        mq.create_schedule(name, "@daily", names("missing"), msg)


def test_the_asyncio_client(broker: Broker, names: Names) -> None:
    q, name = names("aio"), names("tick")

    async def main() -> tuple[Schedule, list[Schedule], bool]:
        async with mqlite.aio.connect(broker.url, broker.token) as mq:
            await mq.create_queue(q)
            s = await mq.create_schedule(name, "@hourly", q, OutMessage(b"t"))
            listed = [x for x in await mq.list_schedules() if x.name == name]
            return s, listed, await mq.delete_schedule(name)

    s, listed, deleted = asyncio.run(main())
    assert (s.cron, s.status, listed, deleted) == ("@hourly", "active", [s], True)
