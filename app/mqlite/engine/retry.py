"""The queue's retry policy: how long a message waits after its n-th failed delivery.

A pure function of the queue config, the delivery count and one uniform draw, so the
rule is tested without a clock or a broker and the engine (abandon, the lock reaper)
stays the only place that decides WHEN it applies: a delivery that failed without an
explicit delay (``Abandon`` with ``delay_ms`` 0, or a lease that expired) on a queue
whose ``retry_initial_delay_ms`` is above 0. Without a policy the engine never calls
this, so a queue without one behaves exactly as before the policy existed.

``d = min(retry_max_delay_ms, retry_initial_delay_ms * retry_multiplier ** (n - 1))``,
then jittered down: drawn uniformly from ``[d * (1 - retry_jitter), d]``. Jitter only
shortens, so the cap is never exceeded and a jitter of 0 is exact.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable

from mqlite import defaults, errors
from mqlite.types import QueueConfig

Draw = Callable[[], float]
"""A uniform draw in ``[0, 1)`` (``random.random``; tests pass fixed values)."""


def has_policy(config: QueueConfig) -> bool:
    """True when failed deliveries of this queue wait (the policy is on)."""
    return config.retry_initial_delay_ms > 0


def ceiling_ms(config: QueueConfig, failed_delivery: int) -> int:
    """The un-jittered delay after the ``failed_delivery``-th delivery failed (1-based)."""
    initial, cap = config.retry_initial_delay_ms, config.retry_max_delay_ms
    k = max(int(failed_delivery), 1) - 1
    try:
        raw = initial * config.retry_multiplier**k
    except OverflowError:  # a huge count: the cap was reached long ago
        return cap
    return int(min(float(cap), raw))


def delay_ms(config: QueueConfig, failed_delivery: int, draw: Draw = random.random) -> int:
    """The jittered delay in ms before the next delivery; 0 when the queue has no policy."""
    if not has_policy(config):
        return 0
    d = ceiling_ms(config, failed_delivery)
    jitter = config.retry_jitter
    if jitter <= 0:
        return d
    # u in [0, 1): d - d*jitter*u lies in (d*(1-jitter), d]; rounding keeps it in range.
    return max(round(d - d * jitter * draw()), math.ceil(d * (1 - jitter)))


def _number(config: QueueConfig, field: str) -> float:
    value = getattr(config, field)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise errors.InvalidArgument(f"{field} must be a number")
    if not math.isfinite(value):
        raise errors.InvalidArgument(f"{field} must be a finite number")
    return float(value)


def validate(config: QueueConfig, max_int: int) -> tuple[int, float, int, float]:
    """The four policy fields, checked (``InvalidArgument`` naming the field): initial
    >= 0; 1 <= multiplier <= 1000 (1 = a constant delay); initial <= max <= ``max_int``;
    0 <= jitter <= 1."""
    ints = {}
    for field in ("retry_initial_delay_ms", "retry_max_delay_ms"):
        value = getattr(config, field)
        if isinstance(value, bool) or not isinstance(value, int):
            raise errors.InvalidArgument(f"{field} must be an integer")
        if value < 0:
            raise errors.InvalidArgument(f"{field} must not be negative, got {value}")
        if value > max_int:
            raise errors.InvalidArgument(f"{field} is out of range")
        ints[field] = value
    initial, cap = ints["retry_initial_delay_ms"], ints["retry_max_delay_ms"]
    if cap < initial:
        raise errors.InvalidArgument(
            f"retry_max_delay_ms ({cap}) must be at least retry_initial_delay_ms ({initial})"
        )
    multiplier = _number(config, "retry_multiplier")
    if not 1.0 <= multiplier <= defaults.RETRY_MULTIPLIER_MAX:
        raise errors.InvalidArgument(
            f"retry_multiplier must be between 1 and {defaults.RETRY_MULTIPLIER_MAX:g}, "
            f"got {multiplier:g}"
        )
    jitter = _number(config, "retry_jitter")
    if not 0.0 <= jitter <= 1.0:
        raise errors.InvalidArgument(f"retry_jitter must be between 0 and 1, got {jitter:g}")
    return initial, multiplier, cap, jitter


def check_error(error: object) -> str | None:
    """Abandon's ``error``: None when empty (the message keeps its previous last error),
    else the string, at most ``MAX_ERROR_BYTES`` of UTF-8."""
    if not isinstance(error, str):
        raise errors.InvalidArgument("error must be a string")
    if not error:
        return None
    try:
        size = len(error.encode("utf-8"))
    except UnicodeEncodeError:
        raise errors.InvalidArgument("error must be valid UTF-8 text") from None
    if size > defaults.MAX_ERROR_BYTES:
        raise errors.InvalidArgument(
            f"error is longer than {defaults.MAX_ERROR_BYTES} bytes (UTF-8); clip it"
        )
    return error
