"""docs/http.md's error table lists every error the broker answers: each wire code with
its status, and each reason with its status and the code it refines."""

from __future__ import annotations

import re
from pathlib import Path

from mqlite import errors

DOC = Path(__file__).resolve().parents[2] / "docs" / "http.md"


def _rows() -> set[tuple[int, str, str]]:
    text = DOC.read_text()
    section = text[text.index("\n## Errors\n") :]
    section = section[: section.find("\n## ", 1)]
    rows = set()
    for line in section.splitlines():
        m = re.match(r"\| (\d{3}) \| `(\w+)` \| (?:`(\w+)`)?", line)
        if m:
            rows.add((int(m.group(1)), m.group(2), m.group(3) or ""))
    return rows


def test_every_wire_code_is_in_the_error_table() -> None:
    rows = _rows()
    for code, cls in errors.BY_CODE.items():
        assert (cls.http_status, code, "") in rows, code


def test_every_reason_is_in_the_error_table() -> None:
    rows = _rows()
    for reason, cls in errors.BY_REASON.items():
        assert (cls.http_status, cls.code, reason) in rows, reason
