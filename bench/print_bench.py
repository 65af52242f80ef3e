"""Printing: edgeprint driving real IPP printers (0 s/page), as a user gets it.

Per repetition, each phase on a fresh stand: (1) release → printed and → DONE, one job
at a time on an idle printer; (2) drain of ``--drain-jobs`` to one printer, then a pool
of two: jobs/s per printer and the idle gap between jobs with its parts; (3) the
appliance SIGKILLed right after a document came out: restart → ready, → PRINTING
settled, → all DONE. Once per run, (4) no PDF: a raster-only printer beside a PDF one
(render + PWG raster, the rendition cache), and ``/healthz`` and a badge while 8 long
documents render. Ground truth: prints.log, server.log, job_events.

    .venv/bin/python -m bench.print_bench [--quick]
    .venv/bin/python -m bench.print_bench --versus REV [--repeat N] [--latency-jobs N]

``--versus REV`` runs phase 1 only, side by side: the appliance of git revision REV and
this tree's, alternately (which goes first alternates too), ``--repeat`` times each; it
prints both p50s and their ratio and writes ``bench/results/print_versus.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from bench.harness import (
    API_POLL_S,
    FILE_POLL_S,
    JOB_TIMEOUT_S,
    POOL,
    REPO,
    RESULTS,
    Kiosk,
    Run,
    Stand,
    edgeprint_id,
    figures_markdown,
    gaps,
    ground_truth,
    http_session,
    ms,
    parser,
    percentile,
    printed_at,
    printed_count,
    read_store,
    row,
    spread,
    until,
)
from edgeprint.config import PrinterConfig
from testbed.pdfs import make_a4_pdf, make_badge_pdf
from testbed.rig import Rig

#: Seconds the printer is left idle before each release in the latency phase.
IDLE_BEFORE_RELEASE_S = 0.15
#: The same in phase 4.
IDLE_BEFORE_BADGE_S = 0.1
#: Drain submits keep at most this many jobs per printer submitted but not printed:
#: below the appliance's per-printer ``high_water`` (default 50, when the running
#: code has it), so the queue never runs dry and admission never pushes back.
_HIGH_WATER = getattr(PrinterConfig.model_fields.get("high_water"), "default", None)
DRAIN_WINDOW_PER_PRINTER = max(1, min(40, _HIGH_WATER - 10)) if isinstance(_HIGH_WATER, int) else 40
DRAIN_BASE_TIMEOUT_S = 30.0
DRAIN_PER_JOB_TIMEOUT_S = 0.6
RECOVERY_TIMEOUT_S = 45.0


# --- phase 1: release → completed on an idle printer ---------------------------------


async def phase_latency(stand: Stand, n_jobs: int, tag: str) -> dict[str, Any]:
    """Submit held, idle, release, wait for paper and DONE; ``n_jobs`` times, one at a time."""
    printer = stand.rig["printer-01"]
    released: dict[str, float] = {}
    ids: list[str] = []
    async with http_session() as http:
        kiosk = Kiosk(http, stand.url)
        for i in range(n_jobs):
            job_id = await kiosk.submit(f"{tag}-{i:05d}", printer=printer.name, hold=True)
            ids.append(job_id)
            before = printed_count(stand.rig)
            await asyncio.sleep(IDLE_BEFORE_RELEASE_S)
            released[job_id] = await kiosk.release(job_id)

            async def paper_out(before: int = before) -> bool:
                return printed_count(stand.rig) > before

            async def done(job_id: str = job_id) -> bool:
                return (await kiosk.job(job_id))["state"] in ("DONE", "DEAD")

            await until(paper_out, JOB_TIMEOUT_S, FILE_POLL_S, f"{job_id} not printed")
            await until(done, JOB_TIMEOUT_S, API_POLL_S, f"{job_id} not DONE")
    stand.stop()
    paper = {edgeprint_id(p.job_name): printed_at(p) for p in stand.rig.printed(printer.name)}
    to_printed = [paper[j] - t for j, t in released.items() if j in paper]
    return {
        "release_to_printed_p50_ms": ms(percentile(to_printed, 50)),
        "release_to_printed_p99_ms": ms(percentile(to_printed, 99)),
        **ground_truth(stand.rig, ids),
    }


# --- phase 2: drain ------------------------------------------------------------------


async def phase_drain(
    stand: Stand, n_jobs: int, tag: str, target: dict[str, str]
) -> dict[str, Any]:
    """Submit ``n_jobs`` printable jobs for ``target`` and time until the last is on paper."""
    n_printers = len(stand.rig)
    async with http_session() as http:
        kiosk = Kiosk(http, stand.url)
        t_first = time.time()
        ids = await kiosk.submit_many(
            tag,
            n_jobs,
            window=DRAIN_WINDOW_PER_PRINTER * n_printers,
            printed=lambda: printed_count(stand.rig),
            hold=False,
            **target,
        )

        async def all_out() -> bool:
            return printed_count(stand.rig) >= n_jobs

        timeout = DRAIN_BASE_TIMEOUT_S + DRAIN_PER_JOB_TIMEOUT_S * n_jobs
        await until(all_out, timeout, 0.02, f"fewer than {n_jobs} printed")
        await kiosk.wait_settled(JOB_TIMEOUT_S)
    stand.stop()
    last = max(printed_at(x) for p in stand.rig for x in stand.rig.printed(p.name))
    return {
        "jobs_per_s_per_printer": round(n_jobs / (last - t_first) / n_printers, 2),
        "idle_gap_p50_ms": ms(percentile(gaps(stand, read_store(stand.data_dir))["idle"], 50)),
        **ground_truth(stand.rig, ids),
    }


# --- phase 3: recovery after SIGKILL -------------------------------------------------


async def phase_recovery(stand: Stand, n_jobs: int, tag: str) -> dict[str, Any]:
    """SIGKILL the appliance right after a document came out; restart; time the recovery."""
    kill_after = max(1, n_jobs // 4)
    async with http_session() as http:
        kiosk = Kiosk(http, stand.url)
        ids = await kiosk.submit_many(tag, n_jobs, pool=POOL, hold=False)
        seen = printed_count(stand.rig)

        async def next_paper() -> bool:
            return printed_count(stand.rig) > max(seen, kill_after - 1)

        await until(next_paper, JOB_TIMEOUT_S, 0.0005, "no document came out")
        stand.serve.kill()
    at_kill = read_store(stand.data_dir)
    printing = {i for i, row in at_kill.jobs.items() if row["state"] == "PRINTING"}

    async with http_session() as http:
        kiosk = Kiosk(http, stand.url)
        t_restart = time.time()
        t_readyz, _ = await stand.spawn(http)
        await kiosk.wait_settled(RECOVERY_TIMEOUT_S)
    stand.stop()
    store = read_store(stand.data_dir)
    left_at = [store.first(i, after=t_restart, src="PRINTING") for i in printing]
    return {
        "restart_to_readyz_ms": ms(t_readyz - t_restart),
        "restart_to_reconciled_ms": (
            ms(max(t for t in left_at if t is not None) - t_restart)
            if printing and all(t is not None for t in left_at)
            else None
        ),
        "left_printing": sum(1 for row in store.jobs.values() if row["state"] == "PRINTING"),
        **ground_truth(stand.rig, ids),
    }


# --- phase 4: printers without PDF (edgeprint renders) ----------------------------


async def released_to_printed(kiosk: Kiosk, rig: Rig, printer: str, key: str, doc: bytes) -> float:
    """Submit ``doc`` held for ``printer``, let it idle, release: ms until prints.log has it."""
    job_id = await kiosk.submit(key, doc=doc, printer=printer, hold=True)
    await asyncio.sleep(IDLE_BEFORE_BADGE_S)  # an idle printer at the release
    released = await kiosk.release(job_id)
    name = printer.removeprefix("raster-")
    out: list[float] = []

    async def on_paper() -> bool:
        out.extend(printed_at(x) for x in rig.printed(name) if job_id in x.job_name)
        return bool(out)

    await until(on_paper, JOB_TIMEOUT_S, FILE_POLL_S, f"{job_id} not printed on {printer}")
    return (out[0] - released) * 1000.0


async def phase_raster(stand: Stand, jobs: int) -> dict[str, Any]:
    """Badges alternately on the PDF and the raster-only printer; then one badge again and
    again (rendition cache). Two warm-ups (render pool, connections) are left out."""
    out: dict[str, list[float]] = {"pdf": [], "raster": [], "raster_cached": []}
    sides = (("printer-01", stand.rig, "pdf"), ("raster-printer-01", stand.raster_rig, "raster"))
    async with http_session() as http:
        kiosk = Kiosk(http, stand.url)
        for i in range(jobs + 2):
            for printer, rig, kind in sides:
                doc = make_badge_pdf(f"Attendee {i} {kind}")
                took = await released_to_printed(kiosk, rig, printer, f"{kind}-{i:05d}", doc)
                out[kind] += [took] if i >= 2 else []
        same = make_badge_pdf("Attendee cached")
        for i in range(jobs + 1):
            took = await released_to_printed(
                kiosk, stand.raster_rig, "raster-printer-01", f"cached-{i:05d}", same
            )
            out["raster_cached"] += [took] if i >= 1 else []
    return {k: _p50_p99(v) for k, v in out.items()}


async def phase_render_load(stand: Stand, pages: int, badges: int) -> dict[str, Any]:
    """/healthz every 10 ms and badges on the PDF printer while every raster-only printer
    gets a ``pages``-page document (US letter)."""
    health: list[float] = []
    badge: list[float] = []
    async with http_session() as http:
        kiosk = Kiosk(http, stand.url)
        for p in stand.raster_rig:
            doc = make_a4_pdf(pages, size_pt=(612, 792))
            await kiosk.submit(f"long-{p.name}", doc=doc, printer=f"raster-{p.name}", hold=False)
        stop = asyncio.Event()

        async def poll() -> None:
            while not stop.is_set():
                t0 = time.perf_counter()
                async with http.get(f"{stand.url}/healthz") as r:
                    await r.read()
                health.append((time.perf_counter() - t0) * 1000)
                await asyncio.sleep(0.01)  # one probe every 10 ms

        poller = asyncio.create_task(poll())
        for i in range(badges):
            doc = make_badge_pdf(f"Badge under load {i}")
            badge.append(
                await released_to_printed(kiosk, stand.rig, "printer-01", f"load-{i:04d}", doc)
            )
        stop.set()
        await poller
    rendering = sum(1 for p in stand.raster_rig if not stand.raster_rig.printed(p.name))
    return {
        "healthz": _p50_p99(health),
        "badge": _p50_p99(badge),
        "long_documents_still_rendering_or_printing_at_end": rendering,
    }


def _p50_p99(values: list[float]) -> dict[str, Any]:
    p50, p99 = percentile(values, 50), percentile(values, 99)
    return {"n": len(values), "p50_ms": round(p50 or 0, 1), "p99_ms": round(p99 or 0, 1)}


def raster_table(idle: dict[str, Any], load: dict[str, Any]) -> list[dict[str, Any]]:
    """The rows of phase 4 (bench.report prints them as "printing, no PDF")."""
    ratio = round(idle["raster"]["p50_ms"] / idle["pdf"]["p50_ms"], 2)

    def one(v: float) -> dict[str, float]:
        return {"median": v, "min": v, "max": v}

    return [
        {
            "figure": "release → printed, idle raster-only printer (render + PWG raster), p50",
            "unit": "ms",
            "edgeprint": one(idle["raster"]["p50_ms"]),
            "PDF printer, same run": one(idle["pdf"]["p50_ms"]),
            "ratio": ratio,
        },
        {
            "figure": "same, a badge already rendered (rendition cache), p50",
            "unit": "ms",
            **one(idle["raster_cached"]["p50_ms"]),
        },
        {
            "figure": "while 8 long documents render: /healthz p99",
            "unit": "ms",
            **one(load["healthz"]["p99_ms"]),
            "note": "target < 50 ms",
        },
        {
            "figure": "while 8 long documents render: a badge on a PDF printer, release → printed "
            "p99",
            "unit": "ms",
            **one(load["badge"]["p99_ms"]),
            "note": "target < 200 ms",
        },
    ]


async def no_pdf(run: Run, args: argparse.Namespace) -> dict[str, Any]:
    """Phase 4 on two fresh stands: one raster-only printer, then eight."""
    out: dict[str, Any] = {}
    plan: list[tuple[str, int, Callable[[Stand], Awaitable[dict[str, Any]]]]] = [
        ("idle", 1, lambda s: phase_raster(s, args.raster_jobs)),
        ("under_render_load", 8, lambda s: phase_render_load(s, args.pages, args.raster_jobs)),
    ]
    for name, raster, phase in plan:
        stand = run.stand(f"no-pdf-{name}", 1, raster=raster).start()
        try:
            out[name] = await phase(stand)
        finally:
            stand.stop()
    return out


# --- runs, summary, output -----------------------------------------------------------

#: (phase, key, label, unit) rows of the table, in order.
ROWS: list[tuple[str, str, str, str]] = [
    ("latency", "release_to_printed_p50_ms", "release → printed (prints.log), p50", "ms"),
    ("latency", "release_to_printed_p99_ms", "release → printed (prints.log), p99", "ms"),
    ("drain1", "jobs_per_s_per_printer", "drain rate, end to end", "jobs/s/printer"),
    ("drain1", "idle_gap_p50_ms", "printer idle gap between jobs, median", "ms"),
    ("drain2", "jobs_per_s_per_printer", "drain rate, end to end", "jobs/s/printer"),
    ("recovery", "restart_to_readyz_ms", "restart → /readyz 200", "ms"),
    ("recovery", "restart_to_reconciled_ms", "restart → PRINTING-at-kill all left (store)", "ms"),
]
PHASE_TITLES = {
    "latency": "1. release → completed, idle printer",
    "drain1": "2a. drain, one named printer",
    "drain2": "2b. drain, pool of 2 printers",
    "recovery": "3. recovery after SIGKILL (pool of 2)",
}
CHECK_KEYS = ("duplicates", "losses", "unexpected", "left_printing")


async def one_run(run: Run, rep: int, args: argparse.Namespace) -> dict[str, Any]:
    """One repetition of every phase, each on a fresh stand; phase → figures."""
    out: dict[str, Any] = {}
    plan: list[tuple[str, int, Callable[[Stand], Awaitable[dict[str, Any]]]]] = [
        ("latency", 1, lambda s: phase_latency(s, args.latency_jobs, f"lat-{rep}")),
        (
            "drain1",
            1,
            lambda s: phase_drain(s, args.drain_jobs, f"dr1-{rep}", {"printer": "printer-01"}),
        ),
        ("drain2", 2, lambda s: phase_drain(s, args.drain_jobs, f"dr2-{rep}", {"pool": POOL})),
        ("recovery", 2, lambda s: phase_recovery(s, args.recovery_jobs, f"rec-{rep}")),
    ]
    for name, printers, phase in plan:
        t0 = time.monotonic()
        stand = run.stand(f"r{rep}-{name}", printers).start()
        try:
            out[name] = await phase(stand)
        finally:
            stand.stop()
        out[name]["phase_s"] = round(time.monotonic() - t0, 2)
        print(f"bench: run {rep + 1} {name}: {out[name]}", file=sys.stderr)
    return out


def _export(rev: str, into: Path) -> Path:
    """``edgeprint/`` as it is at git revision ``rev``, in ``into``; the folder to put on
    PYTHONPATH."""
    into.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "archive", rev, "edgeprint"], cwd=REPO, capture_output=True, check=True
    )
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into


async def versus(run: Run, rev: str, args: argparse.Namespace) -> dict[str, Any]:
    """Phase 1 on REV's appliance and this tree's, alternately; who → [figures per run]."""
    sources = {rev: _export(rev, run.work / "versus"), "this": run.src}
    per: dict[str, list[dict[str, Any]]] = {rev: [], "this": []}
    for rep in range(args.repeat):
        order = [rev, "this"] if rep % 2 == 0 else ["this", rev]
        for who in order:
            tag = f"v{rep}-{'rev' if who == rev else 'this'}"
            stand = run.stand(tag, 1, source=sources[who]).start()
            try:
                per[who].append(await phase_latency(stand, args.latency_jobs, tag))
            finally:
                stand.stop()
            print(f"bench: run {rep + 1} {who}: {per[who][-1]}", file=sys.stderr)
    return per


def main_versus(args: argparse.Namespace) -> int:
    """``--versus REV``: release → printed on an idle printer, REV beside this tree."""
    rev = args.versus
    if args.out == RESULTS / "print.json":
        args.out = RESULTS / "print_versus.json"
    with Run("print", args, snapshot=True) as run:
        per = run.attempt_async("versus", versus(run, rev, args)) or {rev: [], "this": []}
    p50 = {who: spread([r["release_to_printed_p50_ms"] for r in rs]) for who, rs in per.items()}
    this, before = p50["this"]["median"], p50[rev]["median"]
    ratio = round(this / before, 3) if this and before else None
    shown = {who: "–" if v is None else f"{v:.1f}" for who, v in ((rev, before), ("this", this))}
    rows = [
        {
            **row(
                "release → printed, idle printer, p50: this tree",
                "ms",
                [r["release_to_printed_p50_ms"] for r in per["this"]],
            ),
            "note": f"{rev}: {shown[rev]} ms; ratio {ratio}",
        },
        row(
            f"release → printed, idle printer, p50: {rev}",
            "ms",
            [r["release_to_printed_p50_ms"] for r in per[rev]],
        ),
    ]
    for who, rs in per.items():
        for k in CHECK_KEYS:
            run.failures += [f"{who}: {k} = {r[k]}" for r in rs if r.get(k)]
    print(f"release → printed p50: this tree {shown['this']} ms, {rev} {shown[rev]} ms: {ratio}×")
    return run.finish(
        figures_markdown(rows),
        summary={"p50_ms": p50, "ratio": ratio, "versus": rev},
        runs=per,
        table=rows,
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; the exit code (0 all printed exactly once, 1 otherwise)."""
    ap = parser("print", __doc__, "fewer jobs, one run (about 15 s)")
    ap.add_argument("--repeat", type=int, default=None, help="runs (default 3, --quick 1)")
    ap.add_argument("--latency-jobs", type=int, default=None, help="default 40 (--quick 10)")
    ap.add_argument("--drain-jobs", type=int, default=None, help="default 200 (--quick 60)")
    ap.add_argument("--recovery-jobs", type=int, default=20, help="default 20")
    ap.add_argument("--raster-jobs", type=int, default=None, help="no-PDF jobs per row, 30 (10)")
    ap.add_argument("--pages", type=int, default=None, help="pages per long document, 40 (10)")
    ap.add_argument("--versus", metavar="REV", help="phase 1 only, beside REV's appliance")
    args = ap.parse_args(argv)
    args.raster_jobs = args.raster_jobs or (10 if args.quick else 30)
    args.pages = args.pages or (10 if args.quick else 40)
    args.repeat = args.repeat or (1 if args.quick else 3)
    args.latency_jobs = args.latency_jobs or (10 if args.quick else 40)
    args.drain_jobs = args.drain_jobs or (60 if args.quick else 200)
    if min(args.latency_jobs, args.drain_jobs, args.recovery_jobs) < 1 or args.repeat > 20:
        print("bench: --repeat (1–20) and job counts must be ≥ 1", file=sys.stderr)
        return 2
    if args.versus is not None:
        return main_versus(args)
    runs: list[dict[str, Any]] = []
    with Run("print", args) as run:
        for rep in range(args.repeat):
            one = run.attempt_async(f"run {rep + 1}", one_run(run, rep, args))
            runs += [one] if one is not None else []
        raster = run.attempt_async("no PDF", no_pdf(run, args))
    rows = [] if raster is None else raster_table(raster["idle"], raster["under_render_load"])
    summary = {
        phase: {
            k: spread([r[phase].get(k) for r in runs])
            for k in {k for r in runs for k in r[phase] if not isinstance(r[phase][k], dict)}
        }
        for phase in PHASE_TITLES
    }
    own = [
        row(f"{PHASE_TITLES[phase]}: {label}", unit, [r[phase][key] for r in runs])
        for phase, key, label, unit in ROWS
    ]
    for k in CHECK_KEYS:
        worst = {phase: summary[phase].get(k, {}).get("max") or 0 for phase in PHASE_TITLES}
        own.append(row(f"{k} (worst run, summed over phases)", "jobs", [sum(worst.values())]))
        run.failures += [f"{p}: {k} = {n} in the worst run" for p, n in worst.items() if n]
    return run.finish(
        figures_markdown(own + rows), summary=summary, runs=runs, table=rows, no_pdf=raster
    )


if __name__ == "__main__":
    sys.exit(main())
