"""A label roll's count and forecast (edgeprint.runway): pure, time as a parameter."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from edgeprint import runway
from edgeprint.board import PrinterBoard, Usability
from edgeprint.config import parse_config
from edgeprint.metrics import Metrics
from edgeprint.runway import Roll, Runway, RunwayView, labels_of
from edgeprint.service.admission import Admission, Depths
from edgeprint.service.records import Caller
from edgeprint.store.interface import Store
from edgeprint.store.printers import PrinterMemory
from testbed.config import config_dict

T0 = 1_000_000.0
CALLER = Caller("kiosk-1", "kiosk", "cid")


def test_full_roll_at_start_then_counted_down() -> None:
    """Counting starts from a full roll; each print takes its labels; the forecast divides
    what is left by the last 15 minutes' rate."""
    r = Runway(500, started_at=T0)
    assert r.view(T0) == RunwayView(500, 500, 0.0, None)
    for i in range(30):  # 30 labels over 15 minutes: 2 a minute
        r.printed(1, T0 + 30 * i)
    view = r.view(T0 + 900)
    assert view.labels_left == 470
    assert view.per_minute == pytest.approx(29 * 60 / 900, abs=1e-3)  # the first left the window
    assert view.minutes_left == pytest.approx(470 * 900 / (29 * 60), abs=0.01)


def test_rate_over_time_seen_when_up_less_than_the_window() -> None:
    """Up 5 minutes: the rate is over those 5 minutes; up 10 s: over one minute at least."""
    r = Runway(100, started_at=T0)
    r.printed(10, T0 + 10)
    assert r.per_minute(T0 + 10) == pytest.approx(10.0)
    assert r.per_minute(T0 + 300) == pytest.approx(2.0)
    assert r.per_minute(T0 + 10 + runway.RATE_WINDOW_S) == 0.0
    assert r.view(T0 + 10 + runway.RATE_WINDOW_S).minutes_left is None


def test_rehearsal_labels_come_off_the_roll_but_do_not_forecast_the_morning() -> None:
    """A rehearsal's test badges use labels (labels left falls) but leave the rate alone, so
    the forecast after go-live is the live rate only (DESIGN §8)."""
    r = Runway(100, started_at=T0)
    r.printed(20, T0 + 10, live=False)
    assert r.view(T0 + 60) == RunwayView(80, 100, 0.0, None)
    r.printed(5, T0 + 70)
    assert r.view(T0 + 120) == RunwayView(75, 100, 2.5, 30.0)


def test_roll_change_seen_from_empty_to_ready_and_new_media() -> None:
    """media-empty → ready, and a change of media-ready, start a full roll; the first answer
    and an answer without media-ready only remember."""
    r = Runway(100, started_at=T0)
    assert r.seen(False, ("oe_4x6-label_4x6in",), T0) is None  # first look: remember it
    r.printed(40, T0 + 1)
    assert r.seen(False, None, T0 + 2) is None  # no media-ready in the answer
    assert r.seen(True, ("oe_4x6-label_4x6in",), T0 + 3) is None  # ran out: not changed yet
    assert r.labels_left == 60
    assert r.seen(False, ("oe_4x6-label_4x6in",), T0 + 4) == runway.CAUSE_EMPTY_TO_READY
    assert r.roll == Roll(0, T0 + 4, ("oe_4x6-label_4x6in",), False)
    r.printed(5, T0 + 5)
    assert r.seen(False, ("oe_4x3-label_4x3in",), T0 + 6) == runway.CAUSE_MEDIA_CHANGED
    assert r.labels_left == 100
    assert r.seen(False, (), T0 + 7) is None  # nothing said ready: keeps what it knew
    assert r.roll.media == ("oe_4x3-label_4x3in",)


def test_technician_and_restored_roll() -> None:
    """A stored roll is counted on from; roll_changed starts a full one."""
    r = Runway(100, started_at=T0, roll=Roll(97, T0 - 50, ("a",), False))
    assert r.labels_left == 3
    r.printed(10, T0)
    assert r.labels_left == 0  # a longer roll than said: never below 0
    r.roll_changed(T0 + 1)
    assert r.roll == Roll(0, T0 + 1, ("a",), False)
    assert r.labels_left == 100


def test_labels_of_a_job() -> None:
    """pages × copies; the rest from a page; an unknown page count is one label."""
    assert labels_of(2, 3) == 6
    assert labels_of(None, 2) == 2
    assert labels_of(5, 1, from_page=4) == 2
    assert labels_of(0, 0) == 1


def test_labels_per_roll_must_be_positive() -> None:
    with pytest.raises(ValueError, match="labels_per_roll"):
        Runway(0, started_at=T0)


# --- properties ----------------------------------------------------------------------------

_events = st.lists(
    st.tuples(
        st.floats(min_value=0, max_value=400, allow_nan=False),  # seconds since the last
        st.one_of(
            st.tuples(st.just("print"), st.integers(min_value=-2, max_value=50)),
            st.tuples(st.just("seen"), st.booleans(), st.sampled_from([None, (), ("a",), ("b",)])),
            st.tuples(st.just("loaded")),
        ),
    ),
    max_size=60,
)


@given(st.integers(min_value=1, max_value=5000), _events)
def test_count_is_bounded_and_falls_until_a_change(per_roll: int, events: list) -> None:  # type: ignore[type-arg]
    """labels_left stays within [0, labels_per_roll], never rises except at a roll change
    (then it is full), and the forecast agrees with the count and the rate."""
    r = Runway(per_roll, started_at=T0)
    now = T0
    for gap, event in events:
        now += gap
        before = r.labels_left
        changed = False
        match event:
            case ("print", n):
                r.printed(n, now)
            case ("seen", empty, media):
                changed = r.seen(empty, media, now) is not None
            case ("loaded",):
                r.roll_changed(now)
                changed = True
        left = r.labels_left
        assert 0 <= left <= per_roll
        if changed:
            assert left == per_roll
            assert r.roll.changed_at == now
        else:
            assert left <= before
        view = r.view(now)
        assert view.per_minute >= 0
        if view.minutes_left is None:
            assert view.per_minute == 0
        else:
            assert view.minutes_left == pytest.approx(left / view.per_minute, rel=1e-2, abs=0.01)


@given(
    st.lists(st.tuples(st.floats(0, 2000, allow_nan=False), st.integers(1, 20)), max_size=40),
    st.lists(st.floats(0, 5000, allow_nan=False), min_size=2, max_size=10),
)
def test_rate_only_falls_while_nothing_prints(
    prints: list[tuple[float, int]], later: list[float]
) -> None:
    """Once the prints are in, the rate never rises as time passes, and reaches 0 a window
    after the last print."""
    r = Runway(10_000, started_at=T0)
    t = T0
    for gap, n in prints:
        t += gap
        r.printed(n, t)
    rates = [r.per_minute(t + dt) for dt in sorted(later)]
    assert all(a >= b - 1e-9 for a, b in itertools.pairwise(rates))
    assert r.per_minute(t + runway.RATE_WINDOW_S) == 0.0


# --- what survives a restart: the stored roll, on both backends ------------------------------


async def test_roll_stored_and_read_back(store: Store) -> None:
    """A roll is stored whole (count, change time, media, empty) and replaced by the next save;
    a printer never counted reads as None."""
    memory = PrinterMemory(store)
    assert await memory.roll("labels-01") is None
    await memory.save_roll("labels-01", Roll(7, None, ("oe_4x3-label_4x3in",), True), now=T0)
    assert await memory.roll("labels-01") == Roll(7, None, ("oe_4x3-label_4x3in",), True)
    await memory.save_roll("labels-01", Roll(0, T0 + 5, None, False), now=T0 + 5)
    assert await memory.roll("labels-01") == Roll(0, T0 + 5, None, False)
    assert await memory.roll("labels-02") is None


# --- admission: a peer whose roll lasts ---------------------------------------------------------


def _admission(tmp_path: Path, depths: Depths, high_water: int = 50) -> Admission:
    cfg = config_dict(tmp_path / "data")
    cfg["printers"] = [{**p, "high_water": high_water} for p in cfg["printers"]]

    async def read_depths() -> Depths:
        return dict(depths)

    return Admission(parse_config(cfg), PrinterBoard(), Metrics(), read_depths, clock=lambda: 0.0)


def _seen(labels_left: int | None, healthy: bool = True) -> Usability:
    return Usability(healthy=healthy, sends="application/pdf", labels_left=labels_left)


async def test_a_job_that_outruns_the_roll_goes_to_a_peer_whose_roll_lasts(
    tmp_path: Path,
) -> None:
    """printer-01 has 3 labels left and 2 jobs waiting: a 1-label job stays (3 ≥ 2 + 1), a
    2-label one goes to printer-02 (no count, or enough left); with printer-02 short too,
    it stays; a job for a full or unhealthy printer still goes to a short peer."""
    admission = _admission(tmp_path, {("printer-01", None): 2, ("printer-02", None): 0})
    board = admission.board
    board.publish("printer-01", _seen(3))
    board.publish("printer-02", _seen(None))
    assert await admission.admit("printer-01", None, CALLER, labels=1) == ("printer-01", None)
    assert await admission.admit("printer-01", None, CALLER, labels=2) == ("printer-02", None)
    board.publish("printer-02", _seen(2))
    assert await admission.admit("printer-01", None, CALLER, labels=2) == ("printer-02", None)
    board.publish("printer-02", _seen(1))  # 1 < 0 + 2: short as well
    assert await admission.admit("printer-01", None, CALLER, labels=2) == ("printer-01", None)
    board.publish("printer-01", _seen(3, healthy=False))
    assert await admission.admit("printer-01", None, CALLER, labels=2) == ("printer-02", None)
    full = _admission(tmp_path, {("printer-01", None): 2, ("printer-02", None): 0}, high_water=2)
    full.board.publish("printer-01", _seen(None))
    full.board.publish("printer-02", _seen(0))
    assert await full.admit("printer-01", None, CALLER) == ("printer-02", None)
    assert await full.admit("printer-03", None, CALLER) == ("printer-03", None)  # no pool
