"""testbed.morning_ideal: the zero-overhead schedule, the doors-open arrivals and the capacity
measure bench.morning_bench compares edgeprint with (pure functions, in memory)."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from testbed.morning_ideal import (
    IdealPrinter,
    capacity_used,
    doors_open_arrivals,
    ideal_schedule,
    inside,
    merge,
    peak_rate,
    percentiles,
    windows_by_printer,
    within_goal,
)


def finishes(arrivals: list[float], printers: list[IdealPrinter]) -> list[tuple[str, float]]:
    return [(s.printer, s.finish) for s in ideal_schedule(arrivals, printers)]


def test_one_printer_is_a_queue_of_its_per_badge_time() -> None:
    p = IdealPrinter("p1", 2.0)
    assert finishes([0, 0, 0, 10], [p]) == [("p1", 2), ("p1", 4), ("p1", 6), ("p1", 12)]
    assert [s.wait for s in ideal_schedule([0, 0, 0, 10], [p])] == [2, 4, 6, 2]


def test_the_first_printer_free_takes_the_next_badge_and_a_tie_goes_to_the_faster() -> None:
    fast, slow = IdealPrinter("fast", 1.0), IdealPrinter("slow", 3.0)
    assert finishes([0, 0, 0, 0], [slow, fast]) == [
        ("fast", 1),  # both free at 0: the faster
        ("slow", 3),  # fast is busy: slow is free first
        ("fast", 2),  # fast free at 1
        ("fast", 3),  # fast free at 2, slow at 3
    ]


def test_a_window_keeps_new_badges_off_the_printer() -> None:
    p = IdealPrinter("p", 2.0, down=((1.0, 4.0),))
    # begun at 0, before the window: out in its time
    assert finishes([0], [p]) == [("p", 2.0)]
    # asked for inside the window: begins when it closes
    assert finishes([2], [p]) == [("p", 6.0)]
    # free at 2 but the window is open until 4: the second badge begins then
    assert finishes([0, 0], [p]) == [("p", 2.0), ("p", 6.0)]
    # a peer that is up takes it instead
    assert finishes([2], [p, IdealPrinter("q", 3.0)]) == [("q", 5.0)]


def test_windows_are_merged() -> None:
    assert merge([(5, 6), (1, 2), (2, 3), (0, 0), (2.5, 4)]) == ((1, 4), (5, 6))
    p = IdealPrinter("p", 3.0, down=((3, 4), (1, 2), (2, 3)))
    assert p.down == ((1, 4),)
    assert (p.up_from(1.5), p.up_from(0.5), p.up_from(4)) == (4, 0.5, 4)


def test_bad_printers_are_refused() -> None:
    with pytest.raises(ValueError, match="per-badge seconds must be > 0"):
        IdealPrinter("p", 0.0)
    with pytest.raises(ValueError, match="per-badge seconds must be > 0"):
        IdealPrinter("p", math.inf)
    with pytest.raises(ValueError, match="at least one printer"):
        ideal_schedule([0.0], [])
    with pytest.raises(ValueError, match="'x', which is not a printer"):
        windows_by_printer([("x", 0, 1)], ["p"])


_printer = st.builds(
    IdealPrinter,
    name=st.sampled_from(["a", "b", "c", "d"]),
    seconds=st.floats(0.1, 5.0),
    down=st.lists(
        st.tuples(st.floats(0, 50), st.floats(0, 20)).map(lambda w: (w[0], w[0] + w[1])),
        max_size=3,
    ),
)


@settings(max_examples=200, deadline=None)
@given(
    arrivals=st.lists(st.floats(0, 60), min_size=1, max_size=40),
    printers=st.lists(_printer, min_size=1, max_size=4, unique_by=lambda p: p.name),
)
def test_schedule_properties(arrivals: list[float], printers: list[IdealPrinter]) -> None:
    by = {p.name: p for p in printers}
    plan = ideal_schedule(arrivals, printers)
    assert [s.arrival for s in plan] == arrivals  # one entry per arrival, in its order
    for s in plan:
        p = by[s.printer]
        assert s.start >= s.arrival
        assert p.up_from(s.start) == s.start  # never begun inside a window
        assert s.finish == s.start + p.seconds
    # a printer prints one badge at a time
    for name in by:
        mine = sorted((s.start, s.finish) for s in plan if s.printer == name)
        assert all(f0 <= s1 + 1e-9 for (_, f0), (s1, _) in itertools.pairwise(mine))
    # first come, first served: a later arrival never begins before an earlier one
    order = sorted(range(len(arrivals)), key=lambda i: arrivals[i])
    starts = [plan[i].start for i in order]
    assert all(a <= b + 1e-9 for a, b in itertools.pairwise(starts))


@settings(max_examples=100, deadline=None)
@given(arrivals=st.lists(st.floats(0, 60), min_size=1, max_size=40), s=st.floats(0.1, 5.0))
def test_one_printer_without_windows_is_lindleys_recursion(arrivals: list[float], s: float) -> None:
    free, expected = -math.inf, []
    for t in sorted(arrivals):
        free = max(free, t) + s
        expected.append(free)
    got = sorted(x.finish for x in ideal_schedule(arrivals, [IdealPrinter("p", s)]))
    assert got == pytest.approx(expected)


def test_doors_open_arrivals_peak_early_then_decay() -> None:
    a = doors_open_arrivals(3000, 600.0, ramp_s=20.0, decay_s=150.0, seed=7)
    assert len(a) == 3000
    assert a == sorted(a)
    assert a[0] >= 0
    assert a[-1] < 600.0
    assert a == doors_open_arrivals(3000, 600.0, ramp_s=20.0, decay_s=150.0, seed=7)
    assert a != doors_open_arrivals(3000, 600.0, ramp_s=20.0, decay_s=150.0, seed=8)
    per_minute = [sum(1 for t in a if m * 60 <= t < (m + 1) * 60) for m in range(10)]
    assert per_minute[0] > per_minute[1] > per_minute[3] > per_minute[6] > per_minute[9] > 0
    # the ramp: the first 10 s are quieter than the next 10
    assert sum(1 for t in a if t < 10) < sum(1 for t in a if 10 <= t < 20)
    assert peak_rate(a, 30.0) == pytest.approx(3000 / 160, rel=0.15)


@pytest.mark.parametrize("kw", [{"n": 0}, {"ramp_s": 0.0}, {"ramp_s": 700.0}, {"decay_s": 0.0}])
def test_doors_open_arrivals_refuses_a_curve_it_cannot_draw(kw: dict[str, float]) -> None:
    args = {"n": 10, "span_s": 600.0, "ramp_s": 20.0, "decay_s": 150.0, "seed": 1, **kw}
    with pytest.raises(ValueError, match="need n >= 1"):
        doors_open_arrivals(**args)  # type: ignore[arg-type]


def test_capacity_used_counts_only_while_work_waits() -> None:
    p = IdealPrinter("p", 1.0)
    # three badges at once printed back to back: all of the capacity used
    full = capacity_used([0, 0, 0], [("p", 1), ("p", 2), ("p", 3)], [p])
    assert (full.waiting_s, full.capacity_badges, full.printed_badges) == (3, 3, 3)
    assert full.periods == ((0, 3),)
    assert inside(0, full.periods)
    assert inside(2.9, full.periods)
    assert not inside(3, full.periods)
    assert not inside(-1, full.periods)
    assert (full.ratio, full.per_minute(full.printed_badges)) == (1.0, 60.0)
    # half a second lost between badges: two thirds
    gappy = capacity_used([0, 0, 0], [("p", 1.5), ("p", 3), ("p", 4.5)], [p])
    assert gappy.waiting_s == 4.5
    assert gappy.ratio == pytest.approx(2 / 3)
    # an idle printer with nothing asked for is no lost capacity
    idle = capacity_used([0, 10], [("p", 1), ("p", 11)], [p])
    assert (idle.waiting_s, idle.ratio) == (2, 1.0)


def test_capacity_used_leaves_out_a_printer_that_could_not_print() -> None:
    a, b = IdealPrinter("a", 1.0, down=((0, 2),)), IdealPrinter("b", 1.0)
    # two badges at 0: b prints both while a is down (one printer up, work waits 0–2)
    use = capacity_used([0, 0], [("b", 1), ("b", 2)], [a, b])
    assert (use.waiting_s, use.capacity_badges, use.printed_badges) == (2, 2, 2)
    # the same badges on two printers up: only one waits at a time after the first second
    both = capacity_used([0, 0], [("b", 1), ("b", 2)], [IdealPrinter("a", 1.0), b])
    assert (both.waiting_s, both.capacity_badges, both.ratio) == (1, 2, 0.5)
    # badges printed inside the printer's own window (on the wrong stock) are no capacity
    wrong = IdealPrinter("w", 1.0, down=((0, 2),))
    spoiled = capacity_used([0, 0, 0, 0], [("w", 1), ("w", 2), ("b", 1), ("b", 2)], [wrong, b])
    # work waits 0–2 (b alone is up); of the four printed then only b's two count
    assert (spoiled.waiting_s, spoiled.capacity_badges, spoiled.printed_badges) == (2, 2, 2)
    with pytest.raises(ValueError, match=r"prints on printers not given: \['z'\]"):
        capacity_used([0], [("z", 1)], [b])


def test_percentiles_and_the_goal() -> None:
    assert percentiles([1, 2, 3, 4, 5]) == {"p50": 3, "p95": 4.8, "p99": pytest.approx(4.96)}
    assert math.isnan(percentiles([])["p99"])
    assert within_goal(12.0, 10.0)
    assert not within_goal(12.01, 10.0)
