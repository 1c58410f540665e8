"""The Celery transport's long poll backs off for a rate-limited key (issue 35): after a
429 ``resource_exhausted`` it waits the broker's ``Retry-After``, not its short retry."""

from __future__ import annotations

import queue as stdqueue
import threading
import time
from typing import Any

from mqlite import errors
from mqlite.kombu.polling import Poller, Slots


class LimitedClient:
    """receive: a 429 first, then an empty answer held until the test is done (a long poll
    that found nothing); records when each call came."""

    def __init__(self) -> None:
        self.calls: list[float] = []
        self.second = threading.Event()
        self.done = threading.Event()

    def receive(self, *args: Any) -> list[Any]:
        self.calls.append(time.monotonic())
        if len(self.calls) == 1:
            raise errors.ResourceExhausted("rate limit", retry_after_s=1)
        self.second.set()
        self.done.wait(5)
        return []


def test_the_poller_waits_the_retry_after_of_a_429() -> None:
    client = LimitedClient()
    inbox: stdqueue.Queue[Any] = stdqueue.Queue()
    poller = Poller(
        client,  # type: ignore[arg-type]
        "q",
        no_ack=True,
        slots=Slots(),
        inbox=inbox,
        wait_ms=0,
        on_claimed=lambda m: None,
        on_exit=lambda: None,
    )
    poller.start()
    try:
        assert client.second.wait(5)
    finally:
        poller.stop()
        client.done.set()
    assert client.calls[1] - client.calls[0] >= 0.95
    assert inbox.empty()  # a rate limit is not an auth failure: nothing raised to Celery
