"""The event's mode (issue 23): rehearsal before the doors open, then live.

A job made during a rehearsal carries ``rehearsal`` for ever (the store sets it in
the job's own INSERT from the mode in force at its commit). Going live, in one
transaction, ends the rehearsal and cancels its jobs still HELD, RELEASED or DEAD
(reason ``rehearsal_ended``); a rehearsal job a printer holds (PRINTING) finishes
as what it was made as. What restarts at go-live: the live figures never count a
rehearsal job (``jobs_by_state`` in GET /v1/stats, ``edgeprint_jobs``,
``edgeprint_jobs_accepted_total``, ``edgeprint_jobs_printed_total`` and
``edgeprint_release_to_completed_seconds`` see live jobs only; rehearsal jobs are
counted apart, in GET /v1/event and ``edgeprint_rehearsal_jobs``). The rule for a
forecast made from a rate (a roll's labels per minute): it counts live jobs only, so it
starts again at go-live; labels left on a roll count every label (the paper is used).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from edgeprint import errors, timefmt
from edgeprint.logs import log_event
from edgeprint.service.admission import Admission
from edgeprint.service.records import Caller
from edgeprint.store.event import EventMode, EventModes, Mode, WentLive
from edgeprint.store.interface import Store

log = logging.getLogger(__name__)

#: The last_error of a rehearsal job go-live cancelled.
GO_LIVE_WHY = "cancelled at go-live: a rehearsal job that had not printed"


class EventService:
    """Start a rehearsal, go live, read the mode (through the store's named operations)."""

    def __init__(
        self,
        store: Store,
        admission: Admission,
        clock: Callable[[], float],
        run: Callable[[], float] | None = None,
    ) -> None:
        self._modes = EventModes(store)
        self._admission = admission
        self._clock = clock
        self._run = run or clock  # the run clock (issue 27): the cancelled jobs' retention

    async def current(self) -> EventMode:
        return await self._modes.current()

    async def start_rehearsal(self, caller: Caller) -> EventMode:
        """live → rehearsal. Raises errors.EventModeConflict (``already-in-rehearsal``)."""
        started = await self._modes.start_rehearsal(now=self._clock(), actor=caller.name)
        if started is None:
            now = await self._modes.current()
            raise errors.EventModeConflict(
                "already-in-rehearsal",
                now.mode,
                now.since,
                "the event is already in rehearsal; end it with POST /v1/event/live "
                "(edgeprint go-live)",
            )
        log_event(log, "rehearsal_started", actor=caller.name, correlation_id=caller.correlation_id)
        return started

    async def go_live(self, caller: Caller) -> WentLive:
        """rehearsal → live; the rehearsal's waiting jobs are cancelled.

        Raises errors.EventModeConflict (``not-in-rehearsal``)."""
        went = await self._modes.go_live(
            now=self._clock(), actor=caller.name, why=GO_LIVE_WHY, run=self._run()
        )
        if went is None:
            now = await self._modes.current()
            raise errors.EventModeConflict(
                "not-in-rehearsal",
                now.mode,
                now.since,
                "the event is not in rehearsal, so there is nothing to end: it is live"
                + (" already" if now.since is None else f" since {timefmt.rfc3339_ms(now.since)}"),
            )
        self._admission.forget_depths()  # cancelled jobs left their queues
        log_event(
            log,
            "event_live",
            actor=caller.name,
            cancelled=len(went.cancelled),
            correlation_id=caller.correlation_id,
        )
        return went

    async def apply_config(self, mode: Mode) -> EventMode | None:
        """At start-up: ``[event] mode`` acts only when it differs from the value the last
        start applied (an API go-live is not undone by a restart with the same file). A
        change to ``rehearsal`` starts one (if not in one); a change to ``live`` ends one.
        Returns the new mode when it changed anything."""
        if await self._modes.config_mode() == mode:
            return None
        caller = Caller("config", "tech")
        changed: EventMode | None = None
        try:
            if mode == "rehearsal":
                changed = await self.start_rehearsal(caller)
            else:
                changed = (await self.go_live(caller)).mode
        except errors.EventModeConflict:
            pass  # already in the mode the config asks for
        await self._modes.note_config_mode(mode)
        return changed


__all__ = ["GO_LIVE_WHY", "EventMode", "EventService", "Mode", "WentLive"]
