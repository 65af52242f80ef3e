"""A printer's new life is described again, even when the store failed to keep the new
epoch (dispatch.monitor.Monitor.probe with dispatch.life.PrinterLife; in-memory store)."""

from __future__ import annotations

import time
from dataclasses import replace

import pytest

from edgeprint import errors
from edgeprint.board import PrinterBoard
from edgeprint.dispatch.leases import SoleOwner
from edgeprint.dispatch.monitor import Monitor
from edgeprint.epochs import Epoch
from edgeprint.metrics import Metrics
from edgeprint.printers.ipp import IppClient, PrinterStatus
from tests.memory_fixtures import MemoryService

_BOOT = time.monotonic()


class Answers:
    """Get-Printer-Attributes answered with ``status`` (its up-time running with the test's
    monotonic clock); records whether each request asked for the description."""

    def __init__(self, status: PrinterStatus) -> None:
        self.status = status
        self.asked: list[bool] = []

    async def get_printer_attributes(self, describe: bool = True) -> PrinterStatus:
        self.asked.append(describe)
        up = 100 + int(time.monotonic() - _BOOT)
        return replace(self.status, up_time_s=up, described=describe)


async def test_a_new_printer_uuid_is_described_again_though_storing_its_epoch_failed(
    memory_service: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    service = memory_service.service
    printer = service.config.printers[0]
    first = PrinterStatus(
        state=3,
        reasons=("none",),
        message="",
        queued_job_count=0,
        operations=frozenset({"Print-Job"}),
        formats=frozenset({"application/pdf"}),
        copies_supported=True,
        accepting_jobs=True,
        up_time_s=100,
        config_change_time=1,
        printer_uuid="urn:uuid:aaaaaaaa-0000-0000-0000-000000000001",
    )
    answers = Answers(first)
    monitor = Monitor(
        printer,
        IppClient.__new__(IppClient),
        service,
        service.config.dispatch,
        Metrics(),
        PrinterBoard(),
        SoleOwner(""),
        raster=False,
        clock=memory_service.clock,
    )
    monitor.client = answers  # type: ignore[assignment]
    assert (await monitor.probe())[1]  # the first life
    assert not (await monitor.probe())[1]
    assert answers.asked == [True, False]  # described once, then state only

    async def refuse(name: str, epoch: Epoch) -> None:
        raise errors.StoreUnavailable("disk refuses writes")

    # another printer at the same address (only printer-uuid differs); the store fails
    answers.status = replace(first, printer_uuid="urn:uuid:bbbbbbbb-0000-0000-0000-000000000002")
    monkeypatch.setattr(service.worker, "save_printer_epoch", refuse)
    with pytest.raises(errors.StoreUnavailable):
        await monitor.probe()
    monkeypatch.undo()
    _, new_life = await monitor.probe()
    assert not new_life  # the epoch advanced in memory at the failed probe
    assert answers.asked[-1] is True  # the new printer is described, not taken as the old one
