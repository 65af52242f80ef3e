"""Admission (edgeprint/service/admission.py) decides on the config in force and on its
depth snapshot: where a job goes, or 503."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgeprint import errors
from edgeprint.board import PrinterBoard
from edgeprint.config import Config, parse_config
from edgeprint.metrics import Metrics
from edgeprint.service.admission import Admission, Depths
from edgeprint.service.records import Caller
from testbed.config import config_dict

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
