"""Strict JSON parsing of a request body for the slow path (``codec._checked``).

msgspec refused the body, or could not be shown free of repeated keys: this parse says
exactly why, in the words the contract pins. The stdlib C scanner does the work; the
hooks below add what Go's decoder (or our contract) demands on top of it: no
``NaN``/``Infinity``, no trailing data, duplicate keys flagged (reported with their path
by ``explain``), valid UTF-8, no unpaired UTF-16 surrogate escapes (they could never be
stored), and nesting depth errors as a 400 instead of a ``RecursionError``. Every
failure is ``InvalidArgument`` with a precise message.
"""

from __future__ import annotations

import json
import re
from typing import Any

from mqlite.errors import InvalidArgument

EMPTY_BODY = "empty request body (want a JSON object)"
TRAILING_DATA = "unexpected data after JSON body (want a single object)"

_WS = re.compile(r"[ \t\n\r]*")
# A \uD800-\uDFFF escape: only then can a decoded string hold a lone surrogate.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


class DupDict(dict[str, Any]):
    """A parsed JSON object that repeated a key; the walker reports it with its path."""

    dup: str = ""


class _Constant(ValueError):
    pass


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    d = dict(pairs)
    if len(d) == len(pairs):
        return d
    dup = DupDict(d)
    seen: set[str] = set()
    for k, _ in pairs:
        if k in seen:
            dup.dup = k
            break
        seen.add(k)
    return dup


def _constant(name: str) -> Any:
    raise _Constant(f"{name} is not valid JSON (want a finite number)")


_DECODER = json.JSONDecoder(object_pairs_hook=_pairs, parse_constant=_constant)


def parse(body: bytes | bytearray) -> Any:
    """Parse ``body`` as exactly one JSON value, or raise ``InvalidArgument``."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidArgument(
            f"invalid JSON: request body is not valid UTF-8 (byte {exc.start})"
        ) from None
    start = _WS.match(text).end()  # type: ignore[union-attr]
    if start == len(text):
        raise InvalidArgument(EMPTY_BODY)
    try:
        value, end = _DECODER.raw_decode(text, start)
    except json.JSONDecodeError as exc:
        raise InvalidArgument(f"invalid JSON: {exc}") from None
    except _Constant as exc:
        raise InvalidArgument(f"invalid JSON: {exc}") from None
    except RecursionError:
        raise InvalidArgument("invalid JSON: nesting too deep") from None
    except ValueError:  # the only other one: an integer over the int-conversion digit limit
        raise InvalidArgument("invalid JSON: number literal too long") from None
    if _WS.match(text, end).end() != len(text):  # type: ignore[union-attr]
        raise InvalidArgument(TRAILING_DATA)
    if _SURROGATE_ESCAPE.search(text, start):
        _check_surrogates(value)
    return value


def _check_surrogates(value: Any) -> None:
    """Reject strings (keys included) holding an unpaired surrogate; iterative, any depth."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            strings: list[str] = [v]
        elif isinstance(v, dict):
            strings = list(v.keys())
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
            continue
        else:
            continue
        for s in strings:
            try:
                s.encode("utf-8")
            except UnicodeEncodeError:
                raise InvalidArgument(
                    "invalid JSON: string holds an unpaired UTF-16 surrogate escape"
                ) from None
