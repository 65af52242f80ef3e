"""The copy state machine (edgeprint/copies.py) and the job-level rules
(edgeprint/copy_policy.py): table and hypothesis."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from edgeprint import errors
from edgeprint.copies import (
    COPY_TRANSITIONS,
    LIVE_COPY_STATES,
    SETTLED_COPY_STATES,
    Copy,
    CopyAction,
    CopyState,
    JobFacts,
    Kind,
    Policy,
)
from edgeprint.copy_policy import judge
from edgeprint.store.interface import Store

C = CopyState
JOB = "0123456789abcdef0123456789abcdef"


def test_settled_copies_never_change() -> None:
    """No transition leaves a settled state: what the printer said stays said."""
    assert not [k for k in COPY_TRANSITIONS if k[0] in SETTLED_COPY_STATES]


def test_every_live_state_can_settle_every_way_and_be_cancelled() -> None:
    """From any live state the printer's word can settle a copy, and edgeprint can cancel it."""
    for live in LIVE_COPY_STATES:
        assert COPY_TRANSITIONS[(live, CopyAction.CANCEL)] is C.CANCELLING
        for settled in SETTLED_COPY_STATES:
            assert COPY_TRANSITIONS[(live, CopyAction(settled.value))] is settled


def test_acknowledged_only_from_sending() -> None:
    """The printer can only acknowledge an upload that was sent (or one being cancelled)."""
    sources = {s for (s, a) in COPY_TRANSITIONS if a is CopyAction.ACKNOWLEDGE}
    assert sources == {C.SENDING, C.CANCELLING}


async def test_schema_check_lists_exactly_the_copy_states(store: Store) -> None:
    """The copies table's CHECK (state IN …) is generated from CopyState and refuses others
    (on both backends)."""
    if store.dialect == "sqlite":
        rows = await store.read("SELECT sql FROM sqlite_master WHERE name = 'copies'")
    else:
        rows = await store.read(
            "SELECT string_agg(pg_get_constraintdef(c.oid), ' ') FROM pg_constraint c "
            "JOIN pg_class t ON t.oid = c.conrelid WHERE t.relname = 'copies' "
            "AND t.relnamespace = current_schema()::regnamespace AND c.contype = 'c'"
        )
    sql = rows[0][0]
    for state in CopyState:
        assert f"'{state.value}'" in sql
    with pytest.raises(errors.StoreUnavailable, match=r"(?i)check constraint"):
        await store.write(
            "INSERT INTO copies (job_id, claim, printer, state, operation, document_format, "
            "document_bytes, actor, created_at, updated_at) "
            "VALUES ('j', 1, 'p', 'NOT-A-STATE', 'Create-Job', 'application/pdf', 1, 'a', 0, 0)"
        )


def copy(i: int, **kw: object) -> Copy:
    base = Copy(
        id=i, job_id=JOB, claim=1, printer="p1", state=C.ACKNOWLEDGED, operation="Create-Job",
        document_format="application/pdf", document_bytes=4000, impressions_expected=1,
        printer_job_id=i, sent_at=1.0, acknowledged_at=2.0,
    )  # fmt: skip
    return replace(base, **kw)  # type: ignore[arg-type]


copy_st = st.builds(
    lambda i, state, claim, sent, acked, origin, k, out, written, printer: copy(
        i,
        state=state,
        claim=claim,
        sent_at=sent,
        acknowledged_at=acked,
        cancel_origin=origin,
        k_octets=k,
        impressions_completed=out,
        written_at=written,
        printer=printer,
        printer_job_id=i if state is not C.CREATING else None,
    ),
    st.integers(1, 50),
    st.sampled_from(list(CopyState)),
    st.integers(0, 2),
    st.none() | st.just(1.0),
    st.none() | st.just(2.0),
    st.sampled_from([None, "edgeprint", "requested"]),
    st.none() | st.integers(0, 5),
    st.none() | st.integers(0, 3),
    st.none() | st.just(1.5),
    st.sampled_from(["p1", "p2"]),
)
policy_st = st.builds(
    Policy,
    ask_forgotten=st.sampled_from([frozenset(), frozenset({"p1"}), frozenset({"p1", "p2"})]),
    counting=st.sampled_from([frozenset(), frozenset({"p1"})]),
    reprint_unknown=st.booleans(),
)
copies_st = st.lists(copy_st, max_size=5, unique_by=lambda c: c.id)
jobs_st = st.builds(JobFacts, id=st.just(JOB), claim=st.integers(1, 2), attempts=st.integers(1, 6))


def _counts(c: Copy, policy: Policy) -> bool:
    return c.state is C.PRINTED or (
        c.state is C.UNVERIFIED and c.printer not in policy.ask_forgotten
    )


@given(jobs_st, copies_st, policy_st)
def test_done_only_with_a_printed_copy(job: JobFacts, copies: list[Copy], policy: Policy) -> None:
    """DONE exactly when some copy printed (or was forgotten whole on a printer whose
    on_forgotten is "printed") and no live copy of the claim remains."""
    verdict = judge(job, copies, policy)
    printed = any(_counts(c, policy) for c in copies)
    if verdict.kind is Kind.DONE:
        assert printed
        assert verdict.copy is not None
        assert _counts(verdict.copy, policy)
    if printed:
        assert verdict.kind in (Kind.DONE, Kind.CANCEL)


@given(jobs_st, copies_st, policy_st)
def test_a_partial_copy_is_never_done_nor_resent_without_a_person(
    job: JobFacts, copies: list[Copy], policy: Policy
) -> None:
    """A copy of the claim that stopped part-way: never DONE (unless another copy printed),
    never a new copy: a person decides (DEAD outcome_unknown) or it was their cancel."""
    verdict = judge(job, copies, policy)
    current = [c for c in copies if c.claim == job.claim]
    settled = not any(c.live for c in current)  # a claim's copies are made one at a time
    if (
        settled
        and any(c.state is C.PARTIAL for c in current)
        and not any(_counts(c, policy) for c in copies)
    ):
        assert verdict.kind not in (Kind.DONE, Kind.SEND, Kind.RETRY)


@given(jobs_st, copies_st, policy_st)
def test_never_sent_again_while_a_document_may_be_on_paper(
    job: JobFacts, copies: list[Copy], policy: Policy
) -> None:
    """SEND/RETRY (a new copy) never follow a copy of the claim that completed unverified,
    stopped part-way, was forgotten, vanished or was lost with its document (but for
    ``reprint`` of a vanished one), or that is still live."""
    verdict = judge(job, copies, policy)
    if verdict.kind in (Kind.SEND, Kind.RETRY):
        current = [c for c in copies if c.claim == job.claim]
        assert not any(c.live for c in current)
        assert not any(c.state in (C.INCOMPLETE, C.PARTIAL, C.UNVERIFIED) for c in current)
        risky = {C.LOST} | (set() if policy.reprint_unknown else {C.VANISHED})
        assert not any(c.state in risky and c.document_may_have_left for c in current)


@given(jobs_st, copies_st, policy_st)
def test_an_unacknowledged_copy_is_followed_only_on_evidence(
    job: JobFacts, copies: list[Copy], policy: Policy
) -> None:
    """FOLLOW of a copy whose upload was never acknowledged needs the printer's own figures
    (k-octets or impressions covering it) or, on a printer known to count impressions, an
    upload handed over whole; never while the printer says it waits for data."""
    verdict = judge(job, copies, policy)
    c = verdict.copy
    if verdict.kind is Kind.FOLLOW and c is not None and c.state is not C.ACKNOWLEDGED:
        assert c.state is C.SENDING
        if c.k_octets is not None:
            assert c.whole(c.k_octets, None)
        else:
            assert c.whole(None, c.impressions_completed) or (
                c.written_at is not None and c.printer in policy.counting
            )


@given(jobs_st, copies_st)
def test_someone_elses_cancel_is_never_retried(job: JobFacts, copies: list[Copy]) -> None:
    """A copy of the claim cancelled at the printer by someone else: CANCELLED (after any live
    copy is cancelled), unless a copy printed."""
    verdict = judge(job, copies, Policy())
    current = [c for c in copies if c.claim == job.claim]
    if any(c.state is C.CANCELLED_ELSEWHERE for c in current) and not any(
        _counts(c, Policy()) for c in copies
    ):
        assert verdict.kind in (Kind.CANCELLED, Kind.CANCEL)


@given(jobs_st, copies_st)
def test_every_verdict_that_parks_a_job_says_why(job: JobFacts, copies: list[Copy]) -> None:
    """DEAD comes with a dead_reason and words for last_error."""
    verdict = judge(job, copies, Policy())
    if verdict.kind is Kind.DEAD:
        assert verdict.dead_reason in (
            "outcome_unknown", "document_error", "poison", "attempts_exhausted",
        )  # fmt: skip
        assert verdict.error


def test_a_possibly_truncated_copy_is_outcome_unknown() -> None:
    """Completed but not verifiably whole: DEAD outcome_unknown, never DONE, never resent."""
    v = judge(JobFacts(JOB, 1, 1), [copy(1, state=C.INCOMPLETE, acknowledged_at=None)], Policy())
    assert (v.kind, v.dead_reason) == (Kind.DEAD, "outcome_unknown")
    assert "possibly truncated copy printed" in (v.error or "")


def test_a_document_error_is_retried_once_then_dead() -> None:
    """The printer blamed the document once: retry; twice: DEAD document_error."""
    once = [copy(1, state=C.DOCUMENT_ERROR, job_state_reasons="document-format-error")]
    assert judge(JobFacts(JOB, 1, 1), once, Policy()).kind is Kind.RETRY
    twice = [*once, copy(2, claim=2, state=C.DOCUMENT_ERROR)]
    v = judge(JobFacts(JOB, 2, 2), twice, Policy())
    assert (v.kind, v.dead_reason) == (Kind.DEAD, "document_error")


def test_a_vanished_copy_with_its_document_is_reprinted_only_when_configured() -> None:
    """The printer forgot a copy that had the document: outcome_unknown, or SEND with reprint."""
    gone = [copy(1, state=C.VANISHED)]
    assert judge(JobFacts(JOB, 1, 1), gone, Policy()).dead_reason == "outcome_unknown"
    assert judge(JobFacts(JOB, 1, 1), gone, Policy(reprint_unknown=True)).kind is Kind.SEND
    empty = [copy(1, state=C.VANISHED, sent_at=None, acknowledged_at=None)]
    assert judge(JobFacts(JOB, 1, 1), empty, Policy()).kind is Kind.SEND


def test_a_partial_copy_says_how_much_came_out() -> None:
    """Stopped after 2 of 5 impressions: DEAD outcome_unknown with the count, the person's
    three choices named, and the count on the verdict (the job's pages_printed)."""
    partial = copy(
        1, state=C.PARTIAL, impressions_completed=2, impressions_expected=5,
        outcome="aborted after 2 impression(s) came out (aborted-by-system)",
    )  # fmt: skip
    v = judge(JobFacts(JOB, 1, 1), [partial], Policy())
    assert (v.kind, v.dead_reason, v.pages_printed) == (Kind.DEAD, "outcome_unknown", 2)
    assert "2 of 5 impression(s) came out" in (v.error or "")
    assert "print the rest" in (v.error or "")


def test_a_forgotten_copy_is_done_unless_a_person_decides() -> None:
    """Acknowledged whole, then forgotten: DONE by default, DEAD outcome_unknown on a printer
    whose on_forgotten is "ask"."""
    forgot = copy(
        1,
        state=C.UNVERIFIED,
        settled_by="forgotten_after_acknowledged",
        outcome="the printer acknowledged the whole document and reported no error",
    )
    assert judge(JobFacts(JOB, 1, 1), [forgot], Policy()).kind is Kind.DONE
    v = judge(JobFacts(JOB, 1, 1), [forgot], Policy(ask_forgotten=frozenset({"p1"})))
    assert (v.kind, v.dead_reason) == (Kind.DEAD, "outcome_unknown")
    assert 'on_forgotten = "ask"' in (v.error or "")


def test_live_copies_are_followed_only_when_whole() -> None:
    """Acknowledged → FOLLOW; sent but unverified → CANCEL; k-octets covering it → FOLLOW;
    job-id unknown → FIND; a second live copy → the older one is cancelled."""
    job = JobFacts(JOB, 1, 1)
    assert judge(job, [copy(1)], Policy()).kind is Kind.FOLLOW
    unverified = copy(1, state=C.SENDING, acknowledged_at=None)
    assert judge(job, [unverified], Policy()).kind is Kind.CANCEL
    assert judge(job, [replace(unverified, k_octets=4)], Policy()).kind is Kind.FOLLOW
    assert judge(job, [replace(unverified, k_octets=3)], Policy()).kind is Kind.CANCEL
    # the answer to a whole upload was lost: followed where the printer counts impressions
    written = replace(unverified, written_at=1.5)
    assert judge(job, [written], Policy()).kind is Kind.CANCEL
    assert judge(job, [written], Policy(counting=frozenset({"p1"}))).kind is Kind.FOLLOW
    waiting = replace(written, job_state_reasons="job-incoming")
    assert judge(job, [waiting], Policy(counting=frozenset({"p1"}))).kind is Kind.CANCEL
    creating = copy(1, state=C.CREATING, printer_job_id=None, sent_at=None, acknowledged_at=None)
    assert judge(job, [creating], Policy()).kind is Kind.FIND
    v = judge(job, [copy(1), copy(2)], Policy())
    assert (v.kind, v.copy.id if v.copy else None) == (Kind.CANCEL, 1)
