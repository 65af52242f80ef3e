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

The query modules write ``?`` placeholders; :func:`translate` turns them
into psycopg's ``%s`` once per statement text (cached). psycopg binds the
parameters on the server and prepares a statement text used often.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import os
import re
import socket
import time
import urllib.parse
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final, TypeVar

import psycopg
from psycopg import conninfo
from psycopg import errors as pg_errors
from psycopg import sql as pg_sql

from edgeprint import errors
from edgeprint.store import batching
from edgeprint.store.batching import Read, Unit
from edgeprint.store.interface import Params, Rows
from edgeprint.store.schema import pg_names
from edgeprint.store.schema import postgres as pg_schema

log = logging.getLogger(__name__)


class PgRow:
    """A result row like :class:`sqlite3.Row`: by position, by column name, iterable."""

    __slots__ = ("_index", "_values")

    def __init__(self, index: dict[str, int], values: tuple[Any, ...]) -> None:
        self._index = index
        self._values = values

    def __getitem__(self, key: int | str, /) -> Any:
        if isinstance(key, str):
            return self._values[self._index[key]]
        return self._values[key]

    def __iter__(self) -> Iterator[Any]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def keys(self) -> list[str]:
        return list(self._index)

    def __repr__(self) -> str:
        return f"PgRow({dict(zip(self._index, self._values, strict=True))!r})"


def _row_factory(cursor: psycopg.AsyncCursor[Any]) -> psycopg.rows.RowMaker[PgRow]:
    index = {col.name: i for i, col in enumerate(cursor.description or ())}

    def make(values: Sequence[Any]) -> PgRow:
        return PgRow(index, tuple(values))

    return make


@functools.lru_cache(maxsize=2048)
def translate(sql: str) -> str:
    """``sql`` with each ``?`` outside quotes as ``%s`` and each ``%`` as ``%%`` (psycopg's)."""
    out: list[str] = []
    quote: str | None = None
    for ch in sql:
        if quote is not None:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == "?":
            out.append("%s")
            continue
        if ch == "%":
            out.append("%%")
            continue
        out.append(ch)
    return "".join(out)


#: ``scheme://user:password@`` of a libpq URL (a multi-host one too: ``@h1:p1,h2:p2``); the
#: password runs to the last ``@`` of the URL's authority (a raw ``@`` in it is common).
_PASSWORD = re.compile(r"^(?P<head>[a-z]+://[^:@/?]*):[^/?]*@", re.IGNORECASE)
#: ``password=…`` among the URL's parameters (``?password=`` or ``&password=``).
_PASSWORD_PARAM = re.compile(r"(?P<head>[?&]password=)[^&]*", re.IGNORECASE)


def redact(url: str) -> str:
    """``url`` without its password (for logs and error messages): in the user part or as a
    ``password=`` parameter, and wherever else the value libpq reads from the URL appears; a
    libpq multi-host URL (``postgresql://u:p@h1:5432,h2:5432/db``) too, which
    :mod:`urllib.parse` cannot parse."""
    out = _PASSWORD_PARAM.sub(r"\g<head>***", _PASSWORD.sub(r"\g<head>:***@", url, count=1))
    try:
        password = conninfo.conninfo_to_dict(url).get("password")
    except psycopg.Error:
        password = None
    if isinstance(password, str) and password:
        for form in {password, urllib.parse.quote(password, safe=""), urllib.parse.quote(password)}:
            out = out.replace(form, "***")
    return out


def abort(conn: psycopg.AsyncConnection[Any]) -> None:
    """Shut ``conn``'s socket down under whatever waits on it: that wait ends at once with
    the connection lost (OperationalError), where cancelling it would wait for a server that
    may never answer (a primary cut off the network, a commit waiting for a standby)."""
    with contextlib.suppress(OSError, psycopg.Error):
        fd = conn.pgconn.socket
        with socket.socket(fileno=os.dup(fd)) as sock:
            sock.shutdown(socket.SHUT_RDWR)


def _translate_error(exc: Exception) -> errors.StoreError:
    """DiskFull (SQLSTATE 53100) → StorageFull; anything else → StoreUnavailable."""
    if isinstance(exc, pg_errors.DiskFull):
        return errors.StorageFull(
            f"the database's disk is full ({exc}); nothing was stored; retry later (a "
            "submission with the same Idempotency-Key). A technician must free space on the "
            "PostgreSQL server"
        )
    return errors.StoreUnavailable(f"store error: {exc}")


def _fatal(exc: psycopg.Error, conn: psycopg.AsyncConnection[PgRow]) -> bool:
    """True when ``exc`` ended the transaction or the connection, not just one statement."""
    return conn.broken or isinstance(exc, psycopg.OperationalError)


#: libpq's TCP keepalive settings for every connection (the URL's own win).
_KEEPALIVES: Final = {
    "keepalives": 1,
    "keepalives_idle": 4,
    "keepalives_interval": 2,
    "keepalives_count": 3,
    "tcp_user_timeout": 10_000,
}

#: First and longest wait between attempts to reconnect to the server.
_RECONNECT_MIN_S: Final = 0.1
_RECONNECT_MAX_S: Final = 5.0
#: How long one reconnection attempt may take (callers wait for it; libpq's least is 2 s).
_RECONNECT_TIMEOUT_S: Final = 2.0


class _Backoff:
    """When the next reconnection may be tried: at once, then after 0.1 s doubling to 5 s."""

    def __init__(self) -> None:
        self._delay = _RECONNECT_MIN_S
        self._not_before = 0.0

    def ready(self) -> bool:
        return time.monotonic() >= self._not_before

    def failed(self) -> None:
        self._not_before = time.monotonic() + self._delay
        self._delay = min(self._delay * 2, _RECONNECT_MAX_S)

    def succeeded(self) -> None:
        self._delay = _RECONNECT_MIN_S
        self._not_before = 0.0


@dataclass(frozen=True, slots=True)
class Notice:
    """A change another appliance made: ``ready`` (a job became claimable for ``printer`` or
    ``pool``), ``control`` (a copy on ``printer`` is being cancelled), ``flags`` (``printer``
    was paused or resumed: ``paused``), ``all`` (anything may have changed)."""

    kind: str
    printer: str | None = None
    pool: str | None = None
    paused: bool | None = None

    @classmethod
    def parse(cls, payload: str) -> Notice | None:
        """The notice of a NOTIFY payload; None (logged) for one this version does not know."""
        try:
            data = json.loads(payload)
            kind = data["kind"]
            if kind not in ("ready", "control", "flags"):
                raise ValueError(f"unknown kind {kind!r}")
            paused = data.get("paused")
            return cls(kind, data.get("printer"), data.get("pool"),
                       None if paused is None else bool(paused))  # fmt: skip
        except (ValueError, KeyError, TypeError) as exc:
            log.warning(
                "store notification ignored",
                extra={"event": "store_notice_ignored", "error": str(exc)},
            )
            return None


async def _deliver(on_notice: Callable[[Notice], Awaitable[None]], notice: Notice) -> None:
    """``on_notice(notice)``; its failure is logged (the listener goes on)."""
    try:
        await on_notice(notice)
    except errors.StoreError as exc:  # a notice is a hint: the workers' idle probe catches up
        log.warning(
            "store notification not handled",
            extra={"event": "store_notice_failed", "kind": notice.kind, "error": str(exc)},
        )


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
        self._writer_backoff = _Backoff()
        self._reader_backoff = _Backoff()
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
            await self._migrate(self._writer)
            await self._take_writer_lock(self._writer)
            for _ in range(self._readers):
                self._reader_conns.append(await self._connect("reader"))
        except errors.StoreUnavailable:
            await self.close()
            raise
        except (psycopg.Error, OSError) as exc:
            await self.close()
            raise errors.StoreUnavailable(f"cannot open store {redact(self.url)}: {exc}") from exc
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
        """A connection named ``edgeprint-<role>`` in ``pg_stat_activity`` (for the DBA).

        TCP keepalives (unless the URL sets them) notice a server that vanished without a
        word (a host cut off the network) within ~10 s, even on the listener, which only
        reads."""
        given = conninfo.conninfo_to_dict(self.url)
        alive: dict[str, Any] = {k: v for k, v in _KEEPALIVES.items() if k not in given}
        return await psycopg.AsyncConnection.connect(
            self.url,
            autocommit=True,
            row_factory=_row_factory,
            connect_timeout=max(1, round(timeout_s or self._connect_timeout_s)),
            application_name=f"edgeprint-{role}",
            **alive,
        )

    async def _reconnect(
        self,
        conn: psycopg.AsyncConnection[PgRow] | None,
        role: str,
        backoff: _Backoff,
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
            fresh = await self._connect(role, _RECONNECT_TIMEOUT_S)
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
        log.warning("store reconnected", extra={"event": "store_reconnected", "role": role})
        return fresh

    def listen(self, on_notice: Callable[[Notice], Awaitable[None]]) -> None:
        """Hand every change notified by other appliances to ``on_notice`` until :meth:`close`.

        A dedicated connection LISTENs on the store's channel (the triggers of
        pg_schema migration 2 NOTIFY in the changing transaction). This
        appliance's own notifications are skipped (it woke its workers itself).
        On (re)connecting, ``on_notice`` gets a ``Notice("all")``: anything may
        have changed while no one listened. A lost connection is retried with
        back-off.
        """
        self._listener = asyncio.create_task(self._listen(on_notice), name="store:listener")

    async def _listen(self, on_notice: Callable[[Notice], Awaitable[None]]) -> None:
        delay = _RECONNECT_MIN_S
        while True:
            try:
                conn = await self._connect("listener")
            except (psycopg.Error, OSError) as exc:
                log.warning(
                    "store listener cannot connect",
                    extra={"event": "store_listener_down", "error": str(exc)},
                )
                await asyncio.sleep(delay)
                delay = min(delay * 2, _RECONNECT_MAX_S)
                continue
            try:
                cur = await conn.execute("SELECT current_schema()")
                row = await cur.fetchone()
                channel = pg_names.CHANNEL_PREFIX + str(row[0] if row else "public")
                await conn.execute(pg_sql.SQL("LISTEN {}").format(pg_sql.Identifier(channel)))
                delay = _RECONNECT_MIN_S
                # the server answers again: the writer and readers try at their next use
                # (the "all" below wakes workers that will write at once)
                self._writer_backoff.succeeded()
                self._reader_backoff.succeeded()
                await _deliver(on_notice, Notice("all"))
                async for n in conn.notifies():
                    writer = self._writer
                    if (
                        writer is not None
                        and not writer.closed
                        and n.pid == writer.info.backend_pid
                    ):
                        continue
                    notice = Notice.parse(n.payload)
                    if notice is not None:
                        await _deliver(on_notice, notice)
            except psycopg.Error as exc:
                self._lost += 1
                log.warning(
                    "store listener lost its connection",
                    extra={"event": "store_listener_down", "error": str(exc)},
                )
            finally:
                with contextlib.suppress(psycopg.Error):
                    await conn.close()
            await asyncio.sleep(delay)
            delay = min(delay * 2, _RECONNECT_MAX_S)

    async def _take_writer_lock(self, conn: psycopg.AsyncConnection[PgRow]) -> None:
        """Hold the appliances' advisory lock on the writer connection until it closes:
        exclusive without ``[store] shared`` (one appliance per database), shared with it
        (any number of shared appliances, none beside an exclusive one — so a box that
        forgot ``shared = true`` can never drive printers beside leased ones, nor the
        reverse). Raises errors.StoreUnavailable when the database is held the other way."""
        how = "pg_try_advisory_lock" if self._exclusive else "pg_try_advisory_lock_shared"
        cur = await conn.execute(
            pg_sql.SQL("SELECT {}({}, hashtext(current_schema()))").format(
                pg_sql.Identifier(how), pg_names.WRITER_LOCK
            )
        )
        row = await cur.fetchone()
        if row is None or not row[0]:
            if self._exclusive:
                why = "without [store] shared = true, one appliance per database"
            else:
                why = (
                    "an appliance without [store] shared = true holds it; every appliance "
                    "on one database needs shared = true"
                )
            raise errors.StoreUnavailable(
                f"another edgeprint is using the database {redact(self.url)}: {why}"
            )
        if self._appliance_id is not None:
            await self._take_appliance_lock(conn, self._appliance_id)

    async def _take_appliance_lock(self, conn: psycopg.AsyncConnection[PgRow], me: str) -> None:
        """Hold this appliance id's advisory lock on the writer connection until it closes:
        two appliances with one ``[cluster] appliance_id`` would renew each other's leases
        and both drive the printers. Raises errors.StoreUnavailable when another holds it."""
        cur = await conn.execute(
            pg_sql.SQL("SELECT pg_try_advisory_lock({}, hashtext(current_schema() || ':' || %s))")
            .format(pg_names.APPLIANCE_LOCK),
            (me,),
        )  # fmt: skip
        row = await cur.fetchone()
        if row is None or not row[0]:
            raise errors.StoreUnavailable(
                f"another appliance with [cluster] appliance_id = {me!r} is using the database "
                f"{redact(self.url)}: give each appliance its own [cluster] appliance_id"
            )

    async def _migrate(self, conn: psycopg.AsyncConnection[PgRow]) -> None:
        async with conn.transaction():
            await conn.execute(
                pg_sql.SQL("SELECT pg_advisory_xact_lock({}, hashtext(current_schema()))").format(
                    pg_names.MIGRATION_LOCK
                )
            )
            await conn.execute(pg_names.VERSION_TABLE)
            cur = await conn.execute("SELECT version FROM schema_version")
            row = await cur.fetchone()
            if row is None:
                await conn.execute("INSERT INTO schema_version (version) VALUES (0)")
            current = 0 if row is None else int(row[0])
            if current > len(pg_schema.MIGRATIONS):
                raise psycopg.DatabaseError(
                    f"schema version {current} is newer than this edgeprint "
                    f"({len(pg_schema.MIGRATIONS)})"
                )
            for version in range(current, len(pg_schema.MIGRATIONS)):
                for stmt in pg_schema.MIGRATIONS[version]:
                    await conn.execute(stmt.encode())
                await conn.execute(
                    pg_sql.SQL("UPDATE schema_version SET version = {}").format(version + 1)
                )
                log.info(
                    "store migrated",
                    extra={"event": "store_migrated", "version": version + 1},
                )

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
                    await _within(self._query_timeout_s, conn, _reads(conn, batch), "read")
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
                    await _within(self._query_timeout_s, conn, _pipelined(conn, batch), "commit")
                )
            except psycopg.Error as exc:
                if _fatal(exc, conn):
                    fatal = exc
                results = []
            if not results and fatal is None:
                results, fatal = await _within(
                    self._query_timeout_s, conn, self._one_by_one(conn, batch), "commit"
                )
            # another appliance's transaction deadlocked with this one (or a serialisation
            # failure): nothing of the batch was kept; run it again
            if not isinstance(fatal, pg_errors.TransactionRollback) or conn.broken:
                break
            log.warning(
                "group commit rolled back by the server; retrying",
                extra={"event": "store_commit_retried", "error": str(fatal)},
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
                    results.append(await _run_unit(conn, batch[0].statements))
                else:
                    for unit in batch:
                        try:
                            async with conn.transaction():  # a SAVEPOINT
                                rows = await _run_unit(conn, unit.statements)
                        except psycopg.Error as exc:
                            if _fatal(exc, conn):
                                raise
                            results.append(exc)
                        else:
                            results.append(rows)
        except psycopg.Error as exc:
            if len(batch) == 1 and not _fatal(exc, conn):
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
            err = _translate_error(fatal)
            if self._writer is None:
                # the COMMIT may have reached the server before the connection went (and a
                # strict synchronous primary keeps it, waiting for a standby): a retry must be
                # idempotent (Idempotency-Key; a second release is 409)
                self.in_doubt += 1
                err = errors.StoreReconnecting(
                    f"the database connection failed ({fatal}); the write may or may not have "
                    "been stored; reconnecting"
                )
            log.error(
                "group commit failed", extra={"event": "store_commit_failed", "error": str(fatal)}
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
        batching.answer(batch, results, _translate_error)


_T = TypeVar("_T")


async def _within(
    timeout_s: float, conn: psycopg.AsyncConnection[PgRow], work: Awaitable[_T], what: str
) -> _T:
    """``await work``, but after ``timeout_s`` the connection is aborted (:func:`abort`) so
    that ``work`` ends at once with the connection lost (psycopg.OperationalError)."""
    task = asyncio.ensure_future(work)
    done, _ = await asyncio.wait({task}, timeout=timeout_s)
    if not done:
        log.warning(
            "store %s timed out; connection dropped",
            what,
            extra={"event": "store_timeout", "what": what, "timeout_s": timeout_s},
        )
        abort(conn)
        done, _ = await asyncio.wait({task}, timeout=timeout_s)
        if not done:  # the socket was gone already: psycopg's own cancel, bounded by it
            task.cancel()
    return await task


async def _run_unit(
    conn: psycopg.AsyncConnection[PgRow], statements: list[tuple[str, Params]]
) -> list[Rows]:
    out: list[Rows] = []
    for sql, params in statements:
        cur = await conn.execute(translate(sql), params)
        out.append(await cur.fetchall() if cur.description is not None else [])
    return out


async def _pipelined(conn: psycopg.AsyncConnection[PgRow], batch: list[Unit]) -> list[list[Rows]]:
    """Every statement of ``batch`` in one transaction, sent together (pipeline mode)."""
    async with conn.transaction(), conn.pipeline() as pipeline:
        cursors: list[list[psycopg.AsyncCursor[PgRow]]] = []
        for unit in batch:
            unit_cursors = []
            for sql, params in unit.statements:
                cur = conn.cursor()
                await cur.execute(translate(sql), params)
                unit_cursors.append(cur)
            cursors.append(unit_cursors)
        await pipeline.sync()
        return [
            [await c.fetchall() if c.description is not None else [] for c in unit_cursors]
            for unit_cursors in cursors
        ]


async def _reads(conn: psycopg.AsyncConnection[PgRow], batch: list[Read]) -> list[Rows | Exception]:
    """Each read's rows or error: all in one round trip, else (one failed) each on its own,
    so that only its caller sees an error."""
    try:
        return list(await _pipelined_reads(conn, batch))
    except psycopg.Error:
        results: list[Rows | Exception] = []
        for r in batch:
            try:
                cur = await conn.execute(translate(r.sql), r.params)
                results.append(await cur.fetchall() if cur.description is not None else [])
            except psycopg.Error as exc:
                results.append(exc)
        return results


async def _pipelined_reads(conn: psycopg.AsyncConnection[PgRow], batch: list[Read]) -> list[Rows]:
    """Every read of ``batch`` sent together (pipeline mode, autocommit)."""
    async with conn.pipeline() as pipeline:
        cursors = []
        for r in batch:
            cur = conn.cursor()
            await cur.execute(translate(r.sql), r.params)
            cursors.append(cur)
        await pipeline.sync()
        return [await c.fetchall() if c.description is not None else [] for c in cursors]
