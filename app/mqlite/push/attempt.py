"""One POST of one message and what it means for the message (docs/push.md "Outcomes").

2xx: delivered (Complete). 408, 429, 5xx, a timeout, a connection failure or an egress
refusal: retry (Abandon with the error, so the queue's retry policy spaces the attempts;
a ``Retry-After`` on 429/503 is the delay instead, capped at the policy's maximum). Any
other status (4xx, and 3xx: redirects are never followed): the receiver refused the
message itself, so it is dead-lettered at once (``PushRejected``).

The whole exchange runs under ONE deadline (``timeout_ms``, connect to the last byte
read): httpx's per-read timeout alone would let an endpoint answering a byte a second
hold a slot for ever. At most 64 KiB of the answer is read, then the connection is
dropped: a 2 GB answer costs 64 KiB.
"""

from __future__ import annotations

import asyncio
import email.utils
import time
from dataclasses import dataclass

import httpcore
import httpx

from mqlite import defaults
from mqlite.push.transport import EgressRefused

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
    client: httpx.AsyncClient,
    url: str,
    headers: dict[str, str],
    body: bytes,
    timeout_ms: int,
    now_ms: int,
) -> Outcome:
    started = time.monotonic()
    timeout_s = timeout_ms / 1000
    try:
        async with asyncio.timeout(timeout_s):
            request = client.build_request(
                "POST", url, headers=headers, content=body, timeout=httpx.Timeout(timeout_s)
            )
            response = await client.send(request, stream=True)
            try:
                await _drain(response)
            finally:
                await response.aclose()
    except TimeoutError:
        return _retry(f"push: timeout after {seconds_text(timeout_ms)}", started)
    except httpx.TimeoutException:
        return _retry(f"push: timeout after {seconds_text(timeout_ms)}", started)
    except (EgressRefused, httpx.ConnectError) as exc:
        return _retry(f"push: connection failed: {_text(exc)}", started)
    except (httpx.HTTPError, httpcore.NetworkError, OSError) as exc:
        return _retry(f"push: {type(exc).__name__}: {_text(exc)}", started)
    took = time.monotonic() - started
    status = response.status_code
    if 200 <= status < 300:
        return Outcome(COMPLETE, status, seconds=took)
    error = f"push: HTTP {status}"
    if status in RETRY_STATUSES or status >= 500:
        after = 0
        if status in RETRY_AFTER_STATUSES:
            after = retry_after_ms(response.headers.get("retry-after", ""), now_ms)
        return Outcome(RETRY, status, error, after, took)
    if 300 <= status < 400:
        error += " (redirects are not followed)"
    return Outcome(REJECT, status, error, seconds=took)


async def _drain(response: httpx.Response) -> None:
    """Read at most PUSH_MAX_RESPONSE_BYTES of the answer (then the connection closes)."""
    read = 0
    async for chunk in response.aiter_raw():
        read += len(chunk)
        if read >= defaults.PUSH_MAX_RESPONSE_BYTES:
            break


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
