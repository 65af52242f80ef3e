"""The yardsticks of bench.morning_bench, as pure functions (no I/O, no clock; in testbed/
so that tests may check them: tests never import bench/).

* :func:`doors_open_arrivals` — when each badge is asked for on a doors-open morning: a
  short ramp to a steep peak just after opening, then exponential decay.
* :func:`ideal_schedule` — the same arrivals on the same printers with zero overhead, an
  M/D/c-style first-come-first-served schedule: each arrival, in order, goes to the
  printer that is free first (ties: the faster, then the first listed), which prints it
  in its own per-badge time. A printer begins no badge inside a window it could not print
  in (roll out, wrong stock, power cycle); the badge under way when a window opens still
  comes out in its time (the roll ran out after it) — the kinder reading, so the ideal
  stays an ideal. "First free" is what printers claiming work from one queue do; with
  unequal speeds a scheduler that keeps a badge back for a faster printer can beat it.
* :func:`capacity_used` — how much of the printers' combined capacity went into badges
  while work waited (at least as many badges asked for and not yet printed as printers
  able to print).

Times are seconds on any one clock (the bench uses unix time).
"""

from __future__ import annotations

import bisect
import itertools
import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

#: A closed-open interval [start, end) in seconds.
Window = tuple[float, float]


def merge(windows: Sequence[Window]) -> tuple[Window, ...]:
    """``windows`` sorted, empty ones dropped, overlapping or touching ones joined."""
    out: list[list[float]] = []
    for a, b in sorted(w for w in windows if w[1] > w[0]):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return tuple((a, b) for a, b in out)


@dataclass(frozen=True)
class IdealPrinter:
    """A printer of the ideal schedule: its per-badge seconds and when it could not print."""

    name: str
    seconds: float
    down: tuple[Window, ...] = field(default=())

    def __post_init__(self) -> None:
        if not (self.seconds > 0 and math.isfinite(self.seconds)):
            raise ValueError(f"{self.name}: per-badge seconds must be > 0, not {self.seconds}")
        object.__setattr__(self, "down", merge(self.down))

    def up_from(self, t: float) -> float:
        """The first instant at or after ``t`` outside every down window."""
        for a, b in self.down:
            if a <= t < b:
                t = b
        return t

    def finish(self, start: float) -> float:
        """When a badge begun at ``start`` is out: its seconds of printing later."""
        return start + self.seconds


@dataclass(frozen=True)
class Scheduled:
    """One badge of the ideal schedule."""

    arrival: float
    printer: str
    start: float
    finish: float

    @property
    def wait(self) -> float:
        """Seconds from asked for to printed."""
        return self.finish - self.arrival


def ideal_schedule(arrivals: Sequence[float], printers: Sequence[IdealPrinter]) -> list[Scheduled]:
    """Every arrival's badge on the zero-overhead first-come-first-served schedule, in the
    order of ``arrivals`` (which need not be sorted; equal times keep their order)."""
    if not printers:
        raise ValueError("the ideal schedule needs at least one printer")
    free = [-math.inf] * len(printers)
    out: list[Scheduled | None] = [None] * len(arrivals)
    for i in sorted(range(len(arrivals)), key=lambda j: arrivals[j]):
        t = arrivals[i]
        start, _, k = min(
            (p.up_from(max(t, free[k])), p.seconds, k) for k, p in enumerate(printers)
        )
        done = printers[k].finish(start)
        free[k] = done
        out[i] = Scheduled(t, printers[k].name, start, done)
    return [s for s in out if s is not None]


def doors_open_arrivals(
    n: int, span_s: float, *, ramp_s: float, decay_s: float, seed: int
) -> list[float]:
    """``n`` arrival times in [0, ``span_s``), sorted: intensity rising linearly to its peak
    over ``ramp_s``, then falling as exp(-(t - ramp_s) / ``decay_s``), cut at ``span_s``.

    Stratified inverse-CDF sampling: the i-th arrival is the curve's (i + u_i) / n quantile
    with u_i uniform in [0, 1) from ``seed`` — the counts per minute follow the curve
    closely, the instants are not on a grid. The same arguments give the same times.
    """
    if n < 1 or not (0 < ramp_s < span_s) or decay_s <= 0:
        raise ValueError("need n >= 1, 0 < ramp_s < span_s and decay_s > 0")
    steps = 4096
    dt = span_s / steps

    def rate(t: float) -> float:
        return t / ramp_s if t < ramp_s else math.exp(-(t - ramp_s) / decay_s)

    cum = [0.0]
    for j in range(steps):
        a = j * dt
        cum.append(cum[-1] + (rate(a) + rate(a + dt)) / 2 * dt)
    total = cum[-1]
    rng = random.Random(seed)
    out = []
    for i in range(n):
        q = (i + rng.random()) / n * total
        j = min(bisect.bisect_right(cum, q) - 1, steps - 1)
        seg = cum[j + 1] - cum[j]
        frac = (q - cum[j]) / seg if seg > 0 else 0.0
        out.append(min(span_s * (1 - 1e-12), (j + frac) * dt))
    return sorted(out)


def peak_rate(arrivals: Sequence[float], window_s: float) -> float:
    """The most arrivals per second in any ``window_s`` window starting at an arrival."""
    s = sorted(arrivals)
    best = 0
    for i, t in enumerate(s):
        best = max(best, bisect.bisect_left(s, t + window_s) - i)
    return best / window_s


@dataclass(frozen=True)
class CapacityUse:
    """Badges the printers printed while work waited, against what they could have."""

    #: seconds during which work waited (badges asked for, not printed ≥ printers up)
    waiting_s: float
    #: badges the printers could have printed meanwhile (Σ up-time / per-badge seconds)
    capacity_badges: float
    #: badges they did print meanwhile (each counts for the part of its printing time,
    #: [printed - seconds, printed], that fell in those periods and outside its printer's
    #: down windows)
    printed_badges: float
    #: the periods when work waited
    periods: tuple[Window, ...] = ()

    @property
    def ratio(self) -> float | None:
        return self.printed_badges / self.capacity_badges if self.capacity_badges else None

    def per_minute(self, badges: float) -> float | None:
        return 60.0 * badges / self.waiting_s if self.waiting_s else None


def capacity_used(
    arrivals: Sequence[float],
    prints: Sequence[tuple[str, float]],
    printers: Sequence[IdealPrinter],
) -> CapacityUse:
    """Capacity used while work waited: ``arrivals`` (when each badge was asked for),
    ``prints`` ((printer, when it came out) per printed badge), ``printers`` (per-badge
    seconds and down windows, as in the ideal schedule)."""
    by_name = {p.name: p for p in printers}
    unknown = {name for name, _ in prints} - set(by_name)
    if unknown:
        raise ValueError(f"prints on printers not given: {sorted(unknown)}")
    events: list[tuple[float, int]] = [(t, +1) for t in arrivals]
    events += [(t, -1) for _, t in prints]
    cuts = {t for t, _ in events}
    for p in printers:
        for a, b in p.down:
            cuts.update((a, b))
    times = sorted(cuts)
    events.sort()
    outstanding, e = 0, 0
    waiting: list[Window] = []
    capacity = 0.0
    for a, b in itertools.pairwise(times):
        while e < len(events) and events[e][0] <= a:
            outstanding += events[e][1]
            e += 1
        up = [p for p in printers if p.up_from(a) == a]
        if up and outstanding >= len(up):
            waiting.append((a, b))
            capacity += sum((b - a) / p.seconds for p in up)
    periods = merge(waiting)
    starts = [a for a, _ in periods]

    def overlap(lo: float, hi: float) -> float:
        """Seconds of [lo, hi] inside the periods when work waited."""
        inside, j = 0.0, max(0, bisect.bisect_right(starts, lo) - 1)
        while hi > lo and j < len(periods) and periods[j][0] < hi:
            inside += max(0.0, min(hi, periods[j][1]) - max(lo, periods[j][0]))
            j += 1
        return inside

    printed = 0.0
    for name, t in prints:
        p = by_name[name]
        lo, hi = t - p.seconds, t
        # printing inside the printer's own window is no capacity used: a badge on the
        # wrong stock is spoiled, and the ideal has that printer down then
        useful = overlap(lo, hi) - sum(overlap(max(lo, a), min(hi, b)) for a, b in p.down)
        printed += useful / p.seconds
    return CapacityUse(sum(b - a for a, b in periods), capacity, printed, periods)


def inside(t: float, periods: Sequence[Window]) -> bool:
    """Whether ``t`` falls in one of the merged, sorted ``periods``."""
    j = bisect.bisect_right([a for a, _ in periods], t) - 1
    return j >= 0 and periods[j][0] <= t < periods[j][1]


def percentiles(values: Sequence[float], qs: Sequence[int] = (50, 95, 99)) -> dict[str, float]:
    """``{"p50": …}`` by linear interpolation (NaN when there are no values)."""
    s = sorted(values)
    out = {}
    for q in qs:
        if not s:
            out[f"p{q}"] = math.nan
            continue
        pos = (len(s) - 1) * q / 100.0
        lo = int(pos)
        hi = min(lo + 1, len(s) - 1)
        out[f"p{q}"] = s[lo] + (s[hi] - s[lo]) * (pos - lo)
    return out


def within_goal(measured_p99: float, ideal_p99: float) -> bool:
    """The wait goal: p99 ≤ 1.1 × the ideal's p99 + 1 s."""
    return measured_p99 <= 1.1 * ideal_p99 + 1.0


def windows_by_printer(
    windows: Sequence[tuple[str, float, float]], names: Sequence[str]
) -> Mapping[str, tuple[Window, ...]]:
    """(printer, start, end) fault windows → printer → its merged windows (every name)."""
    out: dict[str, list[Window]] = {n: [] for n in names}
    for name, a, b in windows:
        if name not in out:
            raise ValueError(f"a window for {name!r}, which is not a printer")
        out[name].append((a, b))
    return {n: merge(w) for n, w in out.items()}
