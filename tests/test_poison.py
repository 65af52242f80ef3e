"""Poison jobs and printers that die with a job: never a stall, never a second copy."""

from __future__ import annotations

import asyncio
import collections
from pathlib import Path

import pytest

from testbed.rig import Rig
from tests.polling import eventually
from tests.printing import appliance, printed_names, rig_config

pytestmark = pytest.mark.slow


async def test_poison_at_the_head_does_not_block_and_replays_once(
    tmp_path: Path, printers: Rig
) -> None:
    """A job every printer aborts, ahead of 20 good jobs: the 20 print, it goes DEAD once;
    50 concurrent replays: one wins, and once the fault is gone it prints exactly once."""
    cfg = rig_config(tmp_path / "data", printers, max_attempts=5)
    async with appliance(cfg) as (_, kiosk):
        poison = await kiosk.submit("poison-0001", pool="lobby", priority=0)
        for p in printers:
            printers.fault(p.name, "abort", match=poison["id"])
        status, _ = await kiosk.post(f"/v1/jobs/{poison['id']}/release")
        assert status == 200
        good = [await kiosk.submit(f"good-{i:04d}", pool="lobby", hold=False) for i in range(20)]
        jobs = await kiosk.wait_states([j["id"] for j in good], {"DONE"}, timeout_s=30)
        [dead] = await kiosk.wait_states([poison["id"]], {"DEAD"}, timeout_s=30)
        assert dead["dead_reason"] in ("poison", "attempts_exhausted")
        assert "aborted" in dead["last_error"]
        status, _ = await kiosk.post("/v1/dead-letter", tech=True)
        assert status == 405  # the dead letters are read with GET, replayed one by one
        for p in printers:
            printers.clear_fault(p.name)
        replays = await asyncio.gather(
            *(kiosk.post(f"/v1/jobs/{poison['id']}/replay", tech=True) for _ in range(50))
        )
        assert collections.Counter(s for s, _ in replays) == {200: 1, 409: 49}
        [final] = await kiosk.wait_states([poison["id"]], {"DONE"}, timeout_s=30)
    names = printed_names(printers)
    assert names[f"edgeprint-{final['id']}"] in (["printer-01"], ["printer-02"])
    assert all(len(names[f"edgeprint-{j['id']}"]) == 1 for j in jobs)


async def test_printer_dies_right_after_printing_no_second_copy(
    tmp_path: Path, printers: Rig
) -> None:
    """The printer prints, then dies before reporting completion: outcome unknown → DEAD
    outcome_unknown, fenced, never printed again; after a restart it is healthy again."""
    cfg = rig_config(tmp_path / "data", printers, in_hand_timeout_s=1.0)
    async with appliance(cfg) as (run, kiosk):
        job = await kiosk.submit("die-after-01", printer="printer-01")
        printers.fault("printer-01", "die-after", once=True, match=job["id"])
        status, _ = await kiosk.post(f"/v1/jobs/{job['id']}/release")
        assert status == 200
        [final] = await kiosk.wait_states([job["id"]], {"DEAD", "DONE"}, timeout_s=30)
        assert (final["state"], final["dead_reason"]) == ("DEAD", "outcome_unknown")
        assert [c.job_id for c in await run.service.worker.open_copies_on("printer-01")] == [
            job["id"]
        ]
        printers.restart("printer-01")

        async def settled() -> bool:  # the worker's own back-off decides when it looks
            return not await run.service.worker.open_copies_on("printer-01")

        await eventually(settled, "printer-01's copy settled", timeout_s=20)
        after = await kiosk.submit("after-restart", printer="printer-01", hold=False)
        [done] = await kiosk.wait_states([after["id"]], {"DONE"}, timeout_s=30)
    names = printed_names(printers)
    assert names[f"edgeprint-{job['id']}"] == ["printer-01"]  # exactly once, by the dying printer
    assert names[f"edgeprint-{done['id']}"] == ["printer-01"]


async def test_document_that_cannot_be_read_now_is_retried_not_dead(
    tmp_path: Path, printers: Rig
) -> None:
    """A document that exists but cannot be read (here: a directory in its place; in the
    field EMFILE or EIO) is not `document_missing`: the job waits and prints once readable."""
    data = tmp_path / "data"
    cfg = rig_config(data, printers, unreachable_retry_max_s=0.2)
    async with appliance(cfg) as (_, kiosk):
        job = await kiosk.submit("unreadable-01", printer="printer-01")
        path = data / "spool" / f"{job['id']}.pdf"
        document = path.read_bytes()
        path.unlink()
        path.mkdir()  # read_bytes() → IsADirectoryError, an OSError that is not ENOENT
        status, _ = await kiosk.post(f"/v1/jobs/{job['id']}/release")
        assert status == 200

        async def unreadable() -> dict[str, object] | None:
            current = await kiosk.job(job["id"])
            return current if "Is a directory" in (current["last_error"] or "") else None

        current = await eventually(unreadable, "the read error in last_error")
        assert current["state"] in ("RELEASED", "PRINTING"), current
        path.rmdir()
        path.write_bytes(document)
        [done] = await kiosk.wait_states([job["id"]], {"DONE"}, timeout_s=20)
    assert done["dead_reason"] is None
    assert printed_names(printers)[f"edgeprint-{job['id']}"] == ["printer-01"]
