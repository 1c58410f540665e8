"""What every command handler receives: parsed flags, the output, and a lazily opened client.

The client is ``mqlite.open_embedded`` (no background loops: one catch-up maintenance pass
on open) or ``mqlite.connect`` (client mode); both expose the same methods, return types
and exceptions, so handlers are written once.
"""

from __future__ import annotations

import argparse
import os
import sys

import mqlite
from mqlite import defaults
from mqlite.cli.endpoint import EndpointError, Target, resolve
from mqlite.cli.output import Output
from mqlite.config import process_environ, remote_db_token


class UsageError(Exception):
    """A command-line mistake: exit 2."""


class Failure(Exception):
    """A runtime failure outside mqlite's error vocabulary: exit 1."""


Client = mqlite.Client  # the shared SDK method set (embedded or HTTP)

MAX_TOKEN_FILE_BYTES = 4096


def read_token_file(path: str, *, stdin_taken: bool = False) -> str:
    """The token in ``path`` (``-`` = stdin): its first line, stripped; refused if empty.
    Keeps the credential out of argv (``ps`` shows every process's arguments)."""
    if path == "-":
        if stdin_taken:
            raise UsageError("--token-file - and a body from stdin cannot share stdin")
        data = sys.stdin.buffer.read(MAX_TOKEN_FILE_BYTES + 1)
        source = "stdin"
    else:
        try:
            with open(path, "rb") as fh:
                data = fh.read(MAX_TOKEN_FILE_BYTES + 1)
        except OSError as exc:
            raise Failure(f"--token-file {path}: {exc.strerror or exc}") from None
        source = path
    if len(data) > MAX_TOKEN_FILE_BYTES:
        raise Failure(f"--token-file {source}: more than {MAX_TOKEN_FILE_BYTES} bytes")
    lines = data.decode("utf-8", "replace").strip().splitlines()
    token = lines[0].strip() if lines else ""
    if not token:
        raise Failure(f"--token-file {source}: no token in it")
    return token


class Context:
    def __init__(self, args: argparse.Namespace, stdout_undeliverable: bool = False) -> None:
        self.args = args
        self.out = Output(getattr(args, "output", None) or "text")
        self.stdout_undeliverable = stdout_undeliverable
        self._client: Client | None = None
        self._embedded: mqlite.EmbeddedClient | None = None
        self._target: Target | None = None

    @property
    def target(self) -> Target:
        if self._target is None:
            try:
                self._target = resolve(
                    process_environ(), getattr(self.args, "endpoint", None), self._token_flag()
                )
            except EndpointError as exc:
                raise (UsageError if exc.flag else Failure)(str(exc)) from None
            if self._target.warning:
                self.out.warn(self._target.warning)
            if self._target.dsn_defaulted:
                self.out.note(default_db_note(self._target.dsn))
        return self._target

    def _token_flag(self) -> str | None:
        """``--token``, or the token ``--token-file`` names (an explicit credential)."""
        path = getattr(self.args, "token_file", None)
        if path is None:
            token: str | None = getattr(self.args, "token", None)
            return token
        stdin = "-" in (getattr(self.args, "body", None), getattr(self.args, "file", None))
        return read_token_file(path, stdin_taken=stdin)

    @property
    def client(self) -> Client:
        if self._client is None:
            target = self.target
            if target.endpoint is not None:
                self._client = mqlite.connect(target.endpoint, token=target.token)
            else:
                self._client = self.embedded
        return self._client

    @property
    def embedded(self) -> mqlite.EmbeddedClient:
        """The local database itself (refused while another process owns it)."""
        if self._embedded is None:
            if getattr(self.args, "read_only", False):
                self._refuse_a_missing_database()
            client = mqlite.open_embedded(
                self.target.dsn,
                background=False,
                catch_up=True,
                # a remote libSQL DSN's token: environment or secret file, never argv
                auth_token=remote_db_token(process_environ()),
            )
            self._embedded = self._client = client
        return self._embedded

    def _refuse_a_missing_database(self) -> None:
        """A read-only command (observe, peek, list, ...) never creates a database: a
        missing file is almost always a broker the user meant to reach instead."""
        from mqlite.sdk.embedded import database_path

        try:
            path = database_path(self.target.dsn)
        except mqlite.errors.MQLiteError:
            return  # a remote libSQL DSN: nothing local to create
        if path is not None and not os.path.exists(path):
            raise Failure(
                f"no database at {path} ({self.args.command} reads an existing database and "
                "never creates one); to reach a running broker pass --endpoint "
                f"http://127.0.0.1:{defaults.PORT} or set MQLITE_ENDPOINT, with MQLITE_TOKEN "
                "set to its token; to read another file set MQLITE_DB=file:PATH"
            )

    def close(self) -> None:
        client, self._client, self._embedded = self._client, None, None
        if client is not None:
            client.close()


def default_db_note(dsn: str) -> str:
    """Said on stderr when nothing chose a mode: a new user may think a broker is in use."""
    path = os.path.abspath(dsn.removeprefix("file:"))
    return (
        f"note: using the local database file {path} (MQLITE_DB and MQLITE_ENDPOINT are "
        f"unset); to use a broker, set MQLITE_ENDPOINT=http://127.0.0.1:{defaults.PORT} "
        "or pass --endpoint; to choose the file, set MQLITE_DB=file:PATH"
    )


def unreachable(endpoint: str, exc: mqlite.ConnectionFailed) -> str:
    """A connection failure for people: the URL, the OS's reason, and what to do."""
    reason, cause = "", exc.__cause__
    while cause is not None and not reason:
        if isinstance(cause, OSError):
            reason = cause.strerror or str(cause)
        cause = cause.__cause__ or cause.__context__
    reason = f" ({reason})" if reason else ""
    if "may or may not have been applied" in exc.message:
        return (
            f"the connection to the broker at {endpoint} was lost before it answered{reason}; "
            "the request may or may not have been applied"
        )
    return (
        f"cannot connect to the broker at {endpoint}{reason}: is one running there? "
        "Start one with `mqlite serve`, or check MQLITE_ENDPOINT / --endpoint"
    )
