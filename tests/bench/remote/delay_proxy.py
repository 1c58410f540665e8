"""A TCP proxy that adds a fixed one-way delay to every byte, in both directions: the
network between the broker and a remote libSQL server, on loopback.

Run as its own process (an in-process proxy would compete with the broker for the GIL
and add its own scheduling noise to every round trip)::

    python tests/bench/remote/delay_proxy.py UPSTREAM_PORT DELAY_MS

It listens on a free loopback port and prints it on the first line of stdout. Every chunk
read from one side is written to the other ``DELAY_MS`` after it arrived, in order, and
reading goes on meanwhile: the delay is latency, not a bandwidth cap, so a round trip
costs 2 × DELAY_MS more and pipelined bytes are not serialized behind each other. Ends on
SIGTERM or when stdin closes (its parent died).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import sys

CHUNK = 65536


async def _pump(src: asyncio.StreamReader, dst: asyncio.StreamWriter, delay_s: float) -> None:
    """Read ``src`` as fast as it comes; a second task writes each chunk when it is due."""
    loop = asyncio.get_running_loop()
    due: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

    async def deliver() -> None:
        while True:
            at, data = await due.get()
            if not data:
                break
            wait = at - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            dst.write(data)
            await dst.drain()
        with contextlib.suppress(OSError):
            dst.write_eof()

    writer = asyncio.create_task(deliver())
    try:
        while data := await src.read(CHUNK):
            due.put_nowait((loop.time() + delay_s, data))
    except OSError:
        pass
    finally:
        due.put_nowait((loop.time() + delay_s, b""))
        with contextlib.suppress(OSError):
            await writer


async def _serve(upstream_port: int, delay_s: float) -> None:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", upstream_port)
        except OSError:
            writer.close()
            return
        for w in (writer, up_writer):
            sock = w.get_extra_info("socket")
            if sock is not None:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            await asyncio.gather(
                _pump(reader, up_writer, delay_s),
                _pump(up_reader, writer, delay_s),
                return_exceptions=True,
            )
        except asyncio.CancelledError:
            pass  # the proxy is stopping: its connections go with it
        finally:
            for w in (writer, up_writer):
                w.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    print(port, flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    stdin = sys.stdin.fileno()
    loop.add_reader(stdin, lambda: None if os.read(stdin, 1) else stop.set())
    async with server:
        await stop.wait()


def main() -> None:
    upstream_port, delay_ms = int(sys.argv[1]), float(sys.argv[2])
    asyncio.run(_serve(upstream_port, delay_ms / 1000))


if __name__ == "__main__":
    main()
