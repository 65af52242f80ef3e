"""Failover on real printers: a killed or hung printer's work moves to its peers, never twice."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from tests.printing import appliance, printed_names, rig_config
from tests.rig import Rig

pytestmark = pytest.mark.slow


@pytest.fixture
def three_printers(tmp_path: Path) -> Rig:
    rig = Rig(tmp_path / "rig")
    rig.start(3)
    for p in rig:
        rig.set_speed(p.name, 0.05)
    yield rig  # type: ignore[misc]
    rig.stop()


def _check_outcome(rig: Rig, jobs: list[dict[str, object]]) -> None:
    """Never twice, never lost: DONE jobs printed exactly once; a DEAD one only as outcome_unknown."""
    names = printed_names(rig)
    twice = {n: p for n, p in names.items() if len(p) > 1}
    assert not twice, f"printed twice: {twice}"
    for job in jobs:
        name = f"edgeprint-{job['id']}"
        if job["state"] == "DONE":
            assert name in names, f"DONE but never printed: {job['id']}"
        else:
            assert (job["state"], job["dead_reason"]) == ("DEAD", "outcome_unknown"), job
    assert (
        sum(j["state"] != "DONE" for j in jobs) <= 1
    )  # at most the job in the dead printer's hands


@pytest.mark.parametrize("fault", ["kill", "hang"])
async def test_printer_dies_mid_run_peers_take_its_work(
    tmp_path: Path, three_printers: Rig, fault: str
) -> None:
    """3 printers in a pool, 60 jobs (10 named for the victim); one is killed or hung mid-run."""
    rig = three_printers
    cfg = rig_config(tmp_path / "data", rig, in_hand_timeout_s=1.0, request_timeout_s=1.0)
    async with appliance(cfg) as (run, kiosk):
        ids = []
        for i in range(50):
            ids.append((await kiosk.submit(f"pool-{i:04d}", pool="lobby", hold=False))["id"])
        for i in range(10):
            job = await kiosk.submit(f"named-{i:04d}", printer="printer-02", hold=False)
            ids.append(job["id"])
        deadline = time.monotonic() + 20
        while len(rig.printed("printer-02")) < 3 and time.monotonic() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(0.01)  # polling the printer's ground truth
        getattr(rig, fault)("printer-02")
        struck = time.monotonic()
        jobs = await kiosk.wait_states(ids, {"DONE", "DEAD"}, timeout_s=60)
        settled_s = time.monotonic() - struck
        victim = run.dispatcher.snapshot("printer-02")
        assert victim is not None
        assert not victim.healthy
        if fault == "hang":
            rig.resume("printer-02")  # it may still hold a copy: the fence must cancel it
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                fences = await run.service.jobs.fences("printer-02")
                snap = run.dispatcher.snapshot("printer-02")
                if not fences and snap is not None and snap.healthy:
                    break
                await asyncio.sleep(0.05)  # polling the appliance's own state, bounded
            assert not await run.service.jobs.fences("printer-02")
    _check_outcome(rig, jobs)
    named = {f"edgeprint-{j}" for j in ids[50:]}
    printers_of_named = {p for n, ps in printed_names(rig).items() if n in named for p in ps}
    assert printers_of_named - {"printer-02"}, "the victim's named jobs were never failed over"
    assert settled_s < 30


async def test_paused_printer_takes_no_work_and_drain_moves_it(
    tmp_path: Path, printers: Rig
) -> None:
    """Pause stops new work at once; drain moves the waiting jobs to the pool's peers."""
    async with appliance(rig_config(tmp_path / "data", printers)) as (_, kiosk):
        status, body = await kiosk.post("/v1/printers/printer-01/pause", tech=True)
        assert (status, body["paused"]) == (200, True)
        jobs = [
            await kiosk.submit(f"paused-{i:04d}", printer="printer-01", hold=False)
            for i in range(3)
        ]
        # printer-02 is idle and healthy: new jobs for the paused printer go there
        done = await kiosk.wait_states([j["id"] for j in jobs], {"DONE"}, timeout_s=15)
        assert {j["printed_on"] for j in done} == {"printer-02"}
        status, body = await kiosk.post("/v1/printers/printer-02/drain", tech=True)
        assert status == 200
        assert body["printer"]["paused"] is True
        assert body["moved"] == []
        status, body = await kiosk.post("/v1/printers/printer-01/resume", tech=True)
        assert (status, body["paused"]) == (200, False)
        last = await kiosk.submit("after-resume", pool="lobby", hold=False)
        [final] = await kiosk.wait_states([last["id"]], {"DONE"}, timeout_s=15)
        assert final["printed_on"] == "printer-01"
    assert printed_names(printers)[f"edgeprint-{last['id']}"] == ["printer-01"]
