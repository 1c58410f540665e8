"""Concurrent scrapes share one collection (issue 26: four concurrent /metrics scrapes of
10,000 queues moved another client's Send p50 from 1.9 ms to 357 ms). A real broker whose
writer is held by a transaction (``faulty_serve``'s slow seam) receives N scrapes while
it is busy: they are answered by ONE collection and one render, counted by the
storage reads only a collection makes (the read probe and the grouped scan). A scrape
right after reuses that collection; an Observe call never does."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from e2e_support import BrokerFactory, file_store_only

from mqlite.server.observations import SCRAPE_REUSE_S

MONITOR = "mqk_e2e_monitor_" + "c" * 24
SCRAPES = 8
READS_PER_COLLECTION = 2  # the probe and the grouped scan


def reads(b: Any) -> int:
    """Successful storage reads so far, this Observe's own collection included."""
    o = b.ok("AdminService/Observe", {}, token=MONITOR)
    (ok,) = [
        s for s in o["storage"]["operations"] if (s["operation"], s["outcome"]) == ("read", "ok")
    ]
    return int(ok["duration"]["count"])


@file_store_only("the slow seam holds the local writer")
def test_concurrent_scrapes_cause_one_collection(
    broker_factory: BrokerFactory, tmp_path: Path
) -> None:
    slow = tmp_path / "slow"
    b = broker_factory(
        {
            "MQLITE_MONITOR_TOKENS": MONITOR,
            "MQLITE_METRICS": "on",
            "FAULTY_SERVE_TRIGGER": str(tmp_path / "never"),
            "FAULTY_SERVE_SLOW_TRIGGER": str(slow),
        },
        faulty=True,
    )
    queue = b.create_queue()
    before = reads(b)
    time.sleep(SCRAPE_REUSE_S + 0.1)  # e2e: past the window in which a scrape reuses it
    slow.touch()
    writer_busy = threading.Thread(target=b.send, args=(queue, "x"))
    writer_busy.start()  # its transaction holds the writer until `slow` is removed
    held = tmp_path / "slow.held"
    deadline = time.monotonic() + 30
    while not held.exists():
        assert time.monotonic() < deadline, "the Send never took the writer"
        time.sleep(0.01)
    bodies: list[bytes] = []

    def scrape() -> None:
        with httpx.Client(base_url=b.base_url, timeout=30) as c:
            r = c.get("/metrics", headers={"Authorization": f"Bearer {MONITOR}"})
            r.raise_for_status()
            bodies.append(r.content)

    scrapers = [threading.Thread(target=scrape) for _ in range(SCRAPES)]
    for t in scrapers:
        t.start()
    time.sleep(2.0)  # e2e: every scrape reaches the broker while the writer is held
    os.unlink(slow)
    for t in [writer_busy, *scrapers]:
        t.join(30)
    assert len(bodies) == SCRAPES and len(set(bodies)) == 1  # one render, served to all
    collections = (reads(b) - before - READS_PER_COLLECTION) // READS_PER_COLLECTION
    assert collections == 1, collections
    # Served after the Send that held the writer: sampled after every scrape arrived.
    assert f'queue="{queue}"}} 1.0'.encode() in bodies[0]


def test_a_scrape_reuses_a_second_old_collection_observe_never_does(
    broker_factory: BrokerFactory,
) -> None:
    b = broker_factory({"MQLITE_MONITOR_TOKENS": MONITOR, "MQLITE_METRICS": "on"})
    # The three scrapes must land within the second after that Observe's collection began:
    # a loaded machine can take longer, and then a fresh collection is right. Such a round
    # proves nothing either way and is run again (issue 25); the check is on a round that
    # fit the window, measured from before the Observe was sent.
    tried = []
    with httpx.Client(base_url=b.base_url, timeout=30) as c:
        for _ in range(10):
            started = time.monotonic()
            before = reads(b)
            for _ in range(3):
                r = c.get("/metrics", headers={"Authorization": f"Bearer {MONITOR}"})
                r.raise_for_status()
            took = time.monotonic() - started
            after = reads(b)  # Observe: a collection of its own, never a reused one
            if took < SCRAPE_REUSE_S:
                assert after - before == READS_PER_COLLECTION, (before, after, took)
                return
            tried.append(round(took, 2))
    pytest.fail(f"no round of Observe + 3 scrapes fit the {SCRAPE_REUSE_S} s window: {tried}")


def test_a_scrape_is_gzip_when_asked(broker_factory: BrokerFactory) -> None:
    """Prometheus asks for gzip: the same text, compressed (a 10,000-queue exposition is
    19 MB as text); a client that does not ask gets the text."""
    b = broker_factory({"MQLITE_MONITOR_TOKENS": MONITOR, "MQLITE_METRICS": "on"})
    b.create_queue()
    auth = {"Authorization": f"Bearer {MONITOR}"}
    with httpx.Client(base_url=b.base_url, timeout=30) as c:
        plain = c.get("/metrics", headers={**auth, "Accept-Encoding": "identity"})
        packed = c.get("/metrics", headers={**auth, "Accept-Encoding": "gzip"})
        refused = c.get("/metrics", headers={**auth, "Accept-Encoding": "gzip;q=0"})
    assert "content-encoding" not in plain.headers
    assert "content-encoding" not in refused.headers
    assert packed.headers["content-encoding"] == "gzip"
    raw = int(packed.headers["content-length"])
    assert packed.content == plain.content and raw < len(plain.content) / 5
