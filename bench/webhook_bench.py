"""Webhooks: what the outbox costs a state change, and how fast one receiver is served.

(a) ``--jobs`` HELD jobs cancelled through the real store, without and with a webhook
subscribed: transitions/s; (b) as many events delivered, signed, to an aiohttp receiver
on loopback: events/s. Not part of ``make bench``.

    .venv/bin/python -m bench.webhook_bench [--jobs 2000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from aiohttp import web

from bench.harness import Run, parser, spread
from edgeprint.config import WebhookConfig
from edgeprint.metrics import Metrics
from edgeprint.states import Action, JobState
from edgeprint.store import Store
from edgeprint.store.jobs import Jobs, NewJob
from edgeprint.store.outbox import Outbox
from edgeprint.webhooks.delivery import Deliveries

SECRET = "whsec_" + "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVowMTIzNDU="


def _job(i: int) -> NewJob:
    return NewJob(
        id=uuid.uuid4().hex, idempotency_key=f"bench-{i:08d}-{uuid.uuid4().hex[:8]}",
        request_sha256="0" * 64, state=JobState.HELD, owner="bench", printer=None,
        pool="lobby", priority=100, copies=1, document_sha256="0" * 64, document_bytes=1,
        token_name="bench", correlation_id=None,
    )  # fmt: skip


async def _transitions(work: Path, n: int, concurrency: int, subscribed: bool) -> float:
    """Cancellations per second of ``n`` HELD jobs (with or without the outbox row)."""
    store = Store(work / f"t-{uuid.uuid4().hex}.sqlite3")
    await store.open()
    try:
        jobs, outbox = Jobs(store), Outbox(store)
        await outbox.subscribe({"job.cancelled"} if subscribed else set())
        ids = [j.id for j in await asyncio.gather(*(jobs.insert(_job(i), 0.0, "b")
                                                     for i in range(n))) if j]  # fmt: skip
        queue = list(ids)

        async def one() -> None:
            while queue:
                job_id = queue.pop()
                await jobs.transition(job_id, Action.CANCEL, now=1.0, actor="bench")

        started = time.perf_counter()
        await asyncio.gather(*(one() for _ in range(concurrency)))
        elapsed = time.perf_counter() - started
        rows = await store.read("SELECT count(*) FROM webhook_outbox")
        assert int(rows[0][0]) == (n if subscribed else 0)
        return n / elapsed
    finally:
        await store.close()


async def _delivery(work: Path, n: int) -> tuple[float, float]:
    """(events per second, seconds from the first event stored to the last delivered)."""
    got = 0
    done = asyncio.Event()

    async def hook(request: web.Request) -> web.Response:
        nonlocal got
        await request.read()
        got += 1
        if got >= n:
            done.set()
        return web.Response(status=204)

    app = web.Application()
    app.router.add_post("/hook", hook)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    port = int(runner.addresses[0][1])
    store = Store(work / f"d-{uuid.uuid4().hex}.sqlite3")
    await store.open()
    try:
        outbox = Outbox(store)
        cfg = WebhookConfig(
            url=f"http://127.0.0.1:{port}/hook", events=["printer.unhealthy"], secret=SECRET,
            poll_interval_s=0.01,
        )  # fmt: skip
        deliveries = Deliveries([cfg], outbox, Metrics(), retention_s=86_400)
        await outbox.subscribe(deliveries.events)
        task = asyncio.create_task(deliveries.run())
        await asyncio.sleep(0.1)  # let the receiver's cursor start before the events
        started = time.perf_counter()
        await asyncio.gather(*(
            outbox.add_printer_event(f"msg_{i}", "printer.unhealthy", "p", time.time(), {"i": i})
            for i in range(n)
        ))  # fmt: skip
        await asyncio.wait_for(done.wait(), 300)
        elapsed = time.perf_counter() - started
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        return n / elapsed, elapsed
    finally:
        await store.close()
        await runner.cleanup()


async def measure(args: argparse.Namespace, work: Path) -> dict[str, list[float]]:
    runs: dict[str, list[float]] = {"plain": [], "outbox": [], "delivery": [], "drain_s": []}
    for r in range(args.repeat):
        order = (False, True) if r % 2 == 0 else (True, False)
        for subscribed in order:
            rate = await _transitions(work, args.jobs, args.concurrency, subscribed)
            runs["outbox" if subscribed else "plain"].append(rate)
        rate, drain = await _delivery(work, args.jobs)
        runs["delivery"].append(rate)
        runs["drain_s"].append(drain)
    return runs


def main() -> int:
    ap = parser("webhook", __doc__, "500 events, one round")
    ap.add_argument("--jobs", type=int, default=None, help="events per round (2000, quick 500)")
    ap.add_argument("--concurrency", type=int, default=50)
    ap.add_argument("--repeat", type=int, default=None, help="rounds (3, quick 1)")
    args = ap.parse_args()
    args.jobs = args.jobs or (500 if args.quick else 2000)
    args.repeat = args.repeat or (1 if args.quick else 3)
    with Run("webhook", args) as run:
        runs = asyncio.run(measure(args, run.work))
    summary: dict[str, Any] = {k: spread(v) for k, v in runs.items()}
    summary["ratio_outbox_plain"] = summary["outbox"]["median"] / summary["plain"]["median"]

    def cell(key: str, unit: str) -> str:
        s = summary[key]
        return f"{s['median']:,.0f} ({s['min']:,.0f}–{s['max']:,.0f}) {unit}"

    table = "\n".join([
        f"| what ({args.jobs} events, median of {args.repeat}) | figure |",
        "|---|---|",
        f"| state changes, no webhook subscribed | {cell('plain', '/s')} |",
        f"| state changes, each writing its outbox row | {cell('outbox', '/s')} |",
        f"| ratio | {summary['ratio_outbox_plain']:.2f} |",
        f"| signed deliveries to one loopback receiver | {cell('delivery', 'events/s')} |",
    ])  # fmt: skip
    return run.finish(table, settings=vars(args), summary=summary, runs=runs)


if __name__ == "__main__":
    sys.exit(main())
