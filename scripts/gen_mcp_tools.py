"""Rewrite tests/golden/mcp_tools.json: the tool list ``mqlite-mcp`` serves.

The golden pins every tool's name, description, input schema and annotations, so a
change to what agents see (a new RPC, a reworded Doc) shows up as a reviewed diff.
Run from the repository root after such a change, then read the diff:

    .venv/bin/python scripts/gen_mcp_tools.py
"""

from __future__ import annotations

import json
from pathlib import Path

from mqlite.mcp.server import listing_json

GOLDEN = Path(__file__).resolve().parents[1] / "tests" / "golden" / "mcp_tools.json"


def render() -> str:
    return json.dumps(listing_json(), indent=2, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    GOLDEN.write_text(render(), encoding="utf-8")
    print(
        f"wrote {GOLDEN.relative_to(Path.cwd()) if GOLDEN.is_relative_to(Path.cwd()) else GOLDEN}"
    )
