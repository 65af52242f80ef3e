"""Soak: a long mixed API load with printing, and whether the appliance stays the same.

``--requests`` requests (per job: submit, release, 4 gets, 4 lists; every job prints)
from ``--concurrency`` clients. Goals: RSS growth after warm-up ≤ 10 MiB and no growth in
descriptors, threads or asyncio tasks (``edgeprint_event_loop_tasks``; all read at
quiet points), p99 of the last 10 % ÷ the first 10 % ≤ 1.2×. The printers use the rig's
lean print engine (the full one would spend ~30 ms of CPU per job on the rig itself).

Every ``--checkpoint`` requests (50,000) it prints a line and rewrites the results file
with the figures so far, marked ``"partial": true``, so a stopped run keeps them: RSS and
its heap part (RssAnon: the Python heap is not readable from outside, RSS stands in for
it), descriptors, threads, tasks, p50/p99 of the window, p99 last ÷ first 10 % so far,
the SQLite file and its WAL, requests/s, the load average (others' load shows there).

    .venv/bin/python -m bench.soak_bench [--quick] [--requests N]
"""

from __future__ import annotations

import array
import asyncio
import contextlib
import os
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
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
    printed_count,
    proc_status,
    process_cpu_s,
    until,
    versus,
)
from edgeprint.server import DB_FILE

#: One client's turn: the mix (1 submit, 1 release, 4 gets, 4 lists per 10 requests).
TURN = ("submit", "get", "list", "list", "release", "get", "list", "list", "get", "get")
#: ``--mix reads`` after warm-up: gets and lists only, of the jobs the warm-up made (which
#: part of the load a growth follows).
READS = ("get", "list", "get", "list", "get", "list", "get", "list", "get", "list")
RSS_GROWTH_GOAL_MIB = 10.0
P99_RATIO_GOAL = 1.2
CHECKPOINT_EVERY = 50_000
SAMPLE_S = 2.0
SETTLE_TIMEOUT_S = 120.0
MIB = 2**20


def file_mib(path: Path) -> float:
    """Size of ``path`` in MiB (0 when it does not exist)."""
    try:
        return round(path.stat().st_size / MIB, 1)
    except FileNotFoundError:
        return 0.0


def sockets(pid: int) -> int:
    """Descriptors of ``pid`` that are sockets (a client's keep-alive connection is one,
    with its handler task: it tells a connection from a leaked file)."""
    n = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        with contextlib.suppress(OSError):
            n += os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:")
    return n


def p99_drift(lat: Sequence[float], window: int) -> dict[str, float | None]:
    """p99 of the first and of the last ``window`` requests (ms) and their ratio; None
    until there are two whole windows."""
    if len(lat) < 2 * window:
        return {"p99_first_10pct_ms": None, "p99_last_10pct_ms": None, "p99_last_over_first": None}
    first, last = percentile(lat[:window], 99) or 0.0, percentile(lat[-window:], 99) or 0.0
    return {
        "p99_first_10pct_ms": round(1000 * first, 1),
        "p99_last_10pct_ms": round(1000 * last, 1),
        "p99_last_over_first": round(last / first, 2) if first else None,
    }


class Soak:
    """The clients, the latencies (in request order) and the /proc samples."""

    def __init__(
        self,
        stand: Stand,
        kiosk: Kiosk,
        requests: int,
        every: int = CHECKPOINT_EVERY,
        report: Callable[[dict[str, Any]], None] | None = None,
    ) -> None:
        self.stand = stand
        self.kiosk = kiosk
        self.requests = requests
        self.every = every
        self.report = report
        self.next_checkpoint = every
        self.checkpoints: list[dict[str, Any]] = []
        self.after_warmup: dict[str, float] | None = None
        self.pending: set[asyncio.Task[None]] = set()
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
        s = {
            "t_s": round(time.monotonic() - self.t0, 1),
            "requests": len(self.latency),
            **proc_status(pid),
            "fds": open_fds(pid),
            "sockets": sockets(pid),
            "tasks": await self.tasks(),
        }
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
        if len(self.latency) >= self.next_checkpoint:
            self.next_checkpoint += self.every
            task = asyncio.create_task(self.checkpoint())
            self.pending.add(task)
            task.add_done_callback(self.pending.discard)
        return job

    async def checkpoint(self) -> None:
        """The figures so far: a line on stdout and (``report``) the partial results file."""
        n = len(self.latency)
        prev = self.checkpoints[-1] if self.checkpoints else {"requests": 0, "t_s": 0.0}
        s = await self.sample("checkpoint")
        window = self.latency[int(prev["requests"]) : n].tolist()
        data = self.stand.data_dir
        aw = self.after_warmup
        dt = s["t_s"] - prev["t_s"]
        c: dict[str, Any] = {
            **s,
            "requests": n,
            "jobs": len(self.ids),
            "printed": printed_count(self.stand.rig),
            "requests_per_s": round((n - prev["requests"]) / dt, 1) if dt > 0 else None,
            "window_p50_ms": round(1000 * (percentile(window, 50) or 0), 1),
            "window_p99_ms": round(1000 * (percentile(window, 99) or 0), 1),
            **p99_drift(self.latency, max(1, self.requests // 10)),
            "rss_growth_after_warmup_mib": round(s["VmRSS"] - aw["VmRSS"], 1) if aw else None,
            "rss_anon_growth_after_warmup_mib": (
                round(s["RssAnon"] - aw["RssAnon"], 1) if aw else None
            ),
            "db_mib": file_mib(data / DB_FILE),
            "wal_mib": file_mib(data / f"{DB_FILE}-wal"),
            "appliance_cpu_s": round(process_cpu_s(self.stand.pid), 2),
            "loadavg_1m": round(os.getloadavg()[0], 2),
        }
        del c["label"]
        # The appliance's CPU per request (flat: its work does not drift) and its share of
        # a core (low while others load the box: a p99 that moves with it is theirs).
        cpu = c["appliance_cpu_s"] - prev.get("appliance_cpu_s", 0.0)
        c["appliance_cpu_ms_per_request"] = round(1000 * cpu / max(1, n - prev["requests"]), 2)
        c["appliance_cpu_share"] = round(cpu / dt, 2) if dt > 0 else None
        self.checkpoints.append(c)
        growth = c["rss_anon_growth_after_warmup_mib"]
        print(
            f"soak: {n:,}/{self.requests:,} requests, {c['requests_per_s']} /s, "
            f"p50 {c['window_p50_ms']} p99 {c['window_p99_ms']} ms, "
            f"p99 last/first {c['p99_last_over_first']}, RSS {s['VmRSS']} MiB "
            f"(RssAnon {s['RssAnon']}, after warm-up {'+' if growth and growth > 0 else ''}"
            f"{growth}), fds {s['fds']:g}, threads {s['Threads']:g}, tasks {s['tasks']:g}, "
            f"db {c['db_mib']} + wal {c['wal_mib']} MiB, appliance "
            f"{c['appliance_cpu_ms_per_request']} ms CPU a request ({c['appliance_cpu_share']} "
            f"of a core), load {c['loadavg_1m']}",
            flush=True,
        )
        if self.report is not None:
            self.report(self.figures())

    def figures(self) -> dict[str, Any]:
        """What the partial results file holds."""
        return {
            "requests_done": len(self.latency),
            "requests_planned": self.requests,
            "jobs": len(self.ids),
            "statuses": dict(self.statuses),
            "release_503_retries": self.backpressured,
            "after_warmup": self.after_warmup,
            "checkpoints": self.checkpoints,
            "samples": self.samples,
            "table": partial_table(self.checkpoints[-1], self.after_warmup, self.requests),
        }

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
    stand: Stand,
    requests: int,
    clients: int,
    warmup: float,
    turn: Sequence[str],
    every: int = CHECKPOINT_EVERY,
    report: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    conn = aiohttp.TCPConnector(limit=clients + 4)
    async with aiohttp.ClientSession(connector=conn) as http:
        kiosk = Kiosk(http, stand.url)
        s = Soak(stand, kiosk, requests, every, report)
        await s.sample("ready")
        await s.run(clients, int(requests * warmup))
        after_warmup = s.after_warmup = await s.quiet("after warm-up")
        t0 = time.monotonic()
        await s.run(clients, requests, turn)
        wall = time.monotonic() - t0
        end = await s.quiet("end")
        await asyncio.gather(*s.pending)

        async def printed() -> bool:
            return sum(len(stand.rig.printed(p.name)) for p in stand.rig) >= len(s.ids)

        await until(printed, SETTLE_TIMEOUT_S, 0.1, "not every job printed")
    lat = s.latency.tolist()
    drift = p99_drift(lat, max(1, len(lat) // 10))
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
        "rss_anon_growth_mib": round(end["RssAnon"] - after_warmup["RssAnon"], 1),
        "rss_slope_mib_per_100k_requests": round(slope.slope * 100_000, 2),
        "fds_growth": end["fds"] - after_warmup["fds"],
        "threads_growth": end["Threads"] - after_warmup["Threads"],
        "tasks_growth": end["tasks"] - after_warmup["tasks"],
        **drift,
        "db_mib": file_mib(stand.data_dir / DB_FILE),
        "wal_mib": file_mib(stand.data_dir / f"{DB_FILE}-wal"),
        "after_warmup": after_warmup,
        "end": end,
        "checkpoints": s.checkpoints,
        "samples": s.samples,
        **ground_truth(stand.rig, s.ids),
    }


def partial_table(
    c: dict[str, Any], aw: dict[str, float] | None, planned: int
) -> list[dict[str, Any]]:
    """The rows so far, from the last checkpoint (in flight, not at a quiet point)."""
    n = f"{c['requests']:,} of {planned:,} requests (partial, in flight)"
    rows = [
        versus(
            f"soak, {n}: p99 latency, last 10 % vs first 10 %",
            "ms",
            c["p99_last_10pct_ms"],
            "first 10 %",
            c["p99_first_10pct_ms"],
            f"goal ≤ {P99_RATIO_GOAL}×; last window {c['requests_per_s']} requests/s",
        ),
        versus(
            f"soak, {n}: SQLite file + WAL",
            "MiB",
            round(c["db_mib"] + c["wal_mib"], 1),
            "WAL",
            c["wal_mib"],
            f"{c['jobs']:,} jobs kept",
        ),
    ]
    if aw is not None:
        rows.insert(
            0,
            versus(
                f"soak, {n}: RSS growth after warm-up",
                "MiB",
                c["rss_growth_after_warmup_mib"],
                "goal",
                RSS_GROWTH_GOAL_MIB,
                f"{aw['VmRSS']} → {c['VmRSS']} MiB (heap, RssAnon: "
                f"{aw['RssAnon']} → {c['RssAnon']}); descriptors {aw['fds']:g} → {c['fds']:g}, "
                f"threads {aw['Threads']:g} → {c['Threads']:g}, tasks {aw['tasks']:g} → "
                f"{c['tasks']:g}",
            ),
        )
    return rows


def table(r: dict[str, Any]) -> list[dict[str, Any]]:
    n = f"{r['requests']:,} requests"
    aw, end = r["after_warmup"], r["end"]
    return [
        versus(
            f"soak, {n}: RSS growth after warm-up",
            "MiB",
            r["rss_growth_mib"],
            "goal",
            RSS_GROWTH_GOAL_MIB,
            f"{aw['VmRSS']} → {end['VmRSS']} MiB (heap, RssAnon: "
            f"{aw.get('RssAnon')} → {end.get('RssAnon')}); after warm-up "
            f"{r['rss_slope_mib_per_100k_requests']} MiB per 100,000 requests (fit)",
        ),
        versus(
            f"soak, {n}: open descriptors, after warm-up → end",
            "fds",
            end["fds"],
            "after warm-up",
            aw["fds"],
            "goal: no growth",
        ),
        versus(
            f"soak, {n}: threads, after warm-up → end",
            "threads",
            end["Threads"],
            "after warm-up",
            aw["Threads"],
            "goal: no growth",
        ),
        versus(
            f"soak, {n}: asyncio tasks, after warm-up → end",
            "tasks",
            end["tasks"],
            "after warm-up",
            aw["tasks"],
            "goal: no growth",
        ),
        versus(
            f"soak, {n}: p99 latency, last 10 % vs first 10 %",
            "ms",
            r["p99_last_10pct_ms"],
            "first 10 %",
            r["p99_first_10pct_ms"],
            f"goal ≤ {P99_RATIO_GOAL}×; {r['measured_rate_per_s']:,} requests/s, "
            f"{r['jobs']:,} jobs printed",
        ),
        versus(
            f"soak, {n}: SQLite file + WAL at the end",
            "MiB",
            round(r["db_mib"] + r["wal_mib"], 1),
            "WAL",
            r["wal_mib"],
            f"{r['jobs']:,} jobs kept",
        ),
    ]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; the exit code (0: every answer as expected, every job printed once)."""
    ap = parser("soak", __doc__, "50,000 requests")
    ap.add_argument("--requests", type=int, default=None, help="default 1000000 (quick 50000)")
    ap.add_argument("--printers", type=int, default=6, help="printers in the pool (6)")
    ap.add_argument("--concurrency", type=int, default=8, help="clients (8)")
    ap.add_argument("--warmup", type=float, default=0.1, help="share of requests (0.1)")
    ap.add_argument(
        "--checkpoint",
        type=int,
        default=CHECKPOINT_EVERY,
        help="figures so far (a line, the partial results file) every N requests (50000)",
    )
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
                args.checkpoint,
                lambda figures: run.partial(**figures),
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
        partial=False,
        settings={"requests": requests, "print_engine": "lean"},
        table=rows,
        raw=out,
    )


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BenchError as exc:
        sys.exit(f"bench: {exc}")
