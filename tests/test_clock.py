"""The run clock and the step detector (edgeprint.clock), the stored run clock on both
backends (edgeprint.store.run_clock), and the jobs' ages counted on it (issue 27 §3)."""

from __future__ import annotations

import logging

import pytest
from hypothesis import given
from hypothesis import strategies as st

from edgeprint.clock import STEP_THRESHOLD_S, RunClock, StepDetector, wall_cutoff
from edgeprint.metrics import Metrics
from edgeprint.service.clock_watch import ClockWatch, words
from edgeprint.states import Action, JobState
from edgeprint.store import run_clock
from edgeprint.store.interface import Store
from edgeprint.store.job_rows import NewJob
from edgeprint.store.jobs import Jobs


class Ticks:
    """A settable clock."""

    def __init__(self, at: float) -> None:
        self.at = at

    def __call__(self) -> float:
        return self.at


_steps = st.floats(min_value=-1e9, max_value=1.6e9, allow_nan=False)
_elapsed = st.floats(min_value=0.0, max_value=1e6, allow_nan=False)


@given(base=st.floats(min_value=0, max_value=4e9), moves=st.lists(st.tuples(_elapsed, _steps)))
def test_the_run_clock_advances_with_the_monotonic_clock_only(
    base: float, moves: list[tuple[float, float]]
) -> None:
    """Whatever the wall clock does, run() = base + monotonic time elapsed."""
    mono, wall = Ticks(1000.0), Ticks(1.7e9)
    clock = RunClock(base, monotonic=mono, wall=wall)
    for elapsed, step in moves:
        mono.at += elapsed
        wall.at += elapsed + step
        assert clock.run() == pytest.approx(base + (mono.at - 1000.0), abs=1e-3)
        assert clock.wall() == wall.at


@given(base=st.floats(min_value=0, max_value=4e9), others=st.lists(st.floats(0, 5e9)))
def test_adopt_moves_forward_never_back(base: float, others: list[float]) -> None:
    mono = Ticks(0.0)
    clock = RunClock(base, monotonic=mono)
    for other in others:
        before = clock.run()
        after = clock.adopt(other)
        assert after == max(before, other) == clock.run()
        mono.at += 1.0
        assert clock.run() == pytest.approx(after + 1.0)


@given(
    readings=st.lists(st.tuples(_elapsed, st.floats(-0.5, 0.5)), max_size=30),
    step=st.one_of(
        st.floats(min_value=STEP_THRESHOLD_S + 0.01, max_value=1.6e9),
        st.floats(min_value=-1.6e9, max_value=-STEP_THRESHOLD_S - 0.01),
    ),
)
def test_the_detector_reports_each_step_once_and_no_jitter(
    readings: list[tuple[float, float]], step: float
) -> None:
    """Jitter within the threshold is no step; one step is reported once, signed, with the
    wall reading that was due."""
    detector = StepDetector()
    wall, mono = 1.7e9, 50.0
    assert detector.feed(wall, mono) is None
    for elapsed, jitter in readings:
        mono += elapsed
        assert detector.feed(wall + elapsed + jitter, mono) is None
        wall += elapsed + jitter
    mono += 1.0
    found = detector.feed(wall + 1.0 + step, mono)
    assert found is not None
    assert found.seconds == pytest.approx(step, abs=1e-3)
    assert found.wall_before == pytest.approx(wall + 1.0, abs=1e-3)
    assert found.wall_after == wall + 1.0 + step
    assert detector.feed(wall + 2.0 + step, mono + 1.0) is None  # once


def test_wall_cutoff_never_deletes_early_after_a_step_forward() -> None:
    assert wall_cutoff(wall=1e9 + 50 * 365 * 86_400, run=1e9, age_s=60) == 1e9 - 60
    assert wall_cutoff(wall=1e9 - 3600, run=1e9, age_s=60) == 1e9 - 3660


def test_a_step_in_plain_words() -> None:
    watch_metrics = Metrics()
    wall, mono = Ticks(1.7e9), Ticks(10.0)
    watch = ClockWatch(
        RunClock(5.0, monotonic=mono), None, watch_metrics, wall=wall, monotonic=mono
    )  # type: ignore[arg-type]
    mono.at += 1
    wall.at += 1 + 3 * 86_400
    step = watch.look()
    assert step is not None
    assert "stepped forward by 3.0 days" in words(step)
    assert watch.look() is None
    assert watch_metrics.clock_step._value.get() == pytest.approx(3 * 86_400)
    assert watch_metrics.clock_steps._value.get() == 1


def _new(i: int, state: JobState = JobState.HELD) -> NewJob:
    return NewJob(
        id=f"{i:032x}", idempotency_key=f"key-{i}", request_sha256="r", state=state,
        owner="ann", printer="printer-01", pool=None, priority=100, copies=1,
        document_sha256="d", document_bytes=10, token_name="kiosk", correlation_id=None,
    )  # fmt: skip


async def test_the_store_clock_starts_at_the_migration_and_only_goes_forward(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    """Seeded with the wall time at migration; advance keeps the larger; the base is the
    largest of the row and every job's run-clock stamps (a lost last tick)."""
    import time

    seeded = await run_clock.base(store)
    assert abs(seeded - time.time()) < 60
    assert await run_clock.advance(store, seeded + 100) == seeded + 100
    assert await run_clock.advance(store, seeded + 50) == seeded + 100  # never back
    assert await run_clock.base(store) == seeded + 100
    run = Ticks(seeded + 500)
    jobs = Jobs(store, run=run)
    job = await jobs.insert(_new(1, JobState.RELEASED), now=1.0, actor="k")
    assert job is not None
    assert (job.created_run, job.created_at) == (seeded + 500, 1.0)
    assert await run_clock.base(store) == seeded + 500
    run.at = seeded + 700
    claimed = await jobs.claim_next("printer-01", None, now=2.0, actor="p")
    assert claimed is not None
    done = await jobs.transition(
        claimed.id, Action.FAIL, now=3.0, actor="p", sets={"finished_at": 3.0,
                                                           "dead_reason": "poison"},
    )  # fmt: skip
    assert done is not None
    assert (done.finished_at, done.finished_run) == (3.0, seeded + 700)
    assert await run_clock.base(store) == seeded + 700


async def test_hold_ttl_retention_and_not_before_count_on_the_run_clock(store: Store) -> None:
    """Wall-clock times given as ``now`` (stepped by fifty years) neither expire, purge nor
    free a job: only the run clock does."""
    run = Ticks(1000.0)
    jobs = Jobs(store, run=run)
    fifty_years = 50 * 365 * 86_400.0
    held = await jobs.insert(_new(1), now=1.7e9, actor="k")
    assert held is not None
    # the wall clock jumps; the run clock moved 10 s: nothing accepted at run 1000 is 60 s old
    run.at = 1010.0
    assert await jobs.expire_held(run.at - 60, now=1.7e9 + fifty_years) == []
    run.at = 1061.0
    assert await jobs.expire_held(run.at - 60, now=1.7e9 + fifty_years) == [held.id]
    expired = await jobs.get(held.id)
    assert expired is not None
    assert expired.finished_run == 1061.0
    assert await jobs.retention_due(run.at - 60) == []
    run.at = 1122.0
    assert await jobs.retention_due(run.at - 60) == [held.id]
    # not_before is a run-clock value: a wall time far ahead does not free it early
    waiting = await jobs.insert(_new(2, JobState.RELEASED), now=1.7e9, actor="k")
    assert waiting is not None
    claimed = await jobs.claim_next("printer-01", None, now=1.7e9, actor="p")
    assert claimed is not None
    back = await jobs.transition(
        claimed.id, Action.RETRY, now=1.7e9, actor="p",
        sets={"not_before": run.at + 5, "printed_on": None},
    )  # fmt: skip
    assert back is not None
    assert await jobs.claim_next("printer-01", None, now=1.7e9 + fifty_years, actor="p") is None
    assert await jobs.next_not_before("printer-01", None, run.at) == run.at + 5
    run.at += 5
    assert await jobs.claim_next("printer-01", None, now=1.7e9 - 3600, actor="p") is not None


async def test_two_appliances_agree_on_the_shared_clock(store: Store) -> None:
    """Each adopts the row when another appliance has it ahead (PostgreSQL's shared row)."""
    base = await run_clock.base(store)
    mono_a, mono_b = Ticks(0.0), Ticks(0.0)
    a = ClockWatch(RunClock(base, monotonic=mono_a), store, Metrics(), monotonic=mono_a)
    b = ClockWatch(RunClock(base - 30, monotonic=mono_b), store, Metrics(), monotonic=mono_b)
    mono_a.at = mono_b.at = 10.0
    assert await a.advance() == base + 10
    assert await b.advance() == base + 10  # b was behind: it adopts a's
    mono_b.at = 15.0
    assert b.clock.run() == base + 15
    assert await b.advance() == base + 15
    assert await a.advance() == base + 15  # a's reading was behind the row now
    assert a.clock.run() == base + 15


def test_clock_step_log_is_one_json_event(caplog: pytest.LogCaptureFixture) -> None:
    wall, mono = Ticks(1.7e9), Ticks(10.0)
    watch = ClockWatch(RunClock(0.0, monotonic=mono), None, Metrics(), wall=wall, monotonic=mono)  # type: ignore[arg-type]
    with caplog.at_level(logging.WARNING):
        mono.at += 1
        wall.at += 1 - 3600
        watch.look()
        mono.at += 1
        wall.at += 1
        watch.look()
    steps = [r for r in caplog.records if getattr(r, "event", None) == "clock_step"]
    assert len(steps) == 1
    assert steps[0].seconds == pytest.approx(-3600)  # type: ignore[attr-defined]
    assert "stepped back by 60.0 minutes" in steps[0].getMessage()


def test_a_printers_quarantine_and_stopped_grace_ignore_wall_clock_steps() -> None:
    """A printer's health measures its stopped grace and quarantine on its timer: a wall clock
    (``now``) stepped back an hour neither lengthens them, nor does one forward end them."""
    from edgeprint.printers.health import Health, HealthSettings
    from tests.test_health import status

    timer = Ticks(100.0)
    settings = HealthSettings(stopped_grace_s=10, quarantine_after=1, quarantine_s=60)
    health = Health(settings, timer=timer)
    assert health.on_job_failed("j1", now=1.7e9) is not None
    idle, stopped = status(state=3), status(state=5)
    assert health.on_probe(idle, now=1.7e9 + FIFTY_YEARS) is None  # still quarantined
    assert not health.healthy
    timer.at += 61
    assert health.on_probe(idle, now=1.7e9 - 3600) is not None  # its 60 s ran: healthy
    assert health.healthy
    health.on_probe(stopped, now=1.7e9)
    assert health.on_probe(stopped, now=1.7e9 + FIFTY_YEARS) is None  # grace not over
    timer.at += 11
    assert health.on_probe(stopped, now=1.7e9 - 3600) is not None
    assert not health.healthy
    assert health.stopped_since == 1.7e9  # shown to people: the wall clock it was seen at


FIFTY_YEARS = 50 * 365 * 86_400.0


async def test_how_long_a_job_waits_is_counted_on_the_run_clock(store: Store) -> None:
    """The oldest-waiting age (``edgeprint_oldest_waiting_seconds``, a printer's
    ``oldest_waiting_s``) reads ``released_run``: a release stamped with a wall time fifty
    years ahead waits only the run clock's seconds, at submission and at a later release."""
    run = Ticks(5000.0)
    jobs = Jobs(store, run=run)
    fifty_years = 50 * 365 * 86_400.0
    at_once = await jobs.insert(_new(1, JobState.RELEASED), now=1.7e9 + fifty_years, actor="k")
    assert at_once is not None
    assert (at_once.released_at, at_once.released_run) == (1.7e9 + fifty_years, 5000.0)
    held = await jobs.insert(_new(2), now=1.7e9, actor="k")
    assert held is not None
    assert held.released_run is None
    run.at = 5030.0
    released = await jobs.transition(
        held.id, Action.RELEASE, now=1.7e9 - 3600, actor="k", sets={"released_at": 1.7e9 - 3600}
    )
    assert released is not None
    assert released.released_run == 5030.0
    assert await jobs.oldest_waiting() == {("printer-01", None): 5000.0}
    assert await run_clock.base(store) >= 5030.0  # a lost tick resumes past every release
