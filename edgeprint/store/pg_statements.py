"""PostgreSQL statements: ``?`` placeholders translated, a batch sent in one round trip
(pipeline mode), reads and writes bounded by the query time-out, errors translated.

The query modules write ``?`` placeholders; :func:`translate` turns them into psycopg's
``%s`` once per statement text (cached).
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable
from typing import TypeVar

import psycopg
from psycopg import errors as pg_errors

from edgeprint import errors
from edgeprint.logs import log_event
from edgeprint.store import pg_connection
from edgeprint.store.batching import Read, Unit
from edgeprint.store.interface import Params, Rows
from edgeprint.store.pg_connection import PgRow

log = logging.getLogger("edgeprint.store.postgres")


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


def translate_error(exc: Exception) -> errors.StoreError:
    """DiskFull (SQLSTATE 53100) → StorageFull; anything else → StoreUnavailable."""
    if isinstance(exc, pg_errors.DiskFull):
        return errors.StorageFull(
            f"the database's disk is full ({exc}); nothing was stored; retry later (a "
            "submission with the same Idempotency-Key). A technician must free space on the "
            "PostgreSQL server"
        )
    return errors.StoreUnavailable(f"store error: {exc}")


def fatal(exc: psycopg.Error, conn: psycopg.AsyncConnection[PgRow]) -> bool:
    """True when ``exc`` ended the transaction or the connection, not just one statement."""
    return conn.broken or isinstance(exc, psycopg.OperationalError)


_T = TypeVar("_T")


async def within(
    timeout_s: float, conn: psycopg.AsyncConnection[PgRow], work: Awaitable[_T], what: str
) -> _T:
    """``await work``, but after ``timeout_s`` the connection is aborted (:func:`abort`) so
    that ``work`` ends at once with the connection lost (psycopg.OperationalError)."""
    task = asyncio.ensure_future(work)
    done, _ = await asyncio.wait({task}, timeout=timeout_s)
    if not done:
        log_event(
            log,
            "store_timeout",
            message=f"store {what} timed out; connection dropped",
            level=logging.WARNING,
            what=what,
            timeout_s=timeout_s,
        )
        pg_connection.abort(conn)
        done, _ = await asyncio.wait({task}, timeout=timeout_s)
        if not done:  # the socket was gone already: psycopg's own cancel, bounded by it
            task.cancel()
    return await task


async def run_unit(
    conn: psycopg.AsyncConnection[PgRow], statements: list[tuple[str, Params]]
) -> list[Rows]:
    out: list[Rows] = []
    for sql, params in statements:
        cur = await conn.execute(translate(sql), params)
        out.append(await cur.fetchall() if cur.description is not None else [])
    return out


async def pipelined(conn: psycopg.AsyncConnection[PgRow], batch: list[Unit]) -> list[list[Rows]]:
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


async def reads(conn: psycopg.AsyncConnection[PgRow], batch: list[Read]) -> list[Rows | Exception]:
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
