"""The request a delivery sends: Standard Webhooks signature headers and the documented,
bounded ``mqlite-*`` headers (docs/push.md "Headers").

``webhook-id`` is ``<queue>:<seq_number>``: the same on every retry of the message, so a
receiver deduplicates redeliveries (at-least-once) by it. The signature is ``v1,`` +
base64(HMAC-SHA256(key, "{id}.{timestamp}.{body}")), the key being the secret's bytes
after ``whsec_`` (base64-decoded), exactly as the Standard Webhooks libraries verify it.

Header values are percent-encoded UTF-8 (``urllib.parse.unquote`` restores them): a
subject or property may hold any text, and a header may hold only visible ASCII. A
property becomes ``mqlite-property-<key>`` only when its key is a header token of at most
64 characters; at most 32 properties and 8 KiB of them are sent, the rest are counted in
``mqlite-properties-omitted`` (the body is always sent whole).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
from urllib.parse import quote

from mqlite.types import Message

MAX_PROPERTY_HEADERS = 32
MAX_PROPERTY_HEADER_BYTES = 8 * 1024
MAX_PROPERTY_KEY_CHARS = 64
_TOKEN = re.compile(r"^[A-Za-z0-9_.-]+$")
_SAFE = "".join(chr(c) for c in range(0x21, 0x7F) if chr(c) != "%") + " "


def sign(key: bytes, webhook_id: str, timestamp: int, body: bytes) -> str:
    signed = f"{webhook_id}.{timestamp}.".encode() + body
    digest = hmac.new(key, signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode("ascii")


def encode(value: str) -> str:
    return quote(value, safe=_SAFE)


def headers(key: bytes, msg: Message, timestamp: int) -> dict[str, str]:
    webhook_id = f"{msg.queue}:{msg.seq_number}"
    out = {
        "content-type": encode(msg.content_type) or "application/octet-stream",
        "webhook-id": encode(webhook_id),
        "webhook-timestamp": str(timestamp),
        "webhook-signature": sign(key, webhook_id, timestamp, msg.body),
        "mqlite-queue": encode(msg.queue),
        "mqlite-seq-number": str(msg.seq_number),
        "mqlite-delivery-count": str(msg.delivery_count),
        "user-agent": "mqlite-push",
    }
    for name, value in (
        ("mqlite-message-id", msg.message_id),
        ("mqlite-subject", msg.subject),
        ("mqlite-correlation-id", msg.correlation_id),
        ("mqlite-group-id", msg.group_id),
        ("mqlite-reply-to", msg.reply_to),
    ):
        if value:
            out[name] = encode(value)
    sent = omitted = budget = 0
    for k, v in msg.properties.items():
        value = encode(v)
        size = len(k) + len(value)
        if (
            sent >= MAX_PROPERTY_HEADERS
            or len(k) > MAX_PROPERTY_KEY_CHARS
            or not _TOKEN.match(k)
            or budget + size > MAX_PROPERTY_HEADER_BYTES
        ):
            omitted += 1
            continue
        out[f"mqlite-property-{k.lower()}"] = value
        sent, budget = sent + 1, budget + size
    if omitted:
        out["mqlite-properties-omitted"] = str(omitted)
    return out
