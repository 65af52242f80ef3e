"""Job documents in the PostgreSQL store (edgeprint/store/documents.py): chunked, whole or not
at all, removed with retention, restored into an empty spool."""

from __future__ import annotations

import asyncio
import hashlib
import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from edgeprint import errors
from edgeprint.spool import Spool
from edgeprint.states import JobState
from edgeprint.store.documents import CHUNK_BYTES, DbDocuments, restore
from edgeprint.store.job_rows import NewJob
from edgeprint.store.jobs import Jobs
from edgeprint.store.postgres import PostgresStore

JOB = "0123456789abcdef0123456789abcdef"


@pytest.fixture
async def pg(pg_url: str) -> AsyncIterator[PostgresStore]:
    store = PostgresStore(pg_url)
    await store.open()
    try:
        yield store
    finally:
        await store.close()


async def _job(store: PostgresStore, job_id: str, data: bytes) -> None:
    new = NewJob(
        id=job_id, idempotency_key=f"k-{job_id}", request_sha256="r", state=JobState.HELD,
        owner="ann", printer="printer-01", pool=None, priority=100, copies=1,
        document_sha256=hashlib.sha256(data).hexdigest(), document_bytes=len(data),
        token_name="kiosk-1", correlation_id=None,
    )  # fmt: skip
    assert await Jobs(store).insert(new, now=1.0, actor="kiosk-1") is not None


async def _chunks(store: PostgresStore, job_id: str) -> list[int]:
    rows = await store.read(
        "SELECT length(chunk) FROM documents WHERE job_id = ? ORDER BY seq", (job_id,)
    )
    return [int(r[0]) for r in rows]


async def test_a_document_is_stored_in_chunks_and_restored_byte_for_byte(
    pg: PostgresStore, tmp_path: Path
) -> None:
    """A 2.5 MiB document becomes three chunks of at most 1 MiB; restore() brings it back into
    an empty spool with the job's SHA-256, and skips documents already there."""
    data = os.urandom(2 * CHUNK_BYTES + CHUNK_BYTES // 2)
    src = tmp_path / "src.pdf"
    src.write_bytes(data)
    docs = DbDocuments(pg)
    await docs.put(JOB, src)
    await _job(pg, JOB, data)
    assert await _chunks(pg, JOB) == [CHUNK_BYTES, CHUNK_BYTES, CHUNK_BYTES // 2]
    spool = Spool(tmp_path / "data")
    spool.prepare()
    assert await restore(docs, spool.dir, spool.tmp_dir) == [JOB]
    assert spool.path_for(JOB).read_bytes() == data
    assert list(spool.tmp_dir.iterdir()) == []
    assert await restore(docs, spool.dir, spool.tmp_dir) == []


async def test_a_document_whose_bytes_differ_from_its_job_is_not_restored(
    pg: PostgresStore, tmp_path: Path
) -> None:
    """A document whose stored chunks do not hash to the job's document_sha256 stays out of the
    spool (the job fails as on a lost file; nothing wrong is printed)."""
    src = tmp_path / "src.pdf"
    src.write_bytes(b"%PDF-1.4 stored")
    await DbDocuments(pg).put(JOB, src)
    await _job(pg, JOB, b"%PDF-1.4 something else")
    spool = Spool(tmp_path / "data")
    spool.prepare()
    assert await restore(DbDocuments(pg), spool.dir, spool.tmp_dir) == []
    assert not spool.path_for(JOB).exists()
    assert list(spool.tmp_dir.iterdir()) == []


async def test_a_failed_put_leaves_no_chunk(pg: PostgresStore, tmp_path: Path) -> None:
    """A document that cannot be read to the end is refused with StoreUnavailable and none of
    it stays in the database."""
    docs = DbDocuments(pg)
    with pytest.raises(errors.StoreUnavailable, match="cannot read the staged document"):
        await docs.put(JOB, tmp_path / "missing.pdf")
    assert await _chunks(pg, JOB) == []


async def test_retention_and_orphans_remove_chunks(pg: PostgresStore, tmp_path: Path) -> None:
    """Stamping a job's document deleted drops its chunks in the same statement; chunks of a job
    that was never stored are swept at start-up."""
    src = tmp_path / "src.pdf"
    src.write_bytes(b"%PDF-1.4 badge")
    docs = DbDocuments(pg)
    await docs.put(JOB, src)
    await _job(pg, JOB, b"%PDF-1.4 badge")
    orphan = "f" * 32
    await docs.put(orphan, src)
    assert await docs.sweep_orphans() == 1
    assert await _chunks(pg, orphan) == []
    assert await _chunks(pg, JOB) == [len(b"%PDF-1.4 badge")]
    await pg.write("UPDATE jobs SET state = 'DONE' WHERE id = ?", (JOB,))
    await Jobs(pg).mark_documents_deleted([JOB], now=2.0)
    assert await _chunks(pg, JOB) == []


async def test_the_spool_mirrors_a_committed_document_or_refuses_it(
    pg: PostgresStore, tmp_path: Path
) -> None:
    """With a mirror, commit() returns once the document is in the database too; when the
    database refuses it, the spool file is removed and the error is the caller's."""
    spool = Spool(tmp_path / "data", mirror=DbDocuments(pg))
    spool.prepare()
    staged = spool.stage()
    staged.write(b"%PDF-1.4 mirrored")
    await staged.commit(JOB)
    assert await _chunks(pg, JOB) == [len(b"%PDF-1.4 mirrored")]
    await pg.close()  # the database is gone: the next commit must fail whole
    staged = spool.stage()
    staged.write(b"%PDF-1.4 refused")
    with pytest.raises(errors.StoreUnavailable):
        await staged.commit("e" * 32)
    assert not spool.path_for("e" * 32).exists()


async def test_a_removed_document_leaves_the_database_too(
    pg: PostgresStore, tmp_path: Path
) -> None:
    """The spool's remove (a refused job, retention) queues the deletion of the mirrored chunks,
    done by the discard task before it stops."""
    docs = DbDocuments(pg)
    spool = Spool(tmp_path / "data", mirror=docs)
    spool.prepare()
    task = asyncio.create_task(docs.run_discards())
    staged = spool.stage()
    staged.write(b"%PDF-1.4 refused later")
    await staged.commit(JOB)
    assert await _chunks(pg, JOB) == [len(b"%PDF-1.4 refused later")]
    spool.remove(JOB)
    docs.stop_discards()
    await asyncio.wait_for(task, timeout=10)
    assert not spool.path_for(JOB).exists()
    assert await _chunks(pg, JOB) == []
