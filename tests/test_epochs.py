"""Printer epochs (edgeprint/epochs.py): pure, with hypothesis on simulated printer clocks."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from edgeprint.epochs import Clock, Epoch, Reading, advance

BOOT = "boot-1"


def clock(t: float) -> Clock:
    return Clock(wall=1_000_000.0 + t, boot_id=BOOT, boot_s=t)


def up_at(t: float, started: float) -> int:
    """printer-up-time as a printer started at ``started`` reports it at ``t`` (whole s)."""
    return math.floor(t - started)


@st.composite
def readings(draw: st.DrawFn) -> list[tuple[float, float, float]]:
    """(request sent, printer reads its clock, answer back) for a run of probes."""
    t = draw(st.floats(0.0, 5.0))
    out = []
    for _ in range(draw(st.integers(2, 12))):
        t += draw(st.floats(0.001, 3.0))
        read = t + draw(st.floats(0.0, 0.8))  # the printer takes its time to answer
        back = read + draw(st.floats(0.0, 0.8))
        out.append((t, read, back))
        t = back
    return out


@given(readings(), st.floats(0.0, 100.0))
def test_a_printer_that_never_restarted_keeps_its_epoch(
    probes: list[tuple[float, float, float]], started_before: float
) -> None:
    """Whatever the probes' timing and answer delays, a printer whose clock runs on is never
    taken for one that restarted."""
    started = -started_before
    e: Epoch | None = None
    for sent, read, back in probes:
        e, cause = advance(
            e, Reading(up_at(read, started), "urn:uuid:p", 0), clock(back), asked=clock(sent),
            up_time_moves=True,
        )  # fmt: skip
        assert e.number == 1, cause


@given(readings(), st.floats(1.2, 50.0), st.floats(0.0, 30.0))
def test_a_restart_after_running_a_while_is_a_new_epoch(
    probes: list[tuple[float, float, float]], up_before: float, down_s: float
) -> None:
    """A printer that was up longer than a second and restarts between two probes (however
    long it stays down) is seen in a new epoch at the next one."""
    sent, read, back = probes[0]
    started = read - up_before
    e, _ = advance(None, Reading(up_at(read, started), None, 0), clock(back), asked=clock(sent))
    restart = back + 0.001
    reborn = restart + down_s
    nxt = reborn + 0.01
    e2, cause = advance(
        e, Reading(up_at(nxt + 0.001, reborn), None, 0), clock(nxt + 0.002), asked=clock(nxt),
        up_time_moves=True,
    )  # fmt: skip
    assert e2.number == 2
    assert cause is not None
    assert "restarted" in cause


def test_other_signs_of_a_new_life() -> None:
    """printer-uuid changed; printer-config-change-time went back; back after an outage with
    no printer-up-time: each begins a new epoch, saying why."""
    e, _ = advance(None, Reading(100, "urn:uuid:a", 50), clock(0.0))
    assert (e.number, e.cause) == (1, "first seen")
    replaced, why = advance(e, Reading(105, "urn:uuid:b", 50), clock(5.0), up_time_moves=True)
    assert replaced.number == 2
    assert why is not None
    assert "printer-uuid changed" in why
    reset, why = advance(e, Reading(105, "urn:uuid:a", 3), clock(5.0), up_time_moves=True)
    assert (reset.number, why is not None and "config-change" in why) == (2, True)
    blind, _ = advance(None, Reading(None, None, None), clock(0.0))
    after, why = advance(blind, Reading(None, None, None), clock(9.0), after_outage=True)
    assert after.number == 2
    assert why is not None
    assert "unreachable" in why
    same, why = advance(blind, Reading(None, None, None), clock(9.0))
    assert (same.number, why) == (1, None)


def test_a_frozen_printer_up_time_is_no_restart() -> None:
    """The very reading again after a while is a clock that stands still, not a restart."""
    e, _ = advance(None, Reading(1000, None, 0), clock(0.0))
    e2, why = advance(e, Reading(1000, None, 0), clock(30.0))
    assert (e2.number, why) == (1, None)


def test_a_wall_clock_step_across_a_reboot_of_the_box() -> None:
    """Another boot of the box: the time that passed is the wall clock's; on one boot it is
    CLOCK_BOOTTIME's, whatever the wall clock did."""
    e, _ = advance(None, Reading(500, None, 0), clock(0.0))
    stepped = Clock(wall=clock(0.0).wall - 3600.0, boot_id=BOOT, boot_s=10.0)
    e2, why = advance(e, Reading(3, None, 0), stepped, up_time_moves=True)
    assert e2.number == 2, "the printer-up-time went back: a restart, whatever the wall clock"
    e3, why = advance(e, Reading(510, None, 0), stepped, up_time_moves=True)
    assert (e3.number, why) == (1, None)
