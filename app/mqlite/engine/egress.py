"""The egress guard of push delivery (docs/operations.md "Push egress"): which URLs and
which resolved addresses the broker may connect to.

A push target is a URL chosen by whoever holds a manage token, and the broker then opens
connections to it from inside the network it runs in: without a guard that is a way to
reach the cloud metadata endpoint, the database, an admin port on loopback (SSRF). So the
default is closed: an address that is loopback, private, link-local, multicast,
unspecified, reserved or otherwise not globally routable is refused -- IPv4, IPv6, and an
IPv4 address mapped into IPv6 judged as the IPv4 it carries. ``MQLITE_PUSH_ALLOW_NETWORKS``
opens chosen CIDR ranges (an internal service, or ``127.0.0.0/8`` in tests).

The check runs at CreatePush (every address the name resolves to) and again at every
connection: the delivery loop resolves the name per attempt and connects to the address
it checked (push/transport.py), so a name that re-binds to 127.0.0.1 after CreatePush
cannot slip through. Pure stdlib; DNS is the caller's (``resolve`` here is the blocking
one CreatePush uses).
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit

from mqlite import errors

MAX_URL_BYTES = 2048

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


@dataclass(frozen=True, slots=True)
class Target:
    """A checked URL's parts the connection needs."""

    url: str
    scheme: str
    host: str
    port: int


def parse_networks(spec: str) -> tuple[IPNetwork, ...]:
    """``MQLITE_PUSH_ALLOW_NETWORKS``: comma- or space-separated CIDRs ('' = none)."""
    found: list[IPNetwork] = []
    for part in spec.replace(",", " ").split():
        try:
            found.append(ipaddress.ip_network(part, strict=False))
        except ValueError as exc:
            raise errors.InvalidArgument(
                f"MQLITE_PUSH_ALLOW_NETWORKS: {part!r} is not a CIDR network ({exc})"
            ) from None
    return tuple(found)


class Egress:
    """The allow-list plus the closed default; immutable, shared by every thread."""

    def __init__(self, networks: tuple[IPNetwork, ...] = ()) -> None:
        self.networks = networks

    def allowed_network(self, ip: IPAddress) -> bool:
        return any(ip.version == n.version and ip in n for n in self.networks)

    def refusal(self, ip: IPAddress) -> str | None:
        """Why this address may not be connected to, or None when it may."""
        if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped  # ::ffff:127.0.0.1 is 127.0.0.1
        if self.allowed_network(ip):
            return None
        for kind in ("loopback", "link_local", "multicast", "unspecified", "private", "reserved"):
            if getattr(ip, f"is_{kind}"):
                return f"{ip} is a {kind.replace('_', '-')} address"
        if not ip.is_global:
            return f"{ip} is not a globally routable address"
        return None

    def check_addresses(self, host: str, addresses: list[str]) -> list[str]:
        """The addresses of ``host`` that may be connected to; refuses (InvalidArgument)
        when any is forbidden -- a name with one private answer is refused whole, so
        which answer a connection picks never matters."""
        if not addresses:
            raise errors.InvalidArgument(f"push url: host {host!r} resolved to no address")
        for text in addresses:
            why = self.refusal(ipaddress.ip_address(text.split("%", 1)[0]))
            if why is not None:
                raise errors.InvalidArgument(
                    f"push url: host {host!r} resolves to {why}, refused by the egress guard "
                    "(open a range with MQLITE_PUSH_ALLOW_NETWORKS)"
                )
        return addresses

    def check_url(self, url: object) -> Target:
        """The URL's syntax: https (or http), <= 2 KiB, a host, no credentials."""
        if not isinstance(url, str) or not url:
            raise errors.InvalidArgument("url is required")
        if len(url.encode("utf-8")) > MAX_URL_BYTES:
            raise errors.InvalidArgument(f"url is longer than {MAX_URL_BYTES} bytes")
        if any(ord(c) < 0x21 or ord(c) == 0x7F for c in url):
            raise errors.InvalidArgument("url must not contain spaces or control characters")
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError as exc:
            raise errors.InvalidArgument(f"url is not a valid URL ({exc})") from None
        scheme = parts.scheme.lower()
        if scheme not in ("https", "http"):
            raise errors.InvalidArgument("url must start with https:// (or http://)")
        if parts.username is not None or parts.password is not None or "@" in parts.netloc:
            raise errors.InvalidArgument("url must not carry credentials (user:password@)")
        host = parts.hostname or ""
        if not host:
            raise errors.InvalidArgument("url has no host")
        if parts.fragment:
            raise errors.InvalidArgument("url must not have a #fragment")
        return Target(url, scheme, host, port or (443 if scheme == "https" else 80))

    def check_plain_http(self, target: Target, addresses: list[str]) -> None:
        """http:// only where every address is inside an allow-listed network: clear text
        leaves the broker only for a range the operator opened on purpose."""
        if target.scheme != "http":
            return
        for text in addresses:
            ip = ipaddress.ip_address(text.split("%", 1)[0])
            if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
                ip = ip.ipv4_mapped
            if not self.allowed_network(ip):
                raise errors.InvalidArgument(
                    "url: http:// is allowed only to a network in MQLITE_PUSH_ALLOW_NETWORKS; "
                    "use https://"
                )


def literal(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None


def resolve(host: str, port: int) -> list[str]:
    """Blocking DNS (CreatePush's check): every address, deduplicated, in answer order."""
    ip = literal(host)
    if ip is not None:
        return [str(ip)]
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        raise errors.InvalidArgument(f"push url: host {host!r} does not resolve ({exc})") from None
    return list(dict.fromkeys(str(info[4][0]) for info in infos))
