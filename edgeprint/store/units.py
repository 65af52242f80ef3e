"""The few writes of several statements that apply all or none (one group commit each)."""

from __future__ import annotations

from edgeprint.copies import Copy, CopyState
from edgeprint.records import JobRecord
from edgeprint.store.copies import Copies, Figures
from edgeprint.store.copy_reads import copy_from_row
from edgeprint.store.jobs import Jobs
from edgeprint.store.stock_sql import StockCondition


async def claim_and_open(
    jobs: Jobs,
    copies: Copies,
    printer: str,
    pool: str | None,
    *,
    operation: str,
    document_format: str,
    printer_up_s: int | None,
    epoch: int | None,
    fit: StockCondition | None,
    takes_zpl: bool,
    now: float,
    run: float,
) -> tuple[JobRecord, Copy | None] | None:
    """Claim the next job for ``printer`` and open its copy, in one transaction (see
    :meth:`Jobs.claim_next_sql`, :meth:`Copies.open_claimed_sql`). None: nothing to claim; no
    copy when the claimed job already has one printed."""
    claim = jobs.claim_next_sql(
        printer, pool, now=now, actor=f"printer:{printer}", fit=fit, takes_zpl=takes_zpl, run=run
    )
    opened = copies.open_claimed_sql(
        printer=printer,
        state=CopyState.SENDING if operation == "Print-Job" else CopyState.CREATING,
        operation=operation,
        document_format=document_format,
        printer_up_s=printer_up_s,
        epoch=epoch,
        now=now,
    )
    rows = await jobs.store.write_many([claim, opened])
    if not rows[0]:
        return None
    return JobRecord.from_row(rows[0][0]), copy_from_row(rows[1][0]) if rows[1] else None


async def printed_and_done(
    jobs: Jobs,
    copies: Copies,
    job: JobRecord,
    copy: Copy,
    pj: Figures,
    *,
    evidence: str,
    now: float,
) -> tuple[Copy | None, JobRecord | None]:
    """The common end in one transaction: ``copy`` printed whole (by ``evidence``) and its job,
    still on that printer in that claim, DONE."""
    settle = copies.settle_sql(copy, CopyState.PRINTED, "completed", pj, evidence=evidence, now=now)
    done = jobs.complete_sql(job.id, copy.printer, job.claims, now=now, evidence=evidence)
    rows = await jobs.store.write_many([settle, done])
    settled = copy_from_row(rows[0][0]) if rows[0] else None
    return settled, JobRecord.from_row(rows[1][0]) if rows[1] else None
