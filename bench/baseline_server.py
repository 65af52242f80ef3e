"""The practical ceiling: bare aiohttp + aiosqlite doing the same durable work as edgeprint.

No edgeprint code. ``POST /submit`` streams the PDF to the spool (fsync, rename, fsync
the folder) and INSERTs the row; ``POST /release/{id}`` is a conditional UPDATE; both
through one group-commit writer (WAL, ``synchronous=FULL``), answered once durable.
Absent on purpose (part of the gap measured): audit events, the idempotency look-up,
validation, metrics, per-request logs. Prints ``{"event": "ready", "port": …}`` when
listening and ``{"event": "stopped", "batches": …, "statements": …}`` on SIGTERM.

    python -m bench.baseline_server --data-dir DIR --token-sha256 HEX [--port 0]
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
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import aiosqlite
from aiohttp import BodyPartReader, web

#: Bytes read from the socket per document chunk (same as edgeprint's upload reader).
CHUNK_BYTES = 64 * 1024
#: Largest accepted document, in bytes.
MAX_DOCUMENT_BYTES = 20 * 1024 * 1024
#: Largest accepted metadata part, in bytes.
MAX_METADATA_BYTES = 16 * 1024

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


@dataclass
class _Write:
    sql: str
    params: tuple[Any, ...]
    future: asyncio.Future[Rows]


def _run_batch(conn: sqlite3.Connection, batch: list[_Write]) -> list[Rows | sqlite3.Error]:
    """One transaction for ``batch`` on ``conn`` (runs on the SQLite thread).

    A failing statement is rolled back alone by SQLite and its error takes its
    place in the result; an error that ends the transaction is raised.
    """
    out: list[Rows | sqlite3.Error] = []
    conn.execute("BEGIN IMMEDIATE")
    try:
        for w in batch:
            try:
                out.append(conn.execute(w.sql, w.params).fetchall())
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
    """One writer connection; statements queued by :meth:`write` commit together.

    ``max_batch`` caps the statements per transaction; a whole batch runs in one call on
    aiosqlite's thread (one hand-off, one wake-up). :attr:`batches` and :attr:`statements`
    count committed transactions and statements.
    """

    def __init__(self, conn: aiosqlite.Connection, max_batch: int = 512) -> None:
        self._conn = conn
        self._max_batch = max_batch
        self._queue: asyncio.Queue[_Write | None] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self.batches = 0
        self.statements = 0

    def start(self) -> None:
        """Start the draining task."""
        self._task = asyncio.create_task(self._run(), name="baseline:writer")

    async def stop(self) -> None:
        """Commit what is queued, then stop the draining task."""
        if self._task is not None:
            self._queue.put_nowait(None)
            await self._task
            self._task = None

    async def write(self, sql: str, params: tuple[Any, ...]) -> Rows:
        """Run ``sql`` in the next group commit; returns its rows once durable.

        Raises sqlite3.Error when the statement (or its whole batch) failed.
        """
        fut: asyncio.Future[Rows] = asyncio.get_running_loop().create_future()
        self._queue.put_nowait(_Write(sql, params, fut))
        return await fut

    async def _run(self) -> None:
        while True:
            first = await self._queue.get()
            if first is None:
                return
            batch = [first]
            stopping = False
            while len(batch) < self._max_batch and not self._queue.empty():
                item = self._queue.get_nowait()
                if item is None:
                    stopping = True
                    break
                batch.append(item)
            await self._commit(batch)
            if stopping:
                return

    async def _commit(self, batch: list[_Write]) -> None:
        try:
            fn = functools.partial(_run_batch, self._conn._conn, batch)
            results: list[Rows | sqlite3.Error] = await self._conn._execute(fn)  # type: ignore[no-untyped-call]
        except sqlite3.Error as exc:
            for w in batch:
                if not w.future.done():
                    w.future.set_exception(exc)
            return
        self.batches += 1
        self.statements += len(batch)
        for w, res in zip(batch, results, strict=True):
            if w.future.done():
                continue
            if isinstance(res, sqlite3.Error):
                w.future.set_exception(res)
            else:
                w.future.set_result(res)


@dataclass
class Baseline:
    """What the handlers use."""

    writer: GroupCommitWriter
    spool: Path
    token_sha256: bytes


BASELINE = web.AppKey("baseline", Baseline)


def _problem(status: int, detail: str) -> web.Response:
    return web.json_response({"status": status, "detail": detail}, status=status)


def _authorized(request: web.Request) -> bool:
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer":
        return False
    digest = hashlib.sha256(token.strip().encode("utf-8", "surrogateescape")).digest()
    return hmac.compare_digest(digest, request.app[BASELINE].token_sha256)


def _make_durable(fh: BinaryIO, tmp: Path, final: Path) -> None:
    """fsync the file, rename it to its final name, fsync the folder (runs in a thread)."""
    try:
        fh.flush()
        os.fsync(fh.fileno())
    finally:
        fh.close()
    os.replace(tmp, final)
    fd = os.open(final.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class _Staged:
    """A document streamed to a temporary file with its running SHA-256 and size (bytes).

    Make one with :meth:`create`.
    """

    def __init__(self, tmp: Path, fh: BinaryIO) -> None:
        self.tmp = tmp
        self.fh: BinaryIO | None = fh
        self.hash = hashlib.sha256()
        self.size = 0
        self.head = b""
        self._renamed = False

    @classmethod
    async def create(cls, spool: Path) -> _Staged:
        """A new temporary file in ``spool/tmp`` (opened in a thread: creating a file can
        wait for the filesystem journal while other threads fsync)."""
        tmp = spool / "tmp" / f"{secrets.token_hex(12)}.part"
        return cls(tmp, await asyncio.to_thread(open, tmp, "xb"))

    async def fill(self, part: BodyPartReader) -> bool:
        """Stream ``part`` into the file; False when it exceeds :data:`MAX_DOCUMENT_BYTES`."""
        assert self.fh is not None
        while chunk := await part.read_chunk(CHUNK_BYTES):
            self.size += len(chunk)
            if self.size > MAX_DOCUMENT_BYTES:
                return False
            if len(self.head) < 1024:
                self.head += chunk[: 1024 - len(self.head)]
            self.fh.write(chunk)
            self.hash.update(chunk)
        return True

    async def finish(self, spool: Path) -> str:
        """Make the document durable as ``spool/<sha256>.pdf``; returns the hex digest."""
        fh, self.fh = self.fh, None
        assert fh is not None
        digest = self.hash.hexdigest()
        await asyncio.to_thread(_make_durable, fh, self.tmp, spool / f"{digest}.pdf")
        self._renamed = True
        return digest

    def discard(self) -> None:
        """Close and delete the temporary file (idempotent)."""
        fh, self.fh = self.fh, None
        if fh is not None:
            fh.close()
        if not self._renamed:
            with contextlib.suppress(FileNotFoundError):
                self.tmp.unlink()


async def submit(request: web.Request) -> web.Response:
    """POST /submit: 201 with the new HELD/RELEASED row, durable on return."""
    if not _authorized(request):
        return _problem(401, "bad bearer token")
    key = request.headers.get("Idempotency-Key", "")
    if not 8 <= len(key) <= 80:
        return _problem(400, "Idempotency-Key must be 8–80 characters")
    state = request.app[BASELINE]
    meta: Any = None
    staged: _Staged | None = None
    try:
        reader = await request.multipart()
        while (part := await reader.next()) is not None:
            if not isinstance(part, BodyPartReader):
                return _problem(400, "nested multipart")
            if part.name == "metadata" and meta is None:
                raw = await part.read()
                if len(raw) > MAX_METADATA_BYTES:
                    return _problem(413, "metadata too large")
                meta = json.loads(raw)
            elif part.name == "document" and staged is None:
                staged = await _Staged.create(state.spool)
                if not await staged.fill(part):
                    return _problem(413, "document too large")
            else:
                return _problem(400, f"unexpected part {part.name!r}")
        if not isinstance(meta, dict) or not isinstance(meta.get("owner"), str):
            return _problem(422, "metadata must be an object with an 'owner' string")
        if staged is None or b"%PDF-" not in staged.head:
            return _problem(415, "the document part must be a PDF")
        digest = await staged.finish(state.spool)
        size = staged.size
    except ValueError as exc:
        return _problem(400, f"malformed body: {exc}")
    finally:
        if staged is not None:
            staged.discard()
    now = time.time()
    rows = await state.writer.write(
        _INSERT,
        (
            uuid.uuid4().hex, key, "HELD" if meta.get("hold", True) else "RELEASED",
            meta["owner"], meta.get("printer"), meta.get("pool"), digest, size, now, now,
        ),
    )  # fmt: skip
    if not rows:
        return _problem(409, "Idempotency-Key already used")
    return web.json_response(dict(rows[0]), status=201)


async def release(request: web.Request) -> web.Response:
    """POST /release/{id}: 200 with the RELEASED row, 409 when the job is not HELD."""
    if not _authorized(request):
        return _problem(401, "bad bearer token")
    now = time.time()
    rows = await request.app[BASELINE].writer.write(
        _RELEASE, (now, now, request.match_info["job_id"])
    )
    if not rows:
        return _problem(409, "job is not HELD")
    return web.json_response(dict(rows[0]))


async def serve(
    data_dir: Path,
    host: str,
    port: int,
    token_sha256: str,
    max_batch: int,
) -> None:
    """Open the store, listen on ``host:port`` (0: any free port) until SIGTERM/SIGINT."""
    spool = data_dir / "spool"
    (spool / "tmp").mkdir(parents=True, exist_ok=True)
    conn = await aiosqlite.connect(data_dir / "baseline.sqlite3", isolation_level=None)
    conn.row_factory = sqlite3.Row
    await conn.execute("PRAGMA journal_mode=WAL")
    await conn.execute("PRAGMA synchronous=FULL")
    await conn.execute("PRAGMA busy_timeout=5000")
    await conn.executescript(SCHEMA)
    writer = GroupCommitWriter(conn, max_batch)
    writer.start()
    app = web.Application()
    app[BASELINE] = Baseline(writer, spool, bytes.fromhex(token_sha256))
    app.router.add_post("/submit", submit)
    app.router.add_post("/release/{job_id}", release)
    runner = web.AppRunner(app, access_log=None, handle_signals=False)
    await runner.setup()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        site = web.TCPSite(runner, host, port, backlog=1024)
        await site.start()
        bound = runner.addresses[0]
        print(json.dumps({"event": "ready", "host": bound[0], "port": bound[1]}), flush=True)
        await stop.wait()
    finally:
        await runner.cleanup()
        await writer.stop()
        await conn.close()
    stats = {"event": "stopped", "batches": writer.batches, "statements": writer.statements}
    print(json.dumps(stats), flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    """Command line entry point; returns the exit code."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--data-dir", type=Path, required=True, help="folder for the DB and spool")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0, help="TCP port; 0 picks a free one")
    p.add_argument("--token-sha256", required=True, help="hex SHA-256 of the bearer token")
    p.add_argument("--max-batch", type=int, default=512, help="statements per group commit")
    args = p.parse_args(argv)
    asyncio.run(serve(args.data_dir, args.host, args.port, args.token_sha256, args.max_batch))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
