"""``key create|list|revoke``: managed access keys (the secret is shown once)."""

from __future__ import annotations

import argparse
from typing import Any

import mqlite
from mqlite import errors, wire
from mqlite.cli import args as a
from mqlite.cli.context import Context, Failure, UsageError
from mqlite.cli.output import when_text
from mqlite.types import AccessKey


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    key = sub.add_parser("key", help="manage persistent access keys")
    verbs = key.add_subparsers(dest="key_command", metavar="<create|list|revoke>")
    key.set_defaults(handler=_missing, key_parser=key)

    p = verbs.add_parser("create", parents=[common], help="create a key (prints its secret)")
    p.add_argument("--name", required=True)
    p.add_argument("--permissions", required=True, help="send, listen, manage (comma-separated)")
    p.add_argument("--id", default="", help="32-hex public id (generated when omitted)")
    p.add_argument("--expires-at-ms", type=a.non_negative, default=0, help="0 = never")
    p.add_argument(
        "--queue",
        action="append",
        default=[],
        metavar="PATTERN",
        help="confine the key to this queue name or trailing-'*' prefix (repeatable; "
        "none = every queue)",
    )
    p.add_argument(
        "--rate-limit", type=a.non_negative, default=0, help="per second; 0 = broker default"
    )
    p.add_argument("--burst", type=a.non_negative, default=0, help="0 = the rate")
    p.set_defaults(handler=create)

    p = verbs.add_parser("list", parents=[common], help="list key metadata")
    p.add_argument("--after-id", default="")
    p.add_argument("--limit", type=a.non_negative, default=100, help="1..1000 (100)")
    p.add_argument("--sort", choices=("id_asc", "created_desc"), default="id_asc")
    p.set_defaults(handler=list_keys, read_only=True)

    p = verbs.add_parser("revoke", parents=[common], help="revoke a key (idempotent)")
    p.add_argument("--id", required=True)
    p.set_defaults(handler=revoke)


def _missing(ctx: Context) -> int:
    raise UsageError("key needs a subcommand: create, list or revoke")


def create(ctx: Context) -> int:
    g = ctx.args
    key_id = g.id or mqlite.generate_key_id()  # retained before the request is made
    perms = [p.strip() for p in g.permissions.split(",") if p.strip()]
    try:
        key, token = ctx.client.create_key(
            key_id, g.name, perms, g.expires_at_ms, g.queue, g.rate_limit, g.burst
        )
    except errors.MQLiteError as exc:
        raise Failure(
            f"create key {key_id}: {exc.message} (keep this id to reconcile an unknown outcome)"
        ) from None
    if ctx.out.json:
        ctx.out.wire(wire.CREATE_KEY, wire.CreateKeyResponse.of(key, token))
        return 0
    _describe(ctx, key)
    ctx.out.line(f"token:       {token}")
    ctx.out.note("save this token now: it cannot be shown again")
    return 0


def _describe(ctx: Context, key: AccessKey) -> None:
    ctx.out.line(f"id:          {key.id}")
    ctx.out.line(f"name:        {key.name}")
    ctx.out.line(f"permissions: {','.join(key.permissions)}")
    ctx.out.line(f"queues:      {' '.join(key.queues) if key.queues else '(every queue)'}")
    if key.rate_limit_per_s:
        ctx.out.line(
            f"rate limit:  {key.rate_limit_per_s}/s, burst {key.burst or key.rate_limit_per_s}"
        )
    ctx.out.line(f"created:     {when_text(key.created_at_ms)}")
    if key.expires_at_ms:
        ctx.out.line(f"expires:     {when_text(key.expires_at_ms)}")


def list_keys(ctx: Context) -> int:
    g = ctx.args
    keys, next_after = ctx.client.list_keys(g.after_id, g.limit, g.sort)
    ctx.out.listing(
        wire.LIST_KEYS,
        wire.ListKeysResponse.of(keys, next_after),
        keys,
        "no keys",
        ("ID", "NAME", "PERMISSIONS", "CREATED", "EXPIRES", "REVOKED"),
        (
            (k.id, k.name, ",".join(k.permissions), when_text(k.created_at_ms),
             when_text(k.expires_at_ms), when_text(k.revoked_at_ms))
            for k in keys
        ),
    )  # fmt: skip
    if next_after and not ctx.out.json:
        ctx.out.line(
            f"next page: mqlite key list --after-id {next_after} --sort {g.sort} --limit {g.limit}"
        )
    return 0


def revoke(ctx: Context) -> int:
    ctx.client.revoke_key(ctx.args.id)
    ctx.out.answer(wire.REVOKE_KEY, wire.OkResponse(), f"revoked key {ctx.args.id}")
    return 0
