"""Admission (edgeprint/service/admission.py) decides on the config in force and on its
depth snapshot: where a job goes, or 503."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from edgeprint import errors
from edgeprint.board import PrinterBoard
from edgeprint.config import Config, parse_config
from edgeprint.metrics import Metrics
from edgeprint.service.admission import DEPTH_SNAPSHOT_S, Admission, Depths
from edgeprint.service.records import Caller
from testbed.config import config_dict
from tests.polling import eventually

CALLER = Caller("kiosk-1", "kiosk", "cid")


def _config(tmp_path: Path, high_water: int) -> Config:
    cfg = config_dict(tmp_path / "data")
    cfg["printers"] = [{**p, "high_water": high_water} for p in cfg["printers"]]
    return parse_config(cfg)


async def test_a_reloaded_high_water_counts_at_once(tmp_path: Path) -> None:
    """A pool's capacity and a printer's room come from the config in force: a reload that
    lowers high_water turns the next admission away (503), one that raises it lets it in."""
    depths: Depths = {(None, "lobby"): 3, ("printer-03", None): 1}

    async def read_depths() -> Depths:
        return dict(depths)

    admission = Admission(
        _config(tmp_path, 2), PrinterBoard(), Metrics(), read_depths, clock=lambda: 0.0
    )
    assert await admission.admit(None, "lobby", CALLER) == (None, "lobby")  # 3 < 2 + 2
    assert await admission.admit("printer-03", None, CALLER) == ("printer-03", None)
    admission.config = _config(tmp_path, 1)
    with pytest.raises(errors.Backpressure, match="pool lobby"):
        await admission.admit(None, "lobby", CALLER)
    with pytest.raises(errors.Backpressure, match="printer printer-03"):
        await admission.admit("printer-03", None, CALLER)
    admission.config = _config(tmp_path, 5)
    assert await admission.admit(None, "lobby", CALLER) == (None, "lobby")
    assert await admission.admit("printer-03", None, CALLER) == ("printer-03", None)


class _Depths:
    """A depth source the test opens and fails at will: each read waits for ``gate``."""

    def __init__(self, depths: Depths) -> None:
        self.depths = depths
        self.gate = asyncio.Event()
        self.started = 0
        self.finished = 0
        self.fail: Exception | None = None

    async def __call__(self) -> Depths:
        self.started += 1
        await self.gate.wait()
        self.finished += 1
        if self.fail is not None:
            raise self.fail
        return dict(self.depths)


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_admissions_decide_on_the_last_snapshot_while_the_next_is_read(
    tmp_path: Path,
) -> None:
    """Only the first admission waits for the depths; past DEPTH_SNAPSHOT_S one read starts
    and admissions meanwhile decide at once on the snapshot before, which the new read
    then replaces (a full pool is refused only once the read says so)."""
    source, clock = _Depths({(None, "lobby"): 0}), _Clock()
    admission = Admission(_config(tmp_path, 2), PrinterBoard(), Metrics(), source, clock)
    first = asyncio.create_task(admission.admit(None, "lobby", CALLER))
    await eventually(lambda: source.started == 1, "the first read")
    assert not first.done()  # no snapshot yet: it waits
    source.gate.set()
    assert await first == (None, "lobby")
    source.gate.clear()
    source.depths = {(None, "lobby"): 4}  # the pool fills (capacity 2 + 2)
    clock.now += DEPTH_SNAPSHOT_S + 0.01
    async with asyncio.timeout(5):  # decided on the old snapshot, not waiting for the read
        for _ in range(3):
            assert await admission.admit(None, "lobby", CALLER) == (None, "lobby")
    await eventually(lambda: source.started == 2, "the next read")
    assert (source.started, source.finished) == (2, 1)  # one read for them all
    source.gate.set()
    await eventually(lambda: source.finished == 2, "the second read")
    with pytest.raises(errors.Backpressure, match="pool lobby"):
        await eventually(lambda: admission.admit(None, "lobby", CALLER), "a refusal")


async def test_a_failed_background_read_is_read_again(tmp_path: Path) -> None:
    """A depth read that fails while admissions use the old snapshot fails none of them,
    and the next admission starts another read; a read waited for raises its error."""
    source, clock = _Depths({}), _Clock()
    source.gate.set()
    source.fail = errors.StoreUnavailable("store error: disk I/O error")
    admission = Admission(_config(tmp_path, 2), PrinterBoard(), Metrics(), source, clock)
    with pytest.raises(errors.StoreUnavailable, match="disk I/O"):
        await admission.admit(None, "lobby", CALLER)
    source.fail = None
    assert await admission.admit(None, "lobby", CALLER) == (None, "lobby")
    source.fail = errors.StoreUnavailable("store error: disk I/O error")
    clock.now += DEPTH_SNAPSHOT_S + 0.01
    assert await admission.admit(None, "lobby", CALLER) == (None, "lobby")  # the old snapshot
    await eventually(lambda: source.finished == 3, "the failing read")
    source.fail = None
    assert await admission.admit(None, "lobby", CALLER) == (None, "lobby")
    await eventually(lambda: source.finished == 4, "the read after it")


async def test_forgotten_depths_are_read_afresh_and_an_older_read_is_not_used(
    tmp_path: Path,
) -> None:
    """After forget_depths the next admission waits for a new read; a read begun before the
    forget (it may predate the change) does not become the snapshot."""
    source, clock = _Depths({(None, "lobby"): 0}), _Clock()
    source.gate.set()
    admission = Admission(_config(tmp_path, 2), PrinterBoard(), Metrics(), source, clock)
    await admission.admit(None, "lobby", CALLER)
    source.gate.clear()
    clock.now += DEPTH_SNAPSHOT_S + 0.01
    async with asyncio.timeout(5):  # starts read 2 (it predates the change), waits for none
        await admission.admit(None, "lobby", CALLER)
    admission.forget_depths()
    source.depths = {(None, "lobby"): 4}
    waiting = asyncio.create_task(admission.admit(None, "lobby", CALLER))
    await eventually(lambda: source.started == 3, "a new read after the forget")
    source.gate.set()
    with pytest.raises(errors.Backpressure, match="pool lobby"):
        await waiting
    await eventually(lambda: source.finished == 3, "both reads")
    with pytest.raises(errors.Backpressure, match="pool lobby"):  # read 2 replaced nothing
        await admission.admit(None, "lobby", CALLER)
