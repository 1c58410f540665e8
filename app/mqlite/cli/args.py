"""Argument types and shared flags (a bad value is an argparse error: exit 2)."""

from __future__ import annotations

import argparse
import os
import re
import sys
from datetime import datetime

from mqlite import errors
from mqlite.cli.context import Failure, UsageError
from mqlite.config import parse_duration_ms

MAX_BODY_BYTES = 16 << 20  # 16 MiB: stdin / --file cap (read one extra byte to detect more)


WHAT_A_DURATION_IS = (
    "a duration is a number with a unit (ms s m h d w), parts summed: 500ms, 30s, 1h30m, "
    "1.5h; a bare 0 is zero"
)


def duration(text: str) -> int:
    """``ms s m h d w`` (e.g. ``1h30m``); a bare ``0`` is zero. Negative is rejected.

    A refusal says what a duration is: ``5`` (which unit?) and ``-1s`` are the usual
    first mistakes.
    """
    raw = text.strip()
    if raw == "0":
        return 0
    if raw.startswith("-"):
        raise argparse.ArgumentTypeError(f"{text!r} is negative; {WHAT_A_DURATION_IS}")
    if re.fullmatch(r"\d+(\.\d+)?", raw):
        raise argparse.ArgumentTypeError(
            f"{text!r} has no unit (did you mean {raw}s?); {WHAT_A_DURATION_IS}"
        )
    try:
        return parse_duration_ms(raw)
    except errors.MQLiteError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a duration; {WHAT_A_DURATION_IS}"
        ) from None


def positive_duration(text: str) -> int:
    """A bound: 0 means none; a positive value under 1 ms is refused (it would round to 0)."""
    ms = duration(text)
    if ms == 0 and re.search(r"[1-9]", text):
        raise argparse.ArgumentTypeError(f"{text!r} is below the 1ms minimum")
    return ms


def non_negative(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} must not be negative")
    return value


def signed(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None


def seq(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a sequence number") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"sequence number {text!r} must be positive")
    return value


def seq_list(text: str) -> list[int]:
    items = [p.strip() for p in text.split(",")]
    if not items or any(not p for p in items):
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of seqs")
    return [seq(p) for p in items]


def prop(text: str) -> tuple[str, str]:
    """One ``--prop K=V`` (the value may hold ``=``): the application property a filter
    reads as ``properties["K"]``. send, schedule and cron add take it repeated."""
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"{text!r} is not K=V")
    return key, value


def prop_list(text: str) -> list[tuple[str, str]]:
    """``K=V,K=V`` in one argument (test-filter's sample properties), each as ``prop``."""
    return [prop(item) for item in filter(None, (p.strip() for p in text.split(",")))]


def at_time(text: str, now_ms: int) -> int:
    """``--at``: RFC3339, or a duration from now. Must be in the future."""
    raw = text.strip()
    try:
        at = now_ms + parse_duration_ms(raw)
    except errors.MQLiteError:
        try:
            stamp = datetime.fromisoformat(raw.replace("Z", "+00:00").replace("z", "+00:00"))
        except ValueError:
            raise UsageError(f"--at {text!r} is neither RFC3339 nor a duration") from None
        if stamp.tzinfo is None:
            raise UsageError(f"--at {text!r} needs a time zone (e.g. Z or +02:00)") from None
        at = int(stamp.timestamp() * 1000)
    if at <= now_ms:
        raise UsageError(f"--at {text!r} is not in the future")
    return at


def read_body(arg: str | None, file: str | None, *, required: bool = True) -> bytes | None:
    """The body from an argument, ``--file``, or ``-`` (stdin); capped at 16 MiB."""
    if arg is not None and file is not None:
        raise UsageError("give the body as an argument or with --file, not both")
    if file is not None:
        try:
            with open(file, "rb") as fh:
                return _capped(fh.read(MAX_BODY_BYTES + 1), file)
        except OSError as exc:
            raise Failure(f"--file {file}: {exc.strerror or exc}") from None
    if arg == "-":
        return _capped(sys.stdin.buffer.read(MAX_BODY_BYTES + 1), "stdin")
    if arg is None:
        if required:
            raise UsageError("a body is required (argument, - for stdin, or --file)")
        return None
    return os.fsencode(arg)


def _capped(data: bytes, source: str) -> bytes:
    if len(data) > MAX_BODY_BYTES:
        raise Failure(f"{source} holds more than {MAX_BODY_BYTES} bytes (16 MiB); refusing")
    return data


def client_flags() -> argparse.ArgumentParser:
    """``--endpoint --token|--token-file --output``: the data and admin commands' flags."""
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument("--endpoint", metavar="URL", help="a running broker (overrides MQLITE_ENDPOINT)")
    creds = p.add_mutually_exclusive_group()
    creds.add_argument(
        "--token",
        metavar="BEARER",
        help="Bearer token (--token= sends none; visible to ps: prefer MQLITE_TOKEN)",
    )
    creds.add_argument(
        "--token-file",
        metavar="PATH",
        help="read the Bearer token from PATH (- = stdin), never from argv",
    )
    output_flag(p)
    return p


def output_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--output", "-o", choices=("text", "json"), default="text", help="text (default) or json"
    )
