"""Input checks shared by the engine's public verbs: a client mistake is ``InvalidArgument``
(never a TypeError, an OverflowError from sqlite3, or a partial write)."""

from __future__ import annotations

from collections.abc import Sequence

from mqlite import defaults, errors
from mqlite.types import ReceiveMode

MAX_INT64 = (1 << 63) - 1
MAX_TOKEN_BYTES = 256
_MAX_SEQ = MAX_INT64 // 2  # check_int's range, as a constant (check_pairs' hot path)


def check_int(name: str, value: object, *, minimum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise errors.InvalidArgument(f"{name} must be an integer")
    if abs(value) > MAX_INT64 // 2:
        raise errors.InvalidArgument(f"{name} is out of range")
    if minimum is not None and value < minimum:
        raise errors.InvalidArgument(f"{name} must be at least {minimum}, got {value}")
    return value


def check_seq(value: object) -> int:
    return check_int("seq_number", value, minimum=1)


def check_token(name: str, value: object) -> str:
    if not isinstance(value, str) or not value:
        raise errors.InvalidArgument(f"{name} must be a non-empty string")
    if len(value.encode("utf-8")) > MAX_TOKEN_BYTES:
        raise errors.InvalidArgument(f"{name} is longer than {MAX_TOKEN_BYTES} bytes")
    return value


def check_pairs(items: object) -> list[tuple[int, str]]:
    """(seq_number, lock_token) pairs; an empty token is allowed (that item is ok=False)."""
    if type(items) is not list and (
        isinstance(items, str | bytes) or not isinstance(items, Sequence)
    ):
        raise errors.InvalidArgument("messages must be a list of (seq_number, lock_token) pairs")
    if len(items) > defaults.MAX_SETTLE_BATCH:
        raise errors.InvalidArgument(
            f"{len(items)} items in one batch; at most {defaults.MAX_SETTLE_BATCH}"
        )
    pairs: list[tuple[int, str]] = []
    for i, item in enumerate(items):
        # Hot path (a drain settles every message here): an (int, str) tuple in range
        # passes on type checks alone, without the ABC check and check_seq's calls.
        if type(item) is tuple and len(item) == 2:
            seq, token = item
            if type(seq) is int and 0 < seq <= _MAX_SEQ and type(token) is str:
                pairs.append(item)
                continue
        if isinstance(item, str | bytes) or not isinstance(item, Sequence) or len(item) != 2:
            raise errors.InvalidArgument(f"messages[{i}] must be a (seq_number, lock_token) pair")
        seq, token = item
        check_seq(seq)
        if not isinstance(token, str):
            raise errors.InvalidArgument(f"messages[{i}].lock_token must be a string")
        pairs.append((seq, token))
    return pairs


def clamp(value: int, low: int, high: int) -> int:
    return max(low, min(high, value))


def receive_mode(mode: object) -> bool:
    """True for receive-and-delete, False for peek-lock."""
    if mode == ReceiveMode.PEEK_LOCK:
        return False
    if mode == ReceiveMode.RECEIVE_AND_DELETE:
        return True
    raise errors.InvalidArgument(
        f"unknown receive mode {mode!r} (want peek_lock or receive_and_delete)"
    )
