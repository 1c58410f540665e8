"""A TCP proxy that adds a fixed one-way delay to every byte, in both directions: the
network between the broker and a remote libSQL server, on loopback.

Run as its own process (an in-process proxy would compete with the broker for the GIL
and add its own scheduling noise to every round trip)::

    python tests/bench/remote/delay_proxy.py UPSTREAM_PORT DELAY_MS

It listens on a free loopback port and prints it on the first line of stdout. Every chunk
read from one side is written to the other ``DELAY_MS`` after it arrived, in order, while
reading goes on: the delay is latency, not a bandwidth cap, so a round trip costs
2 × DELAY_MS more and pipelined bytes are not serialized behind each other. Threads and
``time.sleep`` rather than asyncio: the event loop's timers round up to whole
milliseconds (epoll's timeout), which added ~0.5 ms per hop at a 1 ms delay; a thread's
sleep overshoots by ~0.1 ms. The bench measures the round trip it really gets
(``run.round_trip_us``) and reports it. Ends on SIGTERM, or when its stdin closes (its
parent is gone).
"""

from __future__ import annotations

import contextlib
import os
import queue
import socket
import sys
import threading
import time


def _pump(src: socket.socket, dst: socket.socket, delay_s: float) -> None:
    """Read ``src`` as fast as it comes; a second thread writes each chunk when due."""
    due: queue.SimpleQueue[tuple[float, bytes]] = queue.SimpleQueue()

    def deliver() -> None:
        while True:
            at, data = due.get()
            if not data:
                break
            wait = at - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            try:
                dst.sendall(data)
            except OSError:
                break
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)

    threading.Thread(target=deliver, daemon=True).start()
    try:
        while data := src.recv(65536):
            due.put((time.monotonic() + delay_s, data))
    except OSError:
        pass
    due.put((0.0, b""))


def _watch_stdin() -> None:
    while os.read(sys.stdin.fileno(), 1):
        pass
    os._exit(0)  # the parent closed our stdin (or died): nothing left to serve


def main() -> None:
    upstream_port, delay_s = int(sys.argv[1]), float(sys.argv[2]) / 1000
    listener = socket.create_server(("127.0.0.1", 0))
    print(listener.getsockname()[1], flush=True)
    threading.Thread(target=_watch_stdin, daemon=True).start()
    while True:
        client, _ = listener.accept()
        try:
            upstream = socket.create_connection(("127.0.0.1", upstream_port))
        except OSError:
            client.close()
            continue
        for s in (client, upstream):
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for src, dst in ((client, upstream), (upstream, client)):
            threading.Thread(target=_pump, args=(src, dst, delay_s), daemon=True).start()


if __name__ == "__main__":
    main()
