"""The remote client: ``mqlite.connect(endpoint, token)`` → ``HttpClient``.

Same methods, arguments, return types and exception classes as the embedded client (the
``mqlite.Client`` protocol; the methods are generated from ``mqlite.sdk.calls`` into
``HttpMethods``); received messages carry bound
``complete/abandon/reject/defer/renew``. Errors are rebuilt from the broker's envelope
(``wire.error_from_response``); a broker that cannot be reached or drops the connection
is ``ConnectionFailed`` (code ``unavailable``). Retry rules: ``mqlite.sdk.retry``.

Imports only the wire contract and the leaves, never the engine (import-linter).
"""

from __future__ import annotations

import ssl
import time
from typing import TYPE_CHECKING, Any, TypeVar

from mqlite import errors, wire
from mqlite.sdk.answer import MAX_BODY_BYTES
from mqlite.sdk.call import Call, Resp, Steps, rpc
from mqlite.sdk.endpoint import Endpoint, parse_endpoint, resolve_token
from mqlite.sdk.http_methods import HttpMethods
from mqlite.sdk.retry import Attempts, GiveUp, RetryPolicy
from mqlite.sdk.transport import DEFAULT_TIMEOUT_S, POOL_SIZE, ConnectFailed, ExchangeFailed, Pool
from mqlite.types import Message

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


class Heads:
    """Each route's request bytes up to the Content-Length value, built on first use:
    what ``request_head`` spells, without re-formatting the same request line and
    headers on every call (``Route.path`` is itself a formatted property)."""

    __slots__ = ("base_path", "by_route", "lines")

    def __init__(self, base_path: str, lines: str) -> None:
        self.base_path = base_path
        self.lines = lines
        self.by_route: dict[wire.Route[Any, Any], bytes] = {}

    def request(self, route: wire.Route[Any, Any], body: bytes) -> bytes:
        """The whole request: request line, headers, blank line and ``body``."""
        prefix = self.by_route.get(route)
        if prefix is None:
            path = self.base_path + route.path
            prefix = f"POST {path} HTTP/1.1\r\n{self.lines}Content-Length: ".encode("latin-1")
            self.by_route[route] = prefix
        return b"%b%d\r\n\r\n%b" % (prefix, len(body), body)


class RemoteSettings:
    """What both remote clients (sync and asyncio) hold: endpoint, timeout, retry policy
    and the fixed header lines of every request."""

    endpoint: Endpoint
    timeout: float
    retry: RetryPolicy
    _header_lines: str
    _heads: Heads

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
        self._heads = Heads(ep.base_path, self._header_lines)
        return ep


class HttpClient(RemoteSettings, HttpMethods):
    """A thread-safe client of one broker over keep-alive HTTP/1.1 connections.

    ``timeout`` (seconds) bounds connecting and each request; a long-poll ``receive``
    waits ``timeout + wait_ms`` so the broker always answers first. ``retry`` sets the
    bounded backoff of safe calls; ``pool_size`` the idle connections kept;
    ``max_response_bytes`` bounds one answer's body (raise it for Peeks of many large
    messages), as in the asyncio client.
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
        max_response_bytes: int = MAX_BODY_BYTES,
    ) -> None:
        ep = self._setup(endpoint, token, timeout, retry)
        self._pool = Pool(
            ep,
            timeout=self.timeout,
            maxsize=pool_size,
            ssl_context=ssl_context,
            max_body_bytes=max_response_bytes,
        )
        self._closed = False

    def __repr__(self) -> str:
        return f"HttpClient({self.endpoint.origin!r})"

    # -- the one round trip ---------------------------------------------------------------

    def _run(self, steps: Steps[R]) -> R:
        """Drive a verb of the call table: each call it yields is one round trip."""
        try:
            call = next(steps)
            while True:
                call = steps.send(self._do(call))
        except StopIteration as done:
            result: R = done.value
            return result

    def _do(self, call: Call[Any]) -> Any:
        """One round trip of ``call``, repeated as ``retry.Attempts`` decides (built at the
        first failure only: a 200 costs no retry bookkeeping)."""
        if self._closed:
            raise errors.Closed("the client is closed")
        data = self._heads.request(call.route, call.body)
        timeout = self.timeout + call.wait_ms / 1000.0 if call.wait_ms else self.timeout
        attempts: Attempts | None = None
        while True:
            try:
                status, body = self._pool.request(data, timeout)
            except (ConnectFailed, ExchangeFailed) as exc:
                attempts = attempts or Attempts(self.retry, call.route.name, call.safe)
                cause = exc.__cause__ or exc
                decision = attempts.failed(cause, sent=isinstance(exc, ExchangeFailed))
                if isinstance(decision, GiveUp):
                    raise decision.error from exc
            else:
                if status == 200:
                    return wire.decode_response(call.route, body)
                attempts = attempts or Attempts(self.retry, call.route.name, call.safe)
                decision = attempts.answered(status, body)
                if isinstance(decision, GiveUp):
                    raise decision.error
            time.sleep(decision.wait_s)

    def _bind(self, msgs: list[Message]) -> list[Message]:
        return [m.bind(self if m.lock_token else errors.NO_LOCK) for m in msgs]

    def exchange(self, route: wire.Route[Any, Resp], request: Any, wait_ms: int = 0) -> Resp:
        """ONE round trip of ``route`` with a request Struct, retried per the route's class
        in the call table; the decoded response Struct. For forwarders that speak the wire
        themselves (``mqlite-mcp``); applications use the verbs."""
        return self._run(rpc(route, request, wait_ms))

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
    ``ssl_context``, ``max_response_bytes``. Nothing is sent until the first call.
    """
    return HttpClient(endpoint, token, **options)


if TYPE_CHECKING:

    def _conforms(c: HttpClient) -> Client:
        return c
