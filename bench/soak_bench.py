"""Soak: a long mixed API load with printing, and whether the appliance stays the same.

``--requests`` requests (per job: submit, release, 4 gets, 4 lists; every job prints)
from ``--concurrency`` clients. Goals: RSS growth after warm-up ≤ 10 MiB and no growth in
descriptors, threads or asyncio tasks (``edgeprint_event_loop_tasks``; all read at
quiet points), p99 of the last 10 % ÷ the first 10 % ≤ 1.5×. The printers use the rig's
lean print engine (the full one would spend ~30 ms of CPU per job on the rig itself).

    .venv/bin/python -m bench.soak_bench [--quick] [--requests N]
"""

from __future__ import annotations

import array
import asyncio
import statistics
import sys
import time
from collections import Counter
from collections.abc import Sequence
from typing import Any

import aiohttp

from bench.harness import (
    BACKPRESSURE_RETRY_S,
    POOL,
    BenchError,
    Kiosk,
    Run,
    Stand,
    figures_markdown,
    ground_truth,
    open_fds,
    parser,
    percentile,
    proc_status,
    until,
    versus,
)

#: One client's turn: the mix (1 submit, 1 release, 4 gets, 4 lists per 10 requests).
TURN = ("submit", "get", "list", "list", "release", "get", "list", "list", "get", "get")
#: ``--mix reads`` after warm-up: gets and lists only, of the jobs the warm-up made (which
#: part of the load a growth follows).
READS = ("get", "list", "get", "list", "get", "list", "get", "list", "get", "list")
RSS_GROWTH_GOAL_MIB = 10.0
P99_RATIO_GOAL = 1.5
SAMPLE_S = 2.0
SETTLE_TIMEOUT_S = 120.0


class Soak:
    """The clients, the latencies (in request order) and the /proc samples."""

    def __init__(self, stand: Stand, kiosk: Kiosk, requests: int) -> None:
        self.stand = stand
        self.kiosk = kiosk
        self.requests = requests
        self.issued = 0
        self.turns = 0
        self.latency = array.array("d")
        self.statuses: Counter[str] = Counter()
        self.backpressured = 0
        self.ids: list[str] = []
        self.samples: list[dict[str, float]] = []
        self.t0 = time.monotonic()

    async def sample(self, label: str = "") -> dict[str, float]:
        pid = self.stand.pid
        s = {"t_s": round(time.monotonic() - self.t0, 1), "requests": len(self.latency),
             **proc_status(pid), "fds": open_fds(pid), "tasks": await self.tasks()}  # fmt: skip
        if label:
            s["label"] = label  # type: ignore[assignment]
        self.samples.append(s)
        return s

    async def tasks(self) -> float:
        """The appliance's asyncio tasks (the ``edgeprint_event_loop_tasks`` gauge)."""
        async with self.kiosk.http.get(f"{self.kiosk.url}/metrics") as r:
            text = await r.text()
        for line in text.splitlines():
            if line.startswith("edgeprint_event_loop_tasks "):
                return float(line.split()[1])
        raise BenchError("/metrics has no edgeprint_event_loop_tasks")

    async def one(self, op: str, job: str | None, key: str) -> str | None:
        """One request of the mix; the job id it concerns."""
        k = self.kiosk
        t0 = time.perf_counter()
        if op == "submit":
            job = await k.submit(key, pool=POOL, hold=True)
            self.ids.append(job)
            status = "201"
        elif op == "release":
            while True:
                async with k.http.post(f"{k.url}/v1/jobs/{job}/release", headers=k.headers) as r:
                    await r.read()
                    status = str(r.status)
                if status != "503":
                    break
                self.backpressured += 1
                await asyncio.sleep(BACKPRESSURE_RETRY_S)
        else:
            url = f"{k.url}/v1/jobs/{job}" if op == "get" else f"{k.url}/v1/jobs?limit=20"
            async with k.http.get(url, headers=k.headers) as r:
                await r.read()
                status = str(r.status)
        self.latency.append(time.perf_counter() - t0)
        self.statuses[f"{op} {status}"] += 1
        return job

    async def client(self, c: int, stop_at: int, turn: Sequence[str]) -> None:
        job: str | None = self.ids[c % len(self.ids)] if self.ids else None
        while self.issued < stop_at:
            self.turns += 1
            for op in turn:
                self.issued += 1
                job = await self.one(op, job, f"soak-{c:03d}-{self.turns:07d}")

    async def run(self, clients: int, stop_at: int, turn: Sequence[str] = TURN) -> None:
        async def sampler() -> None:
            while True:
                await asyncio.sleep(SAMPLE_S)  # the sampling period
                await self.sample()

        task = asyncio.create_task(sampler())
        try:
            await asyncio.gather(*(self.client(c, stop_at, turn) for c in range(clients)))
        finally:
            task.cancel()

    async def quiet(self, label: str) -> dict[str, float]:
        """Until every job is DONE (nothing RELEASED or PRINTING); then a sample."""
        await self.kiosk.wait_settled(SETTLE_TIMEOUT_S)
        return await self.sample(label)


async def soak(
    stand: Stand, requests: int, clients: int, warmup: float, turn: Sequence[str]
) -> dict[str, Any]:
    conn = aiohttp.TCPConnector(limit=clients + 4)
    async with aiohttp.ClientSession(connector=conn) as http:
        kiosk = Kiosk(http, stand.url)
        s = Soak(stand, kiosk, requests)
        await s.sample("ready")
        await s.run(clients, int(requests * warmup))
        after_warmup = await s.quiet("after warm-up")
        t0 = time.monotonic()
        await s.run(clients, requests, turn)
        wall = time.monotonic() - t0
        end = await s.quiet("end")

        async def printed() -> bool:
            return sum(len(stand.rig.printed(p.name)) for p in stand.rig) >= len(s.ids)

        await until(printed, SETTLE_TIMEOUT_S, 0.1, "not every job printed")
    lat = s.latency.tolist()
    tenth = max(1, len(lat) // 10)
    first, last = percentile(lat[:tenth], 99), percentile(lat[-tenth:], 99)
    unexpected = {k: v for k, v in s.statuses.items() if k.split()[1] not in ("200", "201")}
    late = [x for x in s.samples if x["requests"] >= after_warmup["requests"]]
    slope = statistics.linear_regression([x["requests"] for x in late], [x["VmRSS"] for x in late])
    return {
        "requests": len(lat),
        "jobs": len(s.ids),
        "measured_rate_per_s": round((len(lat) - after_warmup["requests"]) / wall, 1),
        "statuses": dict(s.statuses),
        "unexpected_statuses": unexpected,
        "release_503_retries": s.backpressured,
        "rss_growth_mib": round(end["VmRSS"] - after_warmup["VmRSS"], 1),
        "rss_slope_mib_per_100k_requests": round(slope.slope * 100_000, 2),
        "fds_growth": end["fds"] - after_warmup["fds"],
        "threads_growth": end["Threads"] - after_warmup["Threads"],
        "tasks_growth": end["tasks"] - after_warmup["tasks"],
        "p99_first_10pct_ms": round(1000 * (first or 0), 1),
        "p99_last_10pct_ms": round(1000 * (last or 0), 1),
        "p99_last_over_first": round((last or 0) / first, 2) if first else None,
        "after_warmup": after_warmup,
        "end": end,
        "samples": s.samples,
        **ground_truth(stand.rig, s.ids),
    }


def table(r: dict[str, Any]) -> list[dict[str, Any]]:
    n = f"{r['requests']:,} requests"
    aw, end = r["after_warmup"], r["end"]
    return [
        versus(f"soak, {n}: RSS growth after warm-up", "MiB", r["rss_growth_mib"], "goal",
               RSS_GROWTH_GOAL_MIB, f"{aw['VmRSS']} → {end['VmRSS']} MiB (heap, RssAnon: "
               f"{aw.get('RssAnon')} → {end.get('RssAnon')}); after warm-up "
               f"{r['rss_slope_mib_per_100k_requests']} MiB per 100,000 requests (fit)"),
        versus(f"soak, {n}: open descriptors, after warm-up → end", "fds", end["fds"],
               "after warm-up", aw["fds"], "goal: no growth"),
        versus(f"soak, {n}: threads, after warm-up → end", "threads", end["Threads"],
               "after warm-up", aw["Threads"], "goal: no growth"),
        versus(f"soak, {n}: asyncio tasks, after warm-up → end", "tasks", end["tasks"],
               "after warm-up", aw["tasks"], "goal: no growth"),
        versus(f"soak, {n}: p99 latency, last 10 % vs first 10 %", "ms",
               r["p99_last_10pct_ms"], "first 10 %", r["p99_first_10pct_ms"],
               f"goal ≤ {P99_RATIO_GOAL}×; {r['measured_rate_per_s']:,} requests/s, "
               f"{r['jobs']:,} jobs printed"),
    ]  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; the exit code (0: every answer as expected, every job printed once)."""
    ap = parser("soak", __doc__, "50,000 requests")
    ap.add_argument("--requests", type=int, default=None, help="default 1000000 (quick 50000)")
    ap.add_argument("--printers", type=int, default=6, help="printers in the pool (6)")
    ap.add_argument("--concurrency", type=int, default=8, help="clients (8)")
    ap.add_argument("--warmup", type=float, default=0.1, help="share of requests (0.1)")
    ap.add_argument(
        "--mix",
        choices=("full", "reads"),
        default="full",
        help="after warm-up: the full mix (default) or gets and lists only (diagnosis)",
    )
    args = ap.parse_args(argv)
    requests = args.requests or (50_000 if args.quick else 1_000_000)
    if not (len(TURN) * args.concurrency <= requests and 0 < args.warmup < 0.5):
        print("bench: --requests ≥ 10 × --concurrency, 0 < --warmup < 0.5", file=sys.stderr)
        return 2
    with Run("soak", args) as run:
        stand = run.stand("soak", args.printers, engine="lean")
        out = run.attempt_async(
            "soak",
            soak(
                stand.start(),
                requests,
                args.concurrency,
                args.warmup,
                READS if args.mix == "reads" else TURN,
            ),
        )
    rows = table(out) if out is not None else []
    if out is not None:
        for k in ("duplicates", "losses", "unexpected"):
            if out[k]:
                run.failures.append(f"{k} = {out[k]}")
        if out["unexpected_statuses"]:
            run.failures.append(f"unexpected answers: {out['unexpected_statuses']}")
    return run.finish(
        figures_markdown(rows),
        settings={"requests": requests, "print_engine": "lean"},
        table=rows,
        raw=out,
    )


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BenchError as exc:
        sys.exit(f"bench: {exc}")
