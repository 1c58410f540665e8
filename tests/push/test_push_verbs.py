"""CreatePush / ListPushes / DeletePush (docs/push.md "API"): every bound refused with a
400 naming the field, the generated secret shown once, Receive refused on a pushed queue,
and the egress guard closed by default (loopback, private, link-local, IPv4-mapped)."""

from __future__ import annotations

from pathlib import Path

import pytest
from push_support import verify

import mqlite
from mqlite import errors
from mqlite.engine.egress import Egress, parse_networks


@pytest.fixture
def mq(tmp_path: Path) -> mqlite.EmbeddedClient:
    client = mqlite.open_embedded(
        f"file:{tmp_path / 'mq.db'}", background=False, push_allow_networks="127.0.0.0/8"
    )
    client.create_queue("q")
    yield client  # type: ignore[misc]
    client.close()


URL = "http://127.0.0.1:9/hook"


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"url": "ftp://127.0.0.1/x"}, "url"),
        ({"url": ""}, "url"),
        ({"url": "http://127.0.0.1/" + "a" * 2048}, "url"),
        ({"url": "http://user:pw@127.0.0.1/x"}, "credentials"),
        ({"url": "http://127.0.0.1/x y"}, "url"),
        ({"url": "https:///nohost"}, "host"),
        ({"secret": "nope"}, "secret"),
        ({"secret": "whsec_" + "A" * 8}, "secret"),
        ({"secret": "whsec_!!!notbase64!!!"}, "secret"),
        ({"max_in_flight": 0}, "max_in_flight"),
        ({"max_in_flight": 257}, "max_in_flight"),
        ({"timeout_ms": 99}, "timeout_ms"),
        ({"timeout_ms": 60_001}, "timeout_ms"),
    ],
)
def test_create_push_refuses_each_bound_naming_the_field(
    mq: mqlite.EmbeddedClient, kwargs: dict[str, object], field: str
) -> None:
    args: dict[str, object] = {"queue": "q", "url": URL, **kwargs}
    with pytest.raises(errors.InvalidArgument) as e:
        mq.create_push(**args)  # type: ignore[arg-type]
    assert field in e.value.message
    assert mq.list_pushes() == []


def test_the_bounds_themselves_are_accepted(mq: mqlite.EmbeddedClient) -> None:
    mq.create_push("q", URL, max_in_flight=256, timeout_ms=60_000)
    mq.create_push("q", URL, max_in_flight=1, timeout_ms=100)
    (p,) = mq.list_pushes()
    assert (p.max_in_flight, p.timeout_ms) == (1, 100)


def test_create_push_on_a_missing_queue_is_not_found(mq: mqlite.EmbeddedClient) -> None:
    with pytest.raises(errors.QueueNotFound):
        mq.create_push("nope", URL)


def test_a_generated_secret_is_returned_once_and_signs(mq: mqlite.EmbeddedClient) -> None:
    created = mq.create_push("q", URL)
    assert created.secret.startswith("whsec_")
    assert len(__import__("base64").b64decode(created.secret[6:])) == 32
    (listed,) = mq.list_pushes()
    assert listed.secret == "" and listed.url == URL and listed.status == "active"
    assert (listed.max_in_flight, listed.timeout_ms) == (8, 10_000)
    # An update without a secret keeps it (pause/resume never rotate); nothing is shown.
    kept = mq.create_push("q", URL, paused=True)
    assert kept.secret == "" and mq._engine.push_targets()["q"].secret == created.secret
    # A given secret is never echoed; re-creating with it rotates (upsert on queue).
    mine = "whsec_" + __import__("base64").b64encode(b"k" * 24).decode()
    again = mq.create_push("q", URL, secret=mine)
    assert again.secret == ""
    assert len(mq.list_pushes()) == 1
    engine = mq._engine
    assert engine.push_targets()["q"].secret == mine
    from mqlite.push import signing
    from mqlite.types import Message

    msg = Message(7, "q", b"hi", delivery_count=1)
    assert verify(mine, signing.headers(engine.push_targets()["q"].key(), msg, 1700000000), b"hi")


def test_receive_on_a_pushed_queue_is_409_naming_the_push(mq: mqlite.EmbeddedClient) -> None:
    mq.send_one("q", mqlite.OutMessage(b"x"))
    mq.create_push("q", URL, paused=True)
    with pytest.raises(errors.PushAttached) as e:
        mq.receive("q")
    assert e.value.http_status == 409 and "push target" in e.value.message
    assert "127.0.0.1" in e.value.message
    assert len(mq.peek("q")) == 1  # browsing works as always
    assert mq.stats("q").active == 1
    assert mq.delete_push("q") is True
    assert mq.delete_push("q") is False
    (m,) = mq.receive("q")
    assert m.body == b"x"


def test_paused_is_kept_and_listed(mq: mqlite.EmbeddedClient) -> None:
    mq.create_push("q", URL, paused=True)
    (p,) = mq.list_pushes()
    assert (p.paused, p.status) == (True, "paused")
    mq.create_push("q", URL, paused=False)
    assert mq.list_pushes()[0].status == "active"


def test_targets_survive_a_reopen(tmp_path: Path) -> None:
    db = f"file:{tmp_path / 'r.db'}"
    with mqlite.open_embedded(db, background=False, push_allow_networks="127.0.0.0/8") as mq:
        mq.create_queue("q")
        mq.create_push("q", URL, max_in_flight=3)
    with mqlite.open_embedded(db, background=False, push_allow_networks="") as mq:
        (p,) = mq.list_pushes()
        assert (p.queue, p.url, p.max_in_flight) == ("q", URL, 3)
        with pytest.raises(errors.PushAttached):
            mq.receive("q")


@pytest.mark.parametrize(
    "url",
    [
        "https://127.0.0.1/h",
        "https://127.9.9.9/h",
        "https://[::1]/h",
        "https://[::ffff:127.0.0.1]/h",
        "https://[::ffff:10.1.2.3]/h",
        "https://10.0.0.1/h",
        "https://172.16.5.5/h",
        "https://192.168.1.1/h",
        "https://169.254.169.254/latest/meta-data",
        "https://[fe80::1]/h",
        "https://[fc00::1]/h",
        "https://224.0.0.1/h",
        "https://0.0.0.0/h",
        "https://[::]/h",
        "https://localhost/h",
    ],
)
def test_the_egress_guard_refuses_internal_addresses_by_default(tmp_path: Path, url: str) -> None:
    with mqlite.open_embedded(f"file:{tmp_path / 'c.db'}", background=False) as mq:
        mq.create_queue("q")
        with pytest.raises(errors.InvalidArgument) as e:
            mq.create_push("q", url)
        assert "egress guard" in e.value.message
        assert mq.list_pushes() == []


def test_plain_http_needs_an_allow_listed_network(tmp_path: Path) -> None:
    """http:// to a public address is refused even though https:// to it would pass."""
    guard = Egress(parse_networks("127.0.0.0/8"))
    target = guard.check_url("http://93.184.215.14/h")
    with pytest.raises(errors.InvalidArgument, match="http://"):
        guard.check_plain_http(target, ["93.184.215.14"])
    guard.check_plain_http(guard.check_url("https://93.184.215.14/h"), ["93.184.215.14"])
    guard.check_plain_http(guard.check_url("http://127.0.0.1/h"), ["127.0.0.1"])


def test_allow_listing_opens_exactly_the_range() -> None:
    guard = Egress(parse_networks("127.0.0.0/8, 10.1.0.0/16"))
    import ipaddress

    ok = ["127.0.0.1", "10.1.2.3", "::ffff:127.0.0.1", "93.184.215.14"]
    for a in ok:
        assert guard.refusal(ipaddress.ip_address(a)) is None, a
    for a in ["10.2.0.1", "::1", "192.168.0.1", "169.254.169.254"]:
        assert guard.refusal(ipaddress.ip_address(a)) is not None, a
    with pytest.raises(errors.InvalidArgument, match="CIDR"):
        parse_networks("10.0.0.0/33")


def test_push_changes_write_audit_rows_without_the_secret(mq: mqlite.EmbeddedClient) -> None:
    """CreatePush and DeletePush are changes of state outside message operations: each
    writes its audit row in its own transaction (docs/operations.md "Audit trail"), with
    the url and the settings but never the secret; deleting nothing writes no row."""
    created = mq.create_push("q", URL, max_in_flight=2)
    assert mq.delete_push("q") is True
    assert mq.delete_push("q") is False
    rows = [(e.action, e.queue, e.actor) for e in mq.list_audit(queue="q")]
    assert rows[-2:] == [("CreatePush", "q", "embedded"), ("DeletePush", "q", "embedded")]
    create_row = next(e for e in mq.list_audit(queue="q") if e.action == "CreatePush")
    assert URL in create_row.detail and '"max_in_flight":2' in create_row.detail
    assert created.secret not in create_row.detail and "whsec_" not in create_row.detail
