"""``mqlite.server.jsonlog``: what keeps a broker process JSON-only, in a real process.

A library that prints plain text, a Python warning, an exception escaping a thread or the
main program: each becomes ONE JSON line of the broker's shape (issue 9, "Logs are one
format"). The e2e test ``tests/e2e/test_log_lines.py`` covers a whole broker's life.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from typing import Any

from mqlite.jsonlines import rfc3339_ms

PROGRAM = textwrap.dedent(
    """
    import sys, threading, warnings
    from gunicorn import util
    from mqlite.server import jsonlog

    jsonlog.install("INFO")
    print("plain text", "on stdout")
    sys.stderr.write("a partial ")
    sys.stderr.write("line\\n\\n")
    util.warn("gunicorn's own\\nmulti-line warning")
    warnings.warn("a deprecation", DeprecationWarning, stacklevel=1)
    thread = threading.Thread(target=lambda: 1 / 0, name="doomed")
    thread.start()
    thread.join()
    raise RuntimeError("escaped the main program")
    """
)


def run_program() -> tuple[int, list[dict[str, Any]], list[dict[str, Any]]]:
    done = subprocess.run(
        [sys.executable, "-W", "always", "-c", PROGRAM],
        capture_output=True,
        text=True,
        timeout=60,
    )
    out = [json.loads(line) for line in done.stdout.splitlines()]
    err = [json.loads(line) for line in done.stderr.splitlines()]
    return done.returncode, out, err


def test_every_foreign_line_becomes_one_json_line() -> None:
    rc, out, err = run_program()
    assert rc == 1
    for record in out + err:
        assert set(record) >= {"time", "level", "logger", "msg", "pid"}, record
    assert [(r["logger"], r["level"], r["msg"]) for r in out] == [
        ("stdout", "INFO", "plain text on stdout")
    ]
    msgs = [r["msg"] for r in err]
    assert msgs[0] == "a partial line"  # joined up to its newline; the blank line dropped
    assert "!!! WARNING: gunicorn's own" in msgs and "!!! multi-line warning" in msgs
    (warning,) = [r for r in err if r["logger"] == "py.warnings"]
    assert "a deprecation" in warning["msg"]
    crashes = [r for r in err if r["logger"] == "mqlite.serve"]
    assert [c["msg"] for c in crashes] == [
        "uncaught exception in thread doomed",
        "uncaught exception in the main thread",
    ]
    assert "ZeroDivisionError" in crashes[0]["exc_info"]
    assert "RuntimeError: escaped the main program" in crashes[1]["exc_info"]
    assert all(c["level"] == "CRITICAL" for c in crashes)


def test_rfc3339_stamps_are_utc_with_milliseconds() -> None:
    assert rfc3339_ms(0) == "1970-01-01T00:00:00.000Z"
    assert rfc3339_ms(1_796_110_014_318) == "2026-12-01T07:26:54.318Z"
