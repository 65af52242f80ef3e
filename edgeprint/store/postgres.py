"""PostgreSQL engine (psycopg 3): one writer connection with group commit, a pool of readers.

The same design as the SQLite engine (:mod:`edgeprint.store.db`), so both
give the query modules the same answers: every write is queued to a single
writer task that runs whatever is queued inside one transaction and only
then answers each caller. Writes are therefore serialised exactly as on
SQLite (a conditional UPDATE never races another write of this appliance),
and one commit (one WAL flush) covers a whole batch. In a batch of several
callers each caller's statements run inside a SAVEPOINT, so a statement that
fails (a CHECK, a trigger's refusal) undoes only its caller's unit, as
SQLite's statement atomicity does; an error that ends the transaction or the
connection (disk full, the server gone) fails the whole batch.

The query modules write ``?`` placeholders; :func:`edgeprint.store.pg_statements.translate`
turns them into psycopg's ``%s`` once per statement text (cached). psycopg binds the
parameters on the server and prepares a statement text used often. Connecting, locking,
migrating and listening are :mod:`edgeprint.store.pg_connection`'s.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Awaitable, Callable
from typing import Final

import psycopg
from psycopg import errors as pg_errors

from edgeprint import errors
from edgeprint.logs import log_event
from edgeprint.store import batching, pg_connection, pg_statements
from edgeprint.store.batching import Read, Unit
from edgeprint.store.interface import Params, Rows
from edgeprint.store.pg_connection import Notice, PgRow

log = logging.getLogger(__name__)

#: How often a group commit the server rolled back (a deadlock with another appliance's
#: transaction, a serialisation failure) is run again before its callers get the error.
_ROLLBACK_RETRIES: Final = 3


class PostgresStore:
    """The PostgreSQL database at ``url`` (``postgresql://user:pass@host:port/db``).

    ``max_batch`` caps the callers per group commit; ``readers`` is the size
    of reader connections. Implements :class:`edgeprint.store.interface.Store`.
    """

    dialect: Final = "postgresql"

    def __init__(
        self,
        url: str,
        *,
        max_batch: int = 512,
        readers: int = 4,
        connect_timeout_s: float = 10.0,
        query_timeout_s: float = 5.0,
        exclusive: bool = True,
        appliance_id: str | None = None,
        on_commit: Callable[[int], object] | None = None,
    ) -> None:
        self.url = url
        self._exclusive = exclusive
        #: A shared appliance's ``[cluster] appliance_id``: no other may use it at once.
        self._appliance_id = appliance_id
        self._on_commit = on_commit
        self._max_batch = max_batch
        self._readers = readers
        self._connect_timeout_s = connect_timeout_s
        self._query_timeout_s = query_timeout_s
        #: Group commits whose outcome is unknown (the connection was lost or timed out
        #: after the COMMIT may have reached the server).
        self.in_doubt = 0
        self._writer: psycopg.AsyncConnection[PgRow] | None = None
        self._reader_conns: list[psycopg.AsyncConnection[PgRow]] = []
        self._read_queue: asyncio.Queue[Read | None] = asyncio.Queue()
        self._read_tasks: list[asyncio.Task[None]] = []
        self._queue: asyncio.Queue[Unit | None] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self.batches = 0
        self.writes = 0
        self._listener: asyncio.Task[None] | None = None
        self._writer_backoff = pg_connection.ReconnectGate()
        self._reader_backoff = pg_connection.ReconnectGate()
        self.reconnects = 0
        #: Bumped when the listener loses the server: every connection made before is suspect
        #: (the server may have restarted; a connection learns it only when it is used).
        self._lost = 0
        self._born: dict[int, int] = {}

    # --- lifecycle -----------------------------------------------------------

    async def open(self) -> None:
        """Connect, apply pending migrations, start the writer task.

        Raises errors.StoreUnavailable when the database cannot be reached or migrated.
        """
        try:
            self._writer = await self._connect("writer")
            await pg_connection.migrate(self._writer)
            await self._take_writer_lock(self._writer)
            for _ in range(self._readers):
                self._reader_conns.append(await self._connect("reader"))
        except errors.StoreUnavailable:
            await self.close()
            raise
        except (psycopg.Error, OSError) as exc:
            await self.close()
            raise errors.StoreUnavailable(
                f"cannot open store {pg_connection.redact(self.url)}: {exc}"
            ) from exc
        self._born = {id(c): self._lost for c in (self._writer, *self._reader_conns)}
        self._task = asyncio.create_task(self._run_writer(), name="store:writer")
        self._read_tasks = [
            asyncio.create_task(self._run_reader(i), name=f"store:reader-{i}")
            for i in range(len(self._reader_conns))
        ]

    async def close(self) -> None:
        """Finish queued writes, stop the writer task and close every connection."""
        if self._listener is not None:
            self._listener.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._listener
            self._listener = None
        if self._task is not None:
            self._queue.put_nowait(None)
            await self._task
            self._task = None
        if self._read_tasks:
            for _ in self._read_tasks:
                self._read_queue.put_nowait(None)
            await asyncio.gather(*self._read_tasks)
            self._read_tasks = []
        for conn in self._reader_conns:
            with contextlib.suppress(psycopg.Error):
                await conn.close()
        self._reader_conns = []
        if self._writer is not None:
            with contextlib.suppress(psycopg.Error):
                # the appliance and appliance-id locks go now, not when the server notices
                # the connection gone (a restart, or the next appliance, would race that)
                await self._writer.execute("SELECT pg_advisory_unlock_all()")
                await self._writer.close()
            self._writer = None

    async def _connect(
        self, role: str, timeout_s: float | None = None
    ) -> psycopg.AsyncConnection[PgRow]:
        return await pg_connection.connect(self.url, role, timeout_s or self._connect_timeout_s)

    async def _reconnect(
        self,
        conn: psycopg.AsyncConnection[PgRow] | None,
        role: str,
        backoff: pg_connection.ReconnectGate,
    ) -> psycopg.AsyncConnection[PgRow]:
        """``conn`` if it is usable, else a new connection (the writer retakes its lock).

        Raises errors.StoreUnavailable at once while the back-off after a failed attempt
        runs, and when this attempt fails (the back-off then doubles, up to 5 s).
        """
        if (
            conn is not None
            and not conn.broken
            and not conn.closed
            and self._born.get(id(conn)) == self._lost
        ):
            return conn
        # no URL: this reaches /readyz, which anyone on the network may read
        unreachable = "the database is unreachable; reconnecting"
        if not backoff.ready():
            raise errors.StoreReconnecting(unreachable)
        if conn is not None:
            self._born.pop(id(conn), None)
            with contextlib.suppress(psycopg.Error):
                await conn.close()
        fresh: psycopg.AsyncConnection[PgRow] | None = None
        try:
            fresh = await self._connect(role, pg_connection.RECONNECT_TIMEOUT_S)
            if role == "writer":
                await self._take_writer_lock(fresh)
        except (psycopg.Error, OSError, errors.StoreUnavailable) as exc:
            backoff.failed()
            if fresh is not None:
                with contextlib.suppress(psycopg.Error):
                    await fresh.close()
            raise errors.StoreReconnecting(f"{unreachable} ({exc})") from exc
        backoff.succeeded()
        self._born[id(fresh)] = self._lost
        self.reconnects += 1
        log_event(log, "store_reconnected", level=logging.WARNING, role=role)
        return fresh

    def listen(self, on_notice: Callable[[Notice], Awaitable[None]]) -> None:
        """Hand every change notified by other appliances to ``on_notice`` until :meth:`close`.

        A dedicated connection LISTENs on the store's channel (the triggers of
        :mod:`edgeprint.store.schema.postgres` migration 2 NOTIFY in the changing transaction). This
        appliance's own notifications are skipped (it woke its workers itself).
        On (re)connecting, ``on_notice`` gets a ``Notice("all")``: anything may
        have changed while no one listened. A lost connection is retried with
        back-off.
        """
        listening = pg_connection.listen(
            functools.partial(self._connect, "listener"),
            on_notice,
            self._writer_pid,
            self._listening,
            self._listener_lost,
        )
        self._listener = asyncio.create_task(listening, name="store:listener")

    def _writer_pid(self) -> int | None:
        """The writer connection's backend (its notices are this appliance's own)."""
        writer = self._writer
        return None if writer is None or writer.closed else writer.info.backend_pid

    def _listening(self) -> None:
        # the server answers again: the writer and readers try at their next use
        # (the "all" the listener hands on next wakes workers that will write at once)
        self._writer_backoff.succeeded()
        self._reader_backoff.succeeded()

    def _listener_lost(self) -> None:
        self._lost += 1

    async def _take_writer_lock(self, conn: psycopg.AsyncConnection[PgRow]) -> None:
        await pg_connection.take_writer_lock(conn, self.url, self._exclusive, self._appliance_id)

    # --- reads and writes ----------------------------------------------------

    async def read(self, sql: str, params: Params = ()) -> Rows:
        """Run one read-only statement on a reader connection; raises errors.StoreUnavailable.

        Reads queued while the readers are busy run together in one round trip
        (pipeline mode), each as its own statement.
        """
        if not self._read_tasks or any(t.done() for t in self._read_tasks):
            raise errors.StoreUnavailable("store is closed")
        rows: Rows = await batching.enqueue(self._read_queue, batching.read(sql, params))
        return rows

    async def _run_reader(self, index: int) -> None:
        while (batch := await batching.next_batch(self._read_queue, self._max_batch)) is not None:
            results: list[Rows | Exception] = []
            for attempt in range(2):  # a read is safe to run again on a new connection
                try:
                    conn = self._reader_conns[index] = await self._reconnect(
                        self._reader_conns[index], "reader", self._reader_backoff
                    )
                except errors.StoreUnavailable as exc:
                    results = [exc] * len(batch)
                    break
                results = list(
                    await pg_statements.within(
                        self._query_timeout_s, conn, pg_statements.reads(conn, batch), "read"
                    )
                )
                lost = conn.broken or any(isinstance(r, psycopg.OperationalError) for r in results)
                if lost:  # reconnect at the next use (a lost server is not always "broken")
                    self._born.pop(id(conn), None)
                if not (lost and attempt == 0):
                    break
            lost = id(self._reader_conns[index]) not in self._born

            def read_failed(exc: Exception, lost: bool = lost) -> errors.StoreError:
                if isinstance(exc, errors.StoreUnavailable):
                    return exc
                cls = errors.StoreReconnecting if lost else errors.StoreUnavailable
                return cls(f"store read failed: {exc}")

            batching.answer(batch, results, read_failed)

    async def write(self, sql: str, params: Params = ()) -> Rows:
        """Run one statement in the next group commit; returns its rows once committed.

        Raises errors.StorageFull or errors.StoreUnavailable. Once queued, the
        statement runs even if the caller is cancelled while waiting.
        """
        return (await self.write_many([(sql, params)]))[0]

    async def write_many(self, statements: list[tuple[str, Params]]) -> list[Rows]:
        """Run ``statements`` together in the next group commit: all of them or none."""
        if self._task is None or self._task.done():
            raise errors.StoreUnavailable("store is closed")
        rows: list[Rows] = await batching.enqueue(self._queue, batching.unit(statements))
        return rows

    async def _run_writer(self) -> None:
        while (batch := await batching.next_batch(self._queue, self._max_batch)) is not None:
            try:
                self._writer = await self._reconnect(self._writer, "writer", self._writer_backoff)
            except errors.StoreUnavailable as exc:
                batching.fail(batch, exc)  # nothing of the batch was sent
                continue
            await self._commit(batch)

    async def _commit(self, batch: list[Unit]) -> None:
        """Run ``batch`` in one transaction and answer every caller (see the module doc).

        First all at once in pipeline mode (one round trip for the batch); if any
        statement fails, that transaction is rolled back whole and the batch runs
        again statement by statement, each caller's unit in a SAVEPOINT, so that
        only the failing caller gets its error.
        """
        conn = self._writer
        assert conn is not None
        for _ in range(_ROLLBACK_RETRIES):
            results: list[list[Rows] | psycopg.Error] = []
            fatal: Exception | None = None
            try:
                results = list(
                    await pg_statements.within(
                        self._query_timeout_s, conn, pg_statements.pipelined(conn, batch), "commit"
                    )
                )
            except psycopg.Error as exc:
                if pg_statements.fatal(exc, conn):
                    fatal = exc
                results = []
            if not results and fatal is None:
                results, fatal = await pg_statements.within(
                    self._query_timeout_s, conn, self._one_by_one(conn, batch), "commit"
                )
            # another appliance's transaction deadlocked with this one (or a serialisation
            # failure): nothing of the batch was kept; run it again
            if not isinstance(fatal, pg_errors.TransactionRollback) or conn.broken:
                break
            log_event(
                log,
                "store_commit_retried",
                message="group commit rolled back by the server; retrying",
                level=logging.WARNING,
                error=str(fatal),
            )
        if fatal is not None and not isinstance(fatal, pg_errors.DiskFull):
            # the transaction or the connection failed as a whole: start afresh (a connection
            # that lost its server in pipeline mode is not always marked broken)
            self._born.pop(id(conn), None)
            with contextlib.suppress(psycopg.Error):
                await conn.close()
            self._writer = None
        self._answer(batch, results, fatal)

    async def _one_by_one(
        self, conn: psycopg.AsyncConnection[PgRow], batch: list[Unit]
    ) -> tuple[list[list[Rows] | psycopg.Error], Exception | None]:
        results: list[list[Rows] | psycopg.Error] = []
        fatal: Exception | None = None
        try:
            async with conn.transaction():
                if len(batch) == 1:
                    results.append(await pg_statements.run_unit(conn, batch[0].statements))
                else:
                    for unit in batch:
                        try:
                            async with conn.transaction():  # a SAVEPOINT
                                rows = await pg_statements.run_unit(conn, unit.statements)
                        except psycopg.Error as exc:
                            if pg_statements.fatal(exc, conn):
                                raise
                            results.append(exc)
                        else:
                            results.append(rows)
        except psycopg.Error as exc:
            if len(batch) == 1 and not pg_statements.fatal(exc, conn):
                results = [exc]  # a lone caller's own error: the rollback undid only its work
            else:
                fatal = exc
        return results, fatal

    def _answer(
        self,
        batch: list[Unit],
        results: list[list[Rows] | psycopg.Error],
        fatal: Exception | None,
    ) -> None:
        if fatal is not None:
            err = pg_statements.translate_error(fatal)
            if self._writer is None:
                # the COMMIT may have reached the server before the connection went (and a
                # strict synchronous primary keeps it, waiting for a standby): a retry must be
                # idempotent (Idempotency-Key; a second release is 409)
                self.in_doubt += 1
                err = errors.StoreReconnecting(
                    f"the database connection failed ({fatal}); the write may or may not have "
                    "been stored; reconnecting"
                )
            log_event(
                log,
                "store_commit_failed",
                message="group commit failed",
                level=logging.ERROR,
                error=str(fatal),
            )
            batching.fail(batch, err)
            return
        self.batches += 1
        self.writes += len(batch)
        if self._on_commit is not None:
            self._on_commit(
                sum(
                    len(w.statements)
                    for w, res in zip(batch, results, strict=True)
                    if not isinstance(res, psycopg.Error)
                )
            )
        batching.answer(batch, results, pg_statements.translate_error)
