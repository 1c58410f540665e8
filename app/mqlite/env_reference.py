"""Every ``MQLITE_*`` environment variable mqlite reads, with its default and meaning: the
one reference table of docs/operations.md ("Environment variables") is generated from
``VARIABLES`` by ``scripts/gen_docs_tables.py``. ``tests/repo/test_docs_tables.py`` fails
when a variable read anywhere under ``app/mqlite`` (``config.py`` above all) is missing
here, or when the page's table is stale. Kept beside ``config.py`` rather than in it so
the serve master, which imports ``config``, carries none of this text.
"""

from __future__ import annotations

from typing import NamedTuple

from mqlite import defaults


class Variable(NamedTuple):
    name: str
    default: str
    meaning: str
    secret_file: bool = False  # also read as ``<name>_FILE`` / a systemd credential


ON_OFF = "on/off (also true/false, 1/0, yes/no; any case)"

VARIABLES: tuple[Variable, ...] = (
    # -- the broker (mqlite serve) -------------------------------------------------------
    Variable("MQLITE_ADDR", f":{defaults.PORT}", "listen address HOST:PORT (`--addr`)"),
    Variable(
        "MQLITE_PUSH_ALLOW_NETWORKS",
        "none (closed)",
        "CIDR ranges push targets may reach although private, loopback or link-local "
        "(comma-separated); also what allows `http://` targets ([push.md](push.md))",
    ),
    Variable(
        "MQLITE_DB", "file:./mq.db", "the database: `file:PATH`, `:memory:`, or a remote libSQL URL"
    ),
    Variable("MQLITE_DB_AUTH_TOKEN", "none", "the remote libSQL database's token", True),
    Variable(
        "MQLITE_DB_REPLICA",
        "none",
        "a libSQL replica for reads that tolerate staleness (remote `MQLITE_DB` only)",
    ),
    Variable(
        "MQLITE_TOKENS",
        "generated",
        "comma-separated administrator tokens; unset: one is generated and printed once; "
        "`off`: auth disabled",
        True,
    ),
    Variable(
        "MQLITE_MONITOR_TOKENS", "none", "read-only monitoring tokens (Observe, /metrics)", True
    ),
    Variable(
        "MQLITE_METRICS", "off", f"authenticated Prometheus `/metrics` (`--metrics`); {ON_OFF}"
    ),
    Variable("MQLITE_UI", "on", f"the admin console at `/ui/`; {ON_OFF}"),
    Variable(
        "MQLITE_CORS", "`*` with auth on", "a fixed `Access-Control-Allow-Origin`; `off` disables"
    ),
    Variable(
        "MQLITE_SYNC",
        defaults.DEFAULT_SYNC,
        "SQLite `synchronous`: " + "/".join(defaults.SYNC_MODES),
    ),
    Variable(
        "MQLITE_CHECKPOINT",
        "truncate (passive when replicated)",
        "WAL checkpoint mode: truncate or passive",
    ),
    Variable(
        "MQLITE_MAX_MESSAGE_BYTES",
        str(defaults.MAX_MESSAGE_BYTES),
        f"body cap per message; at most {defaults.MAX_HONOURED_MESSAGE_BYTES} "
        "(what a 32 MiB request carries)",
    ),
    Variable(
        "MQLITE_MAX_CONNECTIONS",
        str(defaults.MAX_CONNECTIONS),
        "open HTTP connections (lowered to the descriptor limit - 64)",
    ),
    Variable(
        "MQLITE_DISK_FLOOR_BYTES",
        str(defaults.DISK_FLOOR_BYTES),
        "sends stop while less than this is free on the database's disk",
    ),
    Variable(
        "MQLITE_DISK_RESERVE_BYTES",
        str(defaults.DISK_RESERVE_BYTES),
        "size of the `mq.db.reserve` file released when the disk fills",
    ),
    Variable("MQLITE_DLQ_RETENTION", "on", f"broker DLQ retention; {ON_OFF}"),
    Variable(
        "MQLITE_DLQ_MAX_AGE", "14d", "dead letters older than this are deleted (ms s m h d w)"
    ),
    Variable("MQLITE_DLQ_MAX_COUNT", "1000000", "dead letters kept per queue (0 = unbounded)"),
    Variable("MQLITE_DLQ_MAX_BYTES", "0 (off)", "dead-letter bytes kept per queue (0 = unbounded)"),
    Variable("MQLITE_LOG_LEVEL", "INFO", "DEBUG/INFO/WARNING/ERROR"),
    Variable(
        "MQLITE_AUDIT_RETENTION",
        "90d",
        "audit-trail rows older than this are deleted (ms s m h d w; `0`/`off` = no age bound)",
    ),
    Variable(
        "MQLITE_AUDIT_MAX_ROWS", "1000000", "audit-trail rows kept, newest first (0 = unbounded)"
    ),
    Variable(
        "MQLITE_ACCESS_LOG",
        "errors",
        "access-log lines: `errors` (4xx/5xx and requests slower than 1 s), `all` (every "
        "request, ~234 bytes each: 2.34 MB per 10,000 Sends), `off`",
    ),
    Variable(
        "MQLITE_KEY_RATE_LIMIT",
        "off",
        "`RATE` or `RATE/BURST`: the per-second token bucket of managed keys created without "
        "their own (429 `resource_exhausted` over it)",
    ),
    Variable(
        "MQLITE_DIAGNOSTIC_LOG",
        "none",
        "a private JSONL file of failure events (`--diagnostic-log`)",
    ),
    # -- replication (Litestream) --------------------------------------------------------
    Variable(
        "MQLITE_REPLICA_URL",
        "none",
        "`s3://bucket/path`: serve runs under Litestream, replicating the file",
    ),
    Variable("MQLITE_REPLICA_ENDPOINT", "AWS", "`http(s)://host[:port]` of a non-AWS S3"),
    Variable("MQLITE_REPLICA_REGION", "none", "the bucket's region"),
    Variable("MQLITE_REPLICA_ACCESS_KEY_ID", "none", "the S3 access key id", True),
    Variable("MQLITE_REPLICA_SECRET_ACCESS_KEY", "none", "the S3 secret key", True),
    Variable("MQLITE_REPLICA_SYNC_INTERVAL", "1s", "how often Litestream ships to S3 (the RPO)"),
    Variable(
        "MQLITE_REPLICA_SOCKET", "none", "Litestream's control socket, for the replication probe"
    ),
    Variable("MQLITE_LITESTREAM", "the bundled binary", "the litestream binary to run"),
    # -- clients (the CLI, the MCP server) ------------------------------------------------
    Variable("MQLITE_ENDPOINT", "none (embedded)", "the broker the CLI and MCP server talk to"),
    Variable("MQLITE_TOKEN", "none", "the token sent to `MQLITE_ENDPOINT`", True),
    # -- internal and test-only ----------------------------------------------------------
    Variable("MQLITE_TEST_HOOKS", "off", "test-only: allows `MQLITE_TEST_KILL_POINT`"),
    Variable("MQLITE_TEST_KILL_POINT", "none", "test-only: SIGKILL at a kill point (crash drills)"),
)


def names() -> set[str]:
    """Every variable name, the ``_FILE`` forms included."""
    return {v.name for v in VARIABLES} | {v.name + "_FILE" for v in VARIABLES if v.secret_file}


def markdown_table() -> str:
    rows = ["| variable | default | meaning |", "|---|---|---|"]
    for v in VARIABLES:
        also = f"; or `{v.name}_FILE`: a file holding it" if v.secret_file else ""
        rows.append(f"| `{v.name}` | {v.default} | {v.meaning}{also} |")
    return "\n".join(rows) + "\n"
