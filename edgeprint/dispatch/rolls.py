"""One label printer's roll as its worker keeps it: seen in probes, counted at settlement.

The count is :class:`edgeprint.runway.Runway`'s; this holds it for the worker, loads what
was stored before a restart, stores it again whenever it changes (a label run-out nobody
announced because the appliance restarted mid-roll is worse than one write per job), and
logs and counts every roll change. A printer without ``labels_per_roll`` has no runway and
this does nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from edgeprint.config import PrinterConfig
from edgeprint.logs import log_event
from edgeprint.metrics import Metrics
from edgeprint.printers import levels
from edgeprint.printers.ipp import PrinterStatus
from edgeprint.runway import CAUSE_TECHNICIAN, Runway, RunwayView
from edgeprint.service import JobService

log = logging.getLogger(__name__)


class RollCounter:
    """The runway of one printer (None without ``labels_per_roll``)."""

    def __init__(
        self,
        printer: PrinterConfig,
        service: JobService,
        metrics: Metrics,
        clock: Callable[[], float],
    ) -> None:
        self.name = printer.name
        self.service = service
        self.metrics = metrics
        self._clock = clock
        per_roll = printer.labels_per_roll
        self.runway = Runway(per_roll, started_at=clock()) if per_roll is not None else None
        if self.runway is not None:
            metrics.roll_changes.labels(printer=self.name)  # 0 from the start: increase() works
        self._loaded = False

    @property
    def labels_left(self) -> int | None:
        return self.runway.labels_left if self.runway is not None else None

    def view(self) -> RunwayView | None:
        return self.runway.view(self._clock()) if self.runway is not None else None

    async def _load(self) -> None:
        """The roll stored before this worker started (a restart keeps counting)."""
        if self._loaded or self.runway is None:
            return
        stored = await self.service.worker.printer_roll(self.name)
        if stored is not None:
            self.runway.roll = stored
        self._loaded = True

    def reload(self) -> None:
        """Read the stored roll again before counting on (a new lease: another appliance may
        have driven the printer meanwhile)."""
        self._loaded = False

    async def on_probe(self, status: PrinterStatus) -> None:
        """A probe's answer: a media-empty → ready transition or new media is a roll change."""
        runway = self.runway
        if runway is None:
            return
        await self._load()
        media = levels.loaded_media(status.attributes)
        empty = levels.media_empty(status.reasons, status.attributes) or media == ()
        before = runway.roll
        cause = runway.seen(empty, media, self._clock())
        if cause is not None:
            self._changed(cause)
        if runway.roll != before:
            await self.service.worker.save_printer_roll(self.name, runway.roll)

    async def printed(self, labels: int, *, live: bool = True) -> None:
        """``labels`` came out of the printer (a job settled DONE here; ``live``: not a
        rehearsal job, whose labels leave the rate alone)."""
        runway = self.runway
        if runway is None or labels <= 0:
            return
        await self._load()
        runway.printed(labels, self._clock(), live=live)
        await self.service.worker.save_printer_roll(self.name, runway.roll)

    def media_loaded(self) -> None:
        """A technician says a new roll is in (the service stores the reset count)."""
        if self.runway is None:
            return
        self._loaded = True  # what is stored is older than this
        self.runway.roll_changed(self._clock())
        self._changed(CAUSE_TECHNICIAN)

    def _changed(self, cause: str) -> None:
        self.metrics.roll_changes.labels(printer=self.name).inc()
        log_event(
            log,
            "printer_roll_changed",
            message="label roll changed",
            printer=self.name,
            why=cause,
            labels_per_roll=self.runway.labels_per_roll if self.runway else None,
        )
