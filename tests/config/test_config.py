"""Configuration is parsed once from an injected mapping; a bad value names its variable."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from mqlite.config import ConfigError, Settings, is_loopback, parse_addr, parse_duration_ms


def test_unset_tokens_generate_a_256_bit_admin_token() -> None:
    s = Settings.from_env({})
    assert s.auth and s.token_generated
    assert s.tokens is not None and re.fullmatch(r"mqk_[0-9a-f]{64}", s.tokens[0])
    assert Settings.from_env({}).tokens != s.tokens  # random each start


def test_tokens_off_disables_auth_and_cors_defaults_off() -> None:
    s = Settings.from_env({"MQLITE_TOKENS": "OFF"})
    assert not s.auth and s.cors is None
    assert Settings.from_env({"MQLITE_TOKENS": "a,b"}).cors == "*"


def test_configured_tokens_are_trimmed_and_a_list_without_tokens_is_refused() -> None:
    assert Settings.from_env({"MQLITE_TOKENS": " a , b "}).tokens == ("a", "b")
    with pytest.raises(ConfigError, match="MQLITE_TOKENS"):
        Settings.from_env({"MQLITE_TOKENS": ","})


@pytest.mark.parametrize(
    ("env", "variable"),
    [
        ({"MQLITE_SYNC": "fast"}, "MQLITE_SYNC"),
        ({"MQLITE_ADDR": "  "}, "MQLITE_ADDR"),
        ({"MQLITE_ADDR": "localhost"}, "MQLITE_ADDR"),
        ({"MQLITE_ADDR": ":99999"}, "MQLITE_ADDR"),
        ({"MQLITE_DLQ_MAX_AGE": "14 days"}, "MQLITE_DLQ_MAX_AGE"),
        ({"MQLITE_DLQ_MAX_COUNT": "-1"}, "MQLITE_DLQ_MAX_COUNT"),
        ({"MQLITE_MAX_MESSAGE_BYTES": "1MB"}, "MQLITE_MAX_MESSAGE_BYTES"),
        ({"MQLITE_METRICS": "maybe"}, "MQLITE_METRICS"),
        ({"MQLITE_TOKENS": "off", "MQLITE_MONITOR_TOKENS": "m"}, "MQLITE_MONITOR_TOKENS"),
        ({"MQLITE_TOKENS": "a", "MQLITE_MONITOR_TOKENS": "a"}, "MQLITE_MONITOR_TOKENS"),
        ({"MQLITE_LOG_LEVEL": "loud"}, "MQLITE_LOG_LEVEL"),
    ],
)
def test_invalid_values_fail_naming_the_variable(env: dict[str, str], variable: str) -> None:
    with pytest.raises(ConfigError, match=variable):
        Settings.from_env(env)


@pytest.mark.parametrize(
    ("text", "ms"),
    [
        ("500ms", 500),
        ("30s", 30_000),
        ("5m", 300_000),
        ("336h", 1_209_600_000),
        ("14d", 1_209_600_000),
        ("1d12h", 129_600_000),
        ("2w", 1_209_600_000),
        ("1.5s", 1500),
    ],
)
def test_durations(text: str, ms: int) -> None:
    assert parse_duration_ms(text) == ms


@pytest.mark.parametrize("text", ["", "10", "-5s", "5x", "s", "1h 2m"])
def test_bad_durations(text: str) -> None:
    with pytest.raises(ConfigError):
        parse_duration_ms(text)


def test_dlq_retention_defaults_and_off() -> None:
    s = Settings.from_env({})
    assert (s.dlq_max_age_ms, s.dlq_max_count, s.dlq_max_bytes) == (14 * 86_400_000, 1_000_000, 0)
    off = Settings.from_env({"MQLITE_DLQ_RETENTION": "off"})
    assert (off.dlq_max_age_ms, off.dlq_max_count, off.dlq_max_bytes) == (0, 0, 0)


def test_addr_forms_and_loopback() -> None:
    assert parse_addr(":6754") == ("", 6754)
    assert parse_addr("[::1]:80") == ("::1", 80)
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("") and not is_loopback("0.0.0.0") and not is_loopback("10.0.0.1")


def test_auth_off_refuses_a_remote_bind_unless_insecure_allowed() -> None:
    s = Settings.from_env({"MQLITE_TOKENS": "off"})
    with pytest.raises(ConfigError, match="insecure-allow-remote"):
        s.check_serve()  # default :6754 is all interfaces
    s.with_flags(addr="127.0.0.1:6754").check_serve()
    s.with_flags(insecure_allow_remote=True).check_serve()


def test_metrics_require_auth_and_flags_win() -> None:
    s = Settings.from_env(
        {"MQLITE_TOKENS": "off", "MQLITE_METRICS": "on", "MQLITE_ADDR": "127.0.0.1:1"}
    )
    with pytest.raises(ConfigError, match="requires auth"):
        s.check_serve()
    s.with_flags(metrics=False).check_serve()
    assert Settings.from_env({"MQLITE_METRICS": "on"}).with_flags(metrics=False).metrics is False


def test_the_console_is_on_by_default_and_off_names_the_variable_when_misspelt() -> None:
    assert Settings.from_env({}).ui is True
    assert Settings.from_env({"MQLITE_UI": "off"}).ui is False
    assert Settings.from_env({"MQLITE_UI": "on"}).ui is True
    with pytest.raises(ConfigError, match="MQLITE_UI"):
        Settings.from_env({"MQLITE_UI": "headless"})


# -- secrets from files (MQLITE_*_FILE, systemd credentials) -------------------------------


def test_tokens_come_from_a_file_one_per_line_or_comma_separated(tmp_path: Path) -> None:
    admin = tmp_path / "tokens"
    admin.write_text("mqk_one\nmqk_two, mqk_three\n")
    monitor = tmp_path / "monitor"
    monitor.write_text("mqk_mon\n")
    s = Settings.from_env(
        {"MQLITE_TOKENS_FILE": str(admin), "MQLITE_MONITOR_TOKENS_FILE": str(monitor)}
    )
    assert s.tokens == ("mqk_one", "mqk_two", "mqk_three") and not s.token_generated
    assert s.monitor_tokens == ("mqk_mon",)


def test_systemd_credentials_directory_is_read_when_no_variable_is_set(tmp_path: Path) -> None:
    (tmp_path / "mqlite-tokens").write_text("mqk_cred\n")
    (tmp_path / "mqlite-monitor-tokens").write_text("mqk_cred_mon\n")
    s = Settings.from_env({"CREDENTIALS_DIRECTORY": str(tmp_path)})
    assert s.tokens == ("mqk_cred",) and s.monitor_tokens == ("mqk_cred_mon",)
    # The explicit variable wins over the credential; no credential = a generated token.
    assert Settings.from_env(
        {"CREDENTIALS_DIRECTORY": str(tmp_path), "MQLITE_TOKENS": "mqk_env"}
    ).tokens == ("mqk_env",)
    assert Settings.from_env({"CREDENTIALS_DIRECTORY": str(tmp_path / "none")}).token_generated


@pytest.mark.parametrize(
    ("content", "match"),
    [
        (None, r"MQLITE_TOKENS_FILE=.*cannot read the file \(No such file"),
        ("", r"MQLITE_TOKENS_FILE=.*the file is empty"),
        (" \n\n", r"MQLITE_TOKENS_FILE=.*the file is empty"),
        ("off\n", r"MQLITE_TOKENS_FILE=.*cannot hold 'off'"),
        ("mqk_a b\n", r"MQLITE_TOKENS_FILE=.*whitespace"),
        (b"\xff\xfe", r"MQLITE_TOKENS_FILE=.*not UTF-8"),
    ],
)
def test_a_bad_token_file_fails_naming_the_variable_never_the_content(
    tmp_path: Path, content: str | bytes | None, match: str
) -> None:
    path = tmp_path / "tokens"
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content)
    with pytest.raises(ConfigError, match=match) as info:
        Settings.from_env({"MQLITE_TOKENS_FILE": str(path)})
    assert "mqk_a" not in str(info.value)


def test_an_unreadable_token_file_names_the_variable(tmp_path: Path) -> None:
    path = tmp_path / "tokens"
    path.write_text("mqk_secret\n")
    path.chmod(0)
    if os.access(path, os.R_OK):  # root reads anything: use a directory instead
        path = tmp_path
    with pytest.raises(ConfigError, match=r"MQLITE_MONITOR_TOKENS_FILE=.*cannot read"):
        Settings.from_env({"MQLITE_TOKENS": "a", "MQLITE_MONITOR_TOKENS_FILE": str(path)})


def test_a_variable_and_its_file_together_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "tokens"
    path.write_text("mqk_file\n")
    with pytest.raises(ConfigError, match="set MQLITE_TOKENS or MQLITE_TOKENS_FILE, not both"):
        Settings.from_env({"MQLITE_TOKENS": "mqk_env", "MQLITE_TOKENS_FILE": str(path)})


def test_monitor_tokens_from_a_credential_must_differ_from_admin(tmp_path: Path) -> None:
    (tmp_path / "mqlite-tokens").write_text("mqk_same\n")
    (tmp_path / "mqlite-monitor-tokens").write_text("mqk_same\n")
    with pytest.raises(ConfigError, match="MQLITE_MONITOR_TOKENS must be distinct"):
        Settings.from_env({"CREDENTIALS_DIRECTORY": str(tmp_path)})


def test_push_allow_networks_is_checked_at_start_and_closed_by_default() -> None:
    """MQLITE_PUSH_ALLOW_NETWORKS (docs/push.md): a typo stops the broker rather than
    leaving the range silently closed; unset, nothing is opened."""
    assert Settings.from_env({}).push_allow_networks == ""
    s = Settings.from_env({"MQLITE_PUSH_ALLOW_NETWORKS": " 10.1.0.0/16, fd00::/8 "})
    assert s.push_allow_networks == "10.1.0.0/16, fd00::/8"
    with pytest.raises(ConfigError, match=r"MQLITE_PUSH_ALLOW_NETWORKS.*'10\.0\.0\.0/33'"):
        Settings.from_env({"MQLITE_PUSH_ALLOW_NETWORKS": "127.0.0.0/8,10.0.0.0/33"})
