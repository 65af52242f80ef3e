"""The claim's format filter (issue 23 part 5), on SQLite and PostgreSQL: a pool's ZPL job
is claimed only by a printer that takes ZPL; a job naming a printer is that printer's."""

from __future__ import annotations

from edgeprint.states import JobState
from edgeprint.store.interface import Store
from edgeprint.store.job_rows import NewJob
from edgeprint.store.jobs import Jobs

ZPL = "application/vnd.zebra-zpl"


def _job(job_id: str, fmt: str, *, printer: str | None = None, priority: int = 100) -> NewJob:
    return NewJob(
        id=job_id, idempotency_key=f"key-{job_id}", request_sha256="r", state=JobState.RELEASED,
        owner="o", printer=printer, pool=None if printer else "lobby", priority=priority,
        copies=1, document_sha256="d", document_bytes=1, token_name="t", correlation_id=None,
        document_pages=1, document_format=fmt,
    )  # fmt: skip


async def test_a_pool_zpl_job_is_claimed_only_by_a_printer_that_takes_zpl(store: Store) -> None:
    """The ZPL job first in line is passed over by a printer without ZPL (it takes the PDF
    behind it, then nothing) and taken by one with ZPL; the stored format reads back."""
    jobs = Jobs(store)
    await jobs.insert(_job("zpl-1", ZPL, priority=1), 1.0, "t")
    await jobs.insert(_job("pdf-1", "application/pdf", priority=2), 1.0, "t")
    plain = await jobs.claim_next("printer-01", "lobby", now=2.0, actor="a")
    assert plain is not None
    assert (plain.id, plain.document_format) == ("pdf-1", "application/pdf")
    assert await jobs.claim_next("printer-01", "lobby", now=2.0, actor="a") is None
    label = await jobs.claim_next("label-01", "lobby", now=2.0, actor="b", takes_zpl=True)
    assert label is not None
    assert (label.id, label.document_format, label.state) == ("zpl-1", ZPL, JobState.PRINTING)


async def test_a_zpl_job_naming_a_printer_is_claimed_by_it(store: Store) -> None:
    """Not filtered: the named printer claims it (and refuses it unsent if it cannot take
    ZPL), so such a job never waits for ever unseen."""
    jobs = Jobs(store)
    await jobs.insert(_job("zpl-2", ZPL, printer="printer-01"), 1.0, "t")
    got = await jobs.claim_next("printer-01", None, now=2.0, actor="a", takes_zpl=False)
    assert got is not None
    assert got.id == "zpl-2"
