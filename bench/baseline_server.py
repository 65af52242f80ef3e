"""The practical ceiling: bare aiohttp + aiosqlite doing the same durable work as edgeprint.

No edgeprint code. ``POST /submit`` streams the PDF to the spool (fsync, rename, fsync
the folder) and INSERTs the row; ``POST /release/{id}`` is a conditional UPDATE; both
through one group-commit writer (WAL, ``synchronous=FULL``), answered once durable.
Absent on purpose (part of the gap measured): audit events, the idempotency look-up,
validation, metrics, per-request logs. Prints ``{"event": "ready", "port": …}`` when
listening.

    python -m bench.baseline_server --data-dir DIR --token-sha256 HEX
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import hashlib
import hmac
import json
import os
import secrets
import signal
import sqlite3
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any, BinaryIO

import aiosqlite
from aiohttp import BodyPartReader, web

#: Bytes read from the socket per document chunk (same as edgeprint's upload reader).
CHUNK_BYTES = 64 * 1024
#: Statements per group commit, at most.
MAX_BATCH = 512

SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    seq              INTEGER PRIMARY KEY AUTOINCREMENT,
    id               TEXT    NOT NULL UNIQUE,
    idempotency_key  TEXT    NOT NULL UNIQUE,
    state            TEXT    NOT NULL,
    owner            TEXT    NOT NULL,
    printer          TEXT,
    pool             TEXT,
    document_sha256  TEXT    NOT NULL,
    document_bytes   INTEGER NOT NULL,
    created_at       REAL    NOT NULL,   -- unix seconds
    updated_at       REAL    NOT NULL,   -- unix seconds
    released_at      REAL                -- unix seconds
);
"""

_INSERT = """
INSERT INTO jobs (id, idempotency_key, state, owner, printer, pool, document_sha256,
                  document_bytes, created_at, updated_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (idempotency_key) DO NOTHING
RETURNING *
"""

_RELEASE = """
UPDATE jobs SET state = 'RELEASED', released_at = ?, updated_at = ?
WHERE id = ? AND state = 'HELD'
RETURNING *
"""

Rows = list[sqlite3.Row]
Write = tuple[str, tuple[Any, ...], "asyncio.Future[Rows]"]


def _run_batch(conn: sqlite3.Connection, batch: list[Write]) -> list[Rows | sqlite3.Error]:
    """One transaction for ``batch`` on ``conn`` (on the SQLite thread); a failing statement
    is rolled back alone and its error takes its place in the result."""
    out: list[Rows | sqlite3.Error] = []
    conn.execute("BEGIN IMMEDIATE")
    try:
        for sql, params, _ in batch:
            try:
                out.append(conn.execute(sql, params).fetchall())
            except sqlite3.Error as exc:
                if not conn.in_transaction:  # the whole batch was rolled back
                    raise
                out.append(exc)
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
        raise
    return out


class GroupCommitWriter:
    """One writer connection; statements queued by :meth:`write` commit together, a whole
    batch in one call on aiosqlite's thread (one hand-off, one wake-up)."""

    def __init__(self, conn: aiosqlite.Connection) -> None:
        self._conn = conn
        self._queue: asyncio.Queue[Write] = asyncio.Queue()
        self._task = asyncio.create_task(self._run(), name="baseline:writer")

    async def write(self, sql: str, params: tuple[Any, ...]) -> Rows:
        """Run ``sql`` in the next group commit; its rows once durable (or sqlite3.Error)."""
        fut: asyncio.Future[Rows] = asyncio.get_running_loop().create_future()
        self._queue.put_nowait((sql, params, fut))
        return await fut

    async def _run(self) -> None:
        while True:
            batch = [await self._queue.get()]
            while len(batch) < MAX_BATCH and not self._queue.empty():
                batch.append(self._queue.get_nowait())
            try:
                fn = functools.partial(_run_batch, self._conn._conn, batch)
                results = await self._conn._execute(fn)  # type: ignore[no-untyped-call]
            except sqlite3.Error as exc:
                results = [exc] * len(batch)
            for (_, _, fut), res in zip(batch, results, strict=True):
                if fut.done():
                    continue
                if isinstance(res, sqlite3.Error):
                    fut.set_exception(res)
                else:
                    fut.set_result(res)


WRITER = web.AppKey("writer", GroupCommitWriter)
SPOOL = web.AppKey("spool", Path)
TOKEN_SHA256 = web.AppKey("token_sha256", bytes)


def _problem(status: int, detail: str) -> web.Response:
    return web.json_response({"status": status, "detail": detail}, status=status)


def _authorized(request: web.Request) -> bool:
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    digest = hashlib.sha256(token.strip().encode("utf-8", "surrogateescape")).digest()
    return scheme.lower() == "bearer" and hmac.compare_digest(digest, request.app[TOKEN_SHA256])


def _make_durable(fh: BinaryIO, tmp: Path, final: Path) -> None:
    """fsync the file, rename it to its final name, fsync the folder (runs in a thread)."""
    with fh:
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, final)
    fd = os.open(final.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


async def submit(request: web.Request) -> web.Response:
    """POST /submit: 201 with the new HELD/RELEASED row, durable on return."""
    if not _authorized(request):
        return _problem(401, "bad bearer token")
    key = request.headers.get("Idempotency-Key", "")
    spool = request.app[SPOOL]
    meta: dict[str, Any] = {}
    digest = hashlib.sha256()
    size = 0
    reader = await request.multipart()
    while (part := await reader.next()) is not None:
        if not isinstance(part, BodyPartReader):
            return _problem(400, "nested multipart")
        if part.name == "metadata":
            meta = json.loads(await part.read())
            continue
        # Created in a thread: creating a file can wait for the journal while others fsync.
        tmp = spool / "tmp" / f"{secrets.token_hex(12)}.part"
        fh = await asyncio.to_thread(open, tmp, "xb")
        while chunk := await part.read_chunk(CHUNK_BYTES):
            size += len(chunk)
            fh.write(chunk)
            digest.update(chunk)
        final = spool / f"{digest.hexdigest()}.pdf"
        await asyncio.to_thread(_make_durable, fh, tmp, final)
    now = time.time()
    rows = await request.app[WRITER].write(
        _INSERT,
        (
            uuid.uuid4().hex,
            key,
            "HELD" if meta.get("hold", True) else "RELEASED",
            meta.get("owner", ""),
            meta.get("printer"),
            meta.get("pool"),
            digest.hexdigest(),
            size,
            now,
            now,
        ),
    )
    if not rows:
        return _problem(409, "Idempotency-Key already used")
    return web.json_response(dict(rows[0]), status=201)


async def release(request: web.Request) -> web.Response:
    """POST /release/{id}: 200 with the RELEASED row, 409 when the job is not HELD."""
    if not _authorized(request):
        return _problem(401, "bad bearer token")
    now = time.time()
    rows = await request.app[WRITER].write(_RELEASE, (now, now, request.match_info["job_id"]))
    if not rows:
        return _problem(409, "job is not HELD")
    return web.json_response(dict(rows[0]))


async def serve(data_dir: Path, token_sha256: str) -> None:
    """Open the store, listen on a free loopback port until SIGTERM/SIGINT."""
    spool = data_dir / "spool"
    (spool / "tmp").mkdir(parents=True, exist_ok=True)
    conn = await aiosqlite.connect(data_dir / "baseline.sqlite3", isolation_level=None)
    conn.row_factory = sqlite3.Row
    await conn.execute("PRAGMA journal_mode=WAL")
    await conn.execute("PRAGMA synchronous=FULL")
    await conn.executescript(SCHEMA)
    app = web.Application()
    app[WRITER] = GroupCommitWriter(conn)
    app[SPOOL] = spool
    app[TOKEN_SHA256] = bytes.fromhex(token_sha256)
    app.router.add_post("/submit", submit)
    app.router.add_post("/release/{job_id}", release)
    runner = web.AppRunner(app, access_log=None, handle_signals=False)
    await runner.setup()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        asyncio.get_running_loop().add_signal_handler(sig, stop.set)
    try:
        await web.TCPSite(runner, "127.0.0.1", 0, backlog=1024).start()
        print(json.dumps({"event": "ready", "port": runner.addresses[0][1]}), flush=True)
        await stop.wait()
    finally:
        await runner.cleanup()
        await conn.close()


def main(argv: Sequence[str] | None = None) -> int:
    """Command line entry point; returns the exit code."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--data-dir", type=Path, required=True, help="folder for the DB and spool")
    p.add_argument("--token-sha256", required=True, help="hex SHA-256 of the bearer token")
    args = p.parse_args(argv)
    asyncio.run(serve(args.data_dir, args.token_sha256))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
