"""PostgreSQL connections: rows, URLs without their passwords, keepalives, the reconnect
back-off, the appliances' advisory locks, migrations and the notification listener.

:class:`edgeprint.store.postgres.PostgresStore` owns the connections; this module says
how one is made, locked, migrated and listened on.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import socket
import time
import urllib.parse
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final

import psycopg
from psycopg import conninfo
from psycopg import sql as pg_sql

from edgeprint import errors
from edgeprint.backoff import Backoff
from edgeprint.logs import log_event
from edgeprint.store.schema import pg_names
from edgeprint.store.schema import postgres as pg_schema

log = logging.getLogger("edgeprint.store.postgres")


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


def row_factory(cursor: psycopg.AsyncCursor[Any]) -> psycopg.rows.RowMaker[PgRow]:
    index = {col.name: i for i, col in enumerate(cursor.description or ())}

    def make(values: Sequence[Any]) -> PgRow:
        return PgRow(index, tuple(values))

    return make


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


#: libpq's TCP keepalive settings for every connection (the URL's own win).
KEEPALIVES: Final = {
    "keepalives": 1,
    "keepalives_idle": 4,
    "keepalives_interval": 2,
    "keepalives_count": 3,
    "tcp_user_timeout": 10_000,
}

#: First and longest wait between attempts to reconnect to the server.
RECONNECT_MIN_S: Final = 0.1
RECONNECT_MAX_S: Final = 5.0
#: How long one reconnection attempt may take (callers wait for it; libpq's least is 2 s).
RECONNECT_TIMEOUT_S: Final = 2.0


class ReconnectGate:
    """When the next reconnection may be tried: at once, then after 0.1 s doubling to 5 s."""

    def __init__(self) -> None:
        self._backoff = Backoff(RECONNECT_MIN_S, RECONNECT_MAX_S)
        self._not_before = 0.0

    def ready(self) -> bool:
        return time.monotonic() >= self._not_before

    def failed(self) -> None:
        self._not_before = time.monotonic() + self._backoff.failed()

    def succeeded(self) -> None:
        self._backoff.reset()
        self._not_before = 0.0


async def connect(url: str, role: str, timeout_s: float) -> psycopg.AsyncConnection[PgRow]:
    """A connection named ``edgeprint-<role>`` in ``pg_stat_activity`` (for the DBA).

    TCP keepalives (unless the URL sets them) notice a server that vanished without a
    word (a host cut off the network) within ~10 s, even on the listener, which only
    reads."""
    given = conninfo.conninfo_to_dict(url)
    alive: dict[str, Any] = {k: v for k, v in KEEPALIVES.items() if k not in given}
    return await psycopg.AsyncConnection.connect(
        url,
        autocommit=True,
        row_factory=row_factory,
        connect_timeout=max(1, round(timeout_s)),
        application_name=f"edgeprint-{role}",
        **alive,
    )


async def take_writer_lock(
    conn: psycopg.AsyncConnection[PgRow], url: str, exclusive: bool, appliance_id: str | None
) -> None:
    """Hold the appliances' advisory lock on the writer connection until it closes:
    exclusive without ``[store] shared`` (one appliance per database), shared with it
    (any number of shared appliances, none beside an exclusive one — so a box that
    forgot ``shared = true`` can never drive printers beside leased ones, nor the
    reverse), and ``appliance_id``'s own lock (:func:`take_appliance_lock`). Raises
    errors.StoreUnavailable when the database is held the other way."""
    how = "pg_try_advisory_lock" if exclusive else "pg_try_advisory_lock_shared"
    cur = await conn.execute(
        pg_sql.SQL("SELECT {}({}, hashtext(current_schema()))").format(
            pg_sql.Identifier(how), pg_names.WRITER_LOCK
        )
    )
    row = await cur.fetchone()
    if row is None or not row[0]:
        if exclusive:
            why = "without [store] shared = true, one appliance per database"
        else:
            why = (
                "an appliance without [store] shared = true holds it; every appliance "
                "on one database needs shared = true"
            )
        raise errors.StoreUnavailable(
            f"another edgeprint is using the database {redact(url)}: {why}"
        )
    if appliance_id is not None:
        await take_appliance_lock(conn, url, appliance_id)


async def take_appliance_lock(conn: psycopg.AsyncConnection[PgRow], url: str, me: str) -> None:
    """Hold this appliance id's advisory lock on the writer connection until it closes:
    two appliances with one ``[cluster] appliance_id`` would renew each other's leases
    and both drive the printers. Raises errors.StoreUnavailable when another holds it."""
    query = pg_sql.SQL("SELECT pg_try_advisory_lock({}, hashtext(current_schema() || ':' || %s))")
    cur = await conn.execute(query.format(pg_names.APPLIANCE_LOCK), (me,))
    row = await cur.fetchone()
    if row is None or not row[0]:
        raise errors.StoreUnavailable(
            f"another appliance with [cluster] appliance_id = {me!r} is using the database "
            f"{redact(url)}: give each appliance its own [cluster] appliance_id"
        )


async def migrate(conn: psycopg.AsyncConnection[PgRow]) -> None:
    """Apply the pending migrations of :mod:`edgeprint.store.schema.postgres`, each in one
    transaction with the new version, under the migration lock."""
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
            log_event(log, "store_migrated", message="store migrated", version=version + 1)


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
            flag = None if paused is None else bool(paused)
            return cls(kind, data.get("printer"), data.get("pool"), flag)
        except (ValueError, KeyError, TypeError) as exc:
            log_event(
                log,
                "store_notice_ignored",
                message="store notification ignored",
                level=logging.WARNING,
                error=str(exc),
            )
            return None


async def deliver(on_notice: Callable[[Notice], Awaitable[None]], notice: Notice) -> None:
    """``on_notice(notice)``; its failure is logged (the listener goes on)."""
    try:
        await on_notice(notice)
    except errors.StoreError as exc:  # a notice is a hint: the workers' idle probe catches up
        log_event(
            log,
            "store_notice_failed",
            message="store notification not handled",
            level=logging.WARNING,
            kind=notice.kind,
            error=str(exc),
        )


async def listen(
    connect_listener: Callable[[], Awaitable[psycopg.AsyncConnection[PgRow]]],
    on_notice: Callable[[Notice], Awaitable[None]],
    own_pid: Callable[[], int | None],
    on_listening: Callable[[], None],
    on_lost: Callable[[], None],
) -> None:
    """LISTEN on the store's channel and hand each notice to ``on_notice`` (for ever).

    After each LISTEN, ``on_listening()`` then ``on_notice(Notice("all"))``: the server
    answers again, and anything may have changed while no one listened. Notices sent by
    the connection ``own_pid()`` names are skipped. A lost connection calls ``on_lost()``
    and is retried with back-off."""
    backoff = Backoff(RECONNECT_MIN_S, RECONNECT_MAX_S)
    while True:
        try:
            conn = await connect_listener()
        except (psycopg.Error, OSError) as exc:
            log_event(
                log,
                "store_listener_down",
                message="store listener cannot connect",
                level=logging.WARNING,
                error=str(exc),
            )
            await asyncio.sleep(backoff.failed())
            continue
        try:
            cur = await conn.execute("SELECT current_schema()")
            row = await cur.fetchone()
            channel = pg_names.CHANNEL_PREFIX + str(row[0] if row else "public")
            await conn.execute(pg_sql.SQL("LISTEN {}").format(pg_sql.Identifier(channel)))
            backoff.reset()
            on_listening()
            await deliver(on_notice, Notice("all"))
            async for n in conn.notifies():
                if n.pid == own_pid():
                    continue
                notice = Notice.parse(n.payload)
                if notice is not None:
                    await deliver(on_notice, notice)
        except psycopg.Error as exc:
            on_lost()
            log_event(
                log,
                "store_listener_down",
                message="store listener lost its connection",
                level=logging.WARNING,
                error=str(exc),
            )
        finally:
            with contextlib.suppress(psycopg.Error):
                await conn.close()
        await asyncio.sleep(backoff.failed())
