"""The route table: discovery order, paths, names, permissions and shared shapes."""

from __future__ import annotations

import route_registry
from mqlite import wire
from mqlite.types import Permission

# The one order the spec pins (original-behaviour §8): the original's 22 routes.
ORIGINAL_22 = [name.split("/")[1] for name in route_registry.ORIGINAL_22]


def test_every_original_route_is_in_the_table_once() -> None:
    """The rest of the table is derived: a new route needs no edit here (its permission is
    pinned against the spec's table in tests/server/test_auth_unit.py)."""
    names = [r.name for r in wire.ROUTES]
    assert len(set(names)) == len(names)
    assert set(route_registry.ORIGINAL_22) <= set(names)


def test_the_original_routes_keep_their_relative_order() -> None:
    kept = [r.method for r in wire.ROUTES if r.method in ORIGINAL_22]
    assert kept == ORIGINAL_22


def test_paths_and_names() -> None:
    for r in wire.ROUTES:
        assert r.path == f"/mqlite.v1.{r.service}/{r.method}"
        assert r.path == wire.PATH_PREFIX + r.name
        assert r.permission in set(Permission)


def test_routes_by_path_is_the_table_in_order() -> None:
    assert list(wire.ROUTES_BY_PATH) == [r.path for r in wire.ROUTES]
    for r in wire.ROUTES:
        assert wire.ROUTES_BY_PATH[r.path] is r
    assert "/mqlite.v1.QueueService/Nope" not in wire.ROUTES_BY_PATH
    assert len(set(wire.ROUTES)) == len(wire.ROUTES) == len(wire.ROUTES_BY_PATH)


def test_routes_by_path_is_read_only() -> None:
    try:
        wire.ROUTES_BY_PATH["/x"] = wire.SEND  # type: ignore[index]
    except TypeError:
        return
    raise AssertionError("ROUTES_BY_PATH must be immutable")


def test_send_and_schedule_share_one_shape_pair() -> None:
    assert wire.SEND.request is wire.SCHEDULE.request
    assert wire.SEND.response is wire.SCHEDULE.response


def test_settle_verbs_share_the_settle_request() -> None:
    verbs = (wire.COMPLETE, wire.ABANDON, wire.REJECT, wire.DEFER, wire.RENEW)
    assert {v.request for v in verbs} == {wire.SettleRequest}
    assert {v.response for v in (*verbs, wire.CANCEL, wire.REVOKE_KEY)} == {wire.SettleResponse}


def test_receive_views() -> None:
    assert wire.RECEIVE.response is wire.RECEIVE_DEFERRED.response
    assert wire.PEEK.response is wire.PeekResponse


def test_only_fieldless_requests_accept_an_empty_body() -> None:
    optional = {r.method for r in wire.ROUTES if r.body_optional}
    assert optional == {
        "ListQueues",
        "ListSubscriptions",
        "Status",
        "Observe",
        "ListSchedules",
        "ListPushes",
    }


def test_every_route_constant_is_exported() -> None:
    exported = {id(getattr(wire, n)) for n in wire.__all__ if n.isupper()}
    assert {id(r) for r in wire.ROUTES} <= exported
