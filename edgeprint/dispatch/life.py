"""One printer's life and personality, as its monitor learns them.

Which life of the printer this is (:mod:`edgeprint.epochs`: a restart, another
printer at the same address) and what it is known to keep and echo
(:mod:`edgeprint.personality`), loaded from the store on first use and saved
back when they change.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from edgeprint.epochs import Clock, Epoch, Reading, advance
from edgeprint.logs import log_event
from edgeprint.metrics import Metrics
from edgeprint.personality import JobAnswer, Traits, learn_forgotten, learn_job, learn_printer
from edgeprint.printers.ipp import PrinterStatus
from edgeprint.service import JobService

#: The logger name its lines have always had (the JSON line's ``logger`` field).
log = logging.getLogger("edgeprint.dispatch.monitor")

#: The epoch's latest reading is stored at least this often (a restart of the appliance then
#: compares the printer's up-time with a reading at most this old) (seconds).
EPOCH_SAVE_EVERY_S = 60.0
#: printer-up-time readings at least this far apart teach whether it moves (seconds; it
#: counts whole seconds, so a moving one has moved by then).
UP_TIME_LEARN_S = 1.5


class PrinterLife:
    """The printer's epoch and traits: fed by each probe (:meth:`observe`) and by what its
    answers about copies show (:meth:`learn`, :meth:`learn_trait`, :meth:`learn_forgotten`)."""

    def __init__(
        self,
        name: str,
        service: JobService,
        metrics: Metrics,
        clocks: Callable[[], Clock] = Clock.now,
    ) -> None:
        self.name = name
        self.service = service
        self.metrics = metrics
        self._clocks = clocks
        self.epoch: Epoch | None = None
        self.traits = Traits()
        #: The printer did not answer (it may have been off): the next reading may be a
        #: new life even when its up-time looks continuous.
        self.after_outage = False
        self._loaded = False
        self._epoch_saved_at = 0.0
        self._up_ref: tuple[int | None, float] | None = None  # (up-time, boot seconds)
        self._traits_saved = Traits()

    @property
    def epoch_number(self) -> int | None:
        return self.epoch.number if self.epoch is not None else None

    async def _load(self) -> None:
        if self._loaded:
            return
        self.epoch = await self.service.worker.printer_epoch(self.name)
        self.traits = await self.service.worker.printer_traits(self.name) or Traits()
        self._traits_saved = self.traits
        self._loaded = True

    async def observe(self, status: PrinterStatus, asked: Clock) -> bool:
        """Fold a probe's printer-up-time, printer-uuid and printer-config-change-time into
        the epoch (and the up-time trait); True when a new epoch began."""
        await self._load()
        clock = self._clocks()
        ref = self._up_ref
        if ref is None or clock.boot_s - ref[1] >= UP_TIME_LEARN_S:
            if ref is not None:
                self.traits = learn_printer(
                    self.traits,
                    up_time_s=status.up_time_s,
                    previous_up_s=ref[0],
                    elapsed_s=clock.boot_s - ref[1],
                )
            self._up_ref = (status.up_time_s, clock.boot_s)
        reading = Reading(
            status.up_time_s,
            status.printer_uuid,
            status.config_change_time,
            status.config_change_dt,
        )
        self.epoch, cause = advance(
            self.epoch,
            reading,
            clock,
            asked=asked,
            after_outage=self.after_outage,
            up_time_moves=self.traits.up_time_moves,
        )
        self.after_outage = False
        self.metrics.printer_epoch.labels(printer=self.name).set(self.epoch.number)
        if cause is not None:
            self.metrics.printer_epochs.labels(printer=self.name).inc()
            log_event(
                log,
                "printer_epoch",
                level=logging.INFO if self.epoch.number == 1 else logging.WARNING,
                printer=self.name,
                epoch=self.epoch.number,
                why=cause,
            )
        if cause is not None or clock.wall - self._epoch_saved_at >= EPOCH_SAVE_EVERY_S:
            await self.service.worker.save_printer_epoch(self.name, self.epoch)
            self._epoch_saved_at = clock.wall
        await self._save_traits()
        return cause is not None

    async def _save_traits(self) -> None:
        if self.traits != self._traits_saved:
            await self.service.worker.save_printer_traits(self.name, self.traits)
            log_event(log, "printer_personality", printer=self.name, traits=self.traits.as_json())
            self._traits_saved = self.traits

    async def learn(self, answer: JobAnswer, *, sent_name: str, sent_user: str | None) -> None:
        """An answer about a copy whose identity is certain: what it shows of the printer."""
        self.traits = learn_job(self.traits, answer, sent_name=sent_name, sent_user=sent_user)
        await self._save_traits()

    async def learn_trait(self, **changes: Any) -> None:
        """Something the printer showed about itself (e.g. ``gja_unreliable=True``)."""
        self.traits = replace(self.traits, **changes)
        await self._save_traits()

    async def learn_forgotten(self) -> None:
        self.traits = learn_forgotten(self.traits)
        await self._save_traits()
