"""Printers a reload removed whose waiting jobs the store could not move yet (issue 27 §4).

A reload that removes a printer moves its waiting jobs to the printer's pool
(:meth:`PrinterControls.retire`). When the disk refuses that write (read-only, I/O errors),
the removed printer's worker claims nothing new, so without a second try those jobs
would wait for ever: :class:`Retirements` tries again, with back-off, until the store
takes the write, unless a later reload configured the printer again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Final

from edgeprint import errors
from edgeprint.config import PrinterConfig
from edgeprint.logs import log_event
from edgeprint.service.jobs import JobService

log = logging.getLogger(__name__)

RETRY_S: Final = 0.5
RETRY_MAX_S: Final = 10.0


class Retirements:
    """:meth:`retire` as the service does it, and again later when the store refused it."""

    def __init__(self, service: JobService) -> None:
        self.service = service
        self._tasks: set[asyncio.Task[None]] = set()

    async def retire(self, printer: PrinterConfig) -> None:
        """Move ``printer``'s waiting jobs now; on a store error, keep trying in a task of its
        own and raise the error (the reload logs it)."""
        try:
            await self.service.printers.retire(printer)
        except errors.StoreError:
            task = asyncio.create_task(self._again(printer), name=f"retire:{printer.name}")
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
            raise

    async def _again(self, printer: PrinterConfig) -> None:
        delay = RETRY_S
        while True:
            await asyncio.sleep(delay)  # the retries' pace
            if any(p.name == printer.name for p in self.service.config.printers):
                return  # configured again: its worker prints them
            try:
                moved = await self.service.printers.retire(printer)
            except errors.StoreError:
                delay = min(2 * delay, RETRY_MAX_S)
                continue
            log_event(
                log,
                "printer_retired_late",
                message="a removed printer's waiting jobs moved after the store took writes again",
                level=logging.WARNING,
                printer=printer.name,
                moved=len(moved),
            )
            return

    async def close(self) -> None:
        """Stop trying (at shutdown: the next start's config decides)."""
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError):
                await task
