"""The sync transport against the same hostile local server as the asyncio one
(``test_aio_hostile``): every bound of ``answer.Answer`` holds in the sync client too. The
sync client's ``timeout`` bounds each read (as ``http.client``'s did), so a stall ends in
a socket timeout ("timed out"); the exchange-wide deadline against a slowloris trickle is
the asyncio client's alone."""

from __future__ import annotations

import asyncio
import threading
import time
import tracemalloc
from collections.abc import Iterator
from typing import Any

import pytest
from test_aio_hostile import CAP, HOSTILE, TIMEOUT_S, WELL_BEHAVED, Writer, _read_request, send

import mqlite
from mqlite import RetryPolicy, errors


class Served:
    """An asyncio server on its own thread answering each request with ``write``."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.write: Writer | None = None
        self.handlers: set[asyncio.Task[Any]] = set()
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        self.ready.wait(10)

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)

        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            task = asyncio.current_task()
            assert task is not None
            self.handlers.add(task)
            try:
                await _read_request(reader)
                assert self.write is not None
                await self.write(writer)
            except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
                pass
            finally:
                writer.close()
                self.handlers.discard(task)

        async def start() -> None:
            self.server = await asyncio.start_server(handle, "127.0.0.1", 0)
            self.port = self.server.sockets[0].getsockname()[1]
            self.ready.set()

        self.loop.run_until_complete(start())
        self.loop.run_forever()

    def exchange(self, write: Writer) -> tuple[Any, float, int]:
        self.write = write
        tracemalloc.start()
        started = time.monotonic()
        try:
            with mqlite.connect(
                f"http://127.0.0.1:{self.port}",
                "t",
                timeout=TIMEOUT_S,
                retry=RetryPolicy(1),
                max_response_bytes=CAP,
            ) as client:
                try:
                    result: Any = client.stats("q")
                except errors.MQLiteError as exc:
                    result = exc
            return result, time.monotonic() - started, tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
            asyncio.run_coroutine_threadsafe(self._end_handlers(), self.loop).result(10)

    async def _end_handlers(self) -> None:
        """Stalled handlers end with the exchange, closing their sockets."""
        tasks = list(self.handlers)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await asyncio.sleep(0)

    def stop(self) -> None:
        async def close() -> None:
            self.server.close()
            await self.server.wait_closed()

        asyncio.run_coroutine_threadsafe(close(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


@pytest.fixture(scope="module")
def served() -> Iterator[Served]:
    s = Served()
    yield s
    s.stop()


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_answers_end_in_connection_failed_in_the_sync_client(
    served: Served, name: str
) -> None:
    write, detail = HOSTILE[name]
    result, elapsed, peak = served.exchange(write)
    assert isinstance(result, mqlite.ConnectionFailed), (name, result)
    detail = "timed out" if detail == "TimeoutError" else detail  # a socket timeout
    assert detail in result.message, result.message
    assert "may or may not have been applied" in result.message
    assert elapsed < TIMEOUT_S * 4 + 1, elapsed
    assert peak < 4 * CAP + (1 << 20), peak


@pytest.mark.parametrize("name", sorted(WELL_BEHAVED))
def test_unusual_but_valid_answers_parse_in_the_sync_client(served: Served, name: str) -> None:
    result, _, _ = served.exchange(send(WELL_BEHAVED[name]))
    assert result == mqlite.Stats("q", active=3), result


def test_an_error_answer_is_the_brokers_error_in_the_sync_client(served: Served) -> None:
    body = b'{"code":"not_found","message":"no queue q","reason":"queue_not_found"}'
    head = b"HTTP/1.1 404 Not Found\r\nContent-Length: %d\r\n\r\n" % len(body)
    result, _, _ = served.exchange(send(head + body))
    assert type(result) is errors.QueueNotFound
