"""Access-key helpers shared by both clients (no engine import: usable remotely)."""

from __future__ import annotations

import secrets


def generate_key_id() -> str:
    """A new public key id to retain before ``create_key``: 32 lowercase hex characters
    (128 random bits). Keep it: after an ambiguous failure it is how you find the key."""
    return secrets.token_hex(16)
