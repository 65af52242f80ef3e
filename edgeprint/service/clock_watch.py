"""The run clock kept and the wall clock watched (issue 27 §3, DESIGN §6).

At start the run clock takes its base from the store (:func:`start`); a small task then,
every second, feeds the :class:`~edgeprint.clock.StepDetector` (a step is logged once as
``clock_step`` and exported as ``edgeprint_clock_step_seconds`` and
``edgeprint_clock_steps_total``) and, every :data:`ADVANCE_EVERY_S`, stores the run clock
(adopting the store's row when another appliance has it ahead).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from edgeprint import errors
from edgeprint.clock import RunClock, Step, StepDetector
from edgeprint.logs import log_event
from edgeprint.metrics import Metrics
from edgeprint.store import run_clock
from edgeprint.store.interface import Store
from edgeprint.timefmt import rfc3339_ms

log = logging.getLogger(__name__)

#: How often the wall clock is compared with the monotonic clock.
WATCH_EVERY_S = 1.0
#: How often the run clock is written to the store: at most this much running is lost by a
#: power cut (jobs' own ``created_run``/``finished_run`` are never lost), and appliances on
#: one PostgreSQL store agree within it.
ADVANCE_EVERY_S = 10.0


async def start(store: Store) -> RunClock:
    """The run clock, from the store's latest reading. Raises errors.StoreError."""
    return RunClock(await run_clock.base(store))


def words(step: Step) -> str:
    """The step in plain words."""
    way = "forward" if step.seconds > 0 else "back"
    size = abs(step.seconds)
    if size >= 2 * 86_400:
        amount = f"{size / 86_400:.1f} days"
    elif size >= 2 * 3600:
        amount = f"{size / 3600:.1f} hours"
    elif size >= 120:
        amount = f"{size / 60:.1f} minutes"
    else:
        amount = f"{size:.1f} seconds"
    return (
        f"the wall clock stepped {way} by {amount}: it read {rfc3339_ms(step.wall_after)} "
        f"where {rfc3339_ms(step.wall_before)} was due; hold TTL, retention and back-offs "
        "count running time and did not move"
    )


class ClockWatch:
    """Watches the wall clock and keeps the run clock stored."""

    def __init__(
        self,
        clock: RunClock,
        store: Store,
        metrics: Metrics,
        *,
        wall: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.clock = clock
        self._store = store
        self._metrics = metrics
        self._wall = wall
        self._monotonic = monotonic
        self.detector = StepDetector()
        self.detector.feed(wall(), monotonic())

    def look(self) -> Step | None:
        """Compare the clocks once; a step is logged and exported."""
        step = self.detector.feed(self._wall(), self._monotonic())
        if step is not None:
            self._metrics.clock_step.set(step.seconds)
            self._metrics.clock_steps.inc()
            log_event(
                log,
                "clock_step",
                message=words(step),
                level=logging.WARNING,
                seconds=round(step.seconds, 3),
                wall_due=rfc3339_ms(step.wall_before),
                wall_read=rfc3339_ms(step.wall_after),
            )
        return step

    async def advance(self) -> float:
        """Store the run clock (adopting the row when it is ahead); the reading after.
        Raises errors.StoreError."""
        stored = await run_clock.advance(self._store, self.clock.run())
        return self.clock.adopt(stored)

    async def run(self) -> None:
        """Look every second, store every :data:`ADVANCE_EVERY_S`, until cancelled."""
        next_advance = self._monotonic() + ADVANCE_EVERY_S
        while True:
            await asyncio.sleep(WATCH_EVERY_S)
            self.look()
            if self._monotonic() >= next_advance:
                next_advance = self._monotonic() + ADVANCE_EVERY_S
                try:
                    await self.advance()
                except errors.StoreError as exc:  # the next tick tries again
                    log_event(log, "run_clock_not_stored", level=logging.WARNING, error=str(exc))
