"""Failover on real printers: a killed or hung printer's work moves to its peers, never twice."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from testbed.rig import Rig
from tests.polling import eventually
from tests.printing import appliance, printed_names, rig_config

pytestmark = pytest.mark.slow


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


def _strike(rig: Rig, fault: str, name: str) -> None:
    if fault == "paper":
        rig.media(name, "empty")
    elif fault == "jam":
        rig.fault(name, "hold", "media-jam")
    else:
        getattr(rig, fault)(name)


@pytest.mark.parametrize("fault", ["kill", "hang", "paper", "jam"])
async def test_printer_dies_mid_run_peers_take_its_work(
    tmp_path: Path, three_printers: Rig, fault: str
) -> None:
    """3 printers in a pool, 60 jobs (10 named for the victim); one dies, hangs, runs out of
    paper or jams mid-run: its work moves to its peers, nothing is printed twice or lost."""
    rig = three_printers
    cfg = rig_config(tmp_path / "data", rig, in_hand_timeout_s=1.0, request_timeout_s=1.0)
    async with appliance(cfg) as (run, kiosk):
        ids = []
        for i in range(50):
            ids.append((await kiosk.submit(f"pool-{i:04d}", pool="lobby", hold=False))["id"])
        for i in range(10):
            job = await kiosk.submit(f"named-{i:04d}", printer="printer-02", hold=False)
            ids.append(job["id"])
        await eventually(
            lambda: len(rig.printed("printer-02")) >= 3, "three prints on printer-02", timeout_s=20
        )
        _strike(rig, fault, "printer-02")
        struck = time.monotonic()
        jobs = await kiosk.wait_states(ids, {"DONE", "DEAD"}, timeout_s=60)
        settled_s = time.monotonic() - struck
        victim = run.dispatcher.snapshot("printer-02")
        assert victim is not None
        if fault != "jam":  # the rig's jammed job ends with its cancel (and the jam with it)
            assert not victim.healthy
        if fault in ("hang", "paper", "jam"):
            # it may still hold a copy: the fence (or the cancel) must keep it from printing
            {"hang": lambda: rig.resume("printer-02"),
             "paper": lambda: rig.media("printer-02", "loaded"),
             "jam": lambda: rig.clear_fault("printer-02")}[fault]()  # fmt: skip

            async def settled() -> bool:
                return not await run.service.worker.open_copies_on("printer-02")

            await eventually(settled, "printer-02's copies settled", timeout_s=20)
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


async def test_busy_printer_is_backpressure_not_failure(tmp_path: Path, printers: Rig) -> None:
    """A printer busy with someone else's job answers server-error-busy: nothing lost or doubled.

    max_inflight=2 lets edgeprint send while a foreign job occupies the printer, so its
    Create-Job meets 0x0507; the job goes back to the queue without using up an attempt.
    """
    import aiohttp

    from edgeprint.printers.ipp import IppClient

    printers.set_speed("printer-01", 0.3)
    cfg = rig_config(tmp_path / "data", printers, pool=None, busy_backoff_s=0.05)
    cfg["printers"][0]["max_inflight"] = 2
    async with appliance(cfg) as (run, kiosk), aiohttp.ClientSession() as http:
        foreign = IppClient(printers["printer-01"].uri, http)
        ids = []
        for round_ in range(3):
            await _print_when_free(foreign, f"foreign-{round_}")
            for i in range(3):
                job = await kiosk.submit(f"busy-{round_}-{i:04d}", printer="printer-01", hold=False)
                ids.append(job["id"])
        jobs = await kiosk.wait_states(ids, {"DONE"}, timeout_s=30)
        busy = [
            v for (op, outcome), v in _ipp_counts(run).items()
            if op == "Create-Job" and outcome == "error-busy"
        ]  # fmt: skip
    assert sum(busy) >= 1, "the test never met server-error-busy"
    assert all(j["attempts"] == 1 for j in jobs)
    names = printed_names(printers)
    assert sorted(n for n in names if n.startswith("foreign")) == [
        "foreign-0",
        "foreign-1",
        "foreign-2",
    ]
    assert all(names[f"edgeprint-{i}"] == ["printer-01"] for i in ids)
    assert all(len(p) == 1 for p in names.values())


async def _print_when_free(client: object, name: str) -> None:
    """Another client's Print-Job, retried while the printer answers busy (bounded)."""
    from edgeprint import errors
    from testbed.pdfs import make_pdf

    deadline = time.monotonic() + 20
    while True:
        try:
            await client.print_job(name, "someone", make_pdf(name), "application/pdf")  # type: ignore[attr-defined]
            return
        except errors.PrinterBusy:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.01)  # the other client's own retry interval


def _ipp_counts(run: object) -> dict[tuple[str, str], float]:
    from prometheus_client.parser import text_string_to_metric_families

    text = run.service.metrics.render().decode()  # type: ignore[attr-defined]
    out: dict[tuple[str, str], float] = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            if s.name == "edgeprint_ipp_request_duration_seconds_count":
                key = (s.labels["operation"], s.labels["outcome"])
                out[key] = out.get(key, 0) + s.value
    return out
