"""Exactly once through crashes: SIGKILL the appliance at every window of the send protocol.

Ground truth is what each real printer printed (its own log), never edgeprint's view.
"""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

import aiohttp
import pytest

from edgeprint.printers.ipp import IppClient
from testbed.proc import ServeProcess
from testbed.rig import Rig
from tests.conftest import to_toml
from tests.polling import eventually
from tests.printing import Client, assert_each_printed_once, printed_names, rig_config

pytestmark = pytest.mark.slow


def _config(tmp_path: Path, rig: Rig, **dispatch: object) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(to_toml(rig_config(tmp_path / "data", rig, **dispatch)))
    return path


@pytest.mark.parametrize(
    "point",
    ["after_claim", "after_create_job", "after_send_document", "after_printer_completed"],
)
async def test_killed_at_each_window_prints_exactly_once(
    tmp_path: Path, printers: Rig, point: str
) -> None:
    """Killed at ``point`` and restarted: the job ends DONE and was printed exactly once."""
    cfg = _config(tmp_path, printers)
    crashing = ServeProcess(cfg, tmp_path / "crash.log", env={"EDGEPRINT_CRASH_AT": point})
    async with aiohttp.ClientSession() as http:
        with crashing.start():
            job = await Client(http, crashing.url).submit(
                "window-0001", printer="printer-01", hold=False
            )
            assert crashing.wait_exit() == -9, crashing.tail()
        restarted = ServeProcess(cfg, tmp_path / "restart.log")
        with restarted.start():
            kiosk = Client(http, restarted.url)
            [final] = await kiosk.wait_states([job["id"]], {"DONE", "DEAD"}, timeout_s=20)
            assert restarted.terminate() == 0
    assert final["state"] == "DONE", final
    assert_each_printed_once(printers, [job["id"]])


async def test_random_kills_during_fifty_jobs(tmp_path: Path, printers: Rig) -> None:
    """50 jobs over 2 printers, SIGKILL at 12 random instants: all DONE, each printed once."""
    rng = random.Random(20261129)
    for p in printers:
        printers.set_speed(p.name, 0.02)
    cfg = _config(tmp_path, printers)
    server = ServeProcess(cfg, tmp_path / "serve.log")
    ids: list[str] = []
    kills = 0
    async with aiohttp.ClientSession() as http:
        server.start()
        try:
            for i in range(50):
                job = await Client(http, server.url).submit(
                    f"chaos-{i:04d}", pool="lobby", hold=False
                )
                ids.append(job["id"])
            while kills < 12:
                await asyncio.sleep(
                    rng.uniform(0.005, 0.12)
                )  # a random instant, not a sync stand-in
                server.kill()
                kills += 1
                server.start()
            kiosk = Client(http, server.url)
            jobs = await kiosk.wait_states(ids, {"DONE", "DEAD"}, timeout_s=60)
            assert server.terminate() == 0
        finally:
            server.kill()
    assert [j["id"] for j in jobs if j["state"] != "DONE"] == []
    assert_each_printed_once(printers, ids)


async def _up_time(http: aiohttp.ClientSession, printers: Rig) -> bool:
    status = await IppClient(printers["printer-01"].uri, http).get_printer_attributes()
    return (status.up_time_s or 0) >= 2


async def test_printer_restart_with_lost_history_is_dead_outcome_unknown(
    tmp_path: Path, printers: Rig
) -> None:
    """A job the printer may have printed before it forgot its history goes DEAD, never twice."""
    printers.set_speed("printer-01", 3.0)
    cfg = _config(tmp_path, printers)
    server = ServeProcess(cfg, tmp_path / "serve.log")
    async with aiohttp.ClientSession() as http:
        with server.start():
            kiosk = Client(http, server.url)
            job = await kiosk.submit("forgot-0001", printer="printer-01", hold=False)
            await kiosk.wait_states([job["id"]], {"PRINTING"})
            await eventually(lambda: printers.received("printer-01"), "the document at printer-01")
            assert printers.received("printer-01") == 1
            server.kill()
        # a printer that has been running a while (no printer-up-time counting whole seconds
        # can show a restart within a second of booting) loses power
        await eventually(lambda: _up_time(http, printers), "printer-01 up for 2 s")
        printers.restart("printer-01")  # power cycle: history gone, the job never finishes
        with server.start():
            kiosk = Client(http, server.url)
            [final] = await kiosk.wait_states([job["id"]], {"DEAD", "DONE"}, timeout_s=20)
            assert server.terminate() == 0
    assert (final["state"], final["dead_reason"]) == ("DEAD", "outcome_unknown")
    assert printed_names(printers) == {}
