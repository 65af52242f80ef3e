"""The store in PostgreSQL (issue 15): release throughput beside SQLite, and release → printed
across two appliances on one database.

a. throughput — each appliance gets ``--jobs`` held jobs, then releases them over
   ``--connections`` (50) concurrent connections; its printers are paused, so released jobs
   wait (each printer's ``high_water`` is raised to hold them). Three stands in the same run:
   one appliance on SQLite (the default store), one appliance on PostgreSQL, and two
   appliances on one PostgreSQL (``[store] shared``, 50 connections each, the sum).
   Goal: PostgreSQL ≥ 0.5 × SQLite for one appliance.
b. across — appliance A answers the API only (it names printer-01 but cannot reach it);
   appliance B drives printer-01. Each job is submitted held on B, left idle, released on A:
   B's worker hears of it through PostgreSQL's NOTIFY. Release → printed is the printer's own
   ``prints.log`` time less the moment A's 200 was read. Goal: p50 ≤ 50 ms.

The PostgreSQL cluster is a throw-away one (:mod:`testbed.pg`) with the server's default
durability (fsync on), as SQLite runs with ``synchronous = FULL``.

Run from the repository root (``--quick``: fewer jobs)::

    .venv/bin/python -m bench.pg_bench --quick
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from bench.harness import (
    FILE_POLL_S,
    JOB_TIMEOUT_S,
    Kiosk,
    Run,
    Stand,
    Tech,
    edgeprint_id,
    figures_markdown,
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
from testbed.pg import PostgresCluster, find_pg_bin

#: The printers of a throughput stand (all paused: releases only queue).
THROUGHPUT_PRINTERS = 2
#: Idle time before each release of (b), so the worker on B is waiting, not busy.
IDLE_BEFORE_RELEASE_S = 0.2
#: A's view of printer-01: a port nothing listens on (A never sends there).
NOWHERE = "ipp://127.0.0.1:9/ipp/print"
GOAL_RATIO = 0.5
GOAL_ACROSS_P50_MS = 50.0


@dataclass
class PgStand(Stand):
    """A :class:`Stand` whose ``[store]`` is ``store`` and, if given, whose printers are
    ``printers_as`` instead of its rig's."""

    store: dict[str, Any] = field(default_factory=dict)
    printers_as: list[dict[str, Any]] | None = None

    def config(self) -> dict[str, Any]:
        cfg = super().config()
        if self.store:
            cfg["store"] = dict(self.store)
        if self.printers_as is not None:
            cfg["printers"] = list(self.printers_as)
        return cfg


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


def main(argv: Sequence[str] | None = None) -> int:
    ap = parser("pg", __doc__, "fewer jobs (300 per appliance, 20 releases across)")
    ap.add_argument("--connections", type=int, default=50, help="connections per appliance")
    args = ap.parse_args(argv)
    jobs = 300 if args.quick else 2000
    n_across = 20 if args.quick else 100
    pg_bin = find_pg_bin()
    if pg_bin is None:
        print("bench.pg_bench: PostgreSQL not installed (Debian postgresql)", file=sys.stderr)
        return 1
    with Run("pg", args, snapshot=True) as run:
        cluster = PostgresCluster(pg_bin, durable=True)
        cluster.start()
        try:
            printer = {"high_water": 100_000}
            rates: dict[str, float | None] = {}
            sqlite = run.stand("sqlite", THROUGHPUT_PRINTERS, printer=printer)
            if run.attempt("start sqlite", sqlite.start):
                rates["sqlite"] = run.attempt_async(
                    "throughput sqlite", throughput([sqlite], jobs, args.connections)
                )
                sqlite.stop()
            one = PgStand(run.work / "pg1", THROUGHPUT_PRINTERS, printer=printer,
                          source=run.src, store={"url": cluster.url()})  # fmt: skip
            run.stands.append(one)
            if run.attempt("start pg1", one.start):
                rates["pg1"] = run.attempt_async(
                    "throughput pg1", throughput([one], jobs, args.connections)
                )
                one.stop()
            shared = {"url": cluster.url(), "shared": True}
            two = [
                PgStand(
                    run.work / f"pg2{x}",
                    THROUGHPUT_PRINTERS,
                    printer=printer,
                    source=run.src,
                    store=shared,
                )
                for x in "ab"
            ]
            run.stands.extend(two)
            if all(run.attempt(f"start pg2 {i}", s.start) for i, s in enumerate(two)):
                rates["pg2"] = run.attempt_async(
                    "throughput pg2", throughput(two, jobs, args.connections)
                )
            for s in two:
                s.stop()
            url = cluster.url()
            b = PgStand(run.work / "b", 1, source=run.src, store={"url": url, "shared": True})
            a = PgStand(
                run.work / "a", 1, source=run.src, store={"url": url, "shared": True},
                printers_as=[{"name": "printer-01", "uri": NOWHERE}],
                dispatch={"in_hand_timeout_s": 86400},
            )  # fmt: skip
            run.stands.extend([b, a])
            result: dict[str, Any] | None = None
            if run.attempt("start b", b.start) and run.attempt("start a", a.start):
                result = run.attempt_async("across", across(a, b, n_across))
        finally:
            for stand in run.stands:
                with contextlib.suppress(Exception):
                    stand.stop()
            cluster.stop()

    table = [
        versus(
            f"releases/s, one appliance on PostgreSQL, {args.connections} connections",
            "req/s", _round(rates.get("pg1")), "sqlite", _round(rates.get("sqlite")),
            f"goal ≥ {GOAL_RATIO}× SQLite",
        ),
        versus(
            f"releases/s, two appliances on one PostgreSQL, {args.connections} connections "
            "each (sum)",
            "req/s", _round(rates.get("pg2")), "sqlite", _round(rates.get("sqlite")),
        ),
    ]  # fmt: skip
    if result is not None:
        far, near = result["a"], result["b"]
        table.append(
            versus(
                "release on A → printed on B's printer, p50", "ms", far["p50_ms"], "goal",
                GOAL_ACROSS_P50_MS, f"p99 {far['p99_ms']} ms; {result['jobs'] // 2} jobs",
            )
        )  # fmt: skip
        table.append(
            versus(
                "release on A → printed, p50, beside release on B (same box) → printed", "ms",
                far["p50_ms"], "same_box", near["p50_ms"], f"same box p99 {near['p99_ms']} ms",
            )
        )  # fmt: skip
        table.append(row("duplicates / losses across", "jobs",
                         [result["duplicates"] + result["losses"]]))  # fmt: skip
        if result["duplicates"] or result["losses"]:
            run.failures.append(f"across: {result}")
    return run.finish(
        figures_markdown(table), table=table, rates=rates, across=result,
        settings={"jobs": jobs, "connections": args.connections, "across": n_across},
    )  # fmt: skip


def _round(v: float | None) -> float | None:
    return None if v is None else round(v, 1)


if __name__ == "__main__":
    sys.exit(main())
