"""Many printers on one box: 200 real printers and one appliance, each figure beside its goal.

RSS once every printer is healthy and after ``--jobs`` jobs (≤ 150 MiB); idle CPU of the
appliance and its render workers, probes included (≤ 5 % of one core); every printer
printing at once: the idle gap between a printer's jobs while work waits (p90 ≤ 50 ms,
from prints.log and server.log); every job printed exactly once. The printers use the
rig's lean print engine: the full one's ~30 ms of CPU per document, times 200 printers,
would measure the rig rather than the appliance. A second, small fleet (``--small``)
gives the same gap where the box has CPU to spare.

    .venv/bin/python -m bench.fleet_bench [--quick] [--printers N] [--jobs N]
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import sys
import time
from collections.abc import Awaitable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from bench.harness import (
    Kiosk,
    Run,
    Stand,
    Tech,
    bounded,
    figures_markdown,
    gaps,
    ground_truth,
    http_session,
    ms,
    open_fds,
    own_cpu,
    parser,
    percentile,
    percentiles_ms,
    printed_count,
    proc_status,
    profile_text,
    py_spy,
    read_store,
    rig_cpu_s,
    system_busy_s,
    tree_cpu_s,
    until,
    versus,
)

RSS_GOAL_MIB = 150.0
IDLE_CPU_GOAL_PCT = 5.0
GAP_P90_GOAL_MS = 50.0
CONCURRENCY = 16
HEALTHY_TIMEOUT_S = 120.0
T = TypeVar("T")


async def fleet(
    stand: Stand, jobs: int, idle_s: float, profile: Path | None = None
) -> dict[str, Any]:
    """Healthy → RSS and idle CPU → every printer printing → RSS; figures and raw samples.
    With ``profile``, py-spy samples the appliance while the printers print (raw stacks
    there; the CPU figures are then the sampled appliance's)."""
    n = len(stand.rig)
    names = [p.name for p in stand.rig]
    out: dict[str, Any] = {"printers": n, "jobs": jobs}
    async with http_session() as http:
        kiosk, tech = Kiosk(http, stand.url), Tech(http, stand.url)
        t0 = time.monotonic()
        await until(lambda: tech.all_healthy(n), HEALTHY_TIMEOUT_S, 0.2, "printers not healthy")
        out["start_to_all_healthy_s"] = round(time.monotonic() - t0, 2)
        out["at_ready"] = {**proc_status(stand.pid), "fds": open_fds(stand.pid)}
        cpu0, w0 = tree_cpu_s(stand.pid), time.monotonic()
        await asyncio.sleep(idle_s)  # the measurement window itself, not a synchronisation
        out["idle_cpu_pct"] = round(
            100 * (tree_cpu_s(stand.pid) - cpu0) / (time.monotonic() - w0), 2
        )

        def each(calls: Sequence[Awaitable[T]]) -> Awaitable[list[T]]:
            return bounded(calls, CONCURRENCY)

        # Every printer paused while its jobs are released: then all start at once, each
        # with its whole share waiting (a named job waits for its paused printer when
        # every printer of its pool is paused).
        await each([tech.post(f"/v1/printers/{name}/pause") for name in names])
        t0 = time.monotonic()
        keys = [(f"fleet-{i:06d}", names[i % n]) for i in range(jobs)]
        ids = await each([kiosk.submit(key, printer=name, hold=True) for key, name in keys])
        out["submit_s"] = round(time.monotonic() - t0, 2)
        t0 = time.monotonic()
        await each([kiosk.release(i) for i in ids])
        out["release_s"] = round(time.monotonic() - t0, 2)
        t0, t_resume, cpu0 = time.monotonic(), time.time(), tree_cpu_s(stand.pid)
        busy0, rig0 = system_busy_s(), rig_cpu_s(stand.rig)
        spying = py_spy(stand.pid, profile) if profile else contextlib.nullcontext()
        with spying:
            await each([tech.post(f"/v1/printers/{name}/resume") for name in names])

            async def all_out() -> bool:
                return printed_count(stand.rig) >= jobs

            await until(all_out, 60.0 + jobs * 0.05, 0.1, f"fewer than {jobs} printed")
        out["resume_to_all_printed_s"] = round(time.monotonic() - t0, 2)
        took = time.monotonic() - t0
        appliance_s = tree_cpu_s(stand.pid) - cpu0
        out["printing_cpu_cores"] = round(appliance_s / took, 2)
        # CPU per printed job: the appliance's, and the printers' (ippeveprinter and the
        # print commands it reaped) — on a real site the printers' is not the box's
        out["appliance_cpu_ms_per_job"] = round(1000 * appliance_s / jobs, 2)
        out["printers_cpu_ms_per_job"] = round(1000 * (rig_cpu_s(stand.rig) - rig0) / jobs, 2)
        # the whole machine meanwhile: the printers' print commands, and anyone else's work
        out["printing_machine_cores"] = round((system_busy_s() - busy0) / took, 2)
        await kiosk.wait_settled(60.0)
        out["after_jobs"] = {**proc_status(stand.pid), "fds": open_fds(stand.pid)}
    stand.stop()
    store = read_store(stand.data_dir)
    # Every job was released before the printers resumed: each gap is one while work waited.
    last_release = max(store.first(i, "RELEASED") or math.inf for i in ids)
    out["all_released_before_resume"] = last_release <= t_resume
    g = gaps(stand, store)
    out["gap_pairs"] = len(g["idle"])
    out["gap_waiting"] = percentiles_ms(g["idle"])
    for part in ("detect", "done_to_claim", "claim_to_start", "processing"):
        out[f"{part}_p50_ms"] = ms(percentile(g[part], 50))
    return {**out, **ground_truth(stand.rig, ids)}


def gap_row(r: dict[str, Any]) -> dict[str, Any]:
    n = r["printers"]
    return versus(
        f"{n} printers printing at once: idle gap between jobs while work waits, p90",
        "ms",
        r["gap_waiting"]["p90_ms"],
        "goal",
        GAP_P90_GOAL_MS,
        f"p50 {r['gap_waiting']['p50_ms']} ms, p99 {r['gap_waiting']['p99_ms']} ms over "
        f"{r['gap_pairs']:,} gaps; parts, p50: printed → DONE {r['detect_p50_ms']} ms, "
        f"DONE → next claimed {r['done_to_claim_p50_ms']} ms, claimed → printer starts "
        f"{r['claim_to_start_p50_ms']} ms; machine {r['printing_machine_cores']} of "
        f"{os.cpu_count()} cores busy",
    )


def table(r: dict[str, Any], small: dict[str, Any] | None, idle_s: float) -> list[dict[str, Any]]:
    n, jobs = r["printers"], r["jobs"]
    goal = "goal"
    cores = os.cpu_count() or 1
    both = r["appliance_cpu_ms_per_job"] + r["printers_cpu_ms_per_job"]
    return [
        versus(
            f"{n} printers: appliance RSS at ready",
            "MiB",
            r["at_ready"]["VmRSS"],
            goal,
            RSS_GOAL_MIB,
        ),
        versus(
            f"{n} printers: appliance RSS after {jobs:,} jobs",
            "MiB",
            r["after_jobs"]["VmRSS"],
            goal,
            RSS_GOAL_MIB,
            f"peak {r['after_jobs']['VmHWM']}",
        ),
        versus(
            f"{n} printers idle: appliance CPU, probes included",
            "% of a core",
            r["idle_cpu_pct"],
            goal,
            IDLE_CPU_GOAL_PCT,
            f"over {idle_s:g} s",
        ),
        gap_row(r),
        *([gap_row(small)] if small is not None else []),
        versus(
            f"{n} printers printing: CPU per printed job, appliance",
            "ms",
            r["appliance_cpu_ms_per_job"],
            "the printers and their print commands",
            r["printers_cpu_ms_per_job"],
            f"so this box prints at most {1000 * cores / both:,.0f} jobs/s with the printers "
            f"on it, {1000 * cores / r['appliance_cpu_ms_per_job']:,.0f} jobs/s with the "
            f"printers elsewhere",
        ),
        versus(
            f"{n} printers: {jobs:,} jobs waiting, printers resumed → all printed",
            "s",
            r["resume_to_all_printed_s"],
            "their submits",
            r["submit_s"],
            f"release {r['release_s']} s; appliance CPU meanwhile {r['printing_cpu_cores']} "
            f"cores, the machine's {r['printing_machine_cores']} of {os.cpu_count()}; "
            f"{r['duplicates']} duplicates, {r['losses']} losses",
        ),
        versus(
            f"{n} printers: open descriptors after the jobs",
            "fds",
            r["after_jobs"]["fds"],
            "at ready",
            r["at_ready"]["fds"],
            f"threads {r['after_jobs']['Threads']} (at ready {r['at_ready']['Threads']})",
        ),
    ]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; the exit code (0: every job printed once and measured)."""
    ap = parser("fleet", __doc__, "50 printers, 1,000 jobs, 5 s idle")
    ap.add_argument("--printers", type=int, default=None, help="default 200 (--quick 50)")
    ap.add_argument("--jobs", type=int, default=None, help="default 10000 (--quick 1000)")
    ap.add_argument("--idle-s", type=float, default=None, help="default 20 (--quick 5)")
    ap.add_argument(
        "--small",
        type=int,
        default=10,
        help="printers of the second, smaller fleet in the same run (0: none)",
    )
    ap.add_argument(
        "--profile",
        action="store_true",
        help="py-spy on the appliance while the printers print: print_profile.txt beside --out",
    )
    args = ap.parse_args(argv)
    printers = args.printers or (50 if args.quick else 200)
    jobs = args.jobs or (1_000 if args.quick else 10_000)
    idle_s = args.idle_s or (5.0 if args.quick else 20.0)
    if not (1 <= printers <= 250 and jobs >= printers and idle_s > 0):
        print("bench: --printers 1–250, --jobs ≥ printers, --idle-s > 0", file=sys.stderr)
        return 2
    high_water = -(-jobs // printers) + 10
    with Run("fleet", args) as run:
        stand = run.stand("fleet", printers, printer={"high_water": high_water}, engine="lean")
        raw = run.work / "print.pyspy" if args.profile else None
        out = run.attempt_async("fleet", fleet(stand.start(), jobs, idle_s, raw))
        if raw is not None and out is not None:
            prof = own_cpu(raw)
            title = f"edgeprint while {printers} printers print {jobs:,} jobs (sampled by py-spy)"
            args.out.with_name("print_profile.txt").write_text(profile_text(title, prof))
            out["profile"] = prof
        small = None
        if args.small:
            # The same, on as few printers as the box carries without running out of CPU.
            per = -(-jobs // printers)
            few = run.stand("small", args.small, printer={"high_water": per + 10}, engine="lean")
            small = run.attempt_async("small", fleet(few.start(), per * args.small, 1.0))
    rows = table(out, small, idle_s) if out is not None else []
    for r in (out, small):
        if r is None:
            continue
        for k in ("duplicates", "losses", "unexpected"):
            if r[k]:
                run.failures.append(f"{r['printers']} printers: {k} = {r[k]}")
        if not r["all_released_before_resume"]:
            run.failures.append("a job was released after the printers resumed: gaps unclear")
    return run.finish(
        figures_markdown(rows),
        settings={
            "printers": printers,
            "jobs": jobs,
            "idle_s": idle_s,
            "high_water": high_water,
            "small_printers": args.small,
            "print_engine": "lean",
        },
        table=rows,
        raw={"fleet": out, "small": small},
    )


if __name__ == "__main__":
    sys.exit(main())
