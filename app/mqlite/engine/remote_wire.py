"""What the remote store sends, and where: a libSQL server's DSN (``parse_remote``: the
token never in a URL, the host masked wherever it is shown) and a statement's parameters
as the server takes them (``bind``: sqld refuses a named argument the statement does not
use, and the engine passes ``sqlite3``-style mappings with spare keys, so each statement
is rewritten once to numbered slots and only the values it uses are sent)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any
from urllib.parse import urlsplit

from mqlite import defaults, errors

# DSN schemes of a remote libSQL server (defaults.REMOTE_DB_SCHEMES); ws(s):// is the
# legacy WebSocket Hrana, refused with a message.
REMOTE_SCHEMES = frozenset(defaults.REMOTE_DB_SCHEMES)
REFUSED_SCHEMES = frozenset({"ws", "wss"})
# A single-quoted string, a double-quoted identifier, a comment, or a parameter slot.
_TOKENS = re.compile(
    r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|--[^\n]*|/\*.*?\*/"
    r"|(?P<named>[:@$][A-Za-z_][A-Za-z0-9_]*)|(?P<num>\?\d+)|(?P<pos>\?)",
    re.S,
)


@dataclass(frozen=True, slots=True)
class RemoteTarget:
    url: str  # as given to the client (no query string: an authToken there is refused)
    masked: str  # what Status/Observe/logs show: the host's first label hidden


def is_remote(dsn: str) -> bool:
    text = (dsn or "").strip()
    return "://" in text and text.split("://", 1)[0].lower() in REMOTE_SCHEMES | REFUSED_SCHEMES


def parse_remote(dsn: str) -> RemoteTarget:
    """``libsql://host``, ``https://host[:port]``, ``http://host:port``; credentials in the
    URL are refused (the token comes from MQLITE_DB_AUTH_TOKEN only, never a logged URL)."""
    parts = urlsplit(dsn.strip())
    scheme = parts.scheme.lower()
    if scheme in REFUSED_SCHEMES:
        raise errors.InvalidArgument(
            f"database URL scheme {scheme}:// (WebSocket Hrana) is not supported: "
            "use libsql://, https:// or http://"
        )
    if not parts.hostname:
        raise errors.InvalidArgument(f"database URL {scheme}:// names no host")
    if parts.username or parts.password or parts.query or parts.fragment:
        raise errors.InvalidArgument(
            "database URL must not carry credentials or a query string: "
            "pass the token in MQLITE_DB_AUTH_TOKEN"
        )
    try:
        port = parts.port
    except ValueError as exc:
        raise errors.InvalidArgument("database URL has an invalid port") from exc
    host = parts.hostname
    suffix = f":{port}" if port else ""
    labels = host.split(".")
    shown = (
        "***"
        if len(labels) < 3 or host.replace(".", "").isdigit()
        else "***." + ".".join(labels[1:])
    )
    path = parts.path.rstrip("/")
    return RemoteTarget(f"{scheme}://{parts.netloc}{path}", f"{scheme}://{shown}{suffix}")


@lru_cache(maxsize=4096)
def _slots(sql: str) -> tuple[tuple[str, ...], tuple[str | int, ...]]:
    """``sql`` split around its parameter slots: (text pieces, slot keys); a key is the
    name of a named slot or the 1-based index of a positional one."""
    pieces: list[str] = []
    keys: list[str | int] = []
    last, next_pos = 0, 1
    for m in _TOKENS.finditer(sql):
        kind = m.lastgroup
        if kind is None:
            continue  # a literal or comment: kept as is
        pieces.append(sql[last : m.start()])
        last = m.end()
        if kind == "named":
            keys.append(m.group()[1:])
        elif kind == "num":
            keys.append(int(m.group()[1:]))
            next_pos = int(m.group()[1:]) + 1
        else:
            keys.append(next_pos)
            next_pos += 1
    pieces.append(sql[last:])
    return tuple(pieces), tuple(keys)


def bind(sql: str, params: Sequence[Any] | Mapping[str, Any]) -> tuple[str, list[Any]]:
    """The statement with numbered slots and the values it uses, in order (module doc)."""
    pieces, keys = _slots(sql)
    if not keys:
        return sql, []
    index_of: dict[str | int, int] = {}
    values: list[Any] = []
    out = [pieces[0]]
    for key, piece in zip(keys, pieces[1:], strict=True):
        index = index_of.get(key)
        if index is None:
            value = params[key] if isinstance(key, str) else params[key - 1]  # type: ignore[call-overload,index]
            values.append(value)
            index = index_of[key] = len(values)
        out.append(f"?{index}")
        out.append(piece)
    return "".join(out), values
