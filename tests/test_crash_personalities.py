"""Exactly once through crashes, across printer personalities (DESIGN §3).

Each crash window of the send protocol (kill -9 after the claim, after Create-Job,
during Send-Document, after Send-Document, after the printer completed) against a
real ippeveprinter behind the adversary proxy (testbed/adversary/proxy.py) in each of
the personalities below (plain; renames jobs; purges finished jobs at once; reports no
job-k-octets; cuts uploads; refuses IPP/2.0), and a random-kill run per personality.
Ground truth is the printer's own log: zero second copies on paper, zero DONE without a
whole copy (a DONE ``printed_unverified`` job, settled by a copy the printer acknowledged
and then forgot, has at most one), every job that is not DONE visible with a reason.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from testbed.adversary.proxy import AdversaryProxy, Knobs
from testbed.pdfs import make_pdf
from testbed.proc import ServeProcess
from testbed.rig import Rig
from tests.conftest import to_toml
from tests.printing import Client, rig_config

pytestmark = pytest.mark.slow

WINDOWS = [
    "after_claim",
    "after_create_job",
    "during_send_document",
    "after_send_document",
    "after_printer_completed",
]
#: The printer personalities, as adversary proxy knobs. Every one but no_k_octets reports
#: job-k-octets ("exact": the bytes the proxy handed the printer), as the printers these
#: tests were first written against did; no_k_octets is ippeveprinter as it is (it reports
#: none), so the two differ only in that figure.
PERSONALITIES: dict[str, dict[str, Any]] = {
    "plain": {"k_octets": "exact"},
    "renames_jobs": {"k_octets": "exact", "job_name": "replace", "user_name": "replace"},
    "purges_finished": {"k_octets": "exact", "history_s": 0.0},
    "no_k_octets": {},
    "cuts_uploads": {"k_octets": "exact", "cut_after": 300, "cut_once": True},
    "refuses_ipp2": {"k_octets": "exact", "ipp11_only": True},
}
#: Personalities whose answers allow edgeprint to know the outcome: every job must be DONE.
KNOWABLE = {"plain", "renames_jobs", "no_k_octets", "refuses_ipp2"}
#: How a job ends on the printer that forgets finished jobs at once, killed at each window
#: (state, settled_by). Killed before any document left, the copy sent after the restart
#: is acknowledged, then forgotten: DONE printed_unverified. Killed during the upload, or
#: after it but before its acknowledgement was recorded, the copy had (part of) the document
#: and was never known acknowledged, so its disappearance is no proof of anything: DEAD
#: outcome_unknown, never a second copy.
FORGETFUL: dict[str, tuple[str, str]] = {
    "after_claim": ("DONE", "forgotten_after_acknowledged"),
    "after_create_job": ("DONE", "forgotten_after_acknowledged"),
    "during_send_document": ("DEAD", "vanished"),
    "after_send_document": ("DEAD", "vanished"),
}
DOC = make_pdf("crash personality badge", pad_to=6000)


@pytest.fixture(params=sorted(PERSONALITIES))
def personality(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def behind_proxy(printers: Rig, personality: str) -> Iterator[AdversaryProxy]:
    p1 = printers["printer-01"]
    knobs = Knobs(**PERSONALITIES[personality])
    with AdversaryProxy(p1.uri, knobs, printer_dir=p1.dir) as p:
        yield p


def _config(tmp_path: Path, rig: Rig, proxy: AdversaryProxy, **dispatch: Any) -> Path:
    cfg = rig_config(tmp_path / "data", rig, pool=None, **dispatch)
    cfg["printers"] = [{"name": "printer-01", "uri": proxy.uri}]
    path = tmp_path / "config.toml"
    path.write_text(to_toml(cfg))
    return path


def check_exactly_once(rig: Rig, jobs: list[dict[str, Any]], personality: str) -> None:
    """No second copy on paper; DONE only with a whole copy (printed_unverified: at most
    one); anything else has a reason."""
    log = rig.printed("printer-01")
    for job in jobs:
        copies = [p for p in log if job["id"] in p.job_name]
        whole = [p for p in copies if p.whole]
        # A printer that got only the first bytes of a cut upload may put out what it got (a
        # partial page): that is no copy of the document. Whole copies: one at most.
        assert len(whole) <= 1, f"{job['id']} printed {copies} ({personality})"
        if personality != "cuts_uploads":
            assert copies == whole, f"{job['id']}: a partial copy on paper {copies}"
        if job["state"] == "DONE" and job["printed_unverified"] is None:
            assert len(whole) == 1, f"{job['id']} DONE but on paper: {copies}"
            assert whole[0].bytes == len(DOC), f"{job['id']} DONE but on paper: {copies}"
        elif job["state"] == "DONE":
            assert job["settled_by"] == "forgotten_after_acknowledged", job
            assert personality == "purges_finished", (personality, job)
        else:
            assert job["state"] == "DEAD", job
            assert job["dead_reason"], job
            assert job["last_error"], job
        if personality in KNOWABLE:
            assert job["state"] == "DONE", (personality, job)
            assert job["printed_unverified"] is None, (personality, job)


@pytest.mark.parametrize("window", WINDOWS)
async def test_killed_at_each_window_on_each_personality(
    tmp_path: Path, printers: Rig, behind_proxy: AdversaryProxy, personality: str, window: str
) -> None:
    """Killed at ``window`` and restarted, on a printer of ``personality``: exactly once."""
    if personality == "purges_finished" and window == "after_printer_completed":
        pytest.skip(
            "a printer that purges finished jobs at once never reports one completed (its "
            "copies settle as forgotten, a point this crash window does not reach)"
        )
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
            try:  # bounded as the random-kills test is: the restart reconciles, then prints
                [final] = await kiosk.wait_states([job["id"]], {"DONE", "DEAD"}, timeout_s=60)
            except pytest.fail.Exception as exc:  # what the appliance did meanwhile, to tell why
                raise AssertionError(f"{exc}\n{restarted.tail()}") from None
            assert restarted.terminate() == 0
    check_exactly_once(printers, [final], personality)
    if personality == "purges_finished":
        assert (final["state"], final["settled_by"]) == FORGETFUL[window], final
        if final["state"] == "DONE":
            assert final["printed_unverified"], final
            assert [p.whole for p in printers.printed("printer-01")] == [True]
        else:
            assert final["dead_reason"] == "outcome_unknown", final


async def test_random_kills_on_each_personality(
    tmp_path: Path, printers: Rig, behind_proxy: AdversaryProxy, personality: str
) -> None:
    """12 jobs, SIGKILL at 4 random instants, on a printer of ``personality``: exactly once."""
    rng = random.Random(f"edgeprint-{personality}")
    printers.set_speed("printer-01", 0.02)
    if behind_proxy.knobs.cut_after is not None:
        behind_proxy.knobs.cut_once = False  # cut every upload: each job is settled honestly
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
