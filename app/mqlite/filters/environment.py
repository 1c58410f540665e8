"""The message environment a filter sees (concepts §7), built per message, lazily.

Only the variables the checker found in the expression are computed, so a filter on
``subject`` never splits it, sorts property keys or decodes the body. ``body_text`` and
``body_json`` follow the original's rule: filled only when the *identifier* appears.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from mqlite.filters.values import StrMap, XTime


@dataclass(frozen=True, slots=True)
class FilterInput:
    """What the engine knows about a message at publish time (times in epoch ms UTC)."""

    subject: str = ""
    group_id: str = ""
    correlation_id: str = ""
    reply_to: str = ""
    message_id: str = ""
    content_type: str = ""
    properties: Mapping[str, str] = field(default_factory=dict)
    body: bytes = b""
    enqueued_at_ms: int = 0
    visible_at_ms: int = 0


def _reject_constant(name: str) -> Any:
    raise ValueError(f"invalid JSON constant {name}")  # Go rejects NaN/Infinity


def decode_json_body(content_type: str, body: bytes) -> dict[str, Any]:
    """``body_json``: an object decoded from a JSON (or untyped) body, else ``{}``.

    Numbers become floats (Go decodes JSON numbers into float64); duplicate keys keep
    the last value; anything that is not a JSON object gives ``{}``.
    """
    if content_type and "json" not in content_type.lower():
        return {}
    if not body:
        return {}
    try:
        text = body.decode("utf-8", "replace")
        value = json.loads(text, parse_int=float, parse_constant=_reject_constant)
    except (ValueError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


def _property_keys(inp: FilterInput) -> list[str]:
    return sorted(inp.properties, key=lambda k: k.encode())  # Go sort.Strings: byte order


BUILDERS: dict[str, Callable[[FilterInput], Any]] = {
    "subject": lambda i: i.subject,
    "properties": lambda i: StrMap(i.properties),
    "group_id": lambda i: i.group_id,
    "correlation_id": lambda i: i.correlation_id,
    "reply_to": lambda i: i.reply_to,
    "message_id": lambda i: i.message_id,
    "content_type": lambda i: i.content_type,
    "enqueued_at": lambda i: XTime.from_ms(i.enqueued_at_ms),
    "visible_at": lambda i: XTime.from_ms(i.visible_at_ms),
    "subject_parts": lambda i: i.subject.split(".") if i.subject else [],
    "body_size": lambda i: len(i.body),
    "property_keys": _property_keys,
    "body_text": lambda i: i.body.decode("utf-8", "replace"),
    "body_json": lambda i: decode_json_body(i.content_type, i.body),
}
_BODY = ("body_text", "body_json")


def plan(refs: set[str]) -> tuple[tuple[tuple[str, Callable[[FilterInput], Any]], ...], bool]:
    """The (name, builder) pairs a filter needs, and whether it reads ``$env``."""
    wants_env = "$env" in refs
    names = [k for k in BUILDERS if k in refs or (wants_env and k not in _BODY)]
    return tuple((k, BUILDERS[k]) for k in names), wants_env


def build(
    inp: FilterInput, steps: tuple[tuple[str, Callable[[FilterInput], Any]], ...], env: bool
) -> dict[str, Any]:
    names = {name: fn(inp) for name, fn in steps}
    if env:
        whole = dict(names)
        whole.setdefault("body_text", "")
        whole.setdefault("body_json", {})
        names["$env"] = whole
    return names
