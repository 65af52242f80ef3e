"""Failover: a printer dies under load; how fast its work moves, and printer chaos.

(1) three printers at 0.05 s/page; printer-02 SIGKILLed with jobs named for it waiting:
kill → unhealthy, → its jobs moved and printed on a peer, → its job in hand settled
(default ``in_hand_timeout_s`` and a lowered one). (2) ``--chaos-jobs`` jobs while
printers are SIGKILLed or SIGSTOPped and brought back: duplicates, losses, DEAD by reason.

    .venv/bin/python -m bench.failover_bench [--quick] [--seed N]
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import sys
import time
from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import aiohttp

from bench.harness import (
    API_POLL_S,
    JOB_TIMEOUT_S,
    POOL,
    SUBMIT_CONCURRENCY,
    BenchError,
    Kiosk,
    Run,
    Stand,
    Tech,
    appliance_errors,
    bounded,
    default_settings,
    evidence,
    figures_markdown,
    first_log,
    http_session,
    ms,
    paper,
    parser,
    read_events,
    read_store,
    row,
    seed,
    spread,
    state_at,
    until,
)
from edgeprint.config import DispatchConfig

#: Simulated print time per page of every printer: a job takes ~0.08 s, so a queue forms.
SPP = 0.05
PRINTERS = 3
VICTIM = "printer-02"
#: Every NAMED_EVERY-th failover job is named for the victim, the others go to the pool.
NAMED_EVERY = 3
#: Documents the victim has printed before it is killed (its queue is running).
KILL_AFTER_PRINTED = 4
#: The kill comes a random 0..KILL_DELAY_S s after that document: anywhere in the next job.
KILL_DELAY_S = 0.1
#: in_hand_timeout_s of the lowered failover runs (1b).
LOWERED_IN_HAND_S = 1.0
#: Upper bounds (seconds) of the waits.
UNHEALTHY_TIMEOUT_S = 30.0
DRAIN_TIMEOUT_S = 30.0
#: The default in_hand_timeout_s plus the longest probe back-off, plus slack.
IN_HAND_DEFAULT_WAIT_S = (
    DispatchConfig().in_hand_timeout_s + DispatchConfig().unreachable_retry_max_s + 10.0
)
SETTLE_TIMEOUT_S = 45.0
#: Chaos: seconds between faults, outage length, jitter after picking a busy printer.
FAULT_GAP_S = (0.8, 2.5)
OUTAGE_S = (0.5, 3.0)
KILL_JITTER_S = 0.08
#: Share of faults that are SIGSTOP (hang) rather than SIGKILL.
HANG_SHARE = 0.2
#: Share of faults that first look (up to BUSY_WAIT_S) for a printer with a job in hand.
BUSY_BIAS = 0.8
BUSY_WAIT_S = 3.0
MAX_DOWN = 2
BURST = (5, 25)
#: Share of chaos jobs named for a (random) printer rather than the pool.
NAMED_SHARE = 1 / 3


# --- stand, API ---------------------------------------------------------------------


# --- 1. failover time ---------------------------------------------------------------


async def phase_failover(
    stand: Stand, n_jobs: int, tag: str, in_hand_wait_s: float | None, rng: random.Random
) -> dict[str, Any]:
    """Kill the victim with named jobs waiting for it; time the failover (see module doc)."""
    rig = stand.rig
    peers = [p.name for p in rig if p.name != VICTIM]
    async with http_session() as http:
        kiosk = Kiosk(http, stand.url)
        tech = Tech(http, stand.url)
        await until(
            lambda: tech.all_healthy(PRINTERS), JOB_TIMEOUT_S, 0.02, "printers not all healthy"
        )

        def is_named(i: int) -> bool:
            return i % NAMED_EVERY == NAMED_EVERY - 1

        def meta(i: int) -> dict[str, Any]:
            return {"printer": VICTIM} if is_named(i) else {"pool": POOL}

        ids = await bounded(
            kiosk.submit(f"{tag}-{i:04d}", hold=False, **meta(i)) for i in range(n_jobs)
        )
        named = [job_id for i, job_id in enumerate(ids) if is_named(i)]

        async def victim_busy() -> bool:
            return len(rig.printed(VICTIM)) >= KILL_AFTER_PRINTED

        await until(victim_busy, JOB_TIMEOUT_S, 0.002, f"{VICTIM} printed too little")
        await asyncio.sleep(rng.uniform(0.0, KILL_DELAY_S))
        t_kill = time.time()
        rig.kill(VICTIM)

        async def unhealthy() -> bool:
            return not (await tech.printers())[VICTIM]["healthy"]

        t_seen = await until(unhealthy, UNHEALTHY_TIMEOUT_S, API_POLL_S, f"{VICTIM} healthy")

        async def drained() -> bool:
            if await kiosk.ids_in("RELEASED", 1):
                return False
            return all(j["printed_on"] == VICTIM for j in await tech.jobs_in("PRINTING"))

        await until(drained, DRAIN_TIMEOUT_S, 0.02, "jobs still waiting or printing on peers")
        left = {j["id"] for j in await tech.jobs_in("PRINTING")}
        if left and in_hand_wait_s:

            async def in_hand_settled() -> bool:
                return not left & {j["id"] for j in await tech.jobs_in("PRINTING")}

            await until(in_hand_settled, in_hand_wait_s, 0.05, "in-hand job still PRINTING")
    stand.stop()

    store = read_store(stand.data_dir)
    events = read_events(stand.data_dir)
    logs = stand.log_events()
    on_paper = paper(stand)
    at_kill = {j: state_at(events.get(j, []), t_kill) for j in ids}
    in_hand = [
        j
        for j, e in at_kill.items()
        if e is not None and e.to_state == "PRINTING" and e.actor == f"printer:{VICTIM}"
    ]
    waiting = [j for j in named if (e := at_kill[j]) is not None and e.to_state == "RELEASED"]
    on_peers = {
        j: min(t for p, t in on_paper.get(j, []) if p in peers)
        for j in waiting
        if any(p in peers for p, _ in on_paper.get(j, []))
    }
    queued = [j for j in ids if (e := at_kill[j]) is not None and e.to_state == "RELEASED"]
    peer_claims = [
        e.at
        for j in waiting
        for e in events.get(j, [])
        if e.at >= t_kill and e.to_state == "PRINTING" and e.actor != f"printer:{VICTIM}"
    ]
    settled_at = [store.first(j, after=t_kill, src="PRINTING") for j in in_hand]
    victim_done = [
        e.at
        for evs in events.values()
        for e in evs
        if e.at <= t_kill and e.to_state == "DONE" and e.actor == f"printer:{VICTIM}"
    ]
    in_hand_out = [
        {
            "state": store.jobs[j]["state"],
            "dead_reason": store.jobs[j]["dead_reason"],
            "printed_on_victim": any(p == VICTIM for p, _ in on_paper.get(j, [])),
            "printed_on_peer": any(p in peers for p, _ in on_paper.get(j, [])),
            "kill_to_settled_s": None if t is None else round(t - t_kill, 3),
            "left_printing_as": next(
                (
                    f"{e.to_state}: {e.reason}"
                    for e in events.get(j, [])
                    if e.at >= t_kill and e.from_state == "PRINTING"
                ),
                None,
            ),
        }
        for j, t in zip(in_hand, settled_at, strict=True)
    ]
    t_log = first_log(logs, "printer_unhealthy", t_kill, VICTIM)
    t_moved = first_log(logs, "job_failed_over", t_kill, VICTIM, has="job_id")
    checks = outcome_checks(store.jobs, ids, on_paper, allow_printing=set(in_hand))
    return {
        "jobs": n_jobs,
        "named_for_victim": len(named),
        "victim_printed_before_kill": sum(
            1 for v in on_paper.values() for p, t in v if p == VICTIM and t <= t_kill
        ),
        "waiting_named_at_kill": len(waiting),
        "in_hand_at_kill": len(in_hand),
        "queued_at_kill": len(queued),
        "t_kill": round(t_kill, 3),
        "victim_idle_at_kill_ms": (
            ms(t_kill - max(victim_done)) if not in_hand and victim_done else None
        ),
        "kill_to_unhealthy_seen_ms": ms(t_seen - t_kill),
        "kill_to_unhealthy_log_ms": ms(None if t_log is None else t_log - t_kill),
        "kill_to_failed_over_log_ms": ms(None if t_moved is None else t_moved - t_kill),
        "kill_to_first_peer_claim_ms": ms(min(peer_claims) - t_kill if peer_claims else None),
        "kill_to_first_on_peer_ms": ms(min(on_peers.values()) - t_kill if on_peers else None),
        "kill_to_last_on_peer_s": (round(max(on_peers.values()) - t_kill, 3) if on_peers else None),
        "failed_over_printed": len(on_peers),
        "kill_to_in_hand_settled_s": (
            round(max(t for t in settled_at if t is not None) - t_kill, 3)
            if settled_at and all(t is not None for t in settled_at)
            else None
        ),
        "in_hand": in_hand_out,
        "in_hand_dead_unknown": sum(
            1 for x in in_hand_out if x["dead_reason"] == "outcome_unknown"
        ),
        "in_hand_on_peer": sum(1 for x in in_hand_out if x["printed_on_peer"]),
        "in_hand_on_paper": sum(
            1 for x in in_hand_out if x["printed_on_victim"] or x["printed_on_peer"]
        ),
        "unhealthy_reason": next(
            (
                r.get("why")
                for r in logs
                if r.get("event") == "printer_unhealthy" and r.get("printer") == VICTIM
            ),
            None,
        ),
        **checks,
    }


def outcome_checks(
    jobs: dict[str, dict[str, Any]],
    ids: Sequence[str],
    on_paper: dict[str, list[tuple[str, float]]],
    allow_printing: Collection[str] = (),
) -> dict[str, Any]:
    """Duplicates, losses, DONE-without-paper and strays of accepted ``ids``; DEAD by reason."""
    accepted = set(ids)
    states = Counter(str(jobs[j]["state"]) if j in jobs else "MISSING" for j in ids)
    dead = Counter(
        str(jobs[j]["dead_reason"]) for j in ids if jobs.get(j, {}).get("state") == "DEAD"
    )
    unknown = [j for j in ids if jobs.get(j, {}).get("dead_reason") == "outcome_unknown"]
    return {
        "final_states": dict(states),
        "dead_by_reason": dict(dead),
        "outcome_unknown_printed": sum(1 for j in unknown if j in on_paper),
        "outcome_unknown_not_printed": sum(1 for j in unknown if j not in on_paper),
        "duplicate_jobs": sorted(j for j in accepted if len(on_paper.get(j, [])) > 1),
        "lost_jobs": sorted(
            j
            for j in accepted
            if jobs.get(j, {}).get("state") not in ("DONE", "DEAD") and j not in allow_printing
        ),
        "done_not_printed_jobs": sorted(
            j for j in accepted if jobs.get(j, {}).get("state") == "DONE" and j not in on_paper
        ),
        "dead_but_printed_jobs": sorted(
            j
            for j in accepted
            if jobs.get(j, {}).get("state") == "DEAD"
            and j in on_paper
            and jobs[j]["dead_reason"] != "outcome_unknown"
        ),
        "unexpected_prints": sorted(set(on_paper) - accepted),
        "in_hand_left_printing": sorted(
            j for j in allow_printing if jobs.get(j, {}).get("state") == "PRINTING"
        ),
    }


# --- 2. chaos -------------------------------------------------------------------------


@dataclass
class Chaos:
    """The fault injector: one coroutine, rig calls one at a time in a worker thread."""

    stand: Stand
    tech: Tech
    rng: random.Random
    t0: float
    timeline: list[dict[str, Any]] = field(default_factory=list)
    down: dict[str, str] = field(default_factory=dict)
    recoveries: list[tuple[float, str, str]] = field(default_factory=list)

    async def act(self, action: str, name: str, **info: Any) -> None:
        t = time.time()
        error = None
        try:
            await asyncio.to_thread(getattr(self.stand.rig, action), name)
        except Exception as exc:  # a restart that fails is recorded, the run goes on
            error = repr(exc)
        self.timeline.append(
            {
                "t": round(t - self.t0, 3),
                "at": t,
                "action": action,
                "printer": name,
                "took_ms": ms(time.time() - t),
                **info,
                **({"error": error} if error else {}),
            }
        )
        if error and action in ("restart", "resume"):
            raise BenchError(f"chaos: {action} {name} failed: {error}")

    async def pick(self) -> tuple[str, str | None]:
        """A printer not down: mostly one with a job in hand, if one shows up in BUSY_WAIT_S
        (and before the next recovery is due)."""
        candidates = [p.name for p in self.stand.rig if p.name not in self.down]
        if self.rng.random() < BUSY_BIAS:
            # Not past a due recovery: outages keep to OUTAGE_S.
            deadline = min([time.time() + BUSY_WAIT_S, *(r[0] for r in self.recoveries)])
            while time.time() < deadline:
                ps = await self.tech.printers()
                busy = [n for n in candidates if ps[n]["printing_job"]]
                if busy:
                    name = self.rng.choice(busy)
                    return name, ps[name]["printing_job"]
                await asyncio.sleep(0.01)
        return self.rng.choice(candidates), None

    async def fault(self) -> None:
        name, job = await self.pick()
        await asyncio.sleep(self.rng.uniform(0.0, KILL_JITTER_S))
        action = "hang" if self.rng.random() < HANG_SHARE else "kill"
        await self.act(action, name, printing_job=job)
        self.down[name] = action
        undo = "resume" if action == "hang" else "restart"
        self.recoveries.append((time.time() + self.rng.uniform(*OUTAGE_S), undo, name))

    async def recover(self, index: int) -> None:
        _, undo, name = self.recoveries.pop(index)
        await self.act(undo, name)
        self.down.pop(name, None)

    async def run(self, until_t: float) -> None:
        """Faults every FAULT_GAP_S until ``until_t``; then every printer brought back."""
        next_fault = time.time() + self.rng.uniform(*FAULT_GAP_S)
        while True:
            now = time.time()
            due = [i for i, r in enumerate(self.recoveries) if r[0] <= now]
            if due:
                await self.recover(min(due, key=lambda i: self.recoveries[i][0]))
                continue
            if now >= until_t:
                if not self.recoveries:
                    return
            elif now >= next_fault:
                if len(self.down) < MAX_DOWN:
                    await self.fault()
                next_fault = time.time() + self.rng.uniform(*FAULT_GAP_S)
                continue
            wake = [r[0] for r in self.recoveries] + ([next_fault] if now < until_t else [])
            await asyncio.sleep(min(0.05, max(0.0, min(wake) - now)))

    async def bring_back(self) -> None:
        """Resume or restart whatever is still down (after an error)."""
        for i in range(len(self.recoveries) - 1, -1, -1):
            await self.recover(i)


async def phase_chaos(stand: Stand, n_jobs: int, duration_s: float, seed: int) -> dict[str, Any]:
    """``n_jobs`` jobs in bursts over ``duration_s`` while printers die and hang."""
    rig = stand.rig
    names = [p.name for p in rig]
    job_rng, chaos_rng = random.Random(seed), random.Random(seed + 1)
    accepted: dict[str, dict[str, Any]] = {}
    submit_errors: list[str] = []
    async with http_session() as http:
        kiosk = Kiosk(http, stand.url)
        tech = Tech(http, stand.url)
        await until(
            lambda: tech.all_healthy(PRINTERS), JOB_TIMEOUT_S, 0.02, "printers not all healthy"
        )
        t0 = time.time()
        chaos = Chaos(stand, tech, chaos_rng, t0)
        sem = asyncio.Semaphore(SUBMIT_CONCURRENCY)

        async def one(i: int, meta: dict[str, Any]) -> None:
            async with sem:
                t = time.time()
                try:
                    job_id = await kiosk.submit(f"chaos-{seed}-{i:04d}", hold=False, **meta)
                except (BenchError, aiohttp.ClientError, OSError) as exc:
                    submit_errors.append(f"{i}: {exc!r}")
                    return
                accepted[job_id] = {"i": i, "submitted": t, **meta}

        async def submitter() -> None:
            tasks: list[asyncio.Task[None]] = []
            i = 0
            while i < n_jobs:
                at = t0 + duration_s * 0.9 * i / n_jobs
                await asyncio.sleep(max(0.0, at - time.time()))
                for _ in range(min(job_rng.randint(*BURST), n_jobs - i)):
                    meta = (
                        {"printer": job_rng.choice(names)}
                        if job_rng.random() < NAMED_SHARE
                        else {"pool": POOL}
                    )
                    tasks.append(asyncio.ensure_future(one(i, meta)))
                    i += 1
            await asyncio.gather(*tasks)

        submitting = asyncio.ensure_future(submitter())
        try:
            await chaos.run(t0 + duration_s)
            await submitting
        finally:
            if not submitting.done():
                submitting.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await submitting
            await chaos.bring_back()
        t_back = time.time()
        settled: float | None = None
        with contextlib.suppress(BenchError):
            await kiosk.wait_settled(SETTLE_TIMEOUT_S)
            settled = time.time()
    stand.stop()

    store = read_store(stand.data_dir)
    events = read_events(stand.data_dir)
    logs = stand.log_events()
    on_paper = paper(stand)
    ids = list(accepted)
    checks = outcome_checks(store.jobs, ids, on_paper)
    faults = Counter(e["action"] for e in chaos.timeline)
    verdicts = Counter(str(r.get("verdict")) for r in logs if r.get("event") == "job_reconciled")
    log_counts = Counter(str(r.get("event")) for r in logs)
    anomalies = {
        kind: [evidence(stand, events, j, on_paper, chaos.timeline) for j in checks[key]]
        for kind, key in (
            ("duplicate", "duplicate_jobs"),
            ("lost", "lost_jobs"),
            ("done_not_printed", "done_not_printed_jobs"),
        )
        if checks[key]
    }
    return {
        "jobs_submitted": n_jobs,
        "jobs_accepted": len(ids),
        "submit_errors": submit_errors,
        "t0_unix": round(t0, 3),
        "chaos_s": round(t_back - t0, 2),
        "back_to_settled_ms": None if settled is None else ms(settled - t_back),
        "kills": faults.get("kill", 0),
        "hangs": faults.get("hang", 0),
        "restarts": faults.get("restart", 0),
        "resumes": faults.get("resume", 0),
        "faults_with_job_in_hand": sum(1 for e in chaos.timeline if e.get("printing_job")),
        "done": checks["final_states"].get("DONE", 0),
        "dead": checks["final_states"].get("DEAD", 0),
        "duplicates": len(checks["duplicate_jobs"]),
        "losses": len(checks["lost_jobs"]),
        "done_not_printed": len(checks["done_not_printed_jobs"]),
        "unexpected": len(checks["unexpected_prints"]),
        "requeues": sum(
            1
            for evs in events.values()
            for e in evs
            if e.from_state == "PRINTING" and e.to_state == "RELEASED"
        ),
        "printed_per_printer": {
            n: sum(1 for v in on_paper.values() for p, _ in v if p == n) for n in names
        },
        "log_events": {
            k: log_counts.get(k, 0)
            for k in (
                "printer_down",
                "printer_up",
                "printer_unhealthy",
                "printer_healthy",
                "job_failed_over",
                "job_retry",
                "job_dead",
                "stale_copy_cancelled",
                "truncated_copy",
                "cancel_failed",
                "queue_backpressure",
            )
        },
        "reconcile_verdicts": dict(verdicts),
        "backpressured_submits": kiosk.backpressured,
        **checks,
        "anomalies": anomalies,
        "timeline": [{k: v for k, v in e.items() if k != "at"} for e in chaos.timeline],
    }


# --- summary, output ---------------------------------------------------------------

#: (key, label, unit) rows of the failover table.
FAILOVER_ROWS: list[tuple[str, str, str]] = [
    ("kill_to_unhealthy_seen_ms", "kill → unhealthy, seen in GET /v1/printers (5 ms poll)", "ms"),
    ("kill_to_unhealthy_log_ms", "kill → printer_unhealthy log event", "ms"),
    ("kill_to_failed_over_log_ms", "kill → its waiting jobs moved to the pool (log)", "ms"),
    ("kill_to_first_peer_claim_ms", "kill → first of its jobs claimed by a peer (store)", "ms"),
    ("kill_to_first_on_peer_ms", "kill → first of its jobs printed on a peer", "ms"),
    ("kill_to_last_on_peer_s", "kill → last of its waiting jobs printed on a peer", "s"),
    ("kill_to_in_hand_settled_s", "kill → the job in its hands leaves PRINTING", "s"),
    ("waiting_named_at_kill", "jobs named for it waiting at the kill", "jobs"),
    ("queued_at_kill", "  all jobs waiting at the kill (named + pool)", "jobs"),
    ("in_hand_at_kill", "jobs in its hands at the kill", "jobs"),
    ("in_hand_dead_unknown", "  of which ended DEAD outcome_unknown", "jobs"),
    ("in_hand_on_paper", "  of which came out of a printer", "jobs"),
    ("in_hand_on_peer", "  of which went back to the queue and a peer printed it", "jobs"),
    ("duplicates", "duplicates (printed > 1×)", "jobs"),
    ("losses", "losses (accepted, not DONE/DEAD)", "jobs"),
]
FAILOVER_SETS = {
    "defaults": "1a. SIGKILL printer-02, default [dispatch]",
    "lowered": f"1b. SIGKILL printer-02, in_hand_timeout_s = {LOWERED_IN_HAND_S:g}",
}
CHAOS_ROWS: list[tuple[str, str, str]] = [
    ("jobs_accepted", "jobs accepted (2xx)", "jobs"),
    ("chaos_s", "chaos window (submits + faults, all printers back)", "s"),
    ("back_to_settled_ms", "all printers back → no job RELEASED/PRINTING (API)", "ms"),
    ("kills", "printer SIGKILLs (each restarted after 0.5–3 s)", ""),
    ("hangs", "printer SIGSTOPs (each SIGCONT after 0.5–3 s)", ""),
    ("faults_with_job_in_hand", "  of which hit a printer with a job in hand", ""),
    ("done", "DONE", "jobs"),
    ("dead", "DEAD", "jobs"),
    ("outcome_unknown_printed", "  DEAD outcome_unknown, document came out", "jobs"),
    ("outcome_unknown_not_printed", "  DEAD outcome_unknown, nothing came out", "jobs"),
    ("requeues", "requeues (PRINTING → RELEASED)", ""),
    ("duplicates", "**duplicates** (printed > 1×, must be 0)", "jobs"),
    ("losses", "**losses** (accepted, not DONE/DEAD, must be 0)", "jobs"),
    ("done_not_printed", "**DONE but never on paper** (must be 0)", "jobs"),
    ("unexpected", "printed but never accepted", "jobs"),
]


def _with_counts(run: dict[str, Any]) -> dict[str, Any]:
    return {**run, "duplicates": len(run["duplicate_jobs"]), "losses": len(run["lost_jobs"])}


def summarize(runs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """key → {median, min, max} over the runs (numeric figures only)."""
    rows = [_with_counts(r) for r in runs]
    return {k: spread([r.get(k) for r in rows]) for k, _, _ in FAILOVER_ROWS}


def table_rows(
    failover: dict[str, list[dict[str, Any]]], chaos: dict[str, Any] | None
) -> list[dict[str, Any]]:
    """Failover figures (median, min, max over the runs of each setting), then chaos."""
    out = []
    for key, title in FAILOVER_SETS.items():
        runs = [_with_counts(r) for r in failover.get(key, [])]
        for k, label, unit in FAILOVER_ROWS if runs else []:
            values = [r.get(k) for r in runs]
            n = sum(v is not None for v in values)
            out.append(row(f"{title}: {label}", unit, values, f"{n} of {len(runs)} runs"))
    if chaos is not None:
        dead = [(f"DEAD {r}", n, "jobs") for r, n in sorted(chaos["dead_by_reason"].items())]
        for label, v, unit in [(lb, chaos.get(k), u) for k, lb, u in CHAOS_ROWS] + dead:
            out.append(row(f"chaos (1 run): {label}", unit, [v]))
    return out


@dataclass
class Plan:
    """What the benchmark does."""

    repeat: int
    failover_jobs: int
    chaos_jobs: int
    chaos_seconds: float
    wait_default_in_hand: bool
    seed: int


async def failover_run(run: Run, rep: int, key: str, plan: Plan) -> dict[str, Any]:
    dispatch = {"in_hand_timeout_s": LOWERED_IN_HAND_S} if key == "lowered" else {}
    stand = run.stand(f"failover-{key}-{rep}", PRINTERS, seconds_per_page=SPP, dispatch=dispatch)
    t0 = time.monotonic()
    wait = None
    if key == "lowered":
        wait = DRAIN_TIMEOUT_S
    elif plan.wait_default_in_hand:
        wait = IN_HAND_DEFAULT_WAIT_S
    try:
        stand.start()
        rng = random.Random(f"{plan.seed}-{key}-{rep}")
        with appliance_errors(stand):
            out = await phase_failover(stand, plan.failover_jobs, f"fo-{key}-{rep}", wait, rng)
    finally:
        stand.stop()
    out["settings"] = dispatch or "defaults"
    out["waited_for_in_hand"] = wait is not None
    out["phase_s"] = round(time.monotonic() - t0, 2)
    return out


async def chaos_run(run: Run, plan: Plan) -> dict[str, Any]:
    stand = run.stand("chaos", PRINTERS, seconds_per_page=SPP)
    t0 = time.monotonic()
    try:
        stand.start()
        with appliance_errors(stand):
            out = await phase_chaos(stand, plan.chaos_jobs, plan.chaos_seconds, plan.seed)
    finally:
        stand.stop()
    out["settings"] = "defaults"
    out["phase_s"] = round(time.monotonic() - t0, 2)
    return out


def _brief(run: dict[str, Any]) -> str:
    r = _with_counts(run) if "duplicate_jobs" in run and "duplicates" not in run else run
    return ", ".join(f"{k}={v}" for k, v in r.items() if isinstance(v, int | float))


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; the exit code (0: nothing doubled or lost, every run measured)."""
    ap = parser("failover", __doc__, "1+1 failover runs, 100-job chaos")
    ap.add_argument("--repeat", type=int, default=None, help="failover runs each (default 5)")
    ap.add_argument("--failover-jobs", type=int, default=90, help="jobs per failover run")
    ap.add_argument("--chaos-jobs", type=int, default=None, help="default 300 (--quick 100)")
    ap.add_argument("--chaos-seconds", type=float, default=None, help="default 60 (--quick 20)")
    ap.add_argument("--seed", type=int, default=None, help="random seed (default: random)")
    args = ap.parse_args(argv)
    plan = Plan(
        repeat=args.repeat if args.repeat is not None else (1 if args.quick else 5),
        failover_jobs=args.failover_jobs,
        chaos_jobs=args.chaos_jobs or (100 if args.quick else 300),
        chaos_seconds=args.chaos_seconds or (20.0 if args.quick else 60.0),
        wait_default_in_hand=not args.quick,
        seed=seed(args.seed),
    )
    if not (
        1 <= plan.repeat <= 20
        and plan.failover_jobs >= 3 * KILL_AFTER_PRINTED * NAMED_EVERY
        and 1 <= plan.chaos_jobs <= 2000
        and 5 <= plan.chaos_seconds <= 600
    ):
        print(
            "bench: --repeat 1–20, --failover-jobs ≥ 36, --chaos-jobs 1–2000, "
            "--chaos-seconds 5–600",
            file=sys.stderr,
        )
        return 2
    failover: dict[str, list[dict[str, Any]]] = {k: [] for k in FAILOVER_SETS}
    chaos: dict[str, Any] | None = None
    with Run("failover", args, snapshot=True) as run:
        for rep in range(plan.repeat):
            for key in FAILOVER_SETS:
                one = run.attempt_async(
                    f"failover {key} run {rep + 1}", failover_run(run, rep, key, plan)
                )
                if one is None:
                    continue
                failover[key].append(one)
                if key == "defaults" and one["in_hand_dead_unknown"]:
                    plan.wait_default_in_hand = False  # the 30 s give-up measured once
                print(f"bench: failover {key} run {rep + 1}: {_brief(one)}", file=sys.stderr)
        print(
            f"bench: chaos, seed {plan.seed}: {plan.chaos_jobs} jobs over {plan.chaos_seconds:g} s",
            file=sys.stderr,
        )
        chaos = run.attempt_async("chaos", chaos_run(run, plan))
        if chaos is not None:
            print(f"bench: chaos: {_brief(chaos)}", file=sys.stderr)
        run.keep |= any(
            r[k]
            for runs in failover.values()
            for r in runs
            for k in ("duplicate_jobs", "lost_jobs", "done_not_printed_jobs")
        ) or bool(chaos and chaos["anomalies"])
    for key, runs in failover.items():
        for i, r in enumerate(runs):
            for k in ("duplicate_jobs", "lost_jobs", "done_not_printed_jobs", "unexpected_prints"):
                if r[k]:
                    run.failures.append(f"failover {key} run {i + 1}: {k} = {r[k]}")
    if chaos is not None:
        for k in ("duplicates", "losses", "done_not_printed"):
            if chaos[k]:
                run.failures.append(f"chaos: {k} = {chaos[k]}")
        print(
            f"\nchaos seed {plan.seed}; reconcile verdicts {chaos['reconcile_verdicts']}; "
            f"log events {chaos['log_events']}"
        )
        for kind, items in chaos["anomalies"].items():
            for item in items:
                print(f"\nANOMALY {kind} {item['job_id']}:\n{json.dumps(item, indent=1)}")
    defaults = default_settings()
    print(
        "\nsettings: the code's defaults, except in 1b in_hand_timeout_s = "
        f"{LOWERED_IN_HAND_S:g} (default {defaults['dispatch']['in_hand_timeout_s']:g})"
        + "; chaos: defaults"
        + f"; printers {SPP:g} s/page"
    )
    return run.finish(
        figures_markdown(table_rows(failover, chaos)),
        settings=asdict(plan),
        summary={k: summarize(runs) for k, runs in failover.items() if runs},
        chaos=chaos,
        failover_runs=failover,
        work_folder=str(run.work) if run.keep else None,
    )


if __name__ == "__main__":
    sys.exit(main())
