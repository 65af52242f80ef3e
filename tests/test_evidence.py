"""What each printer answer proves (edgeprint/evidence/): pure, with hypothesis."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from edgeprint.copies import Copy, CopyState
from edgeprint.evidence import (
    EVIDENCE,
    JOB_ABORTED,
    JOB_CANCELED,
    JOB_COMPLETED,
    JOB_HELD,
    JOB_PENDING,
    JOB_PROCESSING,
    JOB_STOPPED,
    Context,
    Evidence,
    Listing,
    PrinterJob,
    Sighting,
    find_orphans,
    identify,
    observe,
    table_markdown,
    unverified_words,
)
from edgeprint.personality import Echo, History, Traits

JOB = "0123456789abcdef0123456789abcdef"
OTHER = "fedcba9876543210fedcba9876543210"
C = CopyState
E = Evidence
STATES = [
    JOB_PENDING, JOB_HELD, JOB_PROCESSING, JOB_STOPPED, JOB_CANCELED, JOB_ABORTED, JOB_COMPLETED,
]  # fmt: skip
REASONS = [
    "none", "job-printing", "job-incoming", "job-data-insufficient", "job-canceled-by-user",
    "job-canceled-at-device", "document-format-error", "job-completed-successfully",
    "aborted-by-system",
]  # fmt: skip
#: A printer whose restarts show (its up-time moves): the usual case.
SEEN = Traits(up_time_moves=True)
CTX = Context(epoch=1, traits=SEEN)


def copy(**kw: object) -> Copy:
    base = Copy(
        id=1, job_id=JOB, claim=1, printer="p1", state=C.ACKNOWLEDGED, operation="Create-Job",
        document_format="application/pdf", document_bytes=4000, impressions_expected=1,
        printer_job_id=7, created_s=100, printer_up_s=99, sent_at=1.0, acknowledged_at=2.0,
        epoch=1,
    )  # fmt: skip
    return replace(base, **kw)  # type: ignore[arg-type]


def pj(**kw: object) -> PrinterJob:
    base = PrinterJob(
        job_id=7, name=f"edgeprint-{JOB}", state=JOB_COMPLETED, reasons=(), message="",
        k_octets=None, created_s=100, user="ann", impressions_completed=None,
    )  # fmt: skip
    return replace(base, **kw)  # type: ignore[arg-type]


def direct(found: PrinterJob | None, ctx: Context = CTX, **kw: object) -> Copy | CopyState | None:
    return observe(copy(**kw), Sighting(found, asked=True), ctx).settled


live_copies = st.builds(
    copy,
    state=st.sampled_from([C.CREATED, C.SENDING, C.ACKNOWLEDGED, C.CANCELLING]),
    sent_at=st.none() | st.just(1.0),
    acknowledged_at=st.none() | st.just(2.0),
    cancel_origin=st.sampled_from([None, "edgeprint", "requested"]),
    impressions_expected=st.none() | st.integers(1, 3),
    epoch=st.sampled_from([None, 1, 2]),
    job_uuid=st.none() | st.just("urn:uuid:a"),
)
printer_jobs = st.builds(
    pj,
    state=st.sampled_from([*STATES, 0]),
    reasons=st.lists(st.sampled_from(REASONS), max_size=3).map(tuple),
    k_octets=st.none() | st.integers(0, 8),
    impressions_completed=st.none() | st.integers(0, 3),
    uuid=st.none() | st.sampled_from(["urn:uuid:a", "urn:uuid:b"]),
    job_id=st.sampled_from([7, 8]),
    created_s=st.none() | st.sampled_from([5, 100]),
)
traits_st = st.builds(
    Traits,
    job_name=st.sampled_from(list(Echo)),
    name_length=st.none() | st.integers(4, 30),
    history=st.sampled_from(list(History)),
    up_time_moves=st.none() | st.booleans(),
)
sightings = st.builds(
    Sighting,
    direct=st.none() | printer_jobs,
    asked=st.booleans(),
    listed=st.none() | st.lists(printer_jobs, max_size=3).map(tuple),
    listing=st.sampled_from(list(Listing)),
)
contexts = st.builds(
    Context,
    epoch=st.sampled_from([1, 2]),
    traits=traits_st,
    printer_reasons=st.sampled_from([(), ("media-jam-report",), ("toner-low-warning",)]),
)


@given(live_copies, sightings, contexts)
def test_printed_only_on_a_completed_whole_copy_of_this_epoch(
    c: Copy, seen: Sighting, ctx: Context
) -> None:
    """PRINTED needs the printer's job that *is* the copy, completed (or, with every
    impression counted out, aborted — or canceled on edgeprint's own cancel), a document
    sent, proof it was whole and no document error; and it names verifying evidence."""
    obs = observe(c, seen, ctx)
    if obs.settled is C.PRINTED:
        found = obs.pj
        assert found is not None
        assert identify(c, found, ctx.traits, epoch=ctx.epoch)
        every = (
            c.impressions_expected is not None
            and (found.impressions_completed or 0) >= c.impressions_expected
        )
        assert (
            found.state == JOB_COMPLETED
            or (found.state == JOB_ABORTED and every)
            or (found.state == JOB_CANCELED and c.cancel_origin == "edgeprint" and every)
        )
        assert c.sent_at is not None
        assert "document-format-error" not in found.reasons
        assert c.whole(found.k_octets, found.impressions_completed)
        assert EVIDENCE[obs.evidence].verified


@given(live_copies, sightings, contexts)
def test_another_epoch_is_never_matched_by_job_id_alone(
    c: Copy, seen: Sighting, ctx: Context
) -> None:
    """A copy of an earlier life of the printer is matched only by its job-uuid (or
    date-time-at-creation with its job-id); else it vanished — never forgotten, never printed
    on the word of a job that merely has its id."""
    if c.epoch is None or c.epoch == ctx.epoch:
        return
    obs = observe(c, seen, ctx)
    if obs.pj is not None:
        assert c.job_uuid is not None
        assert obs.pj.uuid == c.job_uuid
    else:
        assert obs.settled in (None, C.VANISHED)
        assert obs.evidence in (E.VANISHED_NEW_EPOCH, E.NOT_CONFIRMED)


@given(live_copies, sightings, contexts)
def test_forgotten_needs_everything_it_claims(c: Copy, seen: Sighting, ctx: Context) -> None:
    """UNVERIFIED ("acknowledged whole, then forgotten") only for an acknowledged copy of this
    epoch, not being cancelled, on a printer whose restarts show, absent from a Get-Jobs list
    that keeps no older finished job, with no stop reason on it or on the printer."""
    obs = observe(c, seen, ctx)
    if obs.settled is not C.UNVERIFIED:
        return
    assert obs.evidence is E.FORGOTTEN_AFTER_ACKNOWLEDGED
    assert c.acknowledged_at is not None
    assert c.cancel_origin is None
    assert c.epoch in (None, ctx.epoch)
    assert ctx.traits.restarts_visible
    assert seen.listed is not None
    assert not ctx.printer_reasons or ctx.printer_reasons == ("toner-low-warning",)
    if seen.listing is Listing.ALL:
        assert not [j for j in seen.listed if j.terminal and j.created_s == 5]


@given(live_copies, sightings, contexts)
def test_absence_proves_nothing_without_a_list(c: Copy, seen: Sighting, ctx: Context) -> None:
    """Get-Job-Attributes' not-found alone (no Get-Jobs list) settles nothing: some printers
    answer not-found for a job they still list."""
    if seen.listed is None:
        obs = observe(c, seen, ctx)
        if obs.pj is None:
            assert obs.settled is None
            assert obs.evidence is E.NOT_CONFIRMED


@given(live_copies, printer_jobs)
def test_a_live_printer_job_leaves_the_copy_live(c: Copy, found: PrinterJob) -> None:
    """Pending, held, processing or stopped at the printer: nothing is settled yet."""
    if found.state not in (JOB_CANCELED, JOB_ABORTED, JOB_COMPLETED):
        assert observe(c, Sighting(found, asked=True), CTX).settled is None


@given(live_copies, printer_jobs)
def test_a_stop_after_pages_is_never_aborted(c: Copy, found: PrinterJob) -> None:
    """Aborted with impressions completed: PARTIAL (part of it came out), or PRINTED when every
    impression came out — never ABORTED (which would send it again whole)."""
    obs = observe(c, Sighting(found, asked=True), CTX)
    out = found.impressions_completed
    if obs.pj is not None and found.state == JOB_ABORTED and out:
        expected = c.impressions_expected
        every = c.sent_at is not None and expected is not None and out >= expected
        assert obs.settled is (C.PRINTED if every else C.PARTIAL)


def test_edgeprints_cancel_that_came_too_late_is_not_a_reason_to_print_again() -> None:
    """A copy edgeprint cancelled (its upload unverified) that the printer reports canceled
    after it put pages out: PRINTED (all of them) or PARTIAL (some), never CANCELLED."""
    kw = {"state": C.CANCELLING, "acknowledged_at": None, "cancel_origin": "edgeprint"}
    assert direct(pj(state=JOB_CANCELED, impressions_completed=1), **kw) is C.PRINTED
    assert (
        direct(pj(state=JOB_CANCELED, impressions_completed=1), impressions_expected=2, **kw)
        is C.PARTIAL
    )
    assert direct(pj(state=JOB_CANCELED, impressions_completed=0), **kw) is C.CANCELLED


def test_an_abort_says_what_came_out() -> None:
    """Aborted: 0 impressions counted → ABORTED (retry policy); some → PARTIAL; not counted
    after the document was sent → PARTIAL (unknown), a one-impression copy too (a printer may
    print the page and abort after it: adversary seed 324); nothing sent → ABORTED."""
    assert direct(pj(state=JOB_ABORTED, impressions_completed=0)) is C.ABORTED
    obs = observe(
        copy(impressions_expected=3), Sighting(pj(state=JOB_ABORTED, impressions_completed=2),
                                               asked=True), CTX,
    )  # fmt: skip
    assert (obs.settled, obs.evidence, obs.pages_out) == (C.PARTIAL, E.STOPPED_AFTER_PAGES, 2)
    assert direct(pj(state=JOB_ABORTED)) is C.PARTIAL
    assert direct(pj(state=JOB_ABORTED), sent_at=None, acknowledged_at=None) is C.ABORTED
    unknown = observe(
        copy(impressions_expected=3), Sighting(pj(state=JOB_ABORTED), asked=True), CTX
    )
    assert (unknown.settled, unknown.evidence) == (C.PARTIAL, E.ABORTED_PAGES_UNKNOWN)


def test_a_document_error_on_a_completed_job() -> None:
    """Completed with document-format-error: DOCUMENT_ERROR when nothing came out, else
    INCOMPLETE (something came out as the printer could not print it): never PRINTED."""
    errs = ("job-completed-with-errors", "document-format-error")
    assert direct(pj(reasons=errs, impressions_completed=0)) is C.DOCUMENT_ERROR
    obs = observe(copy(), Sighting(pj(reasons=errs, impressions_completed=1), asked=True), CTX)
    assert (obs.settled, obs.evidence) == (C.INCOMPLETE, E.COMPLETED_WITH_DOCUMENT_ERRORS)
    assert direct(pj(reasons=errs)) is C.INCOMPLETE


def test_an_unacknowledged_copy_is_whole_by_the_printers_figures() -> None:
    """Not acknowledged: job-k-octets covering the document, or all impressions, show it whole."""
    kw = {"acknowledged_at": None, "document_bytes": 4000}
    assert direct(pj(k_octets=4), **kw) is C.PRINTED
    assert direct(pj(k_octets=3), **kw) is C.INCOMPLETE
    assert direct(pj(impressions_completed=1), **kw) is C.PRINTED
    assert direct(pj(impressions_completed=0), **kw) is C.INCOMPLETE
    assert direct(pj(), **kw) is C.INCOMPLETE


def test_not_found_by_get_job_attributes_but_listed_by_get_jobs_is_found() -> None:
    """A printer that answers Get-Job-Attributes not-found for a job Get-Jobs still lists (it
    knows itself by another name): the listed job is the copy."""
    listed = pj(state=JOB_PROCESSING, reasons=("job-printing",))
    obs = observe(copy(), Sighting(None, asked=True, listed=(listed,)), CTX)
    assert (obs.settled, obs.evidence, obs.pj) == (None, E.LISTED_LIVE, listed)


def test_forgotten_and_vanished_are_told_apart_by_what_the_printer_keeps() -> None:
    """Gone from a complete list in the same epoch: forgotten (the printer keeps no finished
    job older than it) — unless the list still holds an older finished job, the upload was
    never acknowledged, it was being cancelled, the printer reports a jam (not an empty
    tray), or its restarts cannot be seen: then vanished, saying why."""
    gone = Sighting(None, asked=True, listed=(), listing=Listing.ALL)
    forgot = observe(copy(), gone, CTX)
    assert (forgot.settled, forgot.evidence) == (C.UNVERIFIED, E.FORGOTTEN_AFTER_ACKNOWLEDGED)
    older = pj(job_id=6, created_s=50)
    kept = observe(copy(), replace(gone, listed=(older,)), CTX)
    assert (kept.settled, kept.evidence) == (C.VANISHED, E.VANISHED)
    assert "older finished job 6" in (kept.outcome or "")
    assert observe(copy(acknowledged_at=None), gone, CTX).settled is C.VANISHED
    assert observe(copy(cancel_origin="edgeprint"), gone, CTX).settled is C.VANISHED
    jam = replace(CTX, printer_reasons=("media-jam-report",))
    assert "media-jam" in (observe(copy(), gone, jam).outcome or "")
    # out of paper: a printer waits with the job it cannot go on with (seed 588)
    empty = replace(CTX, printer_reasons=("media-empty-error", "media-needed-error"))
    assert observe(copy(), gone, empty).settled is C.UNVERIFIED
    # "other" names no cause: only a stopped printer's (other-error, bare other) rules out
    # forgotten, never the other-report a printer shows all the time (seed 1893)
    for always in ("other-report", "other-warning"):
        chatty = replace(CTX, printer_reasons=(always, "com.acme-widget-warning"))
        assert observe(copy(), gone, chatty).settled is C.UNVERIFIED, always
    for stopped in ("other-error", "other"):
        obs = observe(copy(), gone, replace(CTX, printer_reasons=(stopped,)))
        assert (obs.settled, "other" in (obs.outcome or "")) == (C.VANISHED, True), stopped
    blind = replace(CTX, traits=Traits(up_time_moves=False))
    assert observe(copy(), gone, blind).settled is C.VANISHED
    # a printer that lists only live jobs (it ignored which-jobs=all): gone means finished
    live_only = observe(copy(), replace(gone, listing=Listing.LIVE, listed=(older,)), CTX)
    assert live_only.settled is C.UNVERIFIED


def test_a_copy_of_an_earlier_epoch() -> None:
    """The printer restarted since the copy was made: its job-id names a job of the new life;
    the copy is matched only by job-uuid, else it vanished with the old epoch."""
    new_life = Context(epoch=2, traits=SEEN)
    same_id = pj(state=JOB_COMPLETED, created_s=3)
    obs = observe(copy(), Sighting(same_id, asked=True, listed=(same_id,)), new_life)
    assert (obs.settled, obs.evidence) == (C.VANISHED, E.VANISHED_NEW_EPOCH)
    kept = pj(uuid="urn:uuid:a", job_id=7, created_s=3)
    obs = observe(copy(job_uuid="urn:uuid:a"), Sighting(listed=(kept,)), new_life)
    assert (obs.settled, obs.evidence) == (C.PRINTED, E.COMPLETED_ACKNOWLEDGED)


def test_identity_is_job_id_time_and_uuid_then_the_name_as_the_printer_echoes_it() -> None:
    """A reused job-id (other time-at-creation or uuid) is not the copy; names count only as
    the printer is known to echo them: whole, shortened, contained; a printer that renames every
    job is matched by id and time alone."""
    c = copy()
    t = SEEN
    assert identify(c, pj(name="Print", user="Guest"), t, epoch=1)
    assert not identify(c, pj(created_s=5), t, epoch=1)
    assert not identify(c, pj(job_id=8), t, epoch=1)
    assert not identify(copy(job_uuid="urn:uuid:a"), pj(uuid="urn:uuid:b"), t, epoch=1)
    unknown_time = copy(created_s=None, printer_up_s=99)
    assert identify(unknown_time, pj(created_s=None), t, epoch=1)
    assert not identify(unknown_time, pj(created_s=10), t, epoch=1)  # made before the copy
    assert not identify(unknown_time, pj(name=f"edgeprint-{OTHER}"), t, epoch=1)
    assert identify(unknown_time, pj(name=f"edgeprint-{JOB}"[:20]), t, epoch=1)
    whole = replace(t, job_name=Echo.WHOLE)
    assert not identify(unknown_time, pj(name="Print"), whole, epoch=1)
    short = replace(t, job_name=Echo.SHORTENED, name_length=20)
    assert identify(unknown_time, pj(name=f"edgeprint-{JOB}"[:20]), short, epoch=1)
    assert not identify(unknown_time, pj(name=f"edgeprint-{OTHER}"[:20]), short, epoch=1)
    contains = replace(t, job_name=Echo.CONTAINS)
    assert identify(unknown_time, pj(name=f"Copy of edgeprint-{JOB}.pdf"), contains, epoch=1)
    replaced = replace(t, job_name=Echo.REPLACED)
    assert identify(unknown_time, pj(name="Microsoft Word - x"), replaced, epoch=1)


def test_a_clock_not_yet_known_to_move_dates_nothing() -> None:
    """The copy's job-id names a job made before the copy by the printer's clock, but that
    printer-up-time was never seen to move (seed 262: an up-time frozen at 1000 beside a real
    time-at-creation of 1): not another job yet — the copy stays live until the clock is
    learnt; once it is known to move the job is another; once known frozen, the copy."""
    c = copy(created_s=None, printer_up_s=1000, acknowledged_at=None)
    early = pj(created_s=1)
    seen = Sighting(early, asked=True, listed=(early,), listing=Listing.ALL)
    unsure = observe(c, seen, Context(epoch=1, traits=Traits()))
    assert (unsure.settled, unsure.evidence) == (None, E.NOT_CONFIRMED)
    assert "printer-up-time" in (unsure.outcome or "")
    moving = observe(c, seen, CTX)
    assert (moving.settled, moving.evidence) == (C.VANISHED, E.VANISHED)
    frozen = observe(c, seen, Context(epoch=1, traits=Traits(up_time_moves=False)))
    assert (frozen.pj, frozen.settled, frozen.evidence) == (
        early,
        C.INCOMPLETE,
        E.COMPLETED_UNVERIFIED,
    )


def test_an_orphan_is_found_by_name_or_by_what_edgeprint_knows() -> None:
    """After a crash right after Create-Job: the job named after it; on a printer that renames,
    the one empty job made after edgeprint's copy by its owner and known as no other copy."""
    c = copy(state=C.CREATING, printer_job_id=None, created_s=None, sent_at=None)
    t = SEEN
    named = pj(job_id=3, state=JOB_PENDING, created_s=120)
    assert find_orphans(c, "ann", [named], set(), t) == [named]
    empty = pj(job_id=4, name="Print", user="Guest", state=JOB_PENDING, created_s=120)
    older = pj(job_id=2, name="Print", user="Guest", state=JOB_PENDING, created_s=50)
    busy = pj(job_id=5, name="Print", user="Guest", state=JOB_PROCESSING, created_s=120,
              reasons=("job-printing",), k_octets=3)  # fmt: skip
    known = pj(job_id=6, name="Print", user="Guest", state=JOB_PENDING, created_s=121)
    stranger = pj(job_id=9, name="Print", user="bob", state=JOB_PENDING, created_s=120)
    found = find_orphans(c, "ann", [empty, older, busy, known, stranger], {(6, 121)}, t)
    assert found == [empty]
    # a printer known to shorten names: the shortened name finds it
    short = replace(t, job_name=Echo.SHORTENED, name_length=20)
    cut = pj(job_id=11, name=f"edgeprint-{JOB}"[:20], state=JOB_PENDING, created_s=120)
    assert find_orphans(c, "ann", [cut], set(), short) == [cut]


def test_the_evidence_table_is_complete_and_in_design() -> None:
    """Every Evidence has a row; the words for an unverified DONE come from it; DESIGN §3 prints
    the table as the code has it."""
    assert set(EVIDENCE) == set(Evidence)
    words = unverified_words("forgotten_after_acknowledged", "printer-02")
    assert words is not None
    assert words.startswith("printer-02 acknowledged the whole document")
    assert unverified_words("completed_acknowledged", "printer-02") is None
    assert unverified_words("person", None) is None
    design = (Path(__file__).resolve().parent.parent / "docs" / "DESIGN.md").read_text()
    assert table_markdown() in design, "DESIGN §3's evidence table differs from EVIDENCE"
