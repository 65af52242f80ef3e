"""The store in PostgreSQL: release throughput beside SQLite, and across two appliances.

(a) releases/s of ``--jobs`` held jobs over 50 connections (printers paused) on SQLite,
on PostgreSQL, and on two appliances sharing it (goal ≥ 0.5× SQLite); (b) released on A,
printed by B's printer through NOTIFY (goal p50 ≤ 50 ms); (c) takeover: one of two
appliances SIGKILLed, kill → its printer's next print (goal ≤ lease + 2 s); (d) failover:
the Patroni primary's host SIGKILLed or cut off the network under load (bench/pg_failover.py),
write unavailability and takeover, nothing lost or printed twice.

    .venv/bin/python -m bench.pg_bench [--quick] [--only failover]
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import statistics
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import aiohttp

from bench.harness import (
    FILE_POLL_S,
    JOB_TIMEOUT_S,
    BenchError,
    Kiosk,
    Run,
    Stand,
    Tech,
    edgeprint_id,
    figures_markdown,
    first_log,
    http_session,
    ms,
    parser,
    percentile,
    printed_at,
    printed_count,
    row,
    until,
    versus,
)
from bench.pg_failover import failover_line, failover_phase, failover_rows
from edgeprint.config import ClusterConfig
from testbed.pg import PostgresCluster, find_pg_bin

#: The printers of a throughput stand (all paused: releases only queue).
THROUGHPUT_PRINTERS = 2
#: Idle time before each release of (b), so the worker on B is waiting, not busy.
IDLE_BEFORE_RELEASE_S = 0.2
#: A's view of printer-01: a port nothing listens on (A never sends there).
NOWHERE = "ipp://127.0.0.1:9/ipp/print"
GOAL_RATIO = 0.5
GOAL_ACROSS_P50_MS = 50.0
#: The printers two appliances share in (c): one owns two, the other one.
TAKEOVER_PRINTERS = 3
#: Seconds above the lease a takeover may take (the issue's "≤ lease + 2 s").
GOAL_TAKEOVER_OVER_LEASE_S = 2.0
#: Deadline for the printers to spread over both appliances (a lease lapses first).
SPREAD_TIMEOUT_S = 30.0
#: Deadline for a released job to come out after a kill.
TAKEOVER_TIMEOUT_S = 30.0


async def _release_all(url: str, ids: Sequence[str], connections: int) -> tuple[float, float]:
    """Release every job over ``connections`` connections; (start, end) in monotonic seconds."""
    queue: asyncio.Queue[str] = asyncio.Queue()
    for i in ids:
        queue.put_nowait(i)
    connector = aiohttp.TCPConnector(limit=connections)
    async with aiohttp.ClientSession(connector=connector) as http:
        kiosk = Kiosk(http, url)

        async def worker() -> None:
            while not queue.empty():
                await kiosk.release(queue.get_nowait())

        start = time.monotonic()
        await asyncio.gather(*(worker() for _ in range(connections)))
        return start, time.monotonic()


async def _prepare(stand: Stand, jobs: int, tag: str) -> list[str]:
    """Pause the stand's printers and submit ``jobs`` held jobs to it; their ids."""
    async with http_session() as http:
        tech = Tech(http, stand.url)
        for p in stand.rig:
            await tech.post(f"/v1/printers/{p.name}/pause")
        return await Kiosk(http, stand.url).submit_many(tag, jobs, pool="lobby", hold=True)


async def throughput(stands: Sequence[Stand], jobs: int, connections: int) -> float:
    """Releases per second of ``stands`` together (each with ``connections`` connections)."""
    ids = [await _prepare(s, jobs, f"t{i}") for i, s in enumerate(stands)]
    spans = await asyncio.gather(
        *(_release_all(s.url, i, connections) for s, i in zip(stands, ids, strict=True))
    )
    start = min(a for a, _ in spans)
    end = max(b for _, b in spans)
    return len(stands) * jobs / (end - start)


async def across(a: Stand, b: Stand, n: int) -> dict[str, Any]:
    """Submit held on B, release on A (odd rounds: on B itself, the same-box baseline), wait
    for paper on B's printer-01; ``2 n`` rounds, interleaved so both see the same load."""
    printer = b.rig["printer-01"]
    released: dict[str, tuple[str, float]] = {}
    async with http_session() as http:
        on_a, on_b = Kiosk(http, a.url), Kiosk(http, b.url)
        for i in range(2 * n):
            where, kiosk = ("a", on_a) if i % 2 == 0 else ("b", on_b)
            job_id = await on_b.submit(f"across-{i:05d}", printer=printer.name, hold=True)
            before = printed_count(b.rig)
            await asyncio.sleep(IDLE_BEFORE_RELEASE_S)
            released[job_id] = (where, await kiosk.release(job_id))

            async def paper_out(before: int = before) -> bool:
                return printed_count(b.rig) > before

            await until(paper_out, JOB_TIMEOUT_S, FILE_POLL_S, f"{job_id} not printed")
    lines = b.rig.printed(printer.name)
    paper = {edgeprint_id(p.job_name): printed_at(p) for p in lines}
    copies = Counter(edgeprint_id(p.job_name) for p in lines)
    out: dict[str, Any] = {
        "jobs": 2 * n,
        "duplicates": sum(1 for j in released if copies[j] > 1),
        "losses": sum(1 for j in released if j not in paper),
    }
    for where in ("a", "b"):
        took = [paper[j] - t for j, (w, t) in released.items() if w == where and j in paper]
        out[where] = {"p50_ms": ms(percentile(took, 50)), "p99_ms": ms(percentile(took, 99))}
    return out


async def _owners(http: aiohttp.ClientSession, stand: Stand) -> dict[str, str | None]:
    """GET /v1/printers on ``stand``: each printer's lease owner as that appliance last read."""
    return {name: p["owner"] for name, p in (await Tech(http, stand.url).printers()).items()}


async def takeover(stands: dict[str, Stand], rounds: int) -> dict[str, Any]:
    """(c): ``rounds`` SIGKILLs of a and b in turn; each takeover (s) and the ground truth."""
    rig = stands["a"].rig
    samples: list[dict[str, Any]] = []
    jobs: dict[str, str] = {}  # job id → its printer
    async with http_session() as http:
        for i in range(rounds):
            name = "ab"[i % 2]
            victim, survivor = stands[name], stands["b" if name == "a" else "a"]

            async def spread(survivor: Stand = survivor) -> bool:
                return set((await _owners(http, survivor)).values()) == {"a", "b"}

            await until(spread, SPREAD_TIMEOUT_S, 0.1, "printers spread over a and b")
            theirs = sorted(p for p, o in (await _owners(http, survivor)).items() if o == name)
            kiosk = Kiosk(http, survivor.url)
            held = {
                p: await kiosk.submit(f"takeover-{i:03d}-{p}", printer=p, hold=True) for p in theirs
            }
            jobs.update({j: p for p, j in held.items()})
            offset = survivor.serve.log_path.stat().st_size
            killed = time.time()
            victim.serve.kill()
            for job_id in held.values():
                await kiosk.release(job_id)

            async def out(held: dict[str, str] = held) -> bool:
                return all(
                    any(edgeprint_id(x.job_name) == j for x in rig.printed(p))
                    for p, j in held.items()
                )

            await until(out, TAKEOVER_TIMEOUT_S, 0.02, f"round {i}: {held} not printed")
            log = survivor.log_events(offset)
            for p, job_id in held.items():
                first = min((x for x in rig.printed(p) if printed_at(x) >= killed), key=printed_at)
                taken = first_log(log, "lease_taken", killed, p)
                samples.append(
                    {
                        "round": i,
                        "victim": name,
                        "printer": p,
                        "job": job_id,
                        "takeover_s": round(printed_at(first) - killed, 3),
                        "first_print_is_the_job": edgeprint_id(first.job_name) == job_id,
                        "kill_to_lease_taken_s": None
                        if taken is None
                        else round(taken - killed, 3),
                    }
                )
            try:
                await asyncio.to_thread(victim.serve.start)
            except (RuntimeError, TimeoutError) as exc:
                raise BenchError(f"round {i}: {name} did not restart: {exc}") from exc
    copies = Counter(edgeprint_id(x.job_name) for p in rig for x in rig.printed(p.name))
    where = {edgeprint_id(x.job_name): p.name for p in rig for x in rig.printed(p.name)}
    times = [s["takeover_s"] for s in samples]
    return {
        "rounds": rounds,
        "samples": samples,
        "median_s": round(statistics.median(times), 2),
        "max_s": round(max(times), 2),
        "duplicates": sum(n - 1 for n in copies.values() if n > 1),
        "losses": sum(1 for j in jobs if j not in copies),
        "elsewhere": sum(1 for j, p in jobs.items() if j in where and where[j] != p),
        "unexpected": sum(1 for j in copies if j not in jobs),
        "first_print_not_the_job": sum(1 for s in samples if not s["first_print_is_the_job"]),
    }


PHASES = ("throughput", "across", "takeover", "failover")


def main(argv: Sequence[str] | None = None) -> int:
    ap = parser(
        "pg",
        __doc__,
        "fewer jobs (300 per appliance, 20 releases across, 6 takeovers, 1 failover per kind)",
    )
    ap.add_argument("--connections", type=int, default=50, help="connections per appliance")
    ap.add_argument("--only", choices=PHASES, help="run this phase alone (not in make bench)")
    args = ap.parse_args(argv)
    previous = _read(args.out)
    jobs = 300 if args.quick else 2000
    n_across = 20 if args.quick else 100
    n_takeover = 6 if args.quick else 20
    n_failover = 1 if args.quick else 3
    phases = {args.only} if args.only else set(PHASES)
    pg_bin = find_pg_bin()
    if pg_bin is None:
        print("bench.pg_bench: PostgreSQL not installed (Debian postgresql)", file=sys.stderr)
        return 1
    rates: dict[str, float | None] = {}
    result: dict[str, Any] | None = None
    taken: dict[str, Any] | None = None
    failover: dict[str, Any] | None = None
    with Run("pg", args, snapshot=True) as run:
        cluster = PostgresCluster(pg_bin, durable=True)
        cluster.start()
        try:
            if "failover" in phases:
                failover = failover_phase(run, n_failover)
            if "throughput" in phases:
                rates = _throughput_phase(run, cluster, jobs, args.connections)
            if "across" in phases:
                result = _across_phase(run, cluster, n_across)
            if "takeover" in phases:
                taken = _takeover_phase(run, cluster, n_takeover)
        finally:
            for stand in run.stands:
                with contextlib.suppress(Exception):
                    stand.stop()
            cluster.stop()

    table: list[dict[str, Any]] = []
    if rates:
        table += [
            versus(
                f"releases/s, one appliance on PostgreSQL, {args.connections} connections",
                "req/s",
                _round(rates.get("pg1")),
                "sqlite",
                _round(rates.get("sqlite")),
                f"goal ≥ {GOAL_RATIO}× SQLite",
            ),
            versus(
                f"releases/s, two appliances on one PostgreSQL, {args.connections} "
                "connections each (sum)",
                "req/s",
                _round(rates.get("pg2")),
                "sqlite",
                _round(rates.get("sqlite")),
            ),
        ]
    if result is not None:
        table += _across_rows(result)
        if result["duplicates"] or result["losses"]:
            run.failures.append(f"across: {result}")
    if taken is not None:
        table += _takeover_rows(taken)
        bad = sum(taken[k] for k in ("duplicates", "losses", "elsewhere", "unexpected"))
        if bad or taken["first_print_not_the_job"]:
            run.failures.append(f"takeover: {taken}")
    if failover is not None:
        table += failover_rows(failover)
    code = run.finish(
        figures_markdown(table),
        table=table,
        rates=rates,
        across=result,
        takeover=taken,
        failover=failover,
        settings={
            "jobs": jobs,
            "connections": args.connections,
            "across": n_across,
            "takeover_rounds": n_takeover,
            "failover_rounds": n_failover,
            "phases": sorted(phases),
        },
    )
    if args.only:
        _keep_other_phases(args.out, previous)
    if failover is not None:
        print(failover_line(failover))
    return code


def _read(path: Path) -> dict[str, Any]:
    try:
        data: dict[str, Any] = json.loads(path.read_text())
        return data
    except (OSError, ValueError):
        return {}


def _keep_other_phases(path: Path, previous: dict[str, Any]) -> None:
    """``--only`` rewrote the results file: put back the other phases' figures and rows."""
    now = _read(path)
    if not now or not previous:
        return
    mine = {r["figure"] for r in now.get("table", [])}
    for key in ("rates", "across", "takeover", "failover"):
        if not now.get(key) and previous.get(key):
            now[key] = previous[key]
    ours = list(now.get("table", []))
    others = [r for r in previous.get("table", []) if r["figure"] not in mine]
    if ours and others:
        now["table"] = [*others, *ours]
        now["table_markdown"] = figures_markdown(now["table"])
    path.write_text(json.dumps(now, indent=2, default=str) + "\n")


def _throughput_phase(
    run: Run, cluster: PostgresCluster, jobs: int, connections: int
) -> dict[str, float | None]:
    """(a): releases per second on SQLite, on PostgreSQL, and on two appliances sharing it."""
    printer = {"high_water": 100_000}
    rates: dict[str, float | None] = {}
    sqlite = run.stand("sqlite", THROUGHPUT_PRINTERS, printer=printer)
    if run.attempt("start sqlite", sqlite.start):
        rates["sqlite"] = run.attempt_async(
            "throughput sqlite", throughput([sqlite], jobs, connections)
        )
        sqlite.stop()
    one = run.stand(
        "pg1", THROUGHPUT_PRINTERS, printer=printer, sections={"store": {"url": cluster.url()}}
    )
    if run.attempt("start pg1", one.start):
        rates["pg1"] = run.attempt_async("throughput pg1", throughput([one], jobs, connections))
        one.stop()
    shared = {"store": {"url": cluster.url(), "shared": True}}
    two = [
        run.stand(
            f"pg2{x}",
            THROUGHPUT_PRINTERS,
            printer=printer,
            sections={**shared, "cluster": {"appliance_id": f"pg2{x}"}},
        )
        for x in "ab"
    ]
    if all(run.attempt(f"start pg2 {i}", s.start) for i, s in enumerate(two)):
        rates["pg2"] = run.attempt_async("throughput pg2", throughput(two, jobs, connections))
    for s in two:
        s.stop()
    return rates


def _across_phase(run: Run, cluster: PostgresCluster, n: int) -> dict[str, Any] | None:
    """(b): release on A → printed on B's printer."""
    store = {"url": cluster.url(), "shared": True}
    b = run.stand("b", 1, sections={"store": store, "cluster": {"appliance_id": "b"}})
    a = run.stand(
        "a",
        1,
        sections={
            "store": store,
            "cluster": {"appliance_id": "a"},
            "printers": [{"name": "printer-01", "uri": NOWHERE}],
        },
        dispatch={"in_hand_timeout_s": 86400},
    )
    result = None
    if run.attempt("start b", b.start) and run.attempt("start a", a.start):
        result = run.attempt_async("across", across(a, b, n))
    b.stop()
    a.stop()
    return result


def _takeover_phase(run: Run, cluster: PostgresCluster, n: int) -> dict[str, Any] | None:
    """(c): appliances a and b on one rig, each SIGKILLed in turn."""
    store = {"url": cluster.url(), "shared": True}
    a = run.stand(
        "ta", TAKEOVER_PRINTERS, sections={"store": store, "cluster": {"appliance_id": "a"}}
    )
    b = run.stand(
        "tb", TAKEOVER_PRINTERS, peer=a, sections={"store": store, "cluster": {"appliance_id": "b"}}
    )
    taken = None
    if run.attempt("start a", a.start) and run.attempt("start b", b.start):
        taken = run.attempt_async("takeover", takeover({"a": a, "b": b}, n))
    b.stop()
    a.stop()
    return taken


def _across_rows(result: dict[str, Any]) -> list[dict[str, Any]]:
    far, near = result["a"], result["b"]
    return [
        versus(
            "release on A → printed on B's printer, p50",
            "ms",
            far["p50_ms"],
            "goal",
            GOAL_ACROSS_P50_MS,
            f"p99 {far['p99_ms']} ms; {result['jobs'] // 2} jobs",
        ),
        versus(
            "release on A → printed, p50, beside release on B (same box) → printed",
            "ms",
            far["p50_ms"],
            "same_box",
            near["p50_ms"],
            f"same box p99 {near['p99_ms']} ms",
        ),
        row("duplicates / losses across", "jobs", [result["duplicates"] + result["losses"]]),
    ]


def _takeover_rows(taken: dict[str, Any]) -> list[dict[str, Any]]:
    lease = ClusterConfig().lease_s
    goal = lease + GOAL_TAKEOVER_OVER_LEASE_S
    n = len(taken["samples"])
    note = f"{n} takeovers of a printer over {taken['rounds']} SIGKILLs; [cluster] defaults"
    bad = sum(taken[k] for k in ("duplicates", "losses", "elsewhere", "unexpected"))
    return [
        versus(
            "takeover: SIGKILL → the first print by the new owner, median",
            "s",
            taken["median_s"],
            "goal",
            goal,
            f"goal lease_s {lease:g} s + 2 s; {note}",
        ),
        versus(
            "takeover: SIGKILL → the first print by the new owner, max",
            "s",
            taken["max_s"],
            "goal",
            goal,
            note,
        ),
        row(
            "takeover: SIGKILL → lease taken (the survivor's log)",
            "s",
            [s["kill_to_lease_taken_s"] for s in taken["samples"]],
        ),
        row(
            "duplicates / losses over takeovers", "jobs", [bad], f"{n} jobs, on the printers' logs"
        ),
    ]


def _round(v: float | None) -> float | None:
    return None if v is None else round(v, 1)


if __name__ == "__main__":
    sys.exit(main())
