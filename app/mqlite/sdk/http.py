"""The remote client: ``mqlite.connect(endpoint, token)`` → ``HttpClient``.

Same methods, arguments, return types and exception classes as the embedded client (the
``mqlite.sdk.protocol.Client`` protocol); received messages carry bound
``complete/abandon/reject/defer/renew``. Errors are rebuilt from the broker's envelope
(``wire.error_from_response``); a broker that cannot be reached or drops the connection
is ``ConnectionFailed`` (code ``unavailable``). Retry rules: ``mqlite.sdk.retry``.

Imports only the wire contract and the leaves, never the engine (import-linter).
"""

from __future__ import annotations

import ssl
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from mqlite import errors, wire
from mqlite.sdk import calls
from mqlite.sdk.calls import Call
from mqlite.sdk.endpoint import Endpoint, parse_endpoint, resolve_token
from mqlite.sdk.retry import RetryPolicy, refine, unavailable
from mqlite.sdk.transport import DEFAULT_TIMEOUT_S, POOL_SIZE, ConnectFailed, ExchangeFailed, Pool
from mqlite.types import (
    AccessKey,
    BatchResult,
    FilterTestResult,
    Message,
    OutMessage,
    QueueConfig,
    QueueInfo,
    Stats,
    Subscription,
)

if TYPE_CHECKING:
    from mqlite.sdk.protocol import Client

R = TypeVar("R")

USER_AGENT = "mqlite-py"


def header_lines(endpoint: Endpoint, token: str | None) -> str:
    """The fixed header lines of every request (the token was checked for CR/LF/NUL)."""
    headers = {
        "Host": endpoint.host_header,
        "Content-Type": "application/json",
        "Accept": "application/json",
        "User-Agent": USER_AGENT,
    }
    if token:
        headers["Authorization"] = f"Bearer {token}"
    return "".join(f"{k}: {v}\r\n" for k, v in headers.items())


def request_head(path: str, lines: str, body: bytes) -> bytes:
    """Request line and headers of one POST, ready to be written with its body."""
    return f"POST {path} HTTP/1.1\r\n{lines}Content-Length: {len(body)}\r\n\r\n".encode("latin-1")


class RemoteSettings:
    """What both remote clients (sync and asyncio) hold: endpoint, timeout, retry policy
    and the fixed header lines of every request."""

    endpoint: Endpoint
    timeout: float
    retry: RetryPolicy
    _header_lines: str

    def _setup(
        self, endpoint: str, token: str | None, timeout: float, retry: RetryPolicy | None
    ) -> Endpoint:
        ep = parse_endpoint(endpoint)
        if not isinstance(timeout, int | float) or timeout <= 0:
            raise errors.InvalidArgument("timeout must be a positive number of seconds")
        self.endpoint = ep
        self.timeout = float(timeout)
        self.retry = retry or RetryPolicy()
        self._header_lines = header_lines(ep, resolve_token(ep, token))
        return ep


class HttpClient(RemoteSettings):
    """A thread-safe client of one broker over keep-alive HTTP/1.1 connections.

    ``timeout`` (seconds) bounds connecting and each request; a long-poll ``receive``
    waits ``timeout + wait_ms`` so the broker always answers first. ``retry`` sets the
    bounded backoff of safe calls; ``pool_size`` the idle connections kept.
    """

    def __init__(
        self,
        endpoint: str,
        token: str | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT_S,
        retry: RetryPolicy | None = None,
        pool_size: int = POOL_SIZE,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        ep = self._setup(endpoint, token, timeout, retry)
        self._pool = Pool(ep, timeout=self.timeout, maxsize=pool_size, ssl_context=ssl_context)
        self._closed = False

    def __repr__(self) -> str:
        return f"HttpClient({self.endpoint.origin!r})"

    # -- the one round trip ---------------------------------------------------------------

    def _do(self, call: Call[Any, R]) -> R:
        if self._closed:
            raise errors.Closed("the client is closed")
        path = self.endpoint.base_path + call.route.path
        timeout = self.timeout + call.wait_ms / 1000.0
        policy = self.retry
        for attempt in range(policy.attempts):
            last = attempt == policy.attempts - 1
            try:
                head = request_head(path, self._header_lines, call.body)
                status, body = self._pool.request(head, call.body, timeout)
            except ConnectFailed as exc:
                if last:
                    raise unavailable(call.route.name, exc.__cause__ or exc, sent=False) from exc
            except ExchangeFailed as exc:
                if last or not call.safe:
                    raise unavailable(call.route.name, exc.__cause__ or exc, sent=True) from exc
            else:
                if status == 200:
                    return calls.decode(call, body)
                if status != 503 or last or not call.safe:
                    raise refine(wire.error_from_response(status, body))
            time.sleep(policy.backoff_s(attempt))
        raise AssertionError("unreachable")  # pragma: no cover

    def _bind(self, msgs: list[Message]) -> list[Message]:
        return [m.bind(self if m.lock_token else errors.NO_LOCK) for m in msgs]

    # -- queues ---------------------------------------------------------------------------

    def create_queue(self, name: str, config: QueueConfig | None = None) -> QueueInfo:
        """Create or reconfigure; then one ListQueues for the generation (CreateQueue
        answers ``{}``)."""
        self._do(calls.create_queue(name, config))
        return calls.find_queue(self.list_queues(), name)

    def list_queues(self) -> list[QueueInfo]:
        return self._do(calls.list_queues())

    def get_queue(self, name: str) -> QueueInfo:
        return calls.find_queue(self.list_queues(), name)

    def delete_queue(self, name: str, generation: str | None = None) -> None:
        """Without ``generation`` the current one is looked up once, per invocation; keep
        and pass the original one when retrying or reconciling a deletion."""
        if generation is None:
            generation = self.get_queue(name).generation
        self._do(calls.delete_queue(name, generation))

    # -- topics ---------------------------------------------------------------------------

    def subscribe(self, topic: str, name: str, expr: str | None = "") -> QueueInfo:
        self._do(calls.subscribe(topic, name, expr))
        return calls.find_queue(self.list_queues(), name)

    def unsubscribe(self, topic: str, name: str) -> None:
        self._do(calls.unsubscribe(topic, name))

    def list_subscriptions(self) -> list[Subscription]:
        return self._do(calls.list_subscriptions())

    def test_filter(
        self,
        expr: str,
        sample: OutMessage | None = None,
        enqueued_at_ms: int | None = None,
        visible_at_ms: int | None = None,
    ) -> FilterTestResult:
        return self._do(calls.test_filter(expr, sample, enqueued_at_ms, visible_at_ms))

    # -- send -----------------------------------------------------------------------------

    def send(
        self, queue: str, messages: Sequence[OutMessage], ttl_ms: int | None = None
    ) -> list[int]:
        return self._do(calls.send(queue, messages, ttl_ms))

    def send_one(self, queue: str, message: OutMessage, ttl_ms: int | None = None) -> int:
        return self._do(calls.send_one(queue, message, ttl_ms))[0]

    def schedule(
        self,
        queue: str,
        messages: Sequence[OutMessage],
        at_ms: int,
        ttl_ms: int | None = None,
    ) -> list[int]:
        return self._do(calls.schedule(queue, messages, at_ms, ttl_ms))

    def cancel(self, queue: str, seq_number: int) -> None:
        self._do(calls.cancel(queue, seq_number))

    # -- receive --------------------------------------------------------------------------

    def receive(
        self,
        queue: str,
        max_messages: int = 1,
        wait_ms: int = 0,
        mode: str = "peek_lock",
        attempt_id: str | None = None,
    ) -> list[Message]:
        call = calls.receive(queue, max_messages, wait_ms, mode, attempt_id)
        return self._bind(self._do(call))

    def receive_deferred(self, queue: str, seq_numbers: Sequence[int]) -> list[Message]:
        return self._bind(self._do(calls.receive_deferred(queue, seq_numbers)))

    # -- settlement -----------------------------------------------------------------------

    def complete(self, queue: str, seq_number: int, lock_token: str) -> None:
        self._do(calls.complete(queue, seq_number, lock_token))

    def abandon(self, queue: str, seq_number: int, lock_token: str, delay_ms: int = 0) -> None:
        self._do(calls.abandon(queue, seq_number, lock_token, delay_ms))

    def reject(
        self,
        queue: str,
        seq_number: int,
        lock_token: str,
        reason: str = "",
        description: str = "",
    ) -> None:
        self._do(calls.reject(queue, seq_number, lock_token, reason, description))

    def defer(self, queue: str, seq_number: int, lock_token: str) -> None:
        self._do(calls.defer(queue, seq_number, lock_token))

    def renew(self, queue: str, seq_number: int, lock_token: str) -> int:
        """Extend the lease; returns the deadline the broker committed (epoch ms)."""
        return self._do(calls.renew(queue, seq_number, lock_token))

    def complete_batch(self, queue: str, items: Sequence[tuple[int, str]]) -> list[BatchResult]:
        return self._do(calls.complete_batch(queue, items))

    def renew_batch(self, queue: str, items: Sequence[tuple[int, str]]) -> list[BatchResult]:
        return self._do(calls.renew_batch(queue, items))

    # -- browse, dead letters, status -----------------------------------------------------

    def peek(
        self, queue: str, state: str | None = None, from_seq: int = 0, max: int = 0
    ) -> list[Message]:
        return self._do(calls.peek(queue, state, from_seq, max))

    def stats(self, queue: str) -> Stats:
        return self._do(calls.stats(queue))

    def redrive(
        self,
        queue: str,
        target: str | None = None,
        max: int = 0,
        older_than_ms: int = 0,
        rate_per_sec: int = 0,
    ) -> int:
        return self._do(calls.redrive(queue, target, max, older_than_ms, rate_per_sec))

    def purge(self, queue: str, max: int = 0, older_than_ms: int = 0) -> int:
        return self._do(calls.purge(queue, max, older_than_ms))

    def status(self) -> wire.StatusResponse:
        return self._do(calls.status())

    # -- access keys ----------------------------------------------------------------------

    def create_key(
        self, id: str, name: str, permissions: Sequence[str], expires_at_ms: int = 0
    ) -> tuple[AccessKey, str]:
        """Issue a key under your retained ``id`` (``mqlite.generate_key_id()``). Never
        retried once sent: after an ambiguous failure, reconcile by ``id``."""
        return self._do(calls.create_key(id, name, permissions, expires_at_ms))

    def list_keys(
        self, after_id: str = "", limit: int = 100, sort: str = "id_asc"
    ) -> tuple[list[AccessKey], str]:
        return self._do(calls.list_keys(after_id, limit, sort))

    def revoke_key(self, id: str) -> None:
        self._do(calls.revoke_key(id))

    # -- lifecycle ------------------------------------------------------------------------

    def close(self) -> None:
        """Close idle connections; later calls raise ``Closed``. Idempotent."""
        self._closed = True
        self._pool.close()

    def __enter__(self) -> HttpClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def connect(endpoint: str, token: str | None = None, **options: Any) -> HttpClient:
    """A client of the broker at ``endpoint`` (``http(s)://host:port``,
    ``mqlite://[token@]host[:port]`` → http on 6754 by default, ``mqlites://`` → https).

    Options: ``timeout`` (s, default 30), ``retry`` (``RetryPolicy``), ``pool_size``,
    ``ssl_context``. Nothing is sent until the first call.
    """
    return HttpClient(endpoint, token, **options)


if TYPE_CHECKING:

    def _conforms(c: HttpClient) -> Client:
        return c
