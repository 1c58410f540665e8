"""``receive`` safety: never auto-ack output nobody saw; leases stay alive while printing."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import subprocess

from cli_support import Cli, mqlite_cmd

from waiting import poll_real_process


def _state(cli: Cli, queue: str) -> tuple[int, int, int]:
    """(active, locked, total) and, for redelivery, what the SDK sees now."""
    with cli.sdk() as c:
        s = c.stats(queue)
    return s.active, s.locked, s.total


def _lease_until(cli: Cli, queue: str) -> int:
    """The stored deadline of the queue's locked message (0: none), read from the file
    while the CLI (or the broker) holds it: a read-only connection beside the process."""
    uri = f"file:{cli.db_path}?mode=ro"
    with contextlib.closing(sqlite3.connect(uri, uri=True, timeout=5)) as db:
        row = db.execute(
            "SELECT locked_until FROM messages WHERE queue = ? AND state = 'locked'", (queue,)
        ).fetchone()
    return int(row[0]) if row else 0


def test_receive_into_closed_pipe_does_not_complete(cli: Cli, queue: str) -> None:
    cli.setup_queue(queue, b"precious")
    r_fd, w_fd = os.pipe()
    os.close(r_fd)  # the reader is gone before anything is written
    try:
        r = cli.run("receive", queue, stdout=w_fd)
    finally:
        os.close(w_fd)
    assert r.returncode == 1
    err = r.stderr.decode()
    assert err.startswith("error: writing output failed") and "will redeliver" in err
    assert len(err.splitlines()) == 1
    with cli.sdk() as c:
        (m,) = c.peek(queue)
        s = c.stats(queue)
    assert m.body == b"precious" and m.delivery_count == 1  # claimed once, never completed
    if cli.mode == "client":
        assert (s.locked, s.total) == (1, 1)  # the broker still holds the unsettled lease
    else:
        assert (s.active, s.total) == (1, 1)  # reopening reclaimed the orphaned lock


def test_receive_to_dev_null_refused_before_claiming(cli: Cli, queue: str) -> None:
    cli.setup_queue(queue, b"keep me")
    r = cli.run("receive", queue, stdout=subprocess.DEVNULL)
    assert r.returncode == 1 and b"/dev/null" in r.stderr
    with cli.sdk() as c:
        (m,) = c.peek(queue)
    assert m.state == "active" and m.delivery_count == 0  # nothing was claimed


def test_receive_with_stdout_closed_at_exec_refused(embedded_cli: Cli, queue: str) -> None:
    embedded_cli.setup_queue(queue, b"keep me")
    r = subprocess.run(
        mqlite_cmd("receive", queue),
        env=embedded_cli.env,
        stdout=None,
        stderr=subprocess.PIPE,
        preexec_fn=lambda: os.close(1),
        timeout=30,
    )
    assert r.returncode == 1 and b"refusing" in r.stderr
    with embedded_cli.sdk() as c:
        (m,) = c.peek(queue)
    assert m.state == "active" and m.delivery_count == 0


def test_delete_may_drain_into_dev_null(embedded_cli: Cli, queue: str) -> None:
    embedded_cli.setup_queue(queue, b"drain me")
    r = embedded_cli.run("receive", queue, "--delete", stdout=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr
    assert _state(embedded_cli, queue)[2] == 0


def test_no_ack_token_is_accepted_by_a_later_complete(client_cli: Cli, queue: str) -> None:
    client_cli.setup_queue(queue, b"settle me later")
    head = client_cli.ok("receive", queue, "--no-ack").splitlines()[0]
    fields = dict(kv.split("=", 1) for kv in head.split())
    assert fields["lock-token"]
    assert _state(client_cli, queue) == (0, 1, 1)
    out = client_cli.ok("complete", queue, fields["seq"], fields["lock-token"])
    assert out == f"completed {queue} seq={fields['seq']}\n"
    assert _state(client_cli, queue)[2] == 0


def test_renewer_keeps_the_lease_alive_while_output_is_slow(cli: Cli, queue: str) -> None:
    """A 1 s lease, a reader that stalls until the CLI has renewed the lease after its first
    deadline passed: auto-ack still completes."""
    body = b"z" * (256 * 1024)  # larger than a pipe buffer: the write blocks on the reader
    cli.setup_queue(queue, body, lock_duration_ms=1000)
    proc = subprocess.Popen(
        mqlite_cmd("receive", queue),
        env=cli.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    first: list[int] = []

    def renewed_past_the_first_lease() -> bool:
        """The stored lease ends more than a lease length after the first deadline seen:
        it was renewed after that first lease would have lapsed."""
        if proc.poll() is not None:
            raise AssertionError(f"receive exited while its reader stalled: {proc.returncode}")
        until = _lease_until(cli, queue)
        if until and not first:
            first.append(until)
        return bool(first) and until > first[0] + 1000

    try:
        poll_real_process("the CLI to renew its lease", renewed_past_the_first_lease, deadline_s=10)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert out.split(b"\n", 1)[1] == body + b"\n"
    assert _state(cli, queue)[2] == 0
