"""A TCP proxy to sqld (argv[1] = its port) for the lost-acknowledgement test: prints its
own port; after "arm" on stdin, the next client request carrying COMMIT is forwarded and
then the client's connection is closed without the response (applied, ack lost)."""

from __future__ import annotations

import contextlib
import socket
import sys
import threading

armed = threading.Event()


def pump(src: socket.socket, dst: socket.socket, to_server: bool, peer: list[bool]) -> None:
    try:
        while data := src.recv(65536):
            if not to_server and peer[0]:
                break
            dst.sendall(data)
            if to_server and armed.is_set() and b"COMMIT" in data:
                armed.clear()
                peer[0] = True  # drop what the server answers to this request
    except OSError:
        pass
    finally:
        for s in (src, dst):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()


def main() -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    print(listener.getsockname()[1], flush=True)

    def control() -> None:
        for line in sys.stdin:
            if line.strip() == "arm":
                armed.set()
                print("armed", flush=True)

    threading.Thread(target=control, daemon=True).start()
    while True:
        client, _ = listener.accept()
        upstream = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
        cut = [False]
        threading.Thread(target=pump, args=(client, upstream, True, cut), daemon=True).start()
        threading.Thread(target=pump, args=(upstream, client, False, cut), daemon=True).start()


if __name__ == "__main__":
    main()
