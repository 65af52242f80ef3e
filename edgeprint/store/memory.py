"""An in-memory store for the service's unit tests: SQLite ``:memory:``, inline on the loop.

Procrastinate's way (an in-memory connector beside the real ones) but cheaper to keep
honest: :class:`MemoryStore` is Python's own ``sqlite3`` on a ``:memory:`` database with
the same migrations (:data:`edgeprint.store.schema.sqlite.MIGRATIONS`), so the statements the
query modules derive from the transition tables run here exactly as the SQLite file runs
them. A dict re-implementation of every query would be a second truth to keep in step.

What it leaves out is what makes the real stores slow and durable: no file, no fsync, no
writer thread, no group-commit queue. Each call runs at once on the event loop's thread,
then yields once to the loop (the real stores always suspend a caller, and a statement
that started still runs when its caller is cancelled). The guarantees of
:mod:`edgeprint.store.interface` hold, save durability: a write's rows come back with it;
:meth:`MemoryStore.write_many` applies all or none; a failed statement fails only its
caller; a read sees every write that returned before it. Nothing survives :meth:`close`.

The migrations run once per process, into a scratch database whose image every store
opens from (``sqlite3`` ``serialize``/``deserialize``: half a millisecond instead of 30).
So each store starts as one made when the first was: its run clock (``store_clock``,
seeded by the migration with the time then) may start some seconds behind the wall clock.

For tests only (nothing in the product chooses it): the SQLite file and PostgreSQL stay
the truth, checked by the conformance tests, which run on this store too.
"""

from __future__ import annotations

import asyncio
import functools
import sqlite3
from collections.abc import Callable
from typing import Any, Final

from edgeprint import errors
from edgeprint.store import health
from edgeprint.store.schema.sqlite import MIGRATIONS

Params = tuple[Any, ...]
Rows = list[sqlite3.Row]


def _failed(exc: sqlite3.Error) -> errors.StoreError:
    """``exc`` as the error a caller of the SQLite file would get (a CHECK, a conflict:
    StoreUnavailable); no disk, so never StorageFull unless SQLite says full."""
    kind = health.classify(exc)
    if kind == health.FULL:
        return errors.StorageFull(f"the in-memory store is full ({exc}); nothing was stored")
    if kind is not None:
        return errors.StoreWriteFailed(f"store write failed: {exc}; nothing was stored")
    return errors.StoreUnavailable(f"store error: {exc}")


class MemoryStore:
    """A job store that lives in memory until :meth:`close`; open it with :meth:`open`.

    ``on_commit`` is told the number of statements of each write (one per call, as
    there is no group commit). Implements :class:`edgeprint.store.interface.Store`.
    """

    dialect: Final = "sqlite"

    def __init__(self, *, on_commit: Callable[[int], object] | None = None) -> None:
        self._on_commit = on_commit
        self._conn: sqlite3.Connection | None = None
        self.writes = 0

    async def open(self) -> None:
        """Make the database, every migration applied; raises errors.StoreUnavailable."""
        conn = sqlite3.connect(":memory:", isolation_level=None)
        conn.row_factory = sqlite3.Row
        try:
            conn.deserialize(_migrated())
            conn.execute("PRAGMA foreign_keys=ON")
        except sqlite3.Error as exc:
            conn.close()
            raise errors.StoreUnavailable(f"cannot open the in-memory store: {exc}") from exc
        self._conn = conn

    async def close(self) -> None:
        """Drop the database (every write returned already: there is no queue to finish)."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _open_conn(self) -> sqlite3.Connection:
        if self._conn is None:
            raise errors.StoreUnavailable("store is closed")
        return self._conn

    async def read(self, sql: str, params: Params = ()) -> Rows:
        """Run one read-only statement; raises errors.StoreUnavailable."""
        conn = self._open_conn()
        try:
            rows = conn.execute(sql, params).fetchall()
        except sqlite3.Error as exc:
            raise errors.StoreUnavailable(f"store read failed: {exc}") from exc
        await asyncio.sleep(0)
        return rows

    async def write(self, sql: str, params: Params = ()) -> Rows:
        """Run one statement; its rows. Raises errors.StoreError (only this statement fails)."""
        return (await self.write_many([(sql, params)]))[0]

    async def write_many(self, statements: list[tuple[str, Params]]) -> list[Rows]:
        """Run ``statements`` in one transaction, all or none; each one's rows.

        Raises errors.StoreError; then nothing of them is stored.
        """
        conn = self._open_conn()
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                out = [conn.execute(sql, params).fetchall() for sql, params in statements]
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            raise _failed(exc) from exc
        self.writes += 1
        if self._on_commit is not None:
            self._on_commit(len(statements))
        await asyncio.sleep(0)
        return out


@functools.cache
def _migrated() -> bytes:
    """The image of a new database with every migration applied (made once per process)."""
    conn = sqlite3.connect(":memory:", isolation_level=None)
    try:
        _migrate(conn)
        return conn.serialize()
    finally:
        conn.close()


def _migrate(conn: sqlite3.Connection) -> None:
    """Every migration in order, each in its own transaction, like the SQLite file's."""
    for version, statements in enumerate(MIGRATIONS, start=1):
        conn.execute("BEGIN IMMEDIATE")
        try:
            for stmt in statements:
                conn.execute(stmt)
            conn.execute(f"PRAGMA user_version={version}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
