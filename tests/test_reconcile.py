"""The reconciliation decision table (DESIGN §3), checked with hypothesis."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from edgeprint.dispatch.reconcile import Decision, Stored, Verdict, copy_key, decide
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
STATES = [
    JOB_PENDING,
    JOB_HELD,
    JOB_PROCESSING,
    JOB_STOPPED,
    JOB_CANCELED,
    JOB_ABORTED,
    JOB_COMPLETED,
]
REASONS = ["none", "job-printing", "job-data-insufficient", "job-incoming", "job-canceled-by-user"]


def printer_jobs(owner: str) -> st.SearchStrategy[PrinterJob]:
    return st.builds(
        PrinterJob,
        job_id=st.integers(1, 40),
        name=st.just(f"edgeprint-{owner}"),
        state=st.sampled_from(STATES),
        reasons=st.lists(st.sampled_from(REASONS), max_size=2).map(tuple),
        message=st.just(""),
        k_octets=st.none(),
        created_s=st.integers(0, 3),
    )


copies_st = st.lists(printer_jobs(JOB), max_size=4)
foreign_st = st.lists(printer_jobs(OTHER), max_size=3)
stored_st = st.builds(
    Stored,
    job_id=st.just(JOB),
    printer_job_id=st.none() | st.integers(1, 40),
    upload=st.sampled_from([None, "sending", "truncated"]),
    cancel_requested=st.booleans(),
    discounted=st.frozensets(
        st.builds("{}@{}".format, st.integers(1, 40), st.integers(0, 3)), max_size=3
    ),
)


def _dedup(copies: list[PrinterJob]) -> list[PrinterJob]:
    return list({c.job_id: c for c in copies}.values())


@given(stored_st)
def test_unreachable_printer_means_wait(stored: Stored) -> None:
    """Without an answer from the printer nothing is decided."""
    assert decide(stored, None) == Decision(Verdict.WAIT)


@given(stored_st, copies_st, foreign_st)
def test_other_jobs_never_change_the_verdict(
    stored: Stored, copies: list[PrinterJob], foreign: list[PrinterJob]
) -> None:
    """Only printer jobs whose job-name carries this job's id count (ids are reused)."""
    mine = _dedup(copies)
    foreign = [f for f in _dedup(foreign) if f.job_id not in {c.job_id for c in mine}]
    assert decide(stored, mine) == decide(stored, mine + foreign)


@given(stored_st, copies_st)
def test_never_a_second_copy_while_one_may_print_or_has_printed(
    stored: Stored, copies: list[PrinterJob]
) -> None:
    """SEND/RETRY (a new copy later) only when no copy is live and none completed in full."""
    copies = _dedup(copies)
    d = decide(stored, copies)
    counted = [c for c in copies if copy_key(c) not in stored.discounted]
    live = [c for c in counted if c.state not in (JOB_CANCELED, JOB_ABORTED, JOB_COMPLETED)]
    completed_full = [c for c in counted if c.state == JOB_COMPLETED and not stored.truncated(c)]
    if d.verdict in (Verdict.SEND, Verdict.RETRY, Verdict.TRUNCATED_DONE):
        assert not live
        assert not completed_full
    if completed_full and not live:
        assert d.verdict is Verdict.DONE


@given(stored_st, copies_st)
def test_follow_only_a_whole_live_copy(stored: Stored, copies: list[PrinterJob]) -> None:
    """FOLLOW picks the newest live copy, never one still waiting for data or truncated."""
    copies = _dedup(copies)
    d = decide(stored, copies)
    if d.verdict is Verdict.FOLLOW:
        assert d.copy is not None
        live = [
            c for c in copies
            if c.state not in (JOB_CANCELED, JOB_ABORTED, JOB_COMPLETED)
            and copy_key(c) not in stored.discounted
        ]  # fmt: skip
        assert d.copy.job_id == max(c.job_id for c in live)
        assert stored.upload == "sending"
        assert not stored.cancel_requested
        assert not {"job-data-insufficient", "job-incoming"} & set(d.copy.reasons)
    if d.verdict is Verdict.CANCEL:
        assert d.copy is not None
        assert d.copy.state not in (JOB_CANCELED, JOB_ABORTED, JOB_COMPLETED)


@given(stored_st, copies_st)
def test_discounted_copies_never_count(stored: Stored, copies: list[PrinterJob]) -> None:
    """A copy recorded as truncated is as if the printer did not have it."""
    copies = _dedup(copies)
    marked = Stored(
        stored.job_id, stored.printer_job_id, stored.upload, stored.cancel_requested,
        frozenset(copy_key(c) for c in copies),
    )  # fmt: skip
    assert decide(marked, copies) == decide(marked, [])


@given(stored_st)
def test_no_copy_at_all(stored: Stored) -> None:
    """No trace at the printer: resend unless a whole document may have printed (unknown)."""
    expected = Verdict.UNKNOWN if stored.upload == "sending" else Verdict.SEND
    assert decide(stored, []).verdict is expected


def _apply(stored: Stored, copies: list[PrinterJob], d: Decision) -> list[PrinterJob]:
    """What the printer holds after the worker carries out a CANCEL."""
    assert d.copy is not None
    return [
        PrinterJob(c.job_id, c.name, JOB_CANCELED, ("job-canceled-by-user",), "", None, c.created_s)
        if c.job_id == d.copy.job_id
        else c
        for c in copies
    ]


@given(stored_st, copies_st)
def test_repeated_decisions_settle(stored: Stored, copies: list[PrinterJob]) -> None:
    """Carrying out CANCELs leads to a final verdict within as many rounds as there are copies."""
    copies = _dedup(copies)
    for _ in range(len(copies) + 1):
        d = decide(stored, copies)
        if d.verdict is not Verdict.CANCEL:
            assert d.verdict in {
                Verdict.FOLLOW, Verdict.DONE, Verdict.TRUNCATED_DONE, Verdict.RETRY,
                Verdict.SEND, Verdict.UNKNOWN,
            }  # fmt: skip
            return
        copies = _apply(stored, copies, d)
    raise AssertionError("no final verdict")
