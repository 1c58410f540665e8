"""Time-dependent parts of the protocol, on the embedded client with a FakeClock (the
HTTP side never relies on lease expiry). Also: the embedded ``status()`` shape."""

from __future__ import annotations

import pytest

import mqlite
from mqlite import OutMessage, QueueConfig, errors, wire
from mqlite.clock import FakeClock
from mqlite.testing import run_maintenance_once


def test_lease_expiry_is_lock_lost_and_renew_extends(
    embedded: mqlite.EmbeddedClient, clock: FakeClock
) -> None:
    embedded.create_queue("q", QueueConfig(lock_duration_ms=2_000))
    embedded.send_one("q", OutMessage(b"x"))
    [m] = embedded.receive("q")
    clock.advance(1_500)
    assert embedded.renew("q", m.seq_number, m.lock_token) == clock.now_ms() + 2_000
    clock.advance(1_500)
    m.complete()  # still inside the renewed lease
    embedded.send_one("q", OutMessage(b"y"))
    [n] = embedded.receive("q")
    clock.advance(2_000)  # the exact deadline is already expired
    with pytest.raises(errors.LockLost):
        n.complete()
    assert embedded.renew_batch("q", [(n.seq_number, n.lock_token)])[0].ok is False


def test_scheduled_message_activates(embedded: mqlite.EmbeddedClient, clock: FakeClock) -> None:
    embedded.create_queue("q")
    [seq] = embedded.schedule("q", [OutMessage(b"x")], at_ms=clock.now_ms() + 5_000)
    assert embedded.receive("q") == []
    clock.advance(5_000)
    run_maintenance_once(embedded)
    assert [m.seq_number for m in embedded.receive("q")] == [seq]


def test_embedded_status(embedded: mqlite.EmbeddedClient, clock: FakeClock) -> None:
    embedded.create_queue("q")
    clock.advance(1_234)
    st = embedded.status()
    assert isinstance(st, wire.StatusResponse)
    assert (st.version, st.auth, st.queues, st.uptime_ms) == (mqlite.__version__, False, 1, 1_234)
    assert isinstance(st.ping_ms, int)
