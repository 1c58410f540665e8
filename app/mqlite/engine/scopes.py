"""Key scopes: the queue-name patterns a managed key is confined to (issue 35).

A pattern is an exact queue name (``orders``) or a prefix ending in one ``*``
(``orders.*``, ``team-a/*``; ``*`` alone matches every name). No other wildcard exists, so
matching is a string comparison and a pattern means what it shows. An empty scope is
every queue (keys created before scopes existed keep working). Patterns are stored one
per line: a queue name can hold no control character, so a newline cannot be part of one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from mqlite import errors

MAX_PATTERNS = 32
MAX_PATTERN_CHARS = 260
SEP = "\n"

Scope = tuple[str, ...]


def normalize(patterns: object) -> Scope:
    """Validated, de-duplicated, sorted patterns; ``InvalidArgument`` naming the limit."""
    if isinstance(patterns, str | bytes | bytearray | Mapping) or not isinstance(
        patterns, Iterable
    ):
        raise errors.InvalidArgument("queues must be a list of strings")
    found: set[str] = set()
    for p in patterns:
        if not isinstance(p, str) or not p:
            raise errors.InvalidArgument("queues: each pattern must be a non-empty string")
        if len(p) > MAX_PATTERN_CHARS:
            raise errors.InvalidArgument(
                f"queues: a pattern is longer than {MAX_PATTERN_CHARS} characters"
            )
        if any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in p):
            raise errors.InvalidArgument("queues: a pattern must not contain control characters")
        if "*" in p[:-1]:
            raise errors.InvalidArgument(
                f"queues: {p[:64]!r} has a '*' before its end (only a trailing '*' is a wildcard)"
            )
        found.add(p)
        if len(found) > MAX_PATTERNS:
            raise errors.InvalidArgument(f"queues: at most {MAX_PATTERNS} patterns")
    return tuple(sorted(found))


def encode(scope: Scope) -> str:
    return SEP.join(scope)


def decode(text: str) -> Scope:
    return tuple(text.split(SEP)) if text else ()


def matches(scope: Scope, name: str) -> bool:
    """Whether ``name`` is inside ``scope`` (an empty scope holds every name)."""
    if not scope:
        return True
    for p in scope:
        if p[-1] == "*":
            if name.startswith(p[:-1]):
                return True
        elif p == name:
            return True
    return False
