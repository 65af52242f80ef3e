"""The run clock and the wall-clock step detector (issue 27 §3, DESIGN §6).

A small box without a battery-backed clock boots with a stale time and steps days forward
when NTP answers, or back. Every *duration* the appliance judges (hold TTL, retention, a
retry's ``not_before``, lockouts) is a difference of two :class:`RunClock` readings: seconds
the appliance (any appliance on this store) was actually running. It starts from a base the
store keeps (``store_clock``, seeded with the unix time at its migration, so it reads like a
unix time) and advances only with CLOCK_MONOTONIC, so a wall-clock step moves none of it.
What people read (created_at, event times, RFC 3339 in answers) stays wall-clock.

Pure (no edgeprint imports): the store reads and advances the base; the service feeds the
:class:`StepDetector` and exports what it finds.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

#: A wall clock that moved this much against the monotonic clock between two readings
#: stepped (NTP slews by at most 0.5 ms/s; a reading taken late by a busy loop moves neither).
STEP_THRESHOLD_S = 2.0


class RunClock:
    """Run-clock seconds: ``base`` (read from the store at start) + monotonic time since.

    Never goes back: :meth:`adopt` moves it forward to another appliance's reading (a shared
    store), never backward.
    """

    def __init__(
        self,
        base: float,
        *,
        monotonic: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self._monotonic = monotonic
        self._wall = wall
        self._base = float(base)
        self._mono_at_base = monotonic()

    def run(self) -> float:
        """Run-clock seconds now (compare only with other run-clock values)."""
        return self._base + (self._monotonic() - self._mono_at_base)

    def wall(self) -> float:
        """Unix seconds now (for what people read; may step)."""
        return self._wall()

    def adopt(self, other: float) -> float:
        """Move forward to ``other`` when it is ahead (the store's row, another appliance's
        reading); the run-clock reading after."""
        now = self.run()
        if other > now:
            self._base = float(other)
            self._mono_at_base = self._monotonic()
            return float(other)
        return now


def wall_cutoff(wall: float, run: float, age_s: float) -> float:
    """The wall-clock time before which a row stamped only with the wall clock (an audit row,
    a webhook failure) has been kept ``age_s``: ``min(wall, run) - age_s``. A step forward
    (wall ahead of run) deletes nothing early; run behind wall by the time the box was off
    keeps rows that much longer; a step back judges on the wall clock, which came back.
    """
    return min(wall, run) - age_s


@dataclass(frozen=True, slots=True)
class Step:
    """A wall-clock step: ``seconds`` signed (forward positive), the wall readings around it."""

    seconds: float
    wall_before: float
    wall_after: float


class StepDetector:
    """Fed (wall, monotonic) pairs in order; reports a :class:`Step` when the wall clock moved
    against the monotonic clock by more than ``threshold_s`` since the previous pair."""

    def __init__(self, threshold_s: float = STEP_THRESHOLD_S) -> None:
        self.threshold_s = threshold_s
        self._last: tuple[float, float] | None = None

    def feed(self, wall: float, monotonic: float) -> Step | None:
        """The step since the previous pair, or None (the first pair sets the reference)."""
        last, self._last = self._last, (wall, monotonic)
        if last is None:
            return None
        moved = (wall - monotonic) - (last[0] - last[1])
        if abs(moved) <= self.threshold_s:
            return None
        return Step(moved, last[0] + (monotonic - last[1]), wall)
