"""Bulk calls racing each other and single calls, on real printers (ippeveprinter).

Ground truth is twofold: every answer's per-job outcomes (each job acted on exactly once
across all of them) and each printer's own log of what came out (each job on paper at
most once, and exactly when it ended DONE).
"""

from __future__ import annotations

import asyncio
import collections
from pathlib import Path
from typing import Any

from edgeprint.service import Caller
from testbed.rig import Rig
from tests.printing import (
    Client,
    appliance,
    assert_each_printed_once,
    printed_names,
    rig_config,
)
from tests.test_status_page_actions import dead_on

TECH = Caller("tech-1", "tech")


async def _held(kiosk: Client, n: int, prefix: str, **meta: Any) -> list[str]:
    return [(await kiosk.submit(f"{prefix}-{i:04d}", pool="lobby", **meta))["id"] for i in range(n)]


def _count(answers: list[tuple[int, Any]], words: set[str]) -> collections.Counter[str]:
    """How often each job got one of ``words`` across the bulk answers (all must be 200)."""
    seen: collections.Counter[str] = collections.Counter()
    for status, body in answers:
        assert status == 200, body
        for r in body["results"]:
            if r["outcome"] in words:
                seen[r["id"]] += 1
    return seen


async def test_bulk_and_single_releases_print_each_job_once(tmp_path: Path, printers: Rig) -> None:
    """30 HELD jobs; at once a bulk release by filter, a bulk release by ids and 30 single
    releases over real HTTP: exactly one `released` (or single 200) per job across every
    answer, and each job printed exactly once by the printers."""
    async with appliance(rig_config(tmp_path / "data", printers)) as (run, kiosk):
        ids = await _held(kiosk, 30, "bulk-rel")
        results = await asyncio.gather(
            kiosk.post("/v1/jobs/release", {"filter": {"owner": "ann"}, "limit": 30}),
            kiosk.post("/v1/jobs/release", {"ids": ids[::-1], "limit": 30}),
            *(kiosk.post(f"/v1/jobs/{i}/release") for i in ids),
        )
        bulk, single = results[:2], results[2:]
        wins = _count(bulk, {"released"})
        for job_id, (status, body) in zip(ids, single, strict=True):
            assert status in (200, 409), body
            if status == 200:
                wins[job_id] += 1
            else:
                assert body["state"] != "HELD"
        assert wins == dict.fromkeys(ids, 1)
        # losers say conflict, with the state they found
        for _, body in bulk:
            for r in body["results"]:
                assert r["outcome"] in ("released", "conflict")
        await kiosk.wait_states(ids, {"DONE"}, timeout_s=60)
        for job_id in ids:
            events = await run.service.jobs.events(job_id)
            assert [e.to_state for e in events].count("RELEASED") == 1
    assert_each_printed_once(printers, ids)


async def test_bulk_cancel_racing_releases_acts_once_and_prints_only_done_jobs(
    tmp_path: Path, printers: Rig
) -> None:
    """30 HELD jobs; at once a bulk cancel by filter, a bulk release by ids and a single
    release of every other job: each job released at most once and cancelled at most once;
    it ends DONE (printed once) or CANCELLED (never printed)."""
    for p in printers:
        printers.set_speed(p.name, 0.05)
    async with appliance(rig_config(tmp_path / "data", printers)) as (run, kiosk):
        ids = await _held(kiosk, 30, "bulk-can")
        results = await asyncio.gather(
            kiosk.post("/v1/jobs/cancel", {"filter": {"pool": "lobby"}, "limit": 30}),
            kiosk.post("/v1/jobs/release", {"ids": ids, "limit": 30}),
            *(kiosk.post(f"/v1/jobs/{i}/release") for i in ids[::2]),
        )
        cancel, release, single = results[0], results[1], results[2:]
        released = _count([release], {"released"})
        for job_id, (status, body) in zip(ids[::2], single, strict=True):
            assert status in (200, 409), body
            if status == 200:
                released[job_id] += 1
        cancelled = _count([cancel], {"cancelled", "cancel-requested"})
        assert max(released.values(), default=0) <= 1
        assert max(cancelled.values(), default=0) <= 1
        assert set(released) | set(cancelled) == set(ids)
        finals = await kiosk.wait_states(ids, {"DONE", "CANCELLED"}, timeout_s=60)
        for job in finals:
            history = [e.to_state for e in await run.service.jobs.events(job["id"])]
            assert history.count("RELEASED") <= 1
            assert history.count("CANCELLED") <= 1
            if job["state"] == "DONE":
                assert released[job["id"]] == 1
    names = printed_names(printers)
    assert all(len(where) == 1 for where in names.values()), names
    done = {f"edgeprint-{j['id']}" for j in finals if j["state"] == "DONE"}
    assert set(names) == done


async def test_replay_dead_letters_by_reason_prints_each_once(
    tmp_path: Path, printers: Rig
) -> None:
    """Ten dead letters `attempts_exhausted` and two `poison` on printer-02: two bulk replays
    by reason and single replays of each at once replay each exhausted job exactly once;
    they print exactly once; the poison ones stay DEAD and off paper."""
    cfg = rig_config(tmp_path / "data", printers)
    del cfg["printers"][1]["pool"]  # printer-02 alone: paused while the dead letters are made
    async with appliance(cfg) as (run, kiosk):
        await run.service.printers.set_paused("printer-02", True, TECH)
        exhausted = [
            await dead_on(kiosk, run, f"bulk-dead-x{i:03d}", "attempts_exhausted", "ann")
            for i in range(10)
        ]
        poison = [
            await dead_on(kiosk, run, f"bulk-dead-p{i:03d}", "poison", "ann") for i in range(2)
        ]
        await run.service.printers.set_paused("printer-02", False, TECH)
        by_reason = {"filter": {"dead_reason": "attempts_exhausted"}, "limit": 100}
        results = await asyncio.gather(
            kiosk.post("/v1/jobs/replay", by_reason, tech=True),
            kiosk.post("/v1/jobs/replay", by_reason, tech=True),
            *(kiosk.post(f"/v1/jobs/{i}/replay", tech=True) for i in exhausted),
        )
        wins = _count(list(results[:2]), {"replayed"})
        for job_id, (status, body) in zip(exhausted, results[2:], strict=True):
            assert status in (200, 409), body
            if status == 200:
                wins[job_id] += 1
        assert wins == dict.fromkeys(exhausted, 1)
        await kiosk.wait_states(exhausted, {"DONE"}, timeout_s=60)
        for job_id in poison:
            assert (await kiosk.job(job_id))["state"] == "DEAD"
    assert_each_printed_once(printers, exhausted)


async def test_bulk_resolve_racing_single_resolutions_settles_each_once(
    tmp_path: Path, printers: Rig
) -> None:
    """Twelve DEAD `outcome_unknown` jobs and two `poison` ones on printer-02. At once: two
    bulk resolutions `printed=false` (print again), one by filter and one by ids (poison
    included), and a single resolution of every job, `printed=true` for a third of them and
    `printed=false` for the rest. Each unknown job is settled exactly once across every
    answer; one settled "printed" ends DONE and never reaches paper, one settled "not
    printed" prints exactly once; the poison ones stay DEAD, untouched."""
    cfg = rig_config(tmp_path / "data", printers)
    del cfg["printers"][1]["pool"]  # printer-02 alone: paused while the dead letters are made
    async with appliance(cfg) as (run, kiosk):
        await run.service.printers.set_paused("printer-02", True, TECH)
        unknown = [
            await dead_on(kiosk, run, f"bulk-unk-{i:03d}", "outcome_unknown", "ann")
            for i in range(12)
        ]
        poison = [
            await dead_on(kiosk, run, f"bulk-unk-p{i:03d}", "poison", "ann") for i in range(2)
        ]
        await run.service.printers.set_paused("printer-02", False, TECH)
        saw_it = set(unknown[::3])
        results = await asyncio.gather(
            kiosk.post(
                "/v1/jobs/resolve",
                {"filter": {"owner": "ann"}, "limit": 100, "printed": False},
                tech=True,
            ),
            kiosk.post(
                "/v1/jobs/resolve",
                {"ids": [*unknown[::-1], *poison], "limit": 100, "printed": False},
                tech=True,
            ),
            *(
                kiosk.post(f"/v1/jobs/{i}/resolve", {"printed": i in saw_it}, tech=True)
                for i in unknown
            ),
        )
        bulk, single = list(results[:2]), results[2:]
        wins = _count(bulk, {"resolved"})
        printed_by_person: set[str] = set()
        for job_id, (status, body) in zip(unknown, single, strict=True):
            assert status in (200, 409), body
            if status == 200:
                wins[job_id] += 1
                if job_id in saw_it:
                    printed_by_person.add(job_id)
            else:
                assert body["type"].endswith(":outcome-not-unknown"), body
        assert wins == dict.fromkeys(unknown, 1)
        for _, body in bulk:
            for r in body["results"]:
                assert r["outcome"] in ("resolved", "conflict"), r
                if r["id"] in poison:
                    assert (r["outcome"], r["state"]) == ("conflict", "DEAD")
        # the filter took only the outcome_unknown ones, never the poison ones
        assert {r["id"] for r in bulk[0][1]["results"]} == set(unknown)
        again = [i for i in unknown if i not in printed_by_person]
        await kiosk.wait_states(unknown, {"DONE"}, timeout_s=60)
        for job_id in unknown:
            history = [e.to_state for e in await run.service.jobs.events(job_id)]
            assert history.count("DEAD") == 1, (job_id, history)
            job = await kiosk.job(job_id)
            assert (job["settled_by"] == "person") == (job_id in printed_by_person), job
        for job_id in poison:
            job = await kiosk.job(job_id)
            assert (job["state"], job["dead_reason"]) == ("DEAD", "poison")
    assert_each_printed_once(printers, again)
