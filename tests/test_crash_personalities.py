"""Exactly once through crashes, across printer personalities (DESIGN §3).

Each crash window of the send protocol (kill -9 after the claim, after Create-Job,
during Send-Document, after Send-Document, after the printer completed) against a
real ippeveprinter behind the fault proxy in each of its personalities (plain;
renames jobs; purges finished jobs at once; reports no job-k-octets; cuts uploads;
refuses IPP/2.0), and a random-kill run per personality. Ground truth is the
printer's own log: zero second copies on paper, zero DONE without a whole copy,
every job that is not DONE visible with a reason.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from testbed.pdfs import make_pdf
from testbed.proc import ServeProcess
from testbed.rig import Rig
from tests.conftest import to_toml
from tests.ipp_proxy import PERSONALITIES, IppProxy, Personality
from tests.printing import Client, rig_config

pytestmark = pytest.mark.slow

WINDOWS = [
    "after_claim",
    "after_create_job",
    "during_send_document",
    "after_send_document",
    "after_printer_completed",
]
#: Personalities whose answers allow edgeprint to know the outcome: every job must be DONE.
KNOWABLE = {"plain", "renames_jobs", "no_k_octets", "refuses_ipp2"}
DOC = make_pdf("crash personality badge", pad_to=6000)


@pytest.fixture(params=sorted(PERSONALITIES))
def personality(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def behind_proxy(printers: Rig, personality: str) -> Iterator[IppProxy]:
    with IppProxy(printers["printer-01"].uri, Personality(**PERSONALITIES[personality])) as p:
        yield p


def _config(tmp_path: Path, rig: Rig, proxy: IppProxy, **dispatch: Any) -> Path:
    cfg = rig_config(tmp_path / "data", rig, pool=None, **dispatch)
    cfg["printers"] = [{"name": "printer-01", "uri": proxy.uri}]
    path = tmp_path / "config.toml"
    path.write_text(to_toml(cfg))
    return path


def check_exactly_once(rig: Rig, jobs: list[dict[str, Any]], personality: str) -> None:
    """No second copy on paper; DONE only with a whole copy; anything else has a reason."""
    log = rig.printed("printer-01")
    for job in jobs:
        copies = [p.bytes for p in log if job["id"] in p.job_name]
        whole = [b for b in copies if b == len(DOC)]
        # A printer that got only the first bytes of a cut upload may put out what it got (a
        # partial page): that is no copy of the document. Whole copies: one at most.
        assert len(whole) <= 1, f"{job['id']} printed {copies} ({personality})"
        if personality != "cuts_uploads":
            assert copies == whole, f"{job['id']}: a partial copy on paper {copies}"
        if job["state"] == "DONE":
            assert whole == [len(DOC)], f"{job['id']} DONE but on paper: {copies}"
        else:
            assert job["state"] == "DEAD", job
            assert job["dead_reason"], job
            assert job["last_error"], job
        if personality in KNOWABLE:
            assert job["state"] == "DONE", (personality, job)


@pytest.mark.parametrize("window", WINDOWS)
async def test_killed_at_each_window_on_each_personality(
    tmp_path: Path, printers: Rig, behind_proxy: IppProxy, personality: str, window: str
) -> None:
    """Killed at ``window`` and restarted, on a printer of ``personality``: exactly once."""
    if personality == "purges_finished" and window == "after_printer_completed":
        pytest.skip("a printer that purges finished jobs at once never reports one completed")
    cfg = _config(tmp_path, printers, behind_proxy)
    crashing = ServeProcess(cfg, tmp_path / "crash.log", env={"EDGEPRINT_CRASH_AT": window})
    async with aiohttp.ClientSession() as http:
        with crashing.start():
            job = await Client(http, crashing.url).submit(
                "window-0001", printer="printer-01", hold=False, doc=DOC
            )
            assert crashing.wait_exit() == -9, crashing.tail()
        restarted = ServeProcess(cfg, tmp_path / "restart.log")
        with restarted.start():
            kiosk = Client(http, restarted.url)
            [final] = await kiosk.wait_states([job["id"]], {"DONE", "DEAD"}, timeout_s=30)
            assert restarted.terminate() == 0
    check_exactly_once(printers, [final], personality)


async def test_random_kills_on_each_personality(
    tmp_path: Path, printers: Rig, behind_proxy: IppProxy, personality: str
) -> None:
    """12 jobs, SIGKILL at 4 random instants, on a printer of ``personality``: exactly once."""
    rng = random.Random(f"edgeprint-{personality}")
    printers.set_speed("printer-01", 0.02)
    if behind_proxy.personality.cut_after is not None:
        behind_proxy.configure(cut_once=False)  # cut every upload: each job is settled honestly
    cfg = _config(tmp_path, printers, behind_proxy)
    server = ServeProcess(cfg, tmp_path / "serve.log")
    ids: list[str] = []
    async with aiohttp.ClientSession() as http:
        server.start()
        try:
            for i in range(12):
                job = await Client(http, server.url).submit(
                    f"chaos-{i:04d}", printer="printer-01", hold=False, doc=DOC
                )
                ids.append(job["id"])
            for _ in range(4):
                await asyncio.sleep(rng.uniform(0.01, 0.15))  # a random instant to kill at
                server.kill()
                server.start()
            jobs = await Client(http, server.url).wait_states(ids, {"DONE", "DEAD"}, timeout_s=60)
            assert server.terminate() == 0
        finally:
            server.kill()
    check_exactly_once(printers, jobs, personality)
