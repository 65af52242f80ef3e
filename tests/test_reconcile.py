"""What a printer's answer means for one copy (dispatch/reconcile.py): pure, with hypothesis."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from edgeprint.copies import Copy, CopyState
from edgeprint.dispatch.reconcile import find_orphans, identify, observe
from edgeprint.printers.ipp import (
    JOB_ABORTED,
    JOB_CANCELED,
    JOB_COMPLETED,
    JOB_HELD,
    JOB_PENDING,
    JOB_PROCESSING,
    JOB_STOPPED,
    PrinterJob,
)

JOB = "0123456789abcdef0123456789abcdef"
OTHER = "fedcba9876543210fedcba9876543210"
C = CopyState
STATES = [
    JOB_PENDING,
    JOB_HELD,
    JOB_PROCESSING,
    JOB_STOPPED,
    JOB_CANCELED,
    JOB_ABORTED,
    JOB_COMPLETED,
]
REASONS = [
    "none", "job-printing", "job-incoming", "job-data-insufficient", "job-canceled-by-user",
    "job-canceled-at-device", "document-format-error", "job-completed-successfully",
]  # fmt: skip


def copy(**kw: object) -> Copy:
    base = Copy(
        id=1, job_id=JOB, claim=1, printer="p1", state=C.ACKNOWLEDGED, operation="Create-Job",
        document_format="application/pdf", document_bytes=4000, impressions_expected=1,
        printer_job_id=7, created_s=100, printer_up_s=99, sent_at=1.0, acknowledged_at=2.0,
    )  # fmt: skip
    return replace(base, **kw)  # type: ignore[arg-type]


def pj(**kw: object) -> PrinterJob:
    base = PrinterJob(
        job_id=7, name=f"edgeprint-{JOB}", state=JOB_COMPLETED, reasons=(), message="",
        k_octets=None, created_s=100, user="ann", impressions_completed=None,
    )  # fmt: skip
    return replace(base, **kw)  # type: ignore[arg-type]


copies_st = st.builds(
    copy,
    state=st.sampled_from(sorted(c for c in CopyState if c.value in {
        "creating", "created", "sending", "acknowledged", "cancelling"})),
    sent_at=st.none() | st.just(1.0),
    acknowledged_at=st.none() | st.just(2.0),
    cancel_origin=st.sampled_from([None, "edgeprint", "requested"]),
)  # fmt: skip
printer_jobs = st.builds(
    pj,
    state=st.sampled_from(STATES),
    reasons=st.lists(st.sampled_from(REASONS), max_size=3).map(tuple),
    k_octets=st.none() | st.integers(0, 8),
    impressions_completed=st.none() | st.integers(0, 2),
)


@given(copies_st, printer_jobs)
def test_completed_is_printed_only_when_whole(c: Copy, found: PrinterJob) -> None:
    """PRINTED needs a completed job (or edgeprint's own cancel after every page came out), a
    document sent, proof it was whole and no document error."""
    obs = observe(c, found)
    if obs.settled is C.PRINTED:
        assert found.state == JOB_COMPLETED or (
            found.state == JOB_CANCELED and c.cancel_origin == "edgeprint"
        )
        assert c.sent_at is not None
        assert "document-format-error" not in found.reasons
        assert c.whole(found.k_octets, found.impressions_completed)


@given(copies_st, printer_jobs)
def test_a_cancel_is_someone_elses_only_when_edgeprint_never_asked(
    c: Copy, found: PrinterJob
) -> None:
    """Canceled → CANCELLED when edgeprint recorded its cancel first, else CANCELLED_ELSEWHERE;
    edgeprint's own cancel that came after pages came out is PRINTED or INCOMPLETE."""
    obs = observe(c, found)
    if found.state == JOB_CANCELED:
        if c.cancel_origin == "edgeprint" and c.sent_at and found.impressions_completed:
            assert obs.settled in (C.PRINTED, C.INCOMPLETE)
        else:
            expected = C.CANCELLED if c.cancel_origin else C.CANCELLED_ELSEWHERE
            assert obs.settled is expected


def test_edgeprints_cancel_that_came_too_late_is_not_a_reason_to_print_again() -> None:
    """A copy edgeprint cancelled (its upload unverified) that the printer reports canceled
    after it put the pages out: PRINTED (all of them) or INCOMPLETE (some), never CANCELLED."""
    c = copy(state=C.CANCELLING, acknowledged_at=None, cancel_origin="edgeprint")
    assert observe(c, pj(state=JOB_CANCELED, impressions_completed=1)).settled is C.PRINTED
    two = replace(c, impressions_expected=2)
    assert observe(two, pj(state=JOB_CANCELED, impressions_completed=1)).settled is C.INCOMPLETE
    assert observe(c, pj(state=JOB_CANCELED, impressions_completed=0)).settled is C.CANCELLED


@given(copies_st, printer_jobs)
def test_a_live_printer_job_leaves_the_copy_live(c: Copy, found: PrinterJob) -> None:
    """Pending, held, processing or stopped at the printer: nothing is settled yet."""
    if found.state not in (JOB_CANCELED, JOB_ABORTED, JOB_COMPLETED):
        assert observe(c, found).settled is None


def test_a_document_error_on_a_completed_job_is_not_printed() -> None:
    """ "Completed" with document-format-error: DOCUMENT_ERROR, whatever else it says."""
    obs = observe(copy(), pj(reasons=("job-completed-with-errors", "document-format-error")))
    assert obs.settled is C.DOCUMENT_ERROR


def test_an_unacknowledged_copy_is_whole_by_the_printers_figures() -> None:
    """Not acknowledged: job-k-octets covering the document, or all impressions, show it whole."""
    c = copy(acknowledged_at=None, document_bytes=4000)
    assert observe(c, pj(k_octets=4)).settled is C.PRINTED
    assert observe(c, pj(k_octets=3)).settled is C.INCOMPLETE
    assert observe(c, pj(impressions_completed=1)).settled is C.PRINTED
    assert observe(c, pj(impressions_completed=0)).settled is C.INCOMPLETE
    assert observe(c, pj()).settled is C.INCOMPLETE


def test_a_job_the_printer_no_longer_lists_has_vanished() -> None:
    """Not listed is not "not printed": the copy VANISHED (the rules decide what that means)."""
    assert observe(copy(), None).settled is C.VANISHED


def test_identity_is_job_id_and_time_at_creation_then_name() -> None:
    """A reused job-id (other time-at-creation) or another edgeprint job's name is not the copy;
    a renamed job ("Print") with the right id and time is."""
    c = copy()
    assert identify(c, pj(name="Print", user="Guest"))
    assert not identify(c, pj(created_s=5))
    assert not identify(c, pj(job_id=8))
    unknown_time = copy(created_s=None, printer_up_s=99)
    assert identify(unknown_time, pj(created_s=None))
    assert not identify(unknown_time, pj(created_s=10))  # made before edgeprint's copy
    assert not identify(unknown_time, pj(name=f"edgeprint-{OTHER}"))


def test_an_orphan_is_found_by_name_or_by_what_edgeprint_knows() -> None:
    """After a crash right after Create-Job: the job named after it; on a printer that renames,
    the one empty job made after edgeprint's copy by its owner and known as no other copy."""
    c = copy(state=C.CREATING, printer_job_id=None, created_s=None, sent_at=None)
    named = pj(job_id=3, state=JOB_PENDING, created_s=120)
    assert find_orphans(c, "ann", [named], set()) == [named]
    empty = pj(job_id=4, name="Print", user="Guest", state=JOB_PENDING, created_s=120)
    older = pj(job_id=2, name="Print", user="Guest", state=JOB_PENDING, created_s=50)
    busy = pj(job_id=5, name="Print", user="Guest", state=JOB_PROCESSING, created_s=120,
              reasons=("job-printing",), k_octets=3)  # fmt: skip
    known = pj(job_id=6, name="Print", user="Guest", state=JOB_PENDING, created_s=121)
    stranger = pj(job_id=9, name="Print", user="bob", state=JOB_PENDING, created_s=120)
    found = find_orphans(c, "ann", [empty, older, busy, known, stranger], {(6, 121)})
    assert found == [empty]
