"""A Celery feature mqlite lacks is a configuration error in mqlite's words, not an outage
(issue 31 item 10): ``send_task(priority=...)`` used to surface as kombu's
``OperationalError`` (the class kombu uses for a lost connection, which callers retry)."""

from __future__ import annotations

from pathlib import Path

import pytest
from celery import Celery
from kombu.exceptions import OperationalError

import mqlite.kombu  # noqa: F401  (registers the mqlite transport)
from mqlite import errors


def test_a_task_priority_is_invalid_argument_not_a_connection_error(tmp_path: Path) -> None:
    app = Celery("refusals", broker=f"mqlite+file://{tmp_path / 'mq.db'}")
    try:
        with pytest.raises(
            errors.InvalidArgument, match=r"no message priorities \(priority=5 on task t\.add\)"
        ) as raised:
            app.send_task("t.add", (1, 2), priority=5)
        assert not isinstance(raised.value, OperationalError)
        app.send_task("t.add", (1, 2))  # the same app still publishes: nothing was broken
    finally:
        app.close()


def test_the_transport_counts_only_outages_as_recoverable() -> None:
    from mqlite.kombu.transport import Transport

    assert errors.InvalidArgument not in Transport.recoverable_connection_errors
    assert errors.Unavailable in Transport.recoverable_connection_errors
    assert Transport.recoverable_channel_errors == ()
