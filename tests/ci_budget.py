"""How much generated input the property and fuzz tests draw: a CI budget by default, the
full one with ``MQLITE_DEEP=1``.

`make test` must stay under 20 minutes on a loaded two-core CI machine (issue 25), where
wall time follows the suite's total CPU. The generated tests (hypothesis state machines,
schemathesis) are derandomized, so their CI budget is a fixed set of inputs that still
reaches every rule and every route (each module says what its budget covers); the full
budget is a deeper search of the same space for a run before a release or after a change
to the code under test: ``MQLITE_DEEP=1 .venv/bin/python -m pytest tests/engine/test_model.py``.
"""

from __future__ import annotations

import os

DEEP = os.environ.get("MQLITE_DEEP", "") not in ("", "0")


def budget(ci: int, deep: int) -> int:
    """``ci`` examples in the default run, ``deep`` with MQLITE_DEEP=1."""
    return deep if DEEP else ci
