"""The job use cases on the in-memory store (issue 28): submit, release, cancel, replay,
claim, a copy opened and settled, expiry, retention and idempotent replays, each in
milliseconds. The same statements run on the SQLite file and PostgreSQL in the store
conformance tests; what a printer or HTTP adds is tested on the real appliance."""

from __future__ import annotations

import pytest

from edgeprint import errors
from edgeprint.copies import CopyState, Kind
from edgeprint.evidence import PrinterJob
from edgeprint.printers.ipp import PrinterJobRef
from edgeprint.states import JobState as S
from testbed.pdfs import make_pdf
from tests.memory_fixtures import KIOSK, TECH, MemoryService

CREATE_JOB = {"operation": "Create-Job", "document_format": "application/pdf"}


def _completed(job_id: int) -> PrinterJob:
    """The printer's word that its job ``job_id`` completed."""
    return PrinterJob(
        job_id=job_id,
        name="x",
        state=9,
        reasons=("job-completed-successfully",),
        message="",
        k_octets=1,
    )


async def test_a_held_submission_is_stored_held_with_its_document(
    memory_service: MemoryService,
) -> None:
    """A job submitted with hold=true is HELD, counted by its pages, its document spooled."""
    result = await memory_service.submit()
    job = result.job
    assert result.created
    assert (job.state, job.owner, job.pool, job.document_pages) == (S.HELD, "ann", "lobby", 1)
    assert memory_service.service.spool.path_for(job.id).exists()
    assert await memory_service.service.get(job.id) == job


async def test_a_submission_with_hold_false_is_released_at_once(
    memory_service: MemoryService,
) -> None:
    """hold=false: the job is RELEASED on submission, ready for its printer to claim."""
    job = (await memory_service.submit(printer="printer-03", pool=None, hold=False)).job
    assert job.state is S.RELEASED
    assert [e.to_state for e in await memory_service.service.jobs.events(job.id)] == [S.RELEASED]


async def test_the_same_key_and_payload_replays_the_first_job(
    memory_service: MemoryService,
) -> None:
    """A retried submission (same Idempotency-Key, same payload) is the earlier job, not a
    second one; the same key with another payload is refused."""
    first = await memory_service.submit("key-again-0001")
    again = await memory_service.submit("key-again-0001")
    assert (again.created, again.job.id) == (False, first.job.id)
    with pytest.raises(errors.IdempotencyKeyReused):
        await memory_service.submit("key-again-0001", owner="bob")
    with pytest.raises(errors.IdempotencyKeyReused):
        await memory_service.submit("key-again-0001", document=make_pdf(pages=2))
    assert sum((await memory_service.service.views.stats()).jobs_by_state.values()) == 1


async def test_a_document_that_is_not_a_pdf_is_refused_and_not_kept(
    memory_service: MemoryService,
) -> None:
    """A non-PDF is refused; no job and no spooled document remain."""
    with pytest.raises(errors.UnsupportedDocument):
        await memory_service.submit(document=b"hello, printer")
    assert memory_service.service.spool.stored_ids() == set()
    assert sum((await memory_service.service.views.stats()).jobs_by_state.values()) == 0


async def test_release_moves_a_held_job_once(memory_service: MemoryService) -> None:
    """HELD → RELEASED (optionally to another target); a second release is a StateConflict
    naming the state it found."""
    job = (await memory_service.submit()).job
    released = await memory_service.service.front.release(job.id, KIOSK, printer="printer-03")
    assert (released.state, released.printer, released.pool) == (S.RELEASED, "printer-03", None)
    with pytest.raises(errors.StateConflict) as conflict:
        await memory_service.service.front.release(job.id, KIOSK)
    assert conflict.value.state == S.RELEASED.value


async def test_release_without_any_target_is_refused(memory_service: MemoryService) -> None:
    """A held job with no printer or pool needs one named at release."""
    job = (await memory_service.submit(pool=None)).job
    with pytest.raises(errors.MissingTarget):
        await memory_service.service.front.release(job.id, KIOSK)
    with pytest.raises(errors.UnknownTarget):
        await memory_service.service.front.release(job.id, KIOSK, printer="printer-99")
    assert (await memory_service.service.get(job.id)).state is S.HELD


async def test_release_of_an_unknown_job_is_not_found(memory_service: MemoryService) -> None:
    """Releasing or cancelling a job that does not exist says so."""
    with pytest.raises(errors.JobNotFound):
        await memory_service.service.front.release("no-such-job", KIOSK)
    with pytest.raises(errors.JobNotFound):
        await memory_service.service.front.cancel("no-such-job", KIOSK)


async def test_cancel_ends_a_waiting_job_and_refuses_a_finished_one(
    memory_service: MemoryService,
) -> None:
    """HELD and RELEASED jobs are CANCELLED at once; cancelling again is a StateConflict."""
    held = (await memory_service.submit("key-held-00001")).job
    released = (await memory_service.submit("key-rel-000001", hold=False)).job
    for job in (held, released):
        assert (await memory_service.service.front.cancel(job.id, KIOSK)).state is S.CANCELLED
        with pytest.raises(errors.StateConflict):
            await memory_service.service.front.cancel(job.id, KIOSK)


async def test_claim_takes_the_pools_oldest_released_job_for_its_printer(
    memory_service: MemoryService,
) -> None:
    """A pool printer claims the pool's released jobs oldest first, never a held job or
    another target's; the claimed job is PRINTING there."""
    await memory_service.submit("key-held-00001")
    first = (await memory_service.submit("key-pool-00001", hold=False)).job
    memory_service.clock.now += 1
    second = (await memory_service.submit("key-pool-00002", hold=False)).job
    await memory_service.submit("key-alone-0001", printer="printer-03", pool=None, hold=False)
    service = memory_service.service
    a = await service.worker.claim_next("printer-02")
    b = await service.worker.claim_next("printer-01")
    assert a is not None
    assert b is not None
    assert [(a.id, a.state, a.printed_on), (b.id, b.state, b.printed_on)] == [
        (first.id, S.PRINTING, "printer-02"),
        (second.id, S.PRINTING, "printer-01"),
    ]
    assert await service.worker.claim_next("printer-01") is None


async def test_a_copy_opened_and_printed_makes_the_job_done(
    memory_service: MemoryService,
) -> None:
    """claim and open a copy → Create-Job made it, the upload was acknowledged, the printer
    completed it → the copy PRINTED and the job DONE in one step."""
    service = memory_service.service
    job = (await memory_service.submit(printer="printer-03", pool=None, hold=False)).job
    claimed = await service.worker.claim_and_open("printer-03", printer_up_s=None, **CREATE_JOB)
    assert claimed is not None
    printing, copy = claimed
    assert (printing.id, printing.state) == (job.id, S.PRINTING)
    assert copy is not None
    assert copy.state is CopyState.CREATING
    made = await service.worker.copy_created(copy, PrinterJobRef(7), sending=True)
    assert made is not None
    assert made.state is CopyState.SENDING
    sent = await service.worker.copy_acknowledged(made)
    assert sent is not None
    settled, done = await service.outcomes.settle_printed(
        printing, sent, _completed(7), evidence="state"
    )
    assert settled is not None
    assert done is not None
    assert (settled.state, done.state, done.printed_on) == (CopyState.PRINTED, S.DONE, "printer-03")
    events = [e.to_state for e in await service.jobs.events(job.id)]
    assert events == [S.RELEASED, S.PRINTING, S.DONE]


async def test_a_refused_copy_sends_the_job_again(memory_service: MemoryService) -> None:
    """A copy the printer refused (busy) is judged SEND: the job is RELEASED again and its
    attempt is given back."""
    service = memory_service.service
    await memory_service.submit(printer="printer-03", pool=None, hold=False)
    claimed = await service.worker.claim_and_open("printer-03", printer_up_s=None, **CREATE_JOB)
    assert claimed is not None
    job, copy = claimed
    assert copy is not None
    refused = await service.outcomes.settle_copy(copy, CopyState.REFUSED, "server-error-busy")
    assert refused is not None
    assert refused.state is CopyState.REFUSED
    verdict = service.outcomes.judge(job, await service.worker.copies_of(job.id))
    assert verdict.kind is Kind.SEND
    again = await service.outcomes.settle_job(job, "printer-03", verdict, not_before=0.0)
    assert again is not None
    assert (again.state, again.attempts) == (S.RELEASED, job.attempts - 1)


async def test_replay_gives_a_dead_job_a_fresh_start(memory_service: MemoryService) -> None:
    """A DEAD job replayed is RELEASED with its attempts and back-off reset; replaying a job
    that is not DEAD is a StateConflict."""
    service = memory_service.service
    job = (await memory_service.submit(printer="printer-03", pool=None, hold=False)).job
    with pytest.raises(errors.StateConflict):
        await service.front.replay(job.id, TECH)
    claimed = await service.worker.claim_next("printer-03")
    assert claimed is not None
    dead = await service.outcomes.fail(claimed, "printer-03", "poison", "document-unprintable")
    assert dead is not None
    assert (dead.state, dead.dead_reason) == (S.DEAD, "poison")
    replayed = await service.front.replay(job.id, TECH)
    assert (replayed.state, replayed.attempts, replayed.dead_reason) == (S.RELEASED, 0, None)
    assert await service.worker.claim_next("printer-03") is not None


async def test_housekeeping_expires_held_jobs_past_their_ttl(
    memory_service: MemoryService,
) -> None:
    """Held jobs older than hold_ttl_s become EXPIRED; younger ones and released ones stay."""
    service = memory_service.service
    old = (await memory_service.submit("key-old-000001")).job
    released = (await memory_service.submit("key-rel-000001", hold=False)).job
    memory_service.clock.now += service.config.retention.hold_ttl_s
    young = (await memory_service.submit("key-young-0001")).job
    memory_service.clock.now += 1
    expired, _ = await service.upkeep.housekeeping()
    assert expired == [old.id]
    states = [(await service.get(j.id)).state for j in (old, released, young)]
    assert states == [S.EXPIRED, S.RELEASED, S.HELD]


async def test_housekeeping_deletes_finished_documents_past_retention(
    memory_service: MemoryService,
) -> None:
    """A finished job's document is deleted once document_retention_s has passed (and the job
    says so); a DEAD job's is kept for a replay."""
    service = memory_service.service
    done = (await memory_service.submit("key-done-00001")).job
    await service.front.cancel(done.id, KIOSK)
    dead = (
        await memory_service.submit("key-dead-00001", printer="printer-03", pool=None, hold=False)
    ).job
    claimed = await service.worker.claim_next("printer-03")
    assert claimed is not None
    await service.outcomes.fail(claimed, "printer-03", "poison", "document-unprintable")
    assert await service.upkeep.housekeeping() == ([], 0)
    memory_service.clock.now += service.config.retention.document_retention_s + 1
    assert await service.upkeep.housekeeping() == ([], 1)
    assert service.spool.stored_ids() == {dead.id}
    assert (await service.get(done.id)).document_deleted_at == memory_service.clock.now


async def test_a_job_with_a_release_pin_releases_only_with_it(
    memory_service: MemoryService,
) -> None:
    """A kiosk must give the job's PIN: none is PinRequired, a wrong one PinMismatch (the job
    stays HELD); the right one releases it."""
    service = memory_service.service
    job = (await memory_service.submit(release_pin="4711")).job
    with pytest.raises(errors.PinRequired):
        await service.front.release(job.id, KIOSK)
    with pytest.raises(errors.PinMismatch):
        await service.front.release(job.id, KIOSK, pin="1234")
    assert (await service.get(job.id)).state is S.HELD
    assert (await service.front.release(job.id, KIOSK, pin="4711")).state is S.RELEASED


async def test_cancel_of_a_printing_job_flags_its_copy_or_ends_it(
    memory_service: MemoryService,
) -> None:
    """A PRINTING job with a copy on its printer is flagged for Cancel-Job (still PRINTING);
    one without a copy yet is CANCELLED at once."""
    service = memory_service.service
    await memory_service.submit("key-copy-00001", printer="printer-03", pool=None, hold=False)
    claimed = await service.worker.claim_and_open("printer-03", printer_up_s=None, **CREATE_JOB)
    assert claimed is not None
    with_copy, _ = claimed
    flagged = await service.front.cancel(with_copy.id, KIOSK)
    assert (flagged.state, flagged.cancel_requested) == (S.PRINTING, True)
    await memory_service.submit("key-bare-00001", printer="printer-03", pool=None, hold=False)
    bare = await service.worker.claim_next("printer-03")
    assert bare is not None
    assert (await service.front.cancel(bare.id, KIOSK)).state is S.CANCELLED


async def test_selected_pages_replace_the_staged_document_and_none_selected_leaves_nothing(
    memory_service: MemoryService,
) -> None:
    """``select_pages`` keeps a whole selection as it is, replaces a cut one by a new staged
    document (the old one gone), and on a selection of no page discards what was staged."""
    documents, spool = memory_service.service.documents, memory_service.service.spool
    staged = spool.stage()
    staged.write(make_pdf(pages=3))
    assert await documents.select_pages(staged, [(1, 3)]) is staged  # every page
    cut = await documents.select_pages(staged, [(2, 2)])
    assert cut is not staged
    assert not staged.tmp_path.exists()
    assert cut.tmp_path.exists()
    assert (await documents.inspect(cut)).pages == 1
    cut.discard()
    nothing = spool.stage()
    nothing.write(make_pdf(pages=2))
    with pytest.raises(errors.NoPageSelected):
        await documents.select_pages(nothing, [(5, 9)])
    assert list(spool.tmp_dir.iterdir()) == []
