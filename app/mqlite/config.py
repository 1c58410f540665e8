"""Configuration from the environment, parsed once; a bad value fails naming the variable.

Nothing else in mqlite reads or writes ``os.environ`` (tests/repo/test_house_guards.py
fails on any other use): an entry point takes ``process_environ()`` and passes it (or any
mapping, in tests) to ``Settings.from_env`` and overlays its command-line flags with
``with_flags``; everything below an entry point is given values, never the environment.
A typo never silently downgrades a setting: every unrecognised value is a startup error.

Secrets can come from files instead (never argv, never the unit or compose file):
``MQLITE_TOKENS_FILE`` / ``MQLITE_MONITOR_TOKENS_FILE`` (one token per line or
comma-separated), or systemd credentials ``mqlite-tokens`` / ``mqlite-monitor-tokens``
found in ``$CREDENTIALS_DIRECTORY`` (``LoadCredential=``). They are read once, here.
"""

from __future__ import annotations

import ipaddress
import os
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from mqlite import defaults, errors

DEFAULT_DB = "file:./mq.db"
DEFAULT_ADDR = f":{defaults.PORT}"
DEFAULT_DLQ_MAX_AGE_MS = 14 * 24 * 3600 * 1000
DEFAULT_DLQ_MAX_COUNT = 1_000_000

_DURATION_UNITS_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
_DURATION_UNITS_MS["w"] = 7 * _DURATION_UNITS_MS["d"]
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d|w)")
_TRUE = ("on", "true", "1", "yes")
_FALSE = ("off", "false", "0", "no")


class ConfigError(errors.InvalidArgument):
    """invalid configuration."""


def parse_duration_ms(text: str, *, name: str = "duration") -> int:
    """``1d12h``, ``336h``, ``90s``, ``500ms``, ``2w``: units ms s m h d w, summed; no sign."""
    raw = text.strip()
    pos = 0
    total = 0.0
    for match in _DURATION_PART.finditer(raw):
        if match.start() != pos:
            break
        total += float(match.group(1)) * _DURATION_UNITS_MS[match.group(2)]
        pos = match.end()
    if not raw or pos != len(raw):
        raise ConfigError(
            f"{name}={text!r} is not a duration (use e.g. 500ms, 30s, 5m, 12h, 14d, 2w)"
        )
    return round(total)


def generate_token() -> str:
    """An administrator token: ``mqk_`` + 64 lowercase hex (256 random bits)."""
    return "mqk_" + secrets.token_hex(32)


def _flag(environ: Mapping[str, str], name: str, default: bool) -> bool:
    raw = environ.get(name, "").strip().lower()
    if not raw:
        return default
    if raw in _TRUE:
        return True
    if raw in _FALSE:
        return False
    raise ConfigError(f"{name}={environ[name]!r} must be on/off (true/false, 1/0, yes/no)")


def _int(environ: Mapping[str, str], name: str, default: int, *, minimum: int) -> int:
    raw = environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw.replace("_", ""))
    except ValueError:
        raise ConfigError(f"{name}={raw!r} is not an integer") from None
    if value < minimum:
        raise ConfigError(f"{name}={raw!r} must be at least {minimum}")
    return value


def process_environ() -> Mapping[str, str]:
    """The process environment, read-only: the one door to it, for entry points (the CLI,
    ``serve``, the MCP server, ``open_embedded``, the kombu transport) to pass down."""
    return os.environ


def sync_from_env(environ: Mapping[str, str]) -> str:
    """``MQLITE_SYNC`` alone (what an embedded open needs), validated."""
    raw = environ.get("MQLITE_SYNC", "")
    mode = (raw or defaults.DEFAULT_SYNC).strip().upper()
    if mode not in defaults.SYNC_MODES:
        raise ConfigError(f"MQLITE_SYNC={raw!r} is not one of {', '.join(defaults.SYNC_MODES)}")
    return mode


def _token_list(raw: str, name: str) -> tuple[str, ...]:
    tokens = tuple(t.strip() for t in raw.split(",") if t.strip())
    if not tokens:
        raise ConfigError(f"{name} holds no usable token")
    for token in tokens:
        if any(ch.isspace() or ord(ch) < 0x21 or ord(ch) > 0x7E for ch in token):
            raise ConfigError(f"{name} holds a token with whitespace or non-ASCII characters")
    return tokens


def checkpoint_from_env(environ: Mapping[str, str]) -> str:
    """``MQLITE_CHECKPOINT`` (truncate | passive); passive by default under replication."""
    replicated = bool(environ.get("MQLITE_REPLICA_URL", "").strip())
    raw = environ.get("MQLITE_CHECKPOINT", "").strip().upper()
    mode = raw or ("PASSIVE" if replicated else "TRUNCATE")
    if mode not in ("TRUNCATE", "PASSIVE"):
        raise ConfigError(f"MQLITE_CHECKPOINT={raw.lower()!r} is not truncate or passive")
    if replicated and mode != "PASSIVE":
        raise ConfigError("MQLITE_CHECKPOINT=truncate would block behind Litestream's reader")
    return mode


def key_rate_limit_from_env(environ: Mapping[str, str]) -> tuple[int, int]:
    """``MQLITE_KEY_RATE_LIMIT``: ``RATE`` or ``RATE/BURST`` (per second; burst defaults to
    the rate), the bucket of every managed key created without its own; 0/unset = none."""
    raw = environ.get("MQLITE_KEY_RATE_LIMIT", "").strip()
    if not raw:
        return 0, 0
    parts = raw.split("/")
    if len(parts) > 2 or not all(p.strip().isdigit() for p in parts):
        raise ConfigError(f"MQLITE_KEY_RATE_LIMIT={raw!r} is not RATE or RATE/BURST (integers)")
    rate, burst = int(parts[0]), int(parts[1]) if len(parts) == 2 else 0
    if rate > 1_000_000 or burst > 1_000_000:
        raise ConfigError("MQLITE_KEY_RATE_LIMIT: rate and burst must be at most 1000000")
    return rate, burst or rate


def access_log_from_env(environ: Mapping[str, str]) -> str:
    """``MQLITE_ACCESS_LOG``: ``errors`` (the default), ``all`` or ``off``. ``errors`` is
    enough since the audit trail (engine/audit.py) records who changed what in the
    database; ``all`` costs ~230 bytes of log per request."""
    raw = environ.get("MQLITE_ACCESS_LOG", "").strip().lower() or "errors"
    if raw not in ("all", "errors", "off"):
        raise ConfigError(f"MQLITE_ACCESS_LOG={raw!r} is not all, errors or off")
    return raw


def audit_age_from_env(environ: Mapping[str, str]) -> int:
    """``MQLITE_AUDIT_RETENTION``: how long audit rows are kept (a duration, default
    90d); ``0`` or ``off`` keeps them regardless of age (the row bound still applies)."""
    raw = environ.get("MQLITE_AUDIT_RETENTION", "").strip().lower()
    if not raw:
        return defaults.AUDIT_MAX_AGE_MS
    if raw in ("0", "off"):
        return 0
    return parse_duration_ms(raw, name="MQLITE_AUDIT_RETENTION")


def remote_db_token(environ: Mapping[str, str]) -> str:
    """The remote database's token: ``MQLITE_DB_AUTH_TOKEN``, the file named by
    ``MQLITE_DB_AUTH_TOKEN_FILE`` (a container secret), or the systemd credential
    ``mqlite-db-auth-token``; never logged, never in argv."""
    value, _ = read_secret(environ, "MQLITE_DB_AUTH_TOKEN", "mqlite-db-auth-token")
    return (value or "").strip()


def read_secret(environ: Mapping[str, str], name: str, credential: str) -> tuple[str | None, str]:
    """``(value, source)`` of a secret: the variable ``name``, else the file named by
    ``name_FILE``, else systemd's ``$CREDENTIALS_DIRECTORY/credential``; ``source`` is what
    an error message cites. Two explicit sources at once are refused (which one wins would
    be a guess). File contents are never echoed: a bad value names only its source."""
    file_var = f"{name}_FILE"
    value, path = environ.get(name), environ.get(file_var, "").strip()
    if value is not None and value.strip() and path:
        raise ConfigError(f"set {name} or {file_var}, not both")
    if value is not None and value.strip():
        return value, name
    source = f"{file_var}={path}"
    if not path:
        creds = environ.get("CREDENTIALS_DIRECTORY", "").strip()
        candidate = os.path.join(creds, credential) if creds else ""
        if not candidate or not os.path.exists(candidate):
            return value, name
        path, source = candidate, f"systemd credential {credential} ({candidate})"
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else "not UTF-8 text"
        raise ConfigError(f"{source}: cannot read the file ({reason})") from None
    if not text.strip():  # never fall back to a generated token because a mount was empty
        raise ConfigError(f"{source}: the file is empty")
    if text.strip().lower() == "off":
        raise ConfigError(f"{source}: a secret file cannot hold 'off' (set {name}=off)")
    return ",".join(text.splitlines()), source


def parse_addr(addr: str, *, name: str = "MQLITE_ADDR") -> tuple[str, int]:
    """``HOST:PORT``, ``:PORT`` (all interfaces) or ``[v6]:PORT``."""
    text = addr.strip()
    if not text:
        raise ConfigError(f"{name} is blank (want HOST:PORT, e.g. 127.0.0.1:{defaults.PORT})")
    host, sep, port_text = text.rpartition(":")
    if not sep:
        raise ConfigError(f"{name}={addr!r} has no port (want HOST:PORT)")
    host = host.strip("[]")
    try:
        port = int(port_text)
    except ValueError:
        raise ConfigError(f"{name}={addr!r}: port {port_text!r} is not a number") from None
    if not 0 <= port <= 65535:
        raise ConfigError(f"{name}={addr!r}: port out of range")
    return host, port


def _remote_url(dsn: str) -> bool:
    """A libSQL server's URL (the schemes engine/remote.py accepts)."""
    scheme, sep, _ = dsn.partition("://")
    return bool(sep) and scheme.lower() in defaults.REMOTE_DB_SCHEMES


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # empty (all interfaces), 0.0.0.0-like names, or unresolved names


@dataclass(frozen=True, slots=True)
class Settings:
    db: str = DEFAULT_DB
    # The remote libSQL DSN's token (MQLITE_DB_AUTH_TOKEN): kept out of repr, logs, argv.
    db_auth_token: str = field(default="", repr=False)
    # MQLITE_DB_REPLICA: a libSQL replica for reads that tolerate staleness (remote only).
    db_replica: str = ""
    # MQLITE_PUSH_ALLOW_NETWORKS: CIDRs push targets may reach despite the egress guard.
    push_allow_networks: str = ""
    sync: str = defaults.DEFAULT_SYNC
    max_message_bytes: int = defaults.MAX_MESSAGE_BYTES
    addr: str = DEFAULT_ADDR
    # None = auth off; otherwise the configured administrator tokens.
    tokens: tuple[str, ...] | None = ()
    token_generated: bool = False
    monitor_tokens: tuple[str, ...] = ()
    metrics: bool = False
    # The static console at /ui (api-reference "Open endpoints"); off = headless: /ui 404s
    # and the discovery card omits ``ui``.
    ui: bool = True
    cors: str | None = None
    dlq_max_age_ms: int = DEFAULT_DLQ_MAX_AGE_MS
    dlq_max_count: int = DEFAULT_DLQ_MAX_COUNT
    dlq_max_bytes: int = 0
    insecure_allow_remote: bool = False
    log_level: str = "INFO"
    max_connections: int = defaults.MAX_CONNECTIONS
    disk_floor_bytes: int = defaults.DISK_FLOOR_BYTES
    disk_reserve_bytes: int = defaults.DISK_RESERVE_BYTES
    diagnostic_log: str = ""  # "" = off; else the private diagnostic JSONL file
    # Test-only (engine/killpoints.py): a kill point spec, served only with test_hooks on.
    test_kill_point: str = ""
    test_hooks: bool = False
    # PASSIVE when Litestream replicates the file (MQLITE_REPLICA_URL, or MQLITE_CHECKPOINT
    # for a Litestream run beside the broker): store.CHECKPOINT_MODES says why.
    checkpoint: str = "TRUNCATE"
    # MQLITE_KEY_RATE_LIMIT: (per second, burst) for managed keys that set none; 0 = none.
    key_rate_limit: tuple[int, int] = (0, 0)
    # MQLITE_ACCESS_LOG: all | errors (4xx/5xx and requests slower than 1 s) | off.
    access_log: str = "errors"
    # The audit trail's retention (engine/audit_ops.py): by age and by rows; 0 = no bound.
    audit_max_age_ms: int = defaults.AUDIT_MAX_AGE_MS
    audit_max_rows: int = defaults.AUDIT_MAX_ROWS

    @property
    def auth(self) -> bool:
        return self.tokens is not None

    @property
    def host_port(self) -> tuple[str, int]:
        return parse_addr(self.addr, name="--addr/MQLITE_ADDR")

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> Settings:
        """Parse every MQLITE_* variable; generate an admin token when none is configured."""
        raw_tokens, tokens_source = read_secret(environ, "MQLITE_TOKENS", "mqlite-tokens")
        tokens: tuple[str, ...] | None
        generated = False
        if raw_tokens is None or not raw_tokens.strip():
            tokens, generated = (generate_token(),), True
        elif raw_tokens.strip().lower() == "off":
            tokens = None
        else:
            tokens = _token_list(raw_tokens, tokens_source)
        monitor: tuple[str, ...] = ()
        raw_monitor, monitor_source = read_secret(
            environ, "MQLITE_MONITOR_TOKENS", "mqlite-monitor-tokens"
        )
        if raw_monitor is not None and raw_monitor.strip():
            if tokens is None:
                raise ConfigError("MQLITE_MONITOR_TOKENS requires auth (MQLITE_TOKENS is off)")
            monitor = _token_list(raw_monitor, monitor_source)
            if set(monitor) & set(tokens):
                raise ConfigError(
                    "MQLITE_MONITOR_TOKENS must be distinct from the administrator tokens"
                )
        metrics = _flag(environ, "MQLITE_METRICS", False)
        raw_cors = environ.get("MQLITE_CORS")
        if raw_cors is None or not raw_cors.strip():
            cors: str | None = "*" if tokens is not None else None
        elif raw_cors.strip().lower() == "off":
            cors = None
        else:
            cors = raw_cors.strip()
        retention = _flag(environ, "MQLITE_DLQ_RETENTION", True)
        age = DEFAULT_DLQ_MAX_AGE_MS
        if environ.get("MQLITE_DLQ_MAX_AGE", "").strip():
            age = parse_duration_ms(environ["MQLITE_DLQ_MAX_AGE"], name="MQLITE_DLQ_MAX_AGE")
        count = _int(environ, "MQLITE_DLQ_MAX_COUNT", DEFAULT_DLQ_MAX_COUNT, minimum=0)
        nbytes = _int(environ, "MQLITE_DLQ_MAX_BYTES", 0, minimum=0)
        addr = environ.get("MQLITE_ADDR", DEFAULT_ADDR)
        parse_addr(addr)
        db_auth_token = remote_db_token(environ)
        replica = environ.get("MQLITE_DB_REPLICA", "").strip()
        db = environ.get("MQLITE_DB", "").strip() or DEFAULT_DB
        if replica and not _remote_url(db):
            raise ConfigError(
                "MQLITE_DB_REPLICA is set but MQLITE_DB is not a remote libSQL database "
                "(libsql://, https://, http://): a local file has no replica to read from"
            )
        if replica and not _remote_url(replica):
            raise ConfigError("MQLITE_DB_REPLICA must be a libsql://, https:// or http:// URL")
        push_allow = push_allow_networks(environ)
        level = environ.get("MQLITE_LOG_LEVEL", "INFO").strip().upper() or "INFO"
        if level not in ("DEBUG", "INFO", "WARNING", "ERROR"):
            raise ConfigError(f"MQLITE_LOG_LEVEL={level!r} is not DEBUG/INFO/WARNING/ERROR")
        return cls(
            db=db,
            db_auth_token=db_auth_token,
            db_replica=replica,
            push_allow_networks=push_allow,
            sync=sync_from_env(environ),
            max_message_bytes=_int(
                environ, "MQLITE_MAX_MESSAGE_BYTES", defaults.MAX_MESSAGE_BYTES, minimum=1
            ),
            addr=addr,
            tokens=tokens,
            token_generated=generated,
            monitor_tokens=monitor,
            metrics=metrics,
            ui=_flag(environ, "MQLITE_UI", True),
            cors=cors,
            dlq_max_age_ms=age if retention else 0,
            dlq_max_count=count if retention else 0,
            dlq_max_bytes=nbytes if retention else 0,
            log_level=level,
            max_connections=_int(
                environ, "MQLITE_MAX_CONNECTIONS", defaults.MAX_CONNECTIONS, minimum=1
            ),
            disk_floor_bytes=_int(
                environ, "MQLITE_DISK_FLOOR_BYTES", defaults.DISK_FLOOR_BYTES, minimum=0
            ),
            disk_reserve_bytes=_int(
                environ, "MQLITE_DISK_RESERVE_BYTES", defaults.DISK_RESERVE_BYTES, minimum=0
            ),
            diagnostic_log=environ.get("MQLITE_DIAGNOSTIC_LOG", "").strip(),
            test_kill_point=environ.get("MQLITE_TEST_KILL_POINT", "").strip(),
            test_hooks=_flag(environ, "MQLITE_TEST_HOOKS", False),
            checkpoint=checkpoint_from_env(environ),
            key_rate_limit=key_rate_limit_from_env(environ),
            access_log=access_log_from_env(environ),
            audit_max_age_ms=audit_age_from_env(environ),
            audit_max_rows=_int(
                environ, "MQLITE_AUDIT_MAX_ROWS", defaults.AUDIT_MAX_ROWS, minimum=0
            ),
        )

    def with_flags(
        self,
        *,
        addr: str | None = None,
        metrics: bool | None = None,
        insecure_allow_remote: bool | None = None,
        diagnostic_log: str | None = None,
    ) -> Settings:
        """Overlay command-line flags (flags win over the environment)."""
        s = self
        if diagnostic_log is not None:
            s = replace(s, diagnostic_log=diagnostic_log.strip())
        if addr is not None:
            parse_addr(addr, name="--addr")
            s = replace(s, addr=addr)
        if metrics is not None:
            s = replace(s, metrics=metrics)
        if insecure_allow_remote is not None:
            s = replace(s, insecure_allow_remote=insecure_allow_remote)
        return s

    def check_serve(self) -> None:
        """Refusals that only apply to a listening broker."""
        host, _ = self.host_port
        if not self.auth and not is_loopback(host) and not self.insecure_allow_remote:
            raise ConfigError(
                f"auth is off (MQLITE_TOKENS=off) and {self.addr!r} is not a loopback address: "
                "bind 127.0.0.1, enable auth, or pass --insecure-allow-remote"
            )
        if self.max_message_bytes > defaults.MAX_HONOURED_MESSAGE_BYTES:
            raise ConfigError(
                f"MQLITE_MAX_MESSAGE_BYTES={self.max_message_bytes} is over what HTTP can "
                f"carry: a request is at most {defaults.MAX_REQUEST_BYTES} bytes (32 MiB), "
                f"which holds a base64 body of at most {defaults.MAX_HONOURED_MESSAGE_BYTES} "
                "bytes; set MQLITE_MAX_MESSAGE_BYTES to that or less"
            )
        if self.metrics and not self.auth:
            raise ConfigError("MQLITE_METRICS/--metrics requires auth (MQLITE_TOKENS is off)")
        if self.test_kill_point and not self.test_hooks:
            raise ConfigError(
                "MQLITE_TEST_KILL_POINT arms a test-only hook that SIGKILLs the broker: "
                "refusing to serve (a crash drill sets MQLITE_TEST_HOOKS=on as well)"
            )


def push_allow_networks(environ: Mapping[str, str]) -> str:
    """``MQLITE_PUSH_ALLOW_NETWORKS`` (docs/push.md, docs/operations.md "Push egress"):
    comma- or space-separated CIDRs, checked here so a typo stops the broker at start
    rather than silently leaving the range closed."""
    raw = environ.get("MQLITE_PUSH_ALLOW_NETWORKS", "").strip()
    for part in raw.replace(",", " ").split():
        try:
            ipaddress.ip_network(part, strict=False)
        except ValueError:
            raise ConfigError(
                f"MQLITE_PUSH_ALLOW_NETWORKS: {part!r} is not a CIDR network (e.g. 10.1.0.0/16)"
            ) from None
    return raw
