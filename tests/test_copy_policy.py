"""The refusal policy beside judge (edgeprint/copy_policy.py): a printer's refusal classified
and signed, and what it means for the job (poison, busy, unreachable, retry): hypothesis."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from edgeprint import errors
from edgeprint.copies import JobFacts, Kind, Policy
from edgeprint.copy_policy import Refusal, on_failure, on_refusal, refusal_of

JOB = "0123456789abcdef0123456789abcdef"

#: Every printer error a Create-Job, Send-Document or Print-Job can end in, and its refusal.
_KINDS: list[tuple[type[errors.PrinterError], Refusal]] = [
    (errors.PrinterPermanent, Refusal.POISON),
    (errors.PrinterBusy, Refusal.BUSY),
    (errors.PrinterUnreachable, Refusal.UNREACHABLE),
    (errors.PrinterTimedOut, Refusal.OTHER),
    (errors.PrinterTransient, Refusal.OTHER),
    (errors.PrinterNeedsTls, Refusal.OTHER),
    (errors.PrinterError, Refusal.OTHER),
]

statuses = st.none() | st.integers(0, 0x0FFF)
jobs = st.builds(
    JobFacts,
    id=st.just(JOB),
    claim=st.integers(1, 3),
    attempts=st.integers(1, 8),
    failure_sig=st.sampled_from([None, "status:0x0400", "PrinterError"]),
    failure_printer=st.sampled_from([None, "p1", "p2"]),
)
policies = st.builds(Policy, max_attempts=st.integers(1, 6), busy_backoff_s=st.floats(0.0, 60.0))


@given(st.sampled_from(_KINDS), statuses)
def test_a_refusal_is_classified_by_its_kind_and_signed_by_its_status(
    kind: tuple[type[errors.PrinterError], Refusal], status: int | None
) -> None:
    """Permanent is poison, busy is busy, unreachable is unreachable, anything else other;
    the signature is the IPP status when the printer gave one, else the error's kind."""
    cls, want = kind
    refusal, sig = refusal_of(cls("Create-Job", "refused", status_code=status))
    assert refusal is want
    assert sig == (f"status:{status:#06x}" if status else cls.__name__)


@given(jobs, st.sampled_from(list(Refusal)), st.sampled_from(["p1", "p2"]), policies)
def test_what_a_refusal_means_for_the_job(
    job: JobFacts, refusal: Refusal, printer: str, policy: Policy
) -> None:
    """Poison parks the job at once; busy sends it again after busy_backoff_s and
    unreachable at once, neither using an attempt; anything else is the retry policy."""
    verdict = on_refusal(job, printer, refusal, "status:0x0400", "refused", policy)
    if refusal is Refusal.POISON:
        assert (verdict.kind, verdict.dead_reason) == (Kind.DEAD, "poison")
    elif refusal is Refusal.BUSY:
        assert (verdict.kind, verdict.delay_s) == (Kind.SEND, policy.busy_backoff_s)
    elif refusal is Refusal.UNREACHABLE:
        assert (verdict.kind, verdict.delay_s) == (Kind.SEND, 0.0)
    else:
        assert verdict == on_failure(job, printer, "status:0x0400", "refused", policy)


@given(jobs, st.sampled_from(["p1", "p2"]), policies)
def test_the_same_failure_on_two_printers_is_poison_else_attempts_bound_it(
    job: JobFacts, printer: str, policy: Policy
) -> None:
    """A failure signed as the last one, on another printer, blames the job (poison); past
    max_attempts the job is parked attempts_exhausted; otherwise it is retried, signed."""
    sig = "status:0x0400"
    verdict = on_failure(job, printer, sig, "refused", policy)
    if job.failure_sig == sig and job.failure_printer not in (None, printer):
        assert (verdict.kind, verdict.dead_reason) == (Kind.DEAD, "poison")
    elif job.attempts >= policy.max_attempts:
        assert (verdict.kind, verdict.dead_reason) == (Kind.DEAD, "attempts_exhausted")
    else:
        assert (verdict.kind, verdict.failure_sig) == (Kind.RETRY, sig)
