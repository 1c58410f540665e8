"""Every route has every derived piece: a handler, a verb of the call table (hence both
remote clients, the Client protocol and the embedded forwarder), an OpenAPI operation
with its component schemas, and a retry class; nothing derived is orphaned.

docs/contributing.md lists the four places a new RPC is written; this test is what
fails when one of them (or the regeneration) was forgotten.
"""

from __future__ import annotations

import inspect
from typing import Any

import pytest

import mqlite
from mqlite import wire
from mqlite.sdk.aio import AsyncClient
from mqlite.sdk.call import RETRY, VERBS
from mqlite.sdk.calls import STAND_INS
from mqlite.sdk.embedded_methods import EmbeddedMethods
from mqlite.sdk.protocol import Client
from mqlite.server.handlers import HANDLERS

DOC = wire.openapi_document("0")
NAMES = [r.name for r in wire.ROUTES]


@pytest.mark.parametrize("route", wire.ROUTES, ids=NAMES)
def test_every_route_has_a_handler(route: wire.Route[Any, Any]) -> None:
    assert route.name in HANDLERS


@pytest.mark.parametrize("route", wire.ROUTES, ids=NAMES)
def test_every_route_is_reached_by_a_verb_of_the_call_table(route: wire.Route[Any, Any]) -> None:
    reached = {v.route.name for v in VERBS.values()}
    assert route.name in reached or STAND_INS.get(route.name) in reached


@pytest.mark.parametrize("route", wire.ROUTES, ids=NAMES)
def test_every_route_has_exactly_one_retry_class(route: wire.Route[Any, Any]) -> None:
    assert RETRY.get(STAND_INS.get(route.name, route.name)) in (True, False)


@pytest.mark.parametrize("route", wire.ROUTES, ids=NAMES)
def test_every_route_is_an_openapi_operation(route: wire.Route[Any, Any]) -> None:
    post = DOC["paths"][route.path]["post"]
    assert post["summary"] == route.summary
    schemas = DOC["components"]["schemas"]
    for ref in (
        post["requestBody"]["content"]["application/json"]["schema"]["$ref"],
        post["responses"]["200"]["content"]["application/json"]["schema"]["$ref"],
    ):
        assert ref.removeprefix("#/components/schemas/") in schemas


def test_nothing_derived_is_orphaned() -> None:
    rpc_paths = {p for p in DOC["paths"] if p.startswith(wire.PATH_PREFIX)}
    assert rpc_paths == {r.path for r in wire.ROUTES}
    assert set(HANDLERS) == set(NAMES)
    assert {v.route.name for v in VERBS.values()} <= set(NAMES)
    assert set(RETRY) <= set(NAMES)
    assert set(STAND_INS) <= set(NAMES) and set(STAND_INS.values()) <= set(RETRY)


def _params(fn: Any) -> list[tuple[str, Any]]:
    return [(p.name, p.default) for p in inspect.signature(fn).parameters.values()][1:]


@pytest.mark.parametrize("name", sorted(VERBS))
def test_every_verb_is_a_method_everywhere_with_its_signature(name: str) -> None:
    """The generated modules are current: each verb is on the protocol, both remote
    clients and (unless it opts out) the embedded forwarders, with the table's params."""
    expected = [(p.name, p.default) for p in inspect.signature(VERBS[name].fn).parameters.values()]
    assert _params(getattr(Client, name)) == expected
    assert _params(getattr(mqlite.HttpClient, name)) == expected
    assert inspect.iscoroutinefunction(getattr(AsyncClient, name))
    assert _params(getattr(AsyncClient, name)) == expected
    if VERBS[name].embedded:
        assert _params(getattr(EmbeddedMethods, name)) == expected
    else:
        assert not hasattr(EmbeddedMethods, name)


def test_the_protocol_has_the_verbs_and_the_lifecycle_only() -> None:
    members = {n for n, m in vars(Client).items() if callable(m) and not n.startswith("_")}
    assert members == set(VERBS) | {"close"}
