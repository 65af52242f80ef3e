"""Probing a printer: its state on every probe, its description (capabilities, supplies)
only when it may have changed (docs/decisions/0047). Real ippeveprinters."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aiohttp

from edgeprint.documents.capabilities import REQUESTED_ATTRIBUTES
from edgeprint.printers.ipp import IppClient
from edgeprint.printers.supplies import SUPPLY_ATTRIBUTES
from testbed.rig import Rig
from tests.conftest import TECH_TOKEN
from tests.polling import eventually
from tests.printing import Client, appliance, rig_config
from tests.rig_fixtures import require_ippeveprinter


async def test_a_state_probe_asks_for_the_state_only(tmp_path: Path) -> None:
    """Without ``describe`` the answer holds the state, printer-config-change-time and the
    ready media (a roll change is seen on every probe), not the capabilities; with it, all."""
    require_ippeveprinter()
    with Rig(tmp_path / "rig") as rig:
        rig.start(1)
        async with aiohttp.ClientSession() as http:
            client = IppClient(
                rig["printer-01"].uri, http,
                probe_attributes=(*REQUESTED_ATTRIBUTES, *SUPPLY_ATTRIBUTES),
            )  # fmt: skip
            state = await client.get_printer_attributes(describe=False)
            full = await client.get_printer_attributes()
    assert not state.described
    assert full.described
    assert state.config_change_time == full.config_change_time is not None
    assert "printer-supply" in full.attributes
    assert "printer-supply" not in state.attributes
    # issue 23: the stock ready (a roll change) is seen within one probe
    assert state.attributes["media-ready"] == full.attributes["media-ready"]
    assert state.attributes["media-col-ready"] == full.attributes["media-col-ready"]
    assert state.state == full.state
    assert state.formats == full.formats


async def _view(kiosk: Client) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {TECH_TOKEN}"}
    async with kiosk.http.get(f"{kiosk.url}/v1/printers", headers=headers) as r:
        view: dict[str, Any] = (await r.json())["printers"][0]
    return view


async def _formats(kiosk: Client) -> list[str] | None:
    caps = (await _view(kiosk))["capabilities"]
    return None if caps is None else list(caps["formats"])


async def test_a_printer_back_as_another_is_described_again_at_once(tmp_path: Path) -> None:
    """A printer that was unreachable and comes back with other formats is read again on
    the next probe, long before the periodic description."""
    require_ippeveprinter()
    with Rig(tmp_path / "rig") as rig:
        rig.start(1)
        cfg = rig_config(tmp_path / "data", rig, idle_probe_interval_s=0.1)
        async with appliance(cfg) as (_, kiosk):

            async def pdf() -> bool | None:
                return True if "application/pdf" in (await _formats(kiosk) or []) else None

            await eventually(pdf, "PDF among printer-01's formats")
            rig.kill("printer-01")

            async def unreachable() -> bool | None:
                return True if not (await _view(kiosk))["reachable"] else None

            await eventually(unreachable, "printer-01 seen unreachable")
            (rig.root / "formats").write_text("image/pwg-raster\n")
            rig.restart("printer-01")

            async def raster_only() -> list[str] | None:
                formats = await _formats(kiosk) or []
                return formats if "application/pdf" not in formats else None

            # well inside DESCRIBE_EVERY_S (60 s): the restart, not the period, did it
            formats = await eventually(raster_only, "printer-01 described again", timeout_s=10)
    assert "image/pwg-raster" in formats
