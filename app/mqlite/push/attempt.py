"""One POST of one message and what it means for the message (docs/push.md "Outcomes").

2xx: delivered (Complete). 408, 429, 5xx, a timeout, a connection failure or an egress
refusal: retry (Abandon with the error, so the queue's retry policy spaces the attempts;
a ``Retry-After`` on 429/503 is the delay instead, capped at the policy's maximum). Any
other status (4xx, and 3xx: redirects are never followed): the receiver refused the
message itself, so it is dead-lettered at once (``PushRejected``).

The whole exchange runs under ONE deadline (``timeout_ms``, connect to the last byte
read): a per-read timeout alone would let an endpoint answering a byte a second hold a
slot for ever. At most 64 KiB of the answer is read (transport.py), then the connection
is dropped: a 2 GB answer costs its head.
"""

from __future__ import annotations

import asyncio
import email.utils
import time
from dataclasses import dataclass

from mqlite.push.transport import ConnectFailed, ProtocolError, Slot, endpoint

RETRY_STATUSES = frozenset({408, 429})
RETRY_AFTER_STATUSES = frozenset({429, 503})
COMPLETE, RETRY, REJECT = "delivered", "retry", "rejected"


@dataclass(frozen=True, slots=True)
class Outcome:
    kind: str  # COMPLETE | RETRY | REJECT
    status: int = 0  # the HTTP status, 0 when none arrived
    error: str = ""  # "push: HTTP 503", "push: timeout after 10 s", ...
    retry_after_ms: int = 0  # the receiver's Retry-After, 0 = none
    seconds: float = 0.0  # the exchange's duration


def seconds_text(ms: int) -> str:
    s = ms / 1000
    return f"{s:g} s"


async def post(
    slot: Slot,
    url: str,
    headers: dict[str, str],
    body: bytes,
    timeout_ms: int,
    now_ms: int,
) -> Outcome:
    started = time.monotonic()
    try:
        async with asyncio.timeout(timeout_ms / 1000):
            answer = await slot.post(endpoint(url), headers, body)
    except TimeoutError:
        return _retry(f"push: timeout after {seconds_text(timeout_ms)}", started)
    except ConnectFailed as exc:  # the egress guard's refusal included
        return _retry(f"push: connection failed: {_text(exc)}", started)
    except ProtocolError as exc:
        return _retry(f"push: invalid answer: {_text(exc)}", started)
    except (OSError, ValueError) as exc:  # a reset, a closed connection, a TLS failure
        return _retry(f"push: {type(exc).__name__}: {_text(exc)}", started)
    took = time.monotonic() - started
    status = answer.status
    if 200 <= status < 300:
        return Outcome(COMPLETE, status, seconds=took)
    error = f"push: HTTP {status}"
    if status in RETRY_STATUSES or status >= 500:
        after = 0
        if status in RETRY_AFTER_STATUSES:
            after = retry_after_ms(answer.retry_after, now_ms)
        return Outcome(RETRY, status, error, after, took)
    if 300 <= status < 400:
        error += " (redirects are not followed)"
    return Outcome(REJECT, status, error, seconds=took)


def _retry(error: str, started: float) -> Outcome:
    return Outcome(RETRY, 0, error[:500], seconds=time.monotonic() - started)


def _text(exc: BaseException) -> str:
    return (str(exc) or type(exc).__name__)[:400]


def retry_after_ms(value: str, now_ms: int) -> int:
    """Delay-seconds or an HTTP-date, as ms from now; 0 when absent or unreadable."""
    value = value.strip()
    if not value:
        return 0
    if value.isdigit():
        return min(int(value), 10**9) * 1000
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return 0
    return max(0, int(when.timestamp() * 1000) - now_ms)
