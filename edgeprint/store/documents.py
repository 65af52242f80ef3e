"""Job documents in the PostgreSQL store: ``documents(job_id, seq, chunk bytea)``.

With PostgreSQL the appliance keeps each document twice: in its spool (the
file the renderer and the IPP upload read) and here, so that a replacement
appliance with an empty ``data_dir`` finds every document the database's jobs
need (:func:`restore`). A document is written here, chunk by chunk (1 MiB,
never the whole document in memory), right after its spool file is durable
and before its job row is stored; retention deletes the chunks in the same
statement that stamps ``jobs.document_deleted_at`` (a trigger). Size limit:
``[server] max_document_bytes`` (20 MiB by default, at most 1 GiB).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import os
from pathlib import Path

from edgeprint import errors
from edgeprint.logs import log_event
from edgeprint.store.interface import Store

log = logging.getLogger(__name__)

CHUNK_BYTES = 1024 * 1024


def _read_chunk(path: Path, offset: int) -> bytes:
    with open(path, "rb") as fh:
        fh.seek(offset)
        return fh.read(CHUNK_BYTES)


class DbDocuments:
    """The ``documents`` table of one (PostgreSQL) store.

    :meth:`discard` (the spool's synchronous remove) queues a deletion that
    :meth:`run_discards` carries out; what is still queued at a stop is swept
    at the next start-up.
    """

    def __init__(self, store: Store) -> None:
        self._store = store
        self._discards: asyncio.Queue[str | None] = asyncio.Queue()

    async def put(self, job_id: str, path: Path) -> None:
        """Store the file at ``path`` as the document of ``job_id``; raises errors.StoreError.

        On an error no chunk of it is left.
        """
        seq = 0
        try:
            while chunk := await asyncio.to_thread(_read_chunk, path, seq * CHUNK_BYTES):
                await self._store.write(
                    "INSERT INTO documents (job_id, seq, chunk) VALUES (?, ?, ?)",
                    (job_id, seq, chunk),
                )
                seq += 1
        except OSError as exc:
            await self._forget(job_id)
            raise errors.StoreUnavailable(f"cannot read the staged document: {exc}") from exc
        except errors.StoreError:
            await self._forget(job_id)
            raise

    async def _forget(self, job_id: str) -> None:
        """Drop a half-stored document; if the database is gone, the start-up sweep will."""
        with contextlib.suppress(errors.StoreError):
            await self.delete(job_id)

    async def fetch(self, job_id: str, dest: Path) -> str:
        """Write the document of ``job_id`` to ``dest`` (fsynced); its SHA-256 (hex).

        Raises errors.StoreError, OSError.
        """
        digest = hashlib.sha256()
        fh = await asyncio.to_thread(open, dest, "wb")
        try:
            seq = 0
            while rows := await self._store.read(
                "SELECT chunk FROM documents WHERE job_id = ? AND seq = ?", (job_id, seq)
            ):
                chunk = bytes(rows[0][0])
                digest.update(chunk)
                await asyncio.to_thread(fh.write, chunk)
                seq += 1
            await asyncio.to_thread(fh.flush)
            await asyncio.to_thread(os.fsync, fh.fileno())
        finally:
            fh.close()
        return digest.hexdigest()

    def discard(self, job_id: str) -> None:
        """Delete ``job_id``'s document soon (its job was refused or its document retired)."""
        self._discards.put_nowait(job_id)

    def stop_discards(self) -> None:
        """Make :meth:`run_discards` return once the deletions queued so far are done."""
        self._discards.put_nowait(None)

    async def run_discards(self) -> None:
        """Carry out queued deletions until :meth:`stop_discards`; a store error is logged
        (the document is swept at the next start-up) and the next deletion goes on."""
        while (job_id := await self._discards.get()) is not None:
            try:
                await self.delete(job_id)
            except errors.StoreError as exc:
                log_event(
                    log,
                    "document_discard_failed",
                    message="document not deleted from the database",
                    level=logging.WARNING,
                    job_id=job_id,
                    error=str(exc),
                )

    async def delete(self, job_id: str) -> None:
        """Drop every chunk of ``job_id``'s document (none is fine)."""
        await self._store.write("DELETE FROM documents WHERE job_id = ?", (job_id,))

    async def sweep_orphans(self, *, older_than_s: float = 0.0) -> int:
        """Drop the documents no job refers to (a crash or a refusal after the upload) stored
        more than ``older_than_s`` ago; how many.

        Run at start-up only: a document being uploaded has no job row yet. With several
        appliances on the database, ``older_than_s`` spares the uploads of the others.
        """
        rows = await self._store.write(
            "DELETE FROM documents d WHERE NOT EXISTS (SELECT 1 FROM jobs j WHERE j.id = d.job_id) "
            "AND d.stored_at <= extract(epoch FROM clock_timestamp()) - ? RETURNING job_id",
            (older_than_s,),
        )
        return len({r[0] for r in rows})

    async def needed(self) -> dict[str, str]:
        """Job id → document SHA-256 of every job whose document is kept."""
        rows = await self._store.read(
            "SELECT id, document_sha256 FROM jobs WHERE document_deleted_at IS NULL"
        )
        return {str(r[0]): str(r[1]) for r in rows}


async def restore(documents: DbDocuments, spool_dir: Path, tmp_dir: Path) -> list[str]:
    """Fetch into ``spool_dir`` every kept document that is not there; the job ids fetched.

    Each is written to ``tmp_dir``, checked against the job's SHA-256, then
    renamed into place. A document missing or wrong in the database too is
    left out (its job fails as it would on a lost spool file).
    """
    restored: list[str] = []
    for job_id, sha256 in (await documents.needed()).items():
        final = spool_dir / f"{job_id}.pdf"
        if final.exists():
            continue
        tmp = tmp_dir / f"{job_id}.restore"
        try:
            if await documents.fetch(job_id, tmp) != sha256:
                continue
            os.replace(tmp, final)
        finally:
            tmp.unlink(missing_ok=True)
        restored.append(job_id)
    if restored:
        fd = os.open(spool_dir, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    return restored
