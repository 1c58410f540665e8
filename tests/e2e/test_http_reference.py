"""docs/http.md's RPC reference is what a running broker serves (issue 31 item 4): the
section rendered from ``GET /openapi.json`` equals the page, and it names every route
and every request field with its type and default."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import httpx
from e2e_support import Broker

REPO = Path(__file__).resolve().parents[2]


def _generator():
    spec = importlib.util.spec_from_file_location(
        "gen_docs_tables", REPO / "scripts" / "gen_docs_tables.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["gen_docs_tables"] = module
    spec.loader.exec_module(module)
    return module


def test_the_http_reference_matches_the_served_openapi(broker: Broker) -> None:
    served = httpx.get(broker.base_url + "/openapi.json").json()
    gen = _generator()
    page = gen.current(gen.HTTP_PAGE, "rpc-reference")
    assert page == gen.render_http(served)
    rpcs = [p for p, item in served["paths"].items() if "post" in item]
    assert len(rpcs) >= 29
    for path in rpcs:
        assert f"### `{path.removeprefix('/mqlite.v1.')}`" in page
    assert "| `wait_time_ms` | integer | `0` | long-poll, at most 20000 |" in page
    assert "| `filter` | SubscriptionFilter | absent |" in page
