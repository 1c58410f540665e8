"""The HTTP client of push delivery: httpx's AsyncClient over an httpcore connection pool
whose network backend is the egress guard.

Why httpx: a maintained async client (encode), already what the test suite and the MCP
extra use, pure Python on h11 (no compiled wheel to add to the appliance), with per-phase
timeouts, streamed responses (so at most 64 KiB of an answer is ever read), redirects off
unless asked, and a pluggable network backend -- which is what makes the egress guard
exact: ``GuardedBackend.connect_tcp`` resolves the name itself for every new connection,
checks every answer, and connects to the address it checked, while TLS still verifies
and sends SNI for the URL's host name (httpcore passes the origin's host to
``start_tls``). A name re-bound to 127.0.0.1 after CreatePush is refused at connect time.
A kept-alive connection is reused only for its origin, and it goes to an address checked
when it was opened.

``trust_env=False``: an ``HTTP(S)_PROXY`` in the broker's environment would send pushes
through a proxy that does the connecting (and so bypass the guard), and ``.netrc`` could
add credentials; neither applies to webhooks.
"""

from __future__ import annotations

import asyncio
import socket
import typing

import httpcore
import httpx

from mqlite import errors
from mqlite.engine.egress import Egress, literal

KEEPALIVE_S = 5.0
NODELAY = (socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class EgressRefused(httpcore.ConnectError):
    """The egress guard refused every address of the target (no connection was made)."""


class GuardedBackend(httpcore.AsyncNetworkBackend):
    def __init__(self, egress: Egress) -> None:
        self._egress = egress
        self._inner = httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: typing.Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        addresses = await resolve(host, port)
        try:
            self._egress.check_addresses(host, addresses)
        except errors.InvalidArgument as exc:
            raise EgressRefused(exc.message.removeprefix("push url: ")) from None
        # TCP_NODELAY: h11 writes the head and the body separately, and Nagle plus the
        # receiver's delayed ACK would add ~40 ms to every small POST.
        options = [*(socket_options or ()), NODELAY]
        failure: Exception | None = None
        for address in addresses:  # every one checked above: any may be connected to
            try:
                return await self._inner.connect_tcp(address, port, timeout, local_address, options)
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                failure = exc
        assert failure is not None
        raise failure

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


async def resolve(host: str, port: int) -> list[str]:
    """DNS for one new connection (never cached here: a re-bound name is seen)."""
    ip = literal(host)
    if ip is not None:
        return [str(ip)]
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        raise httpcore.ConnectError(f"host {host!r} does not resolve ({exc})") from None
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


class GuardedTransport(httpx.AsyncHTTPTransport):
    """httpx's transport with the pool rebuilt on the guarded backend (same options)."""

    def __init__(self, egress: Egress, max_connections: int) -> None:
        super().__init__(retries=0)
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=httpx.create_ssl_context(),
            max_connections=max_connections,
            max_keepalive_connections=max_connections,
            keepalive_expiry=KEEPALIVE_S,
            http1=True,
            http2=False,
            retries=0,
            network_backend=GuardedBackend(egress),
        )


def make_client(egress: Egress, max_connections: int = 1024) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        transport=GuardedTransport(egress, max_connections),
        follow_redirects=False,
        trust_env=False,
        timeout=None,  # each attempt sets its own (attempt.py)
    )
