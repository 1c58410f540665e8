"""Endpoint URL parsing (the CLI's spellings) and token resolution."""

from __future__ import annotations

import pytest

from mqlite import errors
from mqlite.sdk.endpoint import Endpoint, parse_endpoint, resolve_token


@pytest.mark.parametrize(
    ("url", "origin", "token"),
    [
        ("http://127.0.0.1:6754", "http://127.0.0.1:6754", None),
        ("http://h", "http://h:80", None),
        ("https://mq.example.com", "https://mq.example.com:443", None),
        ("https://mq.example.com/", "https://mq.example.com:443", None),
        ("https://mq.example.com/prefix/", "https://mq.example.com:443/prefix", None),
        ("HTTP://Host:1", "http://host:1", None),
        ("mqlite://h", "http://h:6754", None),
        ("mqlite://s3cr3t@h", "http://h:6754", "s3cr3t"),
        ("mqlite://s3cr3t@h:7000", "http://h:7000", "s3cr3t"),
        ("mqlite://mqk_a%2Fb@h", "http://h:6754", "mqk_a/b"),
        ("mqlites://s3cr3t@mq.example.com", "https://mq.example.com:443", "s3cr3t"),
        ("mqlites://h:8443", "https://h:8443", None),
        ("http://[::1]:6754", "http://[::1]:6754", None),
        ("mqlite://[::1]", "http://[::1]:6754", None),
    ],
)
def test_accepted_spellings(url: str, origin: str, token: str | None) -> None:
    ep = parse_endpoint(url)
    assert (ep.origin, ep.token) == (origin, token)
    assert token is None or token not in repr(ep)


def test_same_broker_two_spellings() -> None:
    assert parse_endpoint("mqlite://h").origin == parse_endpoint("http://h:6754/").origin


def test_host_header_omits_default_port() -> None:
    assert parse_endpoint("https://h").host_header == "h"
    assert parse_endpoint("mqlite://h").host_header == "h:6754"
    assert parse_endpoint("http://[::1]:81").host_header == "[::1]:81"


@pytest.mark.parametrize(
    "url",
    [
        "",
        "   ",
        "ftp://h",
        "h:6754",
        "http://",
        "http://h:notaport",
        "http://h:70000",
        "http://user@h",
        "https://u:p@h",
        "mqlite://tok:pw@h",
        "http://h/?x=1",
        "http://h/#frag",
    ],
)
def test_refused_spellings(url: str) -> None:
    with pytest.raises(errors.InvalidArgument):
        parse_endpoint(url)


def test_token_resolution() -> None:
    with_token = Endpoint("http", "h", 1, token="a")
    plain = Endpoint("http", "h", 1)
    assert resolve_token(plain, None) is None
    assert resolve_token(plain, "") is None
    assert resolve_token(plain, "b") == "b"
    assert resolve_token(with_token, None) == "a"
    assert resolve_token(with_token, "a") == "a"
    assert resolve_token(with_token, "") is None  # explicitly no credential
    with pytest.raises(errors.InvalidArgument):
        resolve_token(with_token, "b")
    with pytest.raises(errors.InvalidArgument):
        resolve_token(plain, "bad\r\nX-Injected: 1")
