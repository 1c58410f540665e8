"""Everything the CLI prints: JSON in the wire's shapes, human tables, a progress bar.

stdout carries results; stderr carries warnings, errors and the progress bar (drawn only
when stderr is a terminal). ``stdout_undeliverable`` is probed once at startup, before any
file is opened, so a closed fd 1 can never be reused by the database.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Sequence, Sized
from datetime import UTC, datetime
from typing import Any, BinaryIO

from mqlite.clock import SYSTEM_CLOCK
from mqlite.types import Message
from mqlite.wire import PeekedMessage, ReceivedMessage, Route, encode_response, json_object


def dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def ms_text(ms: int) -> str:
    """A duration for humans: 30s, 10m, 1h30m, 250ms; 0 as 0."""
    if ms <= 0:
        return "0"
    if ms % 1000:
        return f"{ms}ms"
    out, rest = "", ms // 1000
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if rest >= size:
            out += f"{rest // size}{unit}"
            rest %= size
    return out


def size_text(n_bytes: int) -> str:
    """A size for humans, in binary units: ``812 B``, ``180.1 KiB``, ``3.4 GiB``."""
    if n_bytes < 1024:
        return f"{n_bytes} B"
    size, unit = n_bytes / 1024, "KiB"
    for bigger in ("MiB", "GiB", "TiB"):
        if size < 1024:
            break
        size, unit = size / 1024, bigger
    return f"{size:.1f} {unit}"


def uptime_text(ms: int) -> str:
    """Whole seconds as ``2d3h4m5s`` (a broker's uptime never needs milliseconds)."""
    return ms_text(ms - ms % 1000) if ms >= 1000 else "0s"


def when_text(epoch_ms: int) -> str:
    if epoch_ms <= 0:
        return "-"
    stamp = datetime.fromtimestamp(epoch_ms / 1000, tz=UTC)
    return stamp.strftime("%Y-%m-%dT%H:%M:%S.") + f"{epoch_ms % 1000:03d}Z"


def body_preview(body: bytes, width: int = 40) -> str:
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return f"<{len(body)} bytes binary>"
    text = text.replace("\n", "\\n").replace("\t", "\\t")
    return text if len(text) <= width else text[: width - 1] + "…"


class Output:
    """``--output text|json``: one object per command, written to stdout."""

    def __init__(self, fmt: str = "text") -> None:
        self.json = fmt == "json"

    @property
    def stream(self) -> BinaryIO:
        return sys.stdout.buffer

    def line(self, text: str = "") -> None:
        sys.stdout.write(text + "\n")

    def obj(self, value: Any) -> None:
        sys.stdout.write(dumps(value) + "\n")

    def wire(self, route: Route[Any, Any], response: Any) -> None:
        """A response object exactly as the HTTP API encodes it."""
        sys.stdout.flush()
        self.stream.write(encode_response(route, response))

    def answer(self, route: Route[Any, Any], response: Any, text: str) -> None:
        """A verb's one answer: ``response`` as the HTTP API encodes it with ``--output
        json`` (what a script parses), else the sentence ``text`` (what a person reads)."""
        if self.json:
            self.wire(route, response)
        else:
            self.line(text)

    def listing(
        self,
        route: Route[Any, Any],
        response: Any,
        items: Sized,
        empty: str,
        headers: Sequence[str],
        rows: Iterable[Sequence[object]],
    ) -> None:
        """A List verb's answer: ``response`` with ``--output json``; else a table of
        ``rows`` (drawn lazily: a generator is never run for JSON), or the line ``empty``
        when there are no ``items``, never an empty table a person could misread."""
        if self.json:
            self.wire(route, response)
        elif not items:
            self.line(empty)
        else:
            self.table(headers, rows)

    def table(self, headers: Sequence[str], rows: Iterable[Sequence[object]]) -> None:
        cells = [list(headers), *([str(c) for c in r] for r in rows)]
        widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
        for row in cells:
            self.line("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())

    @staticmethod
    def warn(text: str) -> None:
        sys.stderr.write(f"warning: {text}\n")
        sys.stderr.flush()

    @staticmethod
    def note(text: str) -> None:
        sys.stderr.write(text + "\n")


def received_json(msg: Message, *, with_token: bool) -> dict[str, Any]:
    """The wire's received message; an auto-acked one omits the (spent) lock token."""
    out = json_object(ReceivedMessage.of(msg))
    if not with_token:
        out.pop("lock_token", None)
    return out


def peeked_json(msg: Message) -> dict[str, Any]:
    return json_object(PeekedMessage.of(msg))


def message_text(msg: Message, *, with_token: bool) -> bytes:
    """A header line of ``key=value`` pairs, then the raw body and a newline."""
    pairs = [f"seq={msg.seq_number}", f"delivery={msg.delivery_count}"]
    for key, value in (
        ("message-id", msg.message_id),
        ("group", msg.group_id),
        ("subject", msg.subject),
        ("correlation-id", msg.correlation_id),
        ("reply-to", msg.reply_to),
        ("content-type", msg.content_type),
    ):
        if value:
            pairs.append(f"{key}={value}")
    pairs += [f"prop.{k}={v}" for k, v in sorted(msg.properties.items())]
    if with_token and msg.lock_token:
        pairs.append(f"lock-token={msg.lock_token}")
        pairs.append(f"locked-until={when_text(msg.locked_until_ms)}")
    body = msg.body if msg.body.endswith(b"\n") or not msg.body else msg.body + b"\n"
    return (" ".join(pairs) + "\n").encode("utf-8") + body


class Progress:
    """A hand-drawn bar on stderr, only when stderr is a terminal (else silent)."""

    def __init__(self, label: str, total: int, unit: str = "") -> None:
        self.label, self.total, self.unit = label, max(total, 0), unit
        self.enabled = sys.stderr.isatty()
        self.done = 0
        self._last = 0.0

    def advance(self, n: int) -> None:
        self.update(self.done + n)

    def update(self, done: int, *, force: bool = False) -> None:
        self.done = done
        if not self.enabled:
            return
        now = SYSTEM_CLOCK.monotonic_ms()
        if not force and now - self._last < 100:
            return
        self._last = now
        if self.total > 0:
            frac = min(done / self.total, 1.0)
            bar = "#" * int(frac * 30)
            text = f"{self.label} [{bar:<30}] {done}/{self.total}{self.unit} {frac:4.0%}"
        else:
            text = f"{self.label} {done}{self.unit}"
        sys.stderr.write("\r" + text)
        sys.stderr.flush()

    def finish(self) -> None:
        if self.enabled:
            self.update(self.done, force=True)
            sys.stderr.write("\n")
            sys.stderr.flush()
