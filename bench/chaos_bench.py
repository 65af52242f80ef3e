"""Chaos: the appliance SIGKILLed again and again while printers die too.

``--jobs`` jobs (1–3 copies, a quarter named for a printer) go to a pool of three
printers while the appliance is SIGKILLed ``--kills`` times (mostly with a job PRINTING)
and restarted, and ``--printer-kills`` printers are killed and restarted; kiosks retry
with the same Idempotency-Key. Per kill: restart → /readyz, → ready line, → PRINTING
settled, → paper again; then duplicates, losses and DEAD by reason against prints.log.

    .venv/bin/python -m bench.chaos_bench [--quick] [--seed N]
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import re
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import aiohttp

from bench.harness import (
    POOL,
    Event,
    Run,
    Stand,
    figures_markdown,
    ms,
    paper,
    parser,
    read_events,
    read_store,
    row,
    seed,
    state_at,
)
from testbed.config import KIOSK_TOKEN
from testbed.pdfs import make_pdf

PRINTERS = 3
#: Simulated print time per page, drawn per printer (seconds).
PRINTER_SPEED_S = (0.02, 0.05)
#: Seconds from the appliance being ready (``/readyz`` 200) to its next SIGKILL.
APPLIANCE_GAP_S = (0.6, 2.6)
#: Rough restart → ready time (2 loaded cores), only to plan the submit pace.
RESTART_ESTIMATE_S = 1.0
#: Share of appliance kills that first wait (up to BUSY_WAIT_S, /metrics polled every
#: BUSY_POLL_S) for a job PRINTING, then strike 0..KILL_JITTER_S s later.
BUSY_BIAS = 0.8
BUSY_WAIT_S = 1.5
BUSY_POLL_S = 0.025
KILL_JITTER_S = 0.05
#: Copies per job (weights): a job of n copies prints n times as long.
COPIES = {1: 0.7, 2: 0.2, 3: 0.1}
#: Seconds a killed printer stays down before it is restarted.
PRINTER_OUTAGE_S = (0.3, 1.5)
#: Printer kills fall in this share of the planned window.
PRINTER_KILL_SPAN = (0.05, 0.9)
#: Submits are spread over this share of the planned window.
SUBMIT_SPAN = 0.95
#: Jobs per burst of submits; share of jobs named for one printer.
BURST = (3, 20)
NAMED_SHARE = 0.25
#: Kiosk clients uploading at once.
SUBMIT_CONCURRENCY = 8
#: Client retry period (s) after a refused connection, reset, 503, 5xx; 429 waits
#: its Retry-After, at most RETRY_AFTER_CAP_S.
RETRY_S = 0.05
RETRY_AFTER_CAP_S = 1.0
#: A client gives up a job that got no 2xx in this long.
SUBMIT_GIVE_UP_S = 60.0
#: Per-request timeout of the kiosk client.
REQUEST_TIMEOUT_S = 10.0
#: Upper bound (s): end of chaos → settled.
SETTLE_TIMEOUT_S = 45.0
#: rate_limit of the stand (one kiosk token stands in for all kiosks).
RATE_LIMIT = "100000/second"
_JOBS_METRIC = re.compile(r'^edgeprint_jobs\{state="([A-Z]+)"\}\s+([0-9.eE+]+)', re.M)


# --- the stand and the kiosks -------------------------------------------------------


@dataclass
class Submits:
    """What the kiosk clients saw."""

    accepted: dict[str, dict[str, Any]] = field(default_factory=dict)
    gave_up: list[str] = field(default_factory=list)
    rejected: list[str] = field(default_factory=list)
    statuses: Counter[str] = field(default_factory=Counter)
    replayed: int = 0
    retried_jobs: int = 0


async def submit_until_accepted(
    http: aiohttp.ClientSession, url: str, key: str, meta: dict[str, Any], out: Submits
) -> None:
    """POST /v1/jobs with ``key`` until a 2xx (see module doc); records the outcome in ``out``."""
    form_meta = json.dumps({"owner": "chaos", "hold": False, **meta})
    doc = make_pdf(key)
    headers = {"Authorization": f"Bearer {KIOSK_TOKEN}", "Idempotency-Key": key}
    t_first = time.time()
    deadline = time.monotonic() + SUBMIT_GIVE_UP_S
    attempts = 0
    while True:
        attempts += 1
        wait = RETRY_S
        try:
            form = aiohttp.FormData()
            form.add_field("metadata", form_meta, content_type="application/json")
            form.add_field("document", doc, content_type="application/pdf", filename="b.pdf")
            async with http.post(f"{url}/v1/jobs", data=form, headers=headers) as r:
                out.statuses[str(r.status)] += 1
                body = await r.read()
                if r.status in (200, 201):
                    job_id = str(json.loads(body)["id"])
                    out.accepted[job_id] = {
                        "key": key,
                        "submitted": t_first,
                        "accepted": time.time(),
                        "attempts": attempts,
                        **meta,
                    }
                    out.replayed += r.status == 200
                    out.retried_jobs += attempts > 1
                    return
                if r.status == 429:
                    with contextlib.suppress(ValueError):
                        wait = min(RETRY_AFTER_CAP_S, float(r.headers.get("Retry-After", "")))
                elif r.status < 500:
                    out.rejected.append(f"{key}: HTTP {r.status}: {body[:200]!r}")
                    return
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            out.statuses[type(exc).__name__] += 1
        if time.monotonic() > deadline:
            out.gave_up.append(key)
            return
        await asyncio.sleep(wait)  # the client's retry period, not a synchronisation


async def jobs_by_state(http: aiohttp.ClientSession, url: str) -> dict[str, int] | None:
    """``edgeprint_jobs{state}`` from /metrics (no token); None when nothing answers."""
    try:
        async with http.get(f"{url}/metrics") as r:
            if r.status != 200:
                return None
            text = await r.text()
    except (aiohttp.ClientError, OSError, TimeoutError):
        return None
    return {m[1]: int(float(m[2])) for m in _JOBS_METRIC.finditer(text)}


# --- the faults ---------------------------------------------------------------------


@dataclass
class Restart:
    """One appliance SIGKILL and restart (unix seconds)."""

    t_kill: float
    t_restart: float
    t_readyz: float | None = None
    t_ready_line: float | None = None
    #: None: a plain random instant; True/False: waited for a job PRINTING (and found one).
    aimed_at_printing: bool | None = None


@dataclass
class Faults:
    """Both fault schedules and what happened."""

    stand: Stand
    http: aiohttp.ClientSession
    t0: float
    restarts: list[Restart] = field(default_factory=list)
    timeline: list[dict[str, Any]] = field(default_factory=list)
    printer_kills: list[tuple[float, str]] = field(default_factory=list)

    def note(self, t: float, action: str, target: str, **info: Any) -> None:
        self.timeline.append(
            {"t": round(t - self.t0, 3), "at": t, "action": action, "printer": target, **info}
        )

    async def restart_appliance(self) -> Restart:
        """SIGKILL the appliance, start it again at once; until /readyz 200."""
        t_kill = time.time()
        self.stand.serve.kill()
        self.note(t_kill, "appliance_kill", "appliance")
        t_restart = time.time()
        t_readyz, t_line = await self.stand.spawn(self.http)
        self.note(t_restart, "appliance_restart", "appliance", readyz_ms=ms(t_readyz - t_restart))
        self.restarts.append(Restart(t_kill, t_restart, t_readyz, t_line))
        return self.restarts[-1]

    async def appliance_chaos(self, kills: int, rng: random.Random) -> None:
        for _ in range(kills):
            await asyncio.sleep(rng.uniform(*APPLIANCE_GAP_S))  # the fault schedule
            busy: bool | None = None
            if rng.random() < BUSY_BIAS:
                busy = False
                deadline = time.monotonic() + BUSY_WAIT_S
                while time.monotonic() < deadline:
                    counts = await jobs_by_state(self.http, self.stand.url)
                    if counts and counts.get("PRINTING"):
                        busy = True
                        break
                    await asyncio.sleep(BUSY_POLL_S)  # looking for a busy instant to strike
                await asyncio.sleep(rng.uniform(0.0, KILL_JITTER_S))  # the fault schedule
            rec = await self.restart_appliance()
            rec.aimed_at_printing = busy

    async def printer_chaos(self, at: Sequence[float], rng: random.Random) -> None:
        """SIGKILL a random printer at each unix time of ``at``; restart it after an outage."""
        names = [p.name for p in self.stand.rig]
        for t in at:
            await asyncio.sleep(max(0.0, t - time.time()))  # the fault schedule
            victim = rng.choice(names)
            t_kill = time.time()
            await asyncio.to_thread(self.stand.rig.kill, victim)
            self.printer_kills.append((t_kill, victim))
            self.note(t_kill, "kill", victim)
            await asyncio.sleep(rng.uniform(*PRINTER_OUTAGE_S))  # the outage (fault schedule)
            t = time.time()
            await asyncio.to_thread(self.stand.rig.restart, victim)
            self.note(t, "restart", victim, took_ms=ms(time.time() - t))


# --- the run ------------------------------------------------------------------------


@dataclass
class Plan:
    jobs: int
    kills: int
    printer_kills: int
    seed: int

    @property
    def window_s(self) -> float:
        """Planned length of the fault window (s)."""
        return self.kills * (sum(APPLIANCE_GAP_S) / 2 + RESTART_ESTIMATE_S)


async def chaos(stand: Stand, plan: Plan) -> dict[str, Any]:
    """Submit, kill, restart, settle; then count against the printers' ground truth."""
    job_rng = random.Random(f"{plan.seed}-jobs")
    app_rng = random.Random(f"{plan.seed}-appliance")
    prn_rng = random.Random(f"{plan.seed}-printers")
    names = [p.name for p in stand.rig]
    submits = Submits()
    timeout = aiohttp.ClientTimeout(total=REQUEST_TIMEOUT_S)
    connector = aiohttp.TCPConnector(limit=SUBMIT_CONCURRENCY + 4)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as http:
        t0 = time.time()
        faults = Faults(stand, http, t0)
        window = plan.window_s
        sem = asyncio.Semaphore(SUBMIT_CONCURRENCY)

        async def one(i: int, meta: dict[str, Any]) -> None:
            async with sem:
                await submit_until_accepted(
                    http, stand.url, f"chaos-{plan.seed}-{i:04d}", meta, submits
                )

        async def submitter() -> None:
            tasks: list[asyncio.Task[None]] = []
            i = 0
            while i < plan.jobs:
                at = t0 + window * SUBMIT_SPAN * i / plan.jobs
                await asyncio.sleep(max(0.0, at - time.time()))  # the submit schedule
                for _ in range(min(job_rng.randint(*BURST), plan.jobs - i)):
                    meta: dict[str, Any] = (
                        {"printer": job_rng.choice(names)}
                        if job_rng.random() < NAMED_SHARE
                        else {"pool": POOL}
                    )
                    meta["copies"] = job_rng.choices(list(COPIES), list(COPIES.values()))[0]
                    tasks.append(asyncio.ensure_future(one(i, meta)))
                    i += 1
            await asyncio.gather(*tasks)

        printer_at = sorted(
            t0 + window * prn_rng.uniform(*PRINTER_KILL_SPAN) for _ in range(plan.printer_kills)
        )
        tasks = [
            asyncio.ensure_future(submitter()),
            asyncio.ensure_future(faults.appliance_chaos(plan.kills, app_rng)),
            asyncio.ensure_future(faults.printer_chaos(printer_at, prn_rng)),
        ]
        try:
            await asyncio.gather(*tasks)
        finally:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            for p in stand.rig:  # every printer back, whatever happened
                if stand.rig.state(p.name) != "running":
                    with contextlib.suppress(Exception):
                        await asyncio.to_thread(stand.rig.restart, p.name)
        t_back = time.time()
        settled: float | None = None
        deadline = time.monotonic() + SETTLE_TIMEOUT_S
        while time.monotonic() < deadline:
            last = await jobs_by_state(http, stand.url)
            if last is not None and not (last.get("RELEASED") or last.get("PRINTING")):
                settled = time.time()
                break
            await asyncio.sleep(0.05)  # polling /metrics, bounded by the deadline
    stand.stop()
    return analyse(stand, plan, submits, faults, t0, t_back, settled)


def in_hand_at_printer_kill(
    events: Sequence[Event], printer_kills: Sequence[tuple[float, str]]
) -> str | None:
    """The printer that was SIGKILLed while this job was PRINTING on it, or None."""
    for t, victim in printer_kills:
        e = state_at(events, t)
        if e is not None and e.to_state == "PRINTING" and e.actor == f"printer:{victim}":
            return victim
    return None


def recovery(
    restarts: Sequence[Restart],
    events: dict[str, list[Event]],
    on_paper: dict[str, list[tuple[str, float]]],
) -> list[dict[str, Any]]:
    """Per appliance kill: restart → ready, reconciled, printing again (see module doc)."""
    prints = sorted((t, j) for j, v in on_paper.items() for _, t in v)
    out: list[dict[str, Any]] = []
    for k, r in enumerate(restarts):
        nxt = restarts[k + 1].t_kill if k + 1 < len(restarts) else float("inf")
        at_kill = {j: state_at(evs, r.t_kill) for j, evs in events.items()}
        printing = [j for j, e in at_kill.items() if e is not None and e.to_state == "PRINTING"]
        waiting = [j for j, e in at_kill.items() if e is not None and e.to_state == "RELEASED"]
        left = [
            next(
                (e.at for e in events[j] if e.at >= r.t_restart and e.from_state == "PRINTING"),
                None,
            )
            for j in printing
        ]
        claimed = {
            j
            for j, evs in events.items()
            if any(r.t_restart <= e.at < nxt and e.to_state == "PRINTING" for e in evs)
        }
        first_new = next((t for t, j in prints if r.t_restart <= t < nxt and j in claimed), None)
        first_any = next((t for t, _ in prints if r.t_restart <= t < nxt), None)
        work = bool(printing or waiting)
        out.append(
            {
                "kill": k + 1,
                "t_kill": round(r.t_kill, 3),
                "aimed_at_printing": r.aimed_at_printing,
                "printing_at_kill": len(printing),
                "waiting_at_kill": len(waiting),
                "kill_to_restart_ms": ms(r.t_restart - r.t_kill),
                "restart_to_readyz_ms": ms(
                    None if r.t_readyz is None else r.t_readyz - r.t_restart
                ),
                "restart_to_ready_line_ms": ms(
                    None if r.t_ready_line is None else r.t_ready_line - r.t_restart
                ),
                "restart_to_reconciled_ms": (
                    ms(max(t for t in left if t is not None) - r.t_restart)
                    if printing and all(t is not None for t in left)
                    else None
                ),
                "restart_to_new_paper_ms": (
                    ms(first_new - r.t_restart) if work and first_new is not None else None
                ),
                "restart_to_any_paper_ms": (
                    ms(first_any - r.t_restart) if work and first_any is not None else None
                ),
                "printing_resume_measured": work and first_new is not None,
                "why_not_measured": (
                    None
                    if work and first_new is not None
                    else "no work waiting at the kill"
                    if not work
                    else "next kill before paper"
                ),
            }
        )
    return out


def analyse(
    stand: Stand,
    plan: Plan,
    submits: Submits,
    faults: Faults,
    t0: float,
    t_back: float,
    settled: float | None,
) -> dict[str, Any]:
    store = read_store(stand.data_dir)
    events = read_events(stand.data_dir)
    on_paper = paper(stand)
    accepted = list(submits.accepted)
    jobs = store.jobs
    states = Counter(str(jobs[j]["state"]) if j in jobs else "MISSING" for j in accepted)
    duplicates = sorted(j for j, v in on_paper.items() if len(v) > 1)
    not_final = sorted(j for j in accepted if jobs.get(j, {}).get("state") not in ("DONE", "DEAD"))
    done_no_paper = sorted(
        j for j in accepted if jobs.get(j, {}).get("state") == "DONE" and j not in on_paper
    )
    dead = [j for j in accepted if jobs.get(j, {}).get("state") == "DEAD"]
    dead_by_reason = Counter(str(jobs[j]["dead_reason"]) for j in dead)
    explained: dict[str, str] = {}
    for j in dead:
        victim = in_hand_at_printer_kill(events.get(j, []), faults.printer_kills)
        if jobs[j]["dead_reason"] == "outcome_unknown" and victim is not None:
            explained[j] = victim
    unexplained = sorted(set(dead) - set(explained))
    kill_rows = recovery(faults.restarts, events, on_paper)
    anomalies = {
        kind: ids
        for kind, ids in (
            ("duplicate", duplicates),
            ("not_final", not_final),
            ("done_not_printed", done_no_paper),
            ("dead_unexplained", unexplained),
        )
        if ids
    }
    return {
        "seed": plan.seed,
        "t0_unix": round(t0, 3),
        "jobs_planned": plan.jobs,
        "jobs_accepted": len(accepted),
        "jobs_given_up": len(submits.gave_up),
        "jobs_rejected": submits.rejected,
        "accepted_after_retry": submits.retried_jobs,
        "accepted_as_replay": submits.replayed,
        "submit_outcomes": dict(submits.statuses),
        "chaos_s": round(t_back - t0, 2),
        "back_to_settled_ms": None if settled is None else ms(settled - t_back),
        "appliance_kills": len(faults.restarts),
        "printer_kills": len(faults.printer_kills),
        "printer_kills_with_job_in_hand": sum(
            1
            for t, v in faults.printer_kills
            if any(
                (e := state_at(evs, t)) is not None
                and e.to_state == "PRINTING"
                and e.actor == f"printer:{v}"
                for evs in events.values()
            )
        ),
        "final_states": dict(states),
        "done": states.get("DONE", 0),
        "dead": states.get("DEAD", 0),
        "dead_by_reason": dict(dead_by_reason),
        "dead_outcome_unknown_in_hand": len(explained),
        "dead_outcome_unknown_in_hand_printed": sum(1 for j in explained if j in on_paper),
        "dead_unexplained": len(unexplained),
        "duplicates": len(duplicates),
        "not_final": len(not_final),
        "done_not_printed": len(done_no_paper),
        "losses": len(not_final) + len(done_no_paper),
        "printed_not_accepted": len(set(on_paper) - set(accepted)),
        "requeues": sum(
            1
            for evs in events.values()
            for e in evs
            if e.from_state == "PRINTING" and e.to_state == "RELEASED"
        ),
        "duplicate_jobs": duplicates,
        "lost_jobs": not_final + done_no_paper,
        "dead_unexplained_jobs": unexplained,
        "dead_in_hand_jobs": explained,
        "kills": kill_rows,
        "anomalies": anomalies,
        "timeline": [{k: v for k, v in e.items() if k != "at"} for e in faults.timeline],
    }


# --- output -------------------------------------------------------------------------


def table_rows(run: dict[str, Any]) -> list[dict[str, Any]]:
    """The result table: one row per figure (median/min/max; single values repeated)."""
    rows: list[dict[str, Any]] = []
    kills = run["kills"]

    def per_kill(key: str, figure: str, note: str) -> None:
        vals = [k[key] for k in kills]
        n = sum(v is not None for v in vals)
        rows.append(row(figure, "ms", vals, f"{n} of {len(kills)} kills; {note}"))

    def single(key: str, figure: str, unit: str, note: str = "") -> None:
        v = run[key]
        rows.append({"figure": figure, "unit": unit, "median": v, "min": v, "max": v, "note": note})

    per_kill("restart_to_readyz_ms", "appliance restart → /readyz 200", "5 ms poll")
    per_kill("restart_to_ready_line_ms", "appliance restart → ready log line", "20 ms poll")
    per_kill(
        "restart_to_reconciled_ms",
        "appliance restart → every job PRINTING at the kill left PRINTING",
        "kills with a job PRINTING; store events",
    )
    per_kill(
        "restart_to_new_paper_ms",
        "appliance restart → printing resumes (first job it claimed on paper)",
        "kills with work waiting, paper before the next kill; prints.log",
    )
    per_kill(
        "restart_to_any_paper_ms",
        "appliance restart → next document on paper (any)",
        "same kills; may be a document sent before the kill",
    )
    single("appliance_kills", "appliance SIGKILLs (each restarted at once)", "")
    n_busy = sum(1 for k in kills if k["printing_at_kill"])
    rows.append(
        {
            "figure": "  of which hit with a job PRINTING",
            "unit": "",
            "median": n_busy,
            "min": n_busy,
            "max": n_busy,
            "note": "store events at the kill",
        }
    )
    single("printer_kills", "printer SIGKILLs (restarted after 0.3–1.5 s)", "")
    single("printer_kills_with_job_in_hand", "  of which hit a printer with a job in hand", "")
    single("jobs_accepted", "jobs accepted (2xx)", "jobs", f"of {run['jobs_planned']} submitted")
    single("accepted_after_retry", "  accepted only after retrying the same key", "jobs")
    single("accepted_as_replay", "  accepted as 200 Idempotent-Replayed", "jobs")
    single("chaos_s", "fault window (first submit → last fault undone)", "s")
    single("back_to_settled_ms", "all faults over → no job RELEASED/PRINTING", "ms")
    single("done", "DONE", "jobs")
    single("dead", "DEAD", "jobs")
    for reason, n in sorted(run["dead_by_reason"].items()):
        rows.append(
            {
                "figure": f"  DEAD {reason}",
                "unit": "jobs",
                "median": n,
                "min": n,
                "max": n,
                "note": "",
            }
        )
    single(
        "dead_outcome_unknown_in_hand",
        "  DEAD outcome_unknown, in a killed printer's hands",
        "jobs",
        "allowed",
    )
    single("dead_unexplained", "  DEAD otherwise (must be 0)", "jobs")
    single("requeues", "requeues (PRINTING → RELEASED)", "")
    single("duplicates", "**duplicates** (printed > 1×, must be 0)", "jobs")
    single(
        "losses", "**losses** (accepted, not DONE/DEAD, or DONE without paper; must be 0)", "jobs"
    )
    single("printed_not_accepted", "printed, but the client never got a 2xx", "jobs")
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; the exit code (0: nothing doubled, lost or unexplained DEAD)."""
    ap = parser("chaos", __doc__, "120 jobs, 6 + 2 kills (~20 s)")
    ap.add_argument("--jobs", type=int, default=None, help="default 500 (--quick 120)")
    ap.add_argument("--kills", type=int, default=None, help="appliance SIGKILLs, default 20 (6)")
    ap.add_argument("--printer-kills", type=int, default=None, help="default 3 (--quick 2)")
    ap.add_argument("--seed", type=int, default=None, help="random seed (default: random)")
    args = ap.parse_args(argv)
    plan = Plan(
        jobs=args.jobs if args.jobs is not None else (120 if args.quick else 500),
        kills=args.kills if args.kills is not None else (6 if args.quick else 20),
        printer_kills=(
            args.printer_kills if args.printer_kills is not None else (2 if args.quick else 3)
        ),
        seed=seed(args.seed),
    )
    if not (1 <= plan.jobs <= 5000 and 0 <= plan.kills <= 200 and 0 <= plan.printer_kills <= 50):
        print("bench: --jobs 1–5000, --kills 0–200, --printer-kills 0–50", file=sys.stderr)
        return 2
    speed_rng = random.Random(f"{plan.seed}-speeds")
    speeds = {
        f"printer-{i:02d}": round(speed_rng.uniform(*PRINTER_SPEED_S), 3)
        for i in range(1, PRINTERS + 1)
    }
    print(
        f"bench: chaos, seed {plan.seed}: {plan.jobs} jobs, {plan.kills} appliance kills, "
        f"{plan.printer_kills} printer kills, printers {speeds} s/page",
        file=sys.stderr,
    )
    with Run("chaos", args, snapshot=True) as run:
        stand = run.stand("chaos", PRINTERS, speeds=speeds, server={"rate_limit": RATE_LIMIT})
        out = run.attempt("chaos", lambda: asyncio.run(chaos(stand.start(), plan)))
        run.keep |= bool(out and out["anomalies"]) or bool(run.failures)
    rows: list[dict[str, Any]] = []
    if out is not None:
        for k in ("duplicates", "losses", "dead_unexplained"):
            if out[k]:
                run.failures.append(f"{k} = {out[k]}")
        if out["back_to_settled_ms"] is None:
            run.failures.append(f"not settled {SETTLE_TIMEOUT_S:g} s after the faults")
        if out["jobs_rejected"] or out["jobs_given_up"]:
            run.failures.append(
                f"submits refused {len(out['jobs_rejected'])}, given up {out['jobs_given_up']}"
            )
        rows = table_rows(out)
        for kind, ids in out["anomalies"].items():
            print(f"ANOMALY {kind}: {ids} (work folder kept: events, prints.log, serve.log)")
    return run.finish(
        figures_markdown(rows) if rows else "",
        settings={**asdict(plan), "printer_seconds_per_page": speeds},
        table=rows,
        raw=out,
        work_folder=str(run.work) if run.keep else None,
    )


if __name__ == "__main__":
    sys.exit(main())
