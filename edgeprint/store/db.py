"""SQLite engine: one writer connection with group commit, one reader connection.

Every write is one SQL statement submitted to :meth:`Store.write`. A single
writer task takes whatever statements are queued, runs them inside one
``BEGIN IMMEDIATE`` … ``COMMIT`` and only then answers each caller, so one
fsync (``synchronous=FULL``) covers a whole batch and concurrent writers never
see "database is locked". A statement that fails is rolled back alone by
SQLite (statement atomicity) and only its caller gets the error; an error that
aborts the transaction (disk full, I/O) fails the whole batch.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Final, TypeVar

import aiosqlite

from edgeprint import errors
from edgeprint.logs import log_event
from edgeprint.store import batching, health
from edgeprint.store.batching import Read, Unit
from edgeprint.store.schema.sqlite import MIGRATIONS

log = logging.getLogger(__name__)

Params = tuple[Any, ...]
Rows = list[sqlite3.Row]

_QUIET = (health.READ_ONLY, health.IO)

#: The row the store-health probe rewrites while writes fail (edgeprint.store.health).
PROBE_SQL = (
    "INSERT INTO store_probe (id, at) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET at = excluded.at"
)


def _read_failed(exc: Exception) -> errors.StoreError:
    return errors.StoreUnavailable(f"store read failed: {exc}")


def _translate(exc: Exception) -> errors.StoreError:
    """SQLITE_FULL (ENOSPC on the database, its WAL or journal) → StorageFull; the disk
    refusing the write (read-only, I/O error) → StoreWriteFailed; else Unavailable."""
    kind = health.classify(exc)
    if kind == health.FULL:
        return errors.StorageFull(
            f"the appliance's disk is full ({exc}); nothing was stored; retry later (a "
            "submission with the same Idempotency-Key). A technician must free space on the "
            "appliance's data disk"
        )
    if kind is not None:
        return errors.StoreWriteFailed(f"store write failed: {exc}; nothing was stored")
    return errors.StoreUnavailable(f"store error: {exc}")


class Store:
    """The SQLite file at ``path`` (WAL mode); open with :meth:`open`, close with :meth:`close`.

    ``synchronous`` is ``"FULL"`` (a committed write survives a power cut) or
    ``"NORMAL"``; ``busy_timeout_ms`` is in milliseconds; ``max_batch`` caps
    the units (single statements or :meth:`write_many` groups) per group commit;
    ``on_commit`` is told the number of statements of each committed batch.
    Implements :class:`edgeprint.store.interface.Store`.
    """

    dialect: Final = "sqlite"

    def __init__(
        self,
        path: Path,
        *,
        synchronous: str = "FULL",
        busy_timeout_ms: int = 5000,
        max_batch: int = 512,
        on_commit: Callable[[int], object] | None = None,
    ) -> None:
        self.path = path
        self._synchronous = synchronous
        self._busy_timeout_ms = busy_timeout_ms
        self._max_batch = max_batch
        self._on_commit = on_commit
        self._writer: aiosqlite.Connection | None = None
        self._reader: aiosqlite.Connection | None = None
        self._queue: asyncio.Queue[Unit | None] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self._read_queue: asyncio.Queue[Read | None] = asyncio.Queue()
        self._read_task: asyncio.Task[None] | None = None
        self.batches = 0
        self.writes = 0
        #: Whether the disk takes writes now: told of every write the disk refused.
        self.health = health.WriteHealth()

    # --- lifecycle -----------------------------------------------------------

    async def open(self) -> None:
        """Connect, apply pending migrations, start the writer task.

        Raises errors.StoreUnavailable when the file cannot be opened or migrated.
        """
        try:
            self._writer = await self._connect()
            await self._writer.execute("PRAGMA journal_mode=WAL")
            await self._migrate(self._writer)
            self._reader = await self._connect()
            await self._reader.execute("PRAGMA query_only=ON")
        except sqlite3.Error as exc:
            await self.close()
            raise errors.StoreUnavailable(f"cannot open store {self.path}: {exc}") from exc
        self._task = asyncio.create_task(self._run_writer(), name="store:writer")
        self._read_task = asyncio.create_task(self._run_reader(), name="store:reader")

    async def close(self) -> None:
        """Finish queued writes, stop the writer task and close both connections."""
        if self._task is not None:
            self._queue.put_nowait(None)
            await self._task
            self._task = None
        if self._read_task is not None:
            self._read_queue.put_nowait(None)
            await self._read_task
            self._read_task = None
        for conn in (self._reader, self._writer):
            if conn is not None:
                with contextlib.suppress(sqlite3.Error, ValueError):
                    await conn.close()
        self._reader = self._writer = None

    async def reopen(self) -> None:
        """Open both connections again (after I/O errors SQLite may keep an error state); the
        new ones open before the old ones close, so the WAL index is never dropped (a failed
        commit's frames past its end stay ignored). Raises errors.StoreUnavailable."""
        try:
            writer = await self._connect()
            reader = await self._connect()
            await reader.execute("PRAGMA query_only=ON")
        except sqlite3.Error as exc:
            raise errors.StoreUnavailable(f"cannot open store {self.path}: {exc}") from exc
        old = (self._writer, self._reader)
        self._writer, self._reader = writer, reader
        for conn in old:
            if conn is not None:
                with contextlib.suppress(sqlite3.Error, ValueError):
                    await conn.close()

    async def probe(self) -> None:
        """One durable write of the ``store_probe`` row; raises like :meth:`write`."""
        await self.write(PROBE_SQL, (time.time(),))

    def _failed(self, exc: Exception) -> errors.StoreError:
        """``exc`` as the error its caller gets; a disk failure is told to :attr:`health`."""
        kind = health.classify(exc)
        if kind is not None:
            self.health.failed(kind, str(exc))
        return _translate(exc)

    async def _connect(self) -> aiosqlite.Connection:
        conn = await aiosqlite.connect(self.path, isolation_level=None)
        conn.row_factory = sqlite3.Row
        await conn.execute(f"PRAGMA busy_timeout={int(self._busy_timeout_ms)}")
        await conn.execute(f"PRAGMA synchronous={self._synchronous}")
        await conn.execute("PRAGMA foreign_keys=ON")
        return conn

    async def _migrate(self, conn: aiosqlite.Connection) -> None:
        rows = await conn.execute_fetchall("PRAGMA user_version")
        current = int(next(iter(rows))[0])
        if current > len(MIGRATIONS):
            raise sqlite3.DatabaseError(
                f"schema version {current} is newer than this edgeprint ({len(MIGRATIONS)})"
            )
        for version in range(current, len(MIGRATIONS)):
            await conn.execute("BEGIN IMMEDIATE")
            try:
                for stmt in MIGRATIONS[version]:
                    await conn.execute(stmt)
                await conn.execute(f"PRAGMA user_version={version + 1}")
                await conn.execute("COMMIT")
            except BaseException:
                await conn.execute("ROLLBACK")
                raise
            log_event(log, "store_migrated", version=version + 1)

    # --- reads and writes ----------------------------------------------------

    async def read(self, sql: str, params: Params = ()) -> Rows:
        """Run one read-only statement on the reader connection; raises errors.StoreUnavailable.

        Reads queued while the reader is busy run together in one hop to its
        thread (like writes, but without a transaction).
        """
        if self._reader is None or self._read_task is None or self._read_task.done():
            raise errors.StoreUnavailable("store is closed")
        rows: Rows = await batching.enqueue(self._read_queue, batching.read(sql, params))
        return rows

    async def _run_reader(self) -> None:
        while (batch := await batching.next_batch(self._read_queue, self._max_batch)) is not None:
            conn = self._reader
            assert conn is not None
            results: list[Rows | sqlite3.Error | ValueError]
            try:
                results = list(await _run_reads(conn, [(w.sql, w.params) for w in batch]))
            except (sqlite3.Error, ValueError) as exc:  # the connection itself failed
                results = [exc] * len(batch)
            batching.answer(batch, results, _read_failed)

    async def write(self, sql: str, params: Params = ()) -> Rows:
        """Run one statement in the next group commit; returns its rows once committed.

        Raises errors.StorageFull or errors.StoreUnavailable; the statement's
        effect is durable when this returns. Once queued, the statement runs
        even if the caller is cancelled while waiting.
        """
        return (await self.write_many([(sql, params)]))[0]

    async def write_many(self, statements: list[tuple[str, Params]]) -> list[Rows]:
        """Run ``statements`` together in the next group commit: all of them or none.

        Returns each statement's rows once committed. A statement that fails
        undoes the others of its unit (a SAVEPOINT) and only this caller gets
        the error. Raises like :meth:`write`.
        """
        if self._task is None or self._task.done():
            raise errors.StoreUnavailable("store is closed")
        rows: list[Rows] = await batching.enqueue(self._queue, batching.unit(statements))
        return rows

    async def _run_writer(self) -> None:
        while (batch := await batching.next_batch(self._queue, self._max_batch)) is not None:
            # Queued writes run even if their caller has gone (cancelled): the
            # caller cannot know whether it ran, and reconciliation expects it did.
            await self._commit(batch)

    async def _commit(self, batch: list[Unit]) -> None:
        """Run ``batch`` in one ``BEGIN IMMEDIATE … COMMIT`` and answer every caller.

        A statement that fails on its own (a CHECK, a conflict) is rolled back
        alone by SQLite and only its caller gets the error; an error that ends
        the transaction (disk full, I/O error) or a failed COMMIT fails every
        caller of the batch, and nothing of it is stored.
        """
        conn = self._writer
        assert conn is not None
        work = [w.statements for w in batch]
        try:
            results, fatal = await _run_batch(conn, work)
        except ValueError as exc:  # the connection was closed under us
            results, fatal = [], exc
        if fatal is not None:
            kind = health.classify(fatal)
            # a disk already known to refuse writes: its health said so once (and counts it)
            level = logging.DEBUG if kind in _QUIET and not self.health.writable else logging.ERROR
            log_event(
                log,
                "store_commit_failed",
                message="group commit failed",
                level=level,
                error=str(fatal),
            )
            batching.fail(batch, self._failed(fatal))
            return
        self.batches += 1
        self.writes += len(batch)
        if self._on_commit is not None:
            self._on_commit(sum(len(w) for w in work))
        batching.answer(batch, results, self._failed)


Work = list[list[tuple[str, Params]]]
BatchResult = tuple[list[list[Rows] | sqlite3.Error], Exception | None]


def _unit_in_thread(raw: sqlite3.Connection, unit: list[tuple[str, Params]]) -> list[Rows]:
    """One unit: a single statement as it is, several inside a SAVEPOINT (all or none)."""
    if len(unit) == 1:
        sql, params = unit[0]
        return [raw.execute(sql, params).fetchall()]
    raw.execute("SAVEPOINT unit")
    try:
        out = [raw.execute(sql, params).fetchall() for sql, params in unit]
    except sqlite3.Error:
        if raw.in_transaction:
            raw.execute("ROLLBACK TO unit")
            raw.execute("RELEASE unit")
        raise
    raw.execute("RELEASE unit")
    return out


def _batch_in_thread(raw: sqlite3.Connection, work: Work) -> BatchResult:
    """The whole group commit, run on the connection's own thread (no event-loop round trips).

    Returns each unit's rows (or its own error), and the error that failed
    the whole batch, if any (then nothing of it is stored).
    """
    results: list[list[Rows] | sqlite3.Error] = []
    try:
        raw.execute("BEGIN IMMEDIATE")
    except sqlite3.Error as exc:
        return results, exc
    for unit in work:
        try:
            results.append(_unit_in_thread(raw, unit))
        except sqlite3.Error as exc:
            if not raw.in_transaction:  # SQLite rolled the whole transaction back
                return results, exc
            results.append(exc)
    try:
        raw.execute("COMMIT")
    except sqlite3.Error as exc:
        if raw.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                raw.execute("ROLLBACK")
        return results, exc
    return results, None


async def _run_batch(conn: aiosqlite.Connection, work: Work) -> BatchResult:
    """The whole group commit in one hop to the writer's thread."""
    return await on_thread(conn, lambda raw: _batch_in_thread(raw, work))


def _reads_in_thread(
    raw: sqlite3.Connection, work: list[tuple[str, Params]]
) -> list[Rows | sqlite3.Error]:
    out: list[Rows | sqlite3.Error] = []
    for sql, params in work:
        try:
            out.append(raw.execute(sql, params).fetchall())
        except sqlite3.Error as exc:
            out.append(exc)
    return out


async def _run_reads(
    conn: aiosqlite.Connection, work: list[tuple[str, Params]]
) -> list[Rows | sqlite3.Error]:
    """Queued reads in one hop to the reader's thread."""
    return await on_thread(conn, lambda raw: _reads_in_thread(raw, work))


# --- the one place that reaches inside aiosqlite ---------------------------------------------

_R = TypeVar("_R")


async def on_thread(conn: aiosqlite.Connection, fn: Callable[[sqlite3.Connection], _R]) -> _R:
    """``fn(raw)`` on ``conn``'s own thread with its sqlite3 connection, in one hop.

    aiosqlite has no public call for this: it runs one statement per hop, and
    each hop waits for the busy event loop to hand back the result. Statement
    by statement, the API bench's releases ran at 266/s instead of 460/s, at
    1,100 µs of CPU each instead of 710 (docs/decisions/0010). So this uses aiosqlite's
    private ``_execute`` (queue a callable for its thread) and ``_conn`` (its
    sqlite3 connection), the same in every version pinned in pyproject.toml;
    tests/test_store.py::test_aiosqlite_runs_a_function_on_its_own_thread
    fails first if a new aiosqlite changes them.
    """
    execute: Callable[..., Awaitable[_R]] = conn._execute
    return await execute(fn, conn._conn)
