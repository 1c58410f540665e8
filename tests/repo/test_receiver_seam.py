"""The Receiver's facade seam (issue 27): clients and transports use ``sdk/receiver.py``,
never one of its parts (``receiver_core``, ``claiming``, ``handling``, ``lease_renewal``,
``stopping``), so the parts can be reshaped without touching a caller.

The import-linter contract ``receiver-facade`` is proven able to fail: a probe import of a
part planted in a temporary copy of the package (in the kombu transport, a client of the
SDK) breaks it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from contract_probe import assert_contract_catches, copy_of_package


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    return copy_of_package(tmp_path)


def test_the_receiver_facade_contract_holds_and_breaks_on_a_probe_import(copy: Path) -> None:
    assert_contract_catches(copy, "receiver-facade", "kombu/polling.py", "mqlite.sdk.claiming")
