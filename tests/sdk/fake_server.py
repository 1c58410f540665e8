"""A tiny loopback TCP server that misbehaves on purpose, counting the requests it gets:
``drop`` reads a request then closes without answering; ``unavailable`` answers 503
``outcome_unknown``. Used to pin the retry policy (what is resent, what never is)."""

from __future__ import annotations

import socket
import threading
from types import TracebackType

BODY_503 = b'{"code":"outcome_unknown","message":"commit acknowledgement lost"}'


class FakeServer:
    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.requests = 0
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(16)
        self.port = int(self._sock.getsockname()[1])
        self.url = f"http://127.0.0.1:{self.port}"
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn: socket.socket) -> None:
        with conn:
            while True:
                data = b""
                while b"\r\n\r\n" not in data:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    data += chunk
                with self._lock:
                    self.requests += 1
                if self.mode == "drop":
                    return
                conn.sendall(
                    b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                    + f"Content-Length: {len(BODY_503)}\r\n\r\n".encode()
                    + BODY_503
                )

    def close(self) -> None:
        self._sock.close()

    def __enter__(self) -> FakeServer:
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
