"""Printing over IPP on real printers (ippeveprinter): ground truth is each printer's own log."""

from __future__ import annotations

from pathlib import Path

from testbed.rig import Rig
from tests.polling import eventually
from tests.printing import appliance, assert_each_printed_once, printed_names, rig_config


async def test_thirty_jobs_over_two_printers_print_exactly_once(
    tmp_path: Path, printers: Rig
) -> None:
    """30 badges (hold=false) for a pool of two printers: all DONE, each printed once."""
    async with appliance(rig_config(tmp_path / "data", printers)) as (_, kiosk):
        jobs = [await kiosk.submit(f"badge-{i:04d}", pool="lobby", hold=False) for i in range(30)]
        ids = [j["id"] for j in jobs]
        done = await kiosk.wait_states(ids, {"DONE"})
    assert_each_printed_once(printers, ids)
    assert {j["printed_on"] for j in done} == {"printer-01", "printer-02"}
    assert all(j["attempts"] == 1 for j in done)


async def test_held_jobs_print_only_after_release(tmp_path: Path, printers: Rig) -> None:
    """A held job stays off paper until released, then prints once on the named printer."""
    async with appliance(rig_config(tmp_path / "data", printers)) as (_, kiosk):
        held = await kiosk.submit("held-0001", printer="printer-02")
        badge = await kiosk.submit("badge-0001", printer="printer-02", hold=False)
        await kiosk.wait_states([badge["id"]], {"DONE"})
        assert (await kiosk.job(held["id"]))["state"] == "HELD"
        assert f"edgeprint-{held['id']}" not in printed_names(printers)
        status, _ = await kiosk.post(f"/v1/jobs/{held['id']}/release")
        assert status == 200
        await kiosk.wait_states([held["id"]], {"DONE"})
    names = printed_names(printers)
    assert names[f"edgeprint-{held['id']}"] == ["printer-02"]
    assert_each_printed_once(printers, [held["id"], badge["id"]])


async def test_priority_order_behind_a_busy_printer(tmp_path: Path, printers: Rig) -> None:
    """Queued behind a slow job: priorities 500, 10, 100, 10, 0 print as 0, 10, 10, 100, 500.

    The slow job is made slow at the printer (a one-job fault), and the five are submitted
    only once the printer has started it, so all five wait behind it."""
    fault_file = printers.printer("printer-01").dir / "fault"
    printers.fault("printer-01", "slow", "4", once=True)
    async with appliance(rig_config(tmp_path / "data", printers)) as (_, kiosk):
        slow = await kiosk.submit("slow-0001", printer="printer-01", hold=False)
        await eventually(lambda: not fault_file.exists(), "the printer starts the slow job")
        queued = []
        for n, prio in enumerate([500, 10, 100, 10, 0]):
            job = await kiosk.submit(
                f"prio-{n:04d}", printer="printer-01", priority=prio, hold=False
            )
            queued.append((prio, n, job["id"]))
        current = await kiosk.job(slow["id"])
        assert current["state"] == "PRINTING", "the slow job finished before the five queued"
        await kiosk.wait_states([slow["id"]] + [q[2] for q in queued], {"DONE"}, timeout_s=30)
    order = [p.job_name.removeprefix("edgeprint-") for p in printers.printed("printer-01")]
    expected = [slow["id"]] + [job_id for _, _, job_id in sorted(queued)]
    assert order == expected


async def test_pool_jobs_spread_and_named_jobs_stay(tmp_path: Path, printers: Rig) -> None:
    """Pool jobs go to both printers; jobs for a named printer print only there."""
    printers.set_speed("printer-01", 0.05)
    printers.set_speed("printer-02", 0.05)
    async with appliance(rig_config(tmp_path / "data", printers)) as (_, kiosk):
        pool = [await kiosk.submit(f"pool-{i:04d}", pool="lobby", hold=False) for i in range(12)]
        named = [
            await kiosk.submit(f"named-{i:04d}", printer="printer-02", hold=False) for i in range(4)
        ]
        await kiosk.wait_states([j["id"] for j in pool + named], {"DONE"})
    names = printed_names(printers)
    assert {names[f"edgeprint-{j['id']}"][0] for j in pool} == {"printer-01", "printer-02"}
    assert all(names[f"edgeprint-{j['id']}"] == ["printer-02"] for j in named)


async def test_copies_reach_the_printer(tmp_path: Path, printers: Rig) -> None:
    """copies=3 is sent as the IPP copies attribute; the printer prints 3 copies of one job."""
    async with appliance(rig_config(tmp_path / "data", printers)) as (_, kiosk):
        job = await kiosk.submit("copies-0003", printer="printer-01", copies=3, hold=False)
        await kiosk.wait_states([job["id"]], {"DONE"})
    [line] = printers.printed("printer-01")
    assert (line.job_name, line.copies) == (f"edgeprint-{job['id']}", 3)


async def test_cancel_while_printing_cancels_at_the_printer(tmp_path: Path, printers: Rig) -> None:
    """Cancelling a PRINTING job sends Cancel-Job; the job ends CANCELLED and nothing prints."""
    printers.set_speed("printer-01", 2.0)
    async with appliance(rig_config(tmp_path / "data", printers)) as (_, kiosk):
        job = await kiosk.submit("cancel-me", printer="printer-01", hold=False)
        await kiosk.wait_states([job["id"]], {"PRINTING"})
        status, body = await kiosk.post(f"/v1/jobs/{job['id']}/cancel")
        assert status == 202
        assert body["state"] == "PRINTING"
        assert body["cancel_requested"] is True
        [final] = await kiosk.wait_states([job["id"]], {"CANCELLED", "DONE"}, timeout_s=15)
    assert final["state"] == "CANCELLED"
    assert printed_names(printers) == {}


async def test_released_job_wakes_an_idle_worker_at_once(tmp_path: Path, printers: Rig) -> None:
    """An idle worker is woken by a release, not by its idle probe (which is set to 60 s)."""
    cfg = rig_config(tmp_path / "data", printers, idle_probe_interval_s=60.0)
    async with appliance(cfg) as (_, kiosk):
        job = await kiosk.submit("wake-0001", pool="lobby")
        status, _ = await kiosk.post(f"/v1/jobs/{job['id']}/release")
        assert status == 200
        await kiosk.wait_states([job["id"]], {"DONE"}, timeout_s=5)
