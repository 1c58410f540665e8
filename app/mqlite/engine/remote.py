"""The remote store's connection: a libSQL server (Turso, or a self-hosted ``sqld``) over
its HTTP API (Hrana), through our own small client (``hrana.py``: stdlib ``http.client``
with socket timeouts, values typed exactly).

The engine is written against ``sqlite3.Connection``; ``RemoteConnection`` behaves like one
where the engine relies on it (``execute``/``executemany``, a cursor with ``fetchone``/
``fetchall``/``rowcount``/``lastrowid``, iteration, ``in_transaction``):

- **Parameters**: each statement rewritten once to numbered slots (``?1``), only the
  values it uses sent (``remote_wire.bind``), integers as exact decimal strings (64-bit,
  never REAL).
- **Streams**: a statement outside a transaction runs on a fresh stream closed in the same
  round trip (nothing idles on the server); a transaction keeps its stream (its baton)
  from its first request to its ``COMMIT``/``ROLLBACK``, which closes it.
  ``in_transaction`` is the server's own answer (``get_autocommit``, in the same round
  trip), so a statement that ended the transaction on the server (a failed COMMIT) is
  seen as such -- and True, too, while the transaction's BEGIN waits to be sent.
- **Pipelined** (``remote_pipeline.py``): ``BEGIN``, the engine's savepoints and the
  writes it queues with ``defer`` wait on the client and travel with the next statement
  whose answer is needed, all in one Hrana batch, at the latest with the ``COMMIT``:
  ``send_one`` is one round trip; ``execute_each`` sends many statements in one (the
  claim loop).
- **Errors** are raised as ``sqlite3`` exceptions so the engine's one translation
  (``storage_errors.py``) sees a driver error as it does locally: ``IntegrityError`` for a
  constraint, else ``OperationalError`` with the server's result code; a transport
  failure (refused, reset, timed out, a 5xx) is ``RemoteUnreachable`` (the request may or
  may not have been applied), and the stream and its transaction are gone.
- **A lost transaction** (the exchange of a statement inside one was cut, or the server
  no longer knows the stream: it restarted) is ``TransactionLost``, and from then on the
  connection refuses every statement, unsent, until the caller's ``rollback()`` (or a
  ``ROLLBACK``, or a ``BEGIN``): a later ``SAVEPOINT`` would otherwise open a new
  transaction on a fresh stream and its ``RELEASE`` commit part of the caller's work
  alone (issue 26).
- **Retries** (the remote store is the only one that retries: docs/architecture.md, "One
  writer"), bounded by
  ``defaults.REMOTE_RETRY_BACKOFF_S`` and the first attempt's timeout, and only where they
  cannot apply anything twice: any request that never reached the server whole (the
  connect or the write failed: ``TransportError.sent`` is False; a transaction's stream
  survives it), and, when the answer was lost or was a 5xx, a lone ``SELECT`` outside a
  transaction (a fresh stream: nothing to apply twice). Never a lost answer of a write,
  of a request inside or opening a transaction, or of a ``COMMIT`` -- whatever travels
  with it (the store makes that ``OutcomeUnknown``). ``retries`` counts the attempts, for
  the observation. Once a call spent its retries on refused connections, calls fail at
  once without retrying for ``defaults.REMOTE_FAIL_FAST_S`` (the server is down: callers
  in line on the writer would each wait the whole backoff).
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, TypeGuard

from mqlite import defaults
from mqlite.engine.hrana import (
    HranaClient,
    RequestRefused,
    Result,
    StatementError,
    Step,
    TransportError,
)
from mqlite.engine.remote_pipeline import (
    BEGIN,
    COMMIT,
    OTHER,
    RELEASE,
    ROLLBACK,
    ROLLBACK_TO,
    SAVEPOINT,
    Pending,
    Queued,
    classify,
)
from mqlite.engine.remote_wire import REFUSED_SCHEMES as REFUSED_SCHEMES
from mqlite.engine.remote_wire import REMOTE_SCHEMES as REMOTE_SCHEMES
from mqlite.engine.remote_wire import RemoteTarget as RemoteTarget
from mqlite.engine.remote_wire import bind as bind
from mqlite.engine.remote_wire import is_remote as is_remote
from mqlite.engine.remote_wire import parse_remote as parse_remote

# Primary result codes (sqlite.org/rescode.html) of the server's error names, so the
# engine classifies a remote failure as a local one (busy, full, io, corrupt, ...).
_RESULT_CODES = {
    "SQLITE_PERM": 3,
    "SQLITE_BUSY": 5,
    "SQLITE_LOCKED": 6,
    "SQLITE_READONLY": 8,
    "SQLITE_INTERRUPT": 9,
    "SQLITE_IOERR": 10,
    "SQLITE_CORRUPT": 11,
    "SQLITE_FULL": 13,
    "SQLITE_CANTOPEN": 14,
    "SQLITE_NOTADB": 26,
}

# A step that fails only when the statement before it changed no row: a documented
# error of the core (abs() of the smallest integer overflows), so the batch's next steps,
# each run only if the one before it succeeded, are skipped (``execute_each``).
GUARD_SQL = "SELECT abs(-9223372036854775807 - 1) WHERE changes() = 0"


class RemoteUnreachable(sqlite3.OperationalError):
    """The remote database could not be reached, or the exchange was cut (the request
    may or may not have been applied)."""

    sqlite_errorcode = 10  # SQLITE_IOERR: classified as an ``io`` storage failure


class TransactionLost(RemoteUnreachable):
    """The stream's transaction is gone (its exchange was cut, or the server restarted):
    nothing of it committed, and nothing more runs until ``rollback()``."""


class ResultTooLarge(sqlite3.OperationalError):
    """The server refused to send a statement's result over its response limit (sqld:
    ``--max-response-size``, 10 MiB by default): a read that may ask again for fewer rows
    (Peek does, ``peek.py``)."""


def _backoff(attempt: int) -> float | None:
    """The pause before retry number ``attempt + 1``, or None once they are spent."""
    pauses = defaults.REMOTE_RETRY_BACKOFF_S
    return pauses[attempt] if attempt < len(pauses) else None


def _translate(failure: StatementError) -> sqlite3.Error:
    """The server's statement error as the ``sqlite3`` exception a local file raises."""
    code = failure.code
    exc: sqlite3.Error
    if "Response is too large" in str(failure):
        exc = ResultTooLarge(f"the result is over the server's response limit: {failure}")
    elif code.startswith("SQLITE_CONSTRAINT"):
        exc = sqlite3.IntegrityError(str(failure).removeprefix("SQLite error: "))
    else:
        exc = sqlite3.OperationalError(str(failure).removeprefix("SQLite error: "))
    primary = next(
        (n for name, n in _RESULT_CODES.items() if code == name or code.startswith(name + "_")),
        None,
    )
    if primary is not None:
        exc.sqlite_errorcode = primary
        exc.sqlite_errorname = code
    return exc


class RemoteCursor:
    """The rows of one statement, fetched eagerly (the client buffers them anyway)."""

    __slots__ = ("_rows", "lastrowid", "rowcount")

    def __init__(self, rows: list[tuple[Any, ...]], rowcount: int, lastrowid: int | None) -> None:
        self._rows = rows
        self.rowcount = rowcount
        self.lastrowid = lastrowid

    def fetchone(self) -> tuple[Any, ...] | None:
        return self._rows.pop(0) if self._rows else None

    def fetchall(self) -> list[tuple[Any, ...]]:
        rows, self._rows = self._rows, []
        return rows

    def fetchmany(self, size: int = 1) -> list[tuple[Any, ...]]:
        rows, self._rows = self._rows[:size], self._rows[size:]
        return rows

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        return iter(self.fetchall())

    def close(self) -> None:
        self._rows = []


class RemoteConnection:
    """A ``sqlite3.Connection`` look-alike over one HTTP connection to the server, with
    its transactions pipelined (``remote_pipeline.py``)."""

    def __init__(
        self,
        target: RemoteTarget,
        auth_token: str,
        *,
        timeout_s: float | None = None,
        sleep: Callable[[float], None] = time.sleep,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.target = target
        self._sleep = sleep  # the retries' pause (a test substitutes its own)
        self._monotonic = monotonic
        self._fail_fast_until = 0.0  # no retries of unsent requests before this
        self.retries = 0  # safe retry attempts so far (measured_store reads the delta)
        self._auth_token = auth_token  # never logged, never in a message
        if timeout_s is None:
            timeout_s = defaults.REMOTE_TIMEOUT_S  # read at open: a test may shorten it
        self._timeout_s = timeout_s
        self._client = HranaClient(target.url, auth_token, timeout_s=timeout_s)
        self._pid = os.getpid()
        self.in_transaction = False  # also while its BEGIN waits, unsent
        self._lost = False  # a transaction was lost: refuse statements until rollback()
        self._pending = Pending()
        # Per queue, the messages its last receive claimed: the next one's first chunk
        # of claims (claim_pipelined.py).
        self.claim_hints: dict[str, int] = {}
        # Per queue, the largest chunk whose answer fits the server's response limit, once
        # one did not (large bodies): later receives ask for no more (claim_pipelined.py).
        self.claim_limits: dict[str, int] = {}

    def execute(self, sql: str, params: Sequence[Any] | Mapping[str, Any] = ()) -> RemoteCursor:
        kind, name = classify(sql)
        self._check(kind)
        if self._lost:  # a ROLLBACK of a lost transaction: nothing on the server to undo
            self._lost = False
            return RemoteCursor([], -1, None)
        if self._queued(kind, name, sql):
            return RemoteCursor([], -1, None)
        text, values = bind(sql, params)
        if not self._pending:  # nothing travels with it: one statement, as it always was
            read = kind == OTHER and sql.lstrip()[:6].upper() == "SELECT"
            outcome = self._send(
                kind,
                lambda keep: self._client.execute(text, values, keep_stream=keep),
                retry_lost=read and not self.in_transaction,
            )
            return _cursor(outcome)
        return _cursor(self._flush(kind, [(text, values, True)])[-1])

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> RemoteCursor:
        """Every row in one round trip (a Hrana batch whose steps run while they succeed)."""
        bound = [bind(sql, row) for row in rows]
        if not bound:
            return RemoteCursor([], 0, None)
        kind, _ = classify(sql)
        self._check(kind)
        if self.in_transaction:  # with whatever is queued, in the same request
            return _total(self._flush(kind, [(text, values, False) for text, values in bound]))
        text = bound[0][0]
        values = [v for _, v in bound]
        outcome = self._send(kind, lambda keep: self._client.batch(text, values, keep_stream=keep))
        return RemoteCursor([], outcome.affected, outcome.last_rowid)

    # -- the pipelined transaction (remote_pipeline.py) -------------------------------------

    def defer(
        self,
        sql: str,
        params: Sequence[Any] | Mapping[str, Any],
        then: Callable[[RemoteCursor], None] | None = None,
    ) -> None:
        """Queue a write whose answer is needed only once the transaction commits: it
        travels with the next request (at the latest the COMMIT), and ``then`` gets its
        cursor when that answers. Its error is raised by the statement that carries it
        (module doc). Outside a transaction it runs at once."""
        self._defer(sql, [bind(sql, params)], then, many=False)

    def defer_many(
        self,
        sql: str,
        rows: Iterable[Sequence[Any]],
        then: Callable[[RemoteCursor], None] | None = None,
    ) -> None:
        """``executemany``, queued as ``defer`` queues one statement (``then`` gets the
        summed row count and the last rowid)."""
        self._defer(sql, [bind(sql, row) for row in rows], then, many=True)

    def _defer(
        self,
        sql: str,
        bound: list[tuple[str, list[Any]]],
        then: Callable[[RemoteCursor], None] | None,
        *,
        many: bool,
    ) -> None:
        kind, _ = classify(sql)
        self._check(kind)
        if not self.in_transaction or kind != OTHER or not bound:
            cursor = (
                self.executemany(sql, [v for _, v in bound])
                if many
                else self.execute(bound[0][0], bound[0][1])
            )
            if then is not None:
                then(cursor)
            return
        wanted = then is not None  # (rows only come back for a statement that has any)
        steps: list[Step] = [(text, values, wanted) for text, values in bound]
        done = None
        if then is not None:
            done = (lambda out: then(_total(out))) if many else (lambda out: then(_cursor(out[0])))
        self._pending.add(Queued(OTHER, "", steps, done))

    def execute_each(
        self,
        statements: Sequence[tuple[str, Sequence[Any] | Mapping[str, Any]]],
        *,
        stop_unless_changed: bool = False,
    ) -> list[RemoteCursor | None]:
        """The statements, with what is queued, in ONE round trip, each only if the one
        before it succeeded; every statement's cursor, None for one not run (the claim
        loop: ``claim_pipelined.py``). The first error is raised.

        ``stop_unless_changed``: after each statement a guard ends the run quietly when it
        changed no row (``GUARD_SQL``), so a claim that found nothing is the last one the
        server runs (a miss can cost a scan: never 63 more of them)."""
        steps: list[Step] = []
        stops: set[int] = set()
        for sql, params in statements:
            steps.append((*bind(sql, params), True))
            if stop_unless_changed:
                stops.add(len(steps))
                steps.append((GUARD_SQL, [], False))
        if not steps:
            return []
        self._check(OTHER)
        results = self._flush(OTHER, steps, stops)
        return [None if r is None else _cursor(r) for i, r in enumerate(results) if i not in stops]

    def _queued(self, kind: int, name: str, sql: str) -> bool:
        """Queue (or drop) a control statement instead of sending it; True if it was."""
        pending = self._pending
        if kind == BEGIN and not self.in_transaction:
            pending.add(Queued(BEGIN, "", [(sql, [], False)]))
            self.in_transaction = True
            return True
        if not self.in_transaction or kind == OTHER:
            return False
        if kind == SAVEPOINT:
            if pending.has_data():
                return False  # a queued write's error must fail the block that wrote it
            pending.add(Queued(SAVEPOINT, name, [(sql, [], False)]))
            return True
        if kind == RELEASE:
            if pending.cancel_savepoint(name):
                return True
            if pending.has_data():
                return False  # sent now: this block's writes fail this block
            pending.add(Queued(RELEASE, name, [(sql, [], False)]))
            return True
        if kind == ROLLBACK_TO:
            if not pending.rewind_to(name):
                pending.clear()  # all of it came after the (sent) savepoint: undone unsent
                pending.add(Queued(ROLLBACK_TO, name, [(sql, [], False)]))
            return True
        if kind == ROLLBACK or (kind == COMMIT and not pending.has_data()):
            if pending.began_here():  # the server never saw this transaction
                pending.clear()
                self.in_transaction = False
                return True
            if kind == ROLLBACK:
                pending.clear()  # undone unsent; the ROLLBACK itself goes
        return False

    def _flush(
        self, kind: int, steps: list[Step], stops: set[int] | None = None
    ) -> list[Result | None]:
        """Send what is queued and ``steps`` in ONE request; hand the queued statements
        their answers; return the outcomes of ``steps`` (the first error raised, but for
        a guard's, at one of ``stops``: that ends the run quietly)."""
        items = self._pending.take()
        queued: list[Step] = [step for item in items for step in item.steps]
        outcomes: list[Result | StatementError | None] = self._send(
            kind, lambda keep: self._client.steps(queued + steps, keep_stream=keep)
        )
        first = len(queued)
        for i, outcome in enumerate(outcomes):
            if isinstance(outcome, StatementError):
                if stops and i - first in stops and "integer overflow" in str(outcome):
                    outcomes[i] = None
                    break
                raise _translate(outcome) from None
        at = 0
        for item in items:
            n = len(item.steps)
            if item.then is not None:
                item.then(outcomes[at : at + n])
            at += n
        return [None if isinstance(r, StatementError) else r for r in outcomes[at:]]

    def _check(self, kind: int) -> None:
        """A forked child never reuses the parent's exchange; a lost transaction refuses
        every statement until it is rolled back (module doc)."""
        if self._pid != os.getpid():
            self._client = HranaClient(self.target.url, self._auth_token, timeout_s=self._timeout_s)
            self._pid, self.in_transaction = os.getpid(), False
            self._pending.clear()
        if self._lost and kind != ROLLBACK:  # (a ROLLBACK forgets it: ``execute``)
            if kind != BEGIN:
                raise TransactionLost(
                    f"remote database {self.target.masked}: the transaction was lost with "
                    "its stream; nothing of it committed"
                )
            self._lost = False

    def _send(
        self, kind: int, call: Callable[[bool], tuple[Any, bool]], *, retry_lost: bool = False
    ) -> Any:
        """Run ``call`` on the right stream (module doc) and map its failures. A lost
        answer is retried only where running it twice changes nothing (``retry_lost``: a
        lone ``SELECT`` outside a transaction, on a fresh stream); a request that never
        reached the server whole, whatever it carries."""
        ends = kind in (COMMIT, ROLLBACK)
        keep = kind in (BEGIN, SAVEPOINT) or (self.in_transaction and not ends)
        idempotent = retry_lost
        deadline = self._monotonic() + self._timeout_s
        attempt = 0
        while True:
            try:
                outcome, autocommit = call(keep)
                self._fail_fast_until = 0.0
                break
            except TransportError as exc:
                now = self._monotonic()
                pause = None if now < self._fail_fast_until else _backoff(attempt)
                safe = idempotent or not exc.sent
                if not safe or pause is None or now + pause > deadline:
                    if not exc.sent and attempt:  # the retries met a server that is down
                        self._fail_fast_until = now + defaults.REMOTE_FAIL_FAST_S
                    lost, self._lost = self.in_transaction, self.in_transaction
                    self.in_transaction = False
                    self._client.drop()  # a stream whose fate is unknown is never reused
                    unreachable = TransactionLost if lost and not ends else RemoteUnreachable
                    raise unreachable(f"remote database {self.target.masked}: {exc}") from None
                attempt += 1
                self.retries += 1
                self._sleep(pause)
            except RequestRefused as exc:
                # The stream is a baton the server no longer knows: its transaction is gone.
                lost, self._lost = self.in_transaction, self.in_transaction
                self.in_transaction = False
                message = f"remote database {self.target.masked}: {exc}"
                refused: sqlite3.OperationalError
                if exc.status in (401, 403):
                    refused = sqlite3.OperationalError(message)
                    refused.sqlite_errorcode = 3  # SQLITE_PERM: an "io" storage failure
                elif lost:
                    refused = TransactionLost(f"{message}; the transaction is gone")
                else:
                    refused = sqlite3.OperationalError(message)
                raise refused from None
        self.in_transaction = not autocommit
        if isinstance(outcome, StatementError):
            raise _translate(outcome) from None
        return outcome

    def commit(self) -> None:
        """Nothing is pending: outside ``BEGIN`` every statement commits on its own (what a
        ``sqlite3`` caller's ``commit()`` expects after its writes)."""

    def rollback(self) -> None:
        """End the transaction: ``ROLLBACK`` on its stream (none when nothing of it was
        sent), or, when it was lost, forget it (the server has nothing to roll back), as
        ``sqlite3``'s does with none open."""
        if self.in_transaction:
            self.execute("ROLLBACK")
        self._lost = False
        self._pending.clear()

    def reset(self) -> None:
        """Drop the HTTP connection and the stream (any transaction on it is gone)."""
        self._pending.clear()
        self._client.close_stream()
        self._client.drop()
        self.in_transaction = self._lost = False

    def close(self) -> None:
        self.reset()


def pipelined(conn: object) -> TypeGuard[RemoteConnection]:
    """A remote store's connection: its transactions are pipelined (a local file runs the
    engine's statements one by one, each answered in microseconds)."""
    return isinstance(conn, RemoteConnection)


def _cursor(outcome: Result | None) -> RemoteCursor:
    if outcome is None:
        return RemoteCursor([], -1, None)
    rowcount = -1 if outcome.columns else outcome.affected
    return RemoteCursor(outcome.rows, rowcount, outcome.last_rowid)


def _total(outcomes: Sequence[Result | None]) -> RemoteCursor:
    """An ``executemany``'s cursor: the summed row count and the last rowid."""
    done = [r for r in outcomes if r is not None]
    return RemoteCursor([], sum(r.affected for r in done), done[-1].last_rowid if done else None)
