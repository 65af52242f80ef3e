"""Failover: a printer dies under load; how fast its work moves, and printer chaos.

(1) three printers at 0.05 s/page; printer-02 SIGKILLed with jobs named for it waiting:
kill → unhealthy (log), kill → its first waiting job printed on a peer. (2) ``--chaos-jobs``
jobs while printers are SIGKILLed or SIGSTOPped and brought back: duplicates, losses, DEAD.

    .venv/bin/python -m bench.failover_bench [--quick] [--seed N]
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import sys
import time
from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from bench.harness import (
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
#: Upper bounds (seconds) of the waits.
DRAIN_TIMEOUT_S = 30.0
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


# --- 1. failover time ---------------------------------------------------------------


async def phase_failover(stand: Stand, n_jobs: int, tag: str, rng: random.Random) -> dict[str, Any]:
    """Kill the victim with named jobs waiting for it; time the failover (see module doc)."""
    rig = stand.rig
    peers = [p.name for p in rig if p.name != VICTIM]
    async with http_session() as http:
        kiosk = Kiosk(http, stand.url)
        tech = Tech(http, stand.url)
        await until(
            lambda: tech.all_healthy(PRINTERS), JOB_TIMEOUT_S, 0.02, "printers not all healthy"
        )

        def meta(i: int) -> dict[str, Any]:
            return {"printer": VICTIM} if i % NAMED_EVERY == 0 else {"pool": POOL}

        ids = await bounded(
            kiosk.submit(f"{tag}-{i:04d}", hold=False, **meta(i)) for i in range(n_jobs)
        )

        async def victim_busy() -> bool:
            return len(rig.printed(VICTIM)) >= KILL_AFTER_PRINTED

        await until(victim_busy, JOB_TIMEOUT_S, 0.002, f"{VICTIM} printed too little")
        await asyncio.sleep(rng.uniform(0.0, KILL_DELAY_S))
        t_kill = time.time()
        rig.kill(VICTIM)

        async def drained() -> bool:
            if await kiosk.ids_in("RELEASED", 1):
                return False
            printing = await tech.get("/v1/jobs?state=PRINTING&limit=500")
            return all(j["printed_on"] == VICTIM for j in printing["jobs"])

        await until(drained, DRAIN_TIMEOUT_S, 0.02, "jobs still waiting or printing on peers")
    stand.stop()

    events = read_events(stand.data_dir)
    on_paper = paper(stand)
    at_kill = {j: state_at(events.get(j, []), t_kill) for j in ids}
    in_hand = {
        j
        for j, e in at_kill.items()
        if e is not None and e.to_state == "PRINTING" and e.actor == f"printer:{VICTIM}"
    }
    waiting = [
        j
        for i, j in enumerate(ids)
        if i % NAMED_EVERY == 0 and (e := at_kill[j]) is not None and e.to_state == "RELEASED"
    ]
    on_peers = [t for j in waiting for p, t in on_paper.get(j, []) if p in peers]
    t_log = first_log(stand.log_events(), "printer_unhealthy", t_kill, VICTIM)
    return {
        "kill_to_unhealthy_log_ms": ms(None if t_log is None else t_log - t_kill),
        "kill_to_first_on_peer_ms": ms(min(on_peers) - t_kill if on_peers else None),
        **outcome_checks(read_store(stand.data_dir).jobs, ids, on_paper, in_hand),
    }


def outcome_checks(
    jobs: dict[str, dict[str, Any]],
    ids: Sequence[str],
    on_paper: dict[str, list[tuple[str, float]]],
    allow_printing: Collection[str] = (),
) -> dict[str, Any]:
    """Final states, duplicates, losses and DONE-without-paper of the accepted ``ids``."""
    states = Counter(str(jobs[j]["state"]) if j in jobs else "MISSING" for j in ids)
    return {
        "final_states": dict(states),
        "duplicate_jobs": sorted(j for j in ids if len(on_paper.get(j, [])) > 1),
        "lost_jobs": sorted(
            j
            for j in ids
            if jobs.get(j, {}).get("state") not in ("DONE", "DEAD") and j not in allow_printing
        ),
        "done_not_printed_jobs": sorted(
            j for j in ids if jobs.get(j, {}).get("state") == "DONE" and j not in on_paper
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
    names = [p.name for p in stand.rig]
    job_rng, chaos_rng = random.Random(seed), random.Random(seed + 1)
    accepted: list[str] = []
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
                try:
                    accepted.append(await kiosk.submit(f"chaos-{seed}-{i:04d}", hold=False, **meta))
                except (BenchError, aiohttp.ClientError, OSError) as exc:
                    submit_errors.append(f"{i}: {exc!r}")

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
        with contextlib.suppress(BenchError):
            await kiosk.wait_settled(SETTLE_TIMEOUT_S)
    stand.stop()

    checks = outcome_checks(read_store(stand.data_dir).jobs, accepted, paper(stand))
    faults = Counter(e["action"] for e in chaos.timeline)
    return {
        "jobs_submitted": n_jobs,
        "jobs_accepted": len(accepted),
        "submit_errors": submit_errors,
        "kills": faults.get("kill", 0),
        "hangs": faults.get("hang", 0),
        "done": checks["final_states"].get("DONE", 0),
        "dead": checks["final_states"].get("DEAD", 0),
        "duplicates": len(checks["duplicate_jobs"]),
        "losses": len(checks["lost_jobs"]),
        "done_not_printed": len(checks["done_not_printed_jobs"]),
        **checks,
        "timeline": [{k: v for k, v in e.items() if k != "at"} for e in chaos.timeline],
    }


# --- main -----------------------------------------------------------------------------

FAILOVER_ROWS = {
    "kill_to_unhealthy_log_ms": "kill → printer_unhealthy log event",
    "kill_to_first_on_peer_ms": "kill → first of its waiting jobs printed on a peer",
}
CHAOS_ROWS = {
    "jobs_accepted": "jobs accepted (2xx)",
    "kills": "printer SIGKILLs (each restarted after 0.5–3 s)",
    "hangs": "printer SIGSTOPs (each SIGCONT after 0.5–3 s)",
    "done": "DONE",
    "dead": "DEAD",
    "duplicates": "**duplicates** (printed > 1×, must be 0)",
    "losses": "**losses** (accepted, not DONE/DEAD, must be 0)",
    "done_not_printed": "**DONE but never on paper** (must be 0)",
}
ANOMALIES = ("duplicate_jobs", "lost_jobs", "done_not_printed_jobs")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; the exit code (0: nothing doubled or lost, every run measured)."""
    ap = parser("failover", __doc__, "1 failover run, 100-job chaos")
    ap.add_argument("--repeat", type=int, default=None, help="failover runs (default 5)")
    ap.add_argument("--failover-jobs", type=int, default=90, help="jobs per failover run")
    ap.add_argument("--chaos-jobs", type=int, default=None, help="default 300 (--quick 100)")
    ap.add_argument("--chaos-seconds", type=float, default=None, help="default 60 (--quick 20)")
    ap.add_argument("--seed", type=int, default=None, help="random seed (default: random)")
    args = ap.parse_args(argv)
    args.repeat = args.repeat or (1 if args.quick else 5)
    args.chaos_jobs = args.chaos_jobs or (100 if args.quick else 300)
    args.chaos_seconds = args.chaos_seconds or (20.0 if args.quick else 60.0)
    args.seed = seed(args.seed)
    if args.failover_jobs < KILL_AFTER_PRINTED * NAMED_EVERY + 3 or args.chaos_seconds < 5:
        print("bench: --failover-jobs ≥ 15, --chaos-seconds ≥ 5", file=sys.stderr)
        return 2
    failover: list[dict[str, Any]] = []
    with Run("failover", args, snapshot=True) as run:
        for rep in range(args.repeat):

            async def one(rep: int = rep) -> dict[str, Any]:
                stand = run.stand(f"failover-{rep}", PRINTERS, seconds_per_page=SPP).start()
                rng = random.Random(f"{args.seed}-{rep}")
                with appliance_errors(stand):
                    return await phase_failover(stand, args.failover_jobs, f"fo-{rep}", rng)

            result = run.attempt_async(f"failover run {rep + 1}", one())
            if result is not None:
                failover.append(result)

        async def chaos_run() -> dict[str, Any]:
            stand = run.stand("chaos", PRINTERS, seconds_per_page=SPP).start()
            with appliance_errors(stand):
                return await phase_chaos(stand, args.chaos_jobs, args.chaos_seconds, args.seed)

        chaos = run.attempt_async("chaos", chaos_run())
        runs = failover + ([chaos] if chaos else [])
        run.keep |= any(r[k] for r in runs for k in ANOMALIES)
    for i, r in enumerate(runs):
        for k in ANOMALIES:
            if r[k]:
                run.failures.append(f"{'chaos' if r is chaos else f'failover run {i + 1}'}: {k}")
    rows = [
        row(f"1. SIGKILL {VICTIM}: {label}", "ms", [r[k] for r in failover])
        for k, label in FAILOVER_ROWS.items()
    ]
    if chaos is not None:
        rows += [row(f"2. chaos: {label}", "", [chaos[k]]) for k, label in CHAOS_ROWS.items()]
    summary: dict[str, Any] = {k: spread([r[k] for r in failover]) for k in FAILOVER_ROWS}
    summary["duplicates"] = sum(len(r["duplicate_jobs"]) for r in failover)
    summary["losses"] = sum(len(r["lost_jobs"]) for r in failover)
    return run.finish(
        figures_markdown(rows),
        summary={"defaults": summary},
        chaos=chaos,
        failover_runs=failover,
        work_folder=str(run.work) if run.keep else None,
    )


if __name__ == "__main__":
    sys.exit(main())
