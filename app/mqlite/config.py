"""Configuration from the environment, parsed once; a bad value fails naming the variable.

Nothing else in mqlite reads ``os.environ``: callers pass ``os.environ`` (or any mapping)
to ``Settings.from_env``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from mqlite import defaults, errors


DEFAULT_DB = "file:./mq.db"


class ConfigError(errors.InvalidArgument):
    """invalid configuration."""


def _sync(environ: Mapping[str, str]) -> str:
    raw = environ.get("MQLITE_SYNC", "")
    mode = (raw or defaults.DEFAULT_SYNC).strip().upper()
    if mode not in defaults.SYNC_MODES:
        raise ConfigError(f"MQLITE_SYNC={raw!r} is not one of {', '.join(defaults.SYNC_MODES)}")
    return mode


def _positive_int(environ: Mapping[str, str], name: str, default: int) -> int:
    raw = environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{name}={raw!r} is not an integer") from None
    if value <= 0:
        raise ConfigError(f"{name}={raw!r} must be positive")
    return value


@dataclass(frozen=True, slots=True)
class Settings:
    db: str = DEFAULT_DB
    sync: str = defaults.DEFAULT_SYNC
    max_message_bytes: int = defaults.MAX_MESSAGE_BYTES

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> Settings:
        return cls(
            db=environ.get("MQLITE_DB", "").strip() or DEFAULT_DB,
            sync=_sync(environ),
            max_message_bytes=_positive_int(
                environ, "MQLITE_MAX_MESSAGE_BYTES", defaults.MAX_MESSAGE_BYTES
            ),
        )
