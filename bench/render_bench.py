"""Rendering: PDF → PWG raster through the render pool, as a raster printer gets it.

A 4x3 in badge at 300 dpi (through the pool, and in one process), a badge while 8
handouts stream on the same pool (and the event loop's lag), a 40-page A4 document at
600 dpi streamed: pages/min, the appliance's RSS growth, the render worker's peak RSS.

    .venv/bin/python -m bench.render_bench [--quick]
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import os
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench.harness import MIB, Run, figures_markdown, parser, percentile, row
from edgeprint.documents.capabilities import Media, Resolution
from edgeprint.documents.ladder import Choice
from edgeprint.documents.render import PageJob, RenderPool
from testbed.pdfs import make_a4_pdf, make_badge_pdf

BADGE_MEDIA = Media("oe_4x3-label_4x3in", 10160, 7620)
A4_MEDIA = Media("iso_a4_210x297mm", 21000, 29700)


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


class PeakRss:
    """Samples the RSS of some pids every ``interval_s`` in a thread; keeps each one's peak."""

    def __init__(self, pids: list[int], interval_s: float = 0.01) -> None:
        self.pids = pids
        self.peak = dict.fromkeys(pids, 0)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rss-sampler", daemon=True)
        self.interval_s = interval_s

    def _run(self) -> None:
        while not self._stop.is_set():
            for pid in self.pids:
                self.peak[pid] = max(self.peak[pid], rss_bytes(pid))
            self._stop.wait(self.interval_s)

    def __enter__(self) -> PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


async def badges(pool: RenderPool, pdf: Path, runs: int) -> tuple[list[float], int]:
    facts = await pool.facts(str(pdf))
    choice = Choice("image/pwg-raster", "sgray_8", Resolution(300, 300), BADGE_MEDIA)
    times, size = [], 0
    for _ in range(runs + 3):
        t0 = time.perf_counter()
        size = sum([len(c) async for c in pool.stream(str(pdf), choice, facts)])
        times.append((time.perf_counter() - t0) * 1000)
    return times[3:], size  # the first three warm the worker's caches


def badges_in_process(pdf: Path, runs: int) -> list[float]:
    from edgeprint.documents import raster  # loads numpy and PDFium here: after the RSS figures

    job = PageJob(str(pdf), 0, "image/pwg-raster", "sgray_8", 300, (10160, 7620), "", False, 1)
    raster.encode(job)
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        raster.encode(job)
        times.append((time.perf_counter() - t0) * 1000)
    raster.close_document()
    return times


async def handout(pool: RenderPool, pdf: Path, workers: list[int], dpi: int) -> dict[str, float]:
    facts = await pool.facts(str(pdf))
    choice = Choice("image/pwg-raster", "sgray_8", Resolution(dpi, dpi), A4_MEDIA)
    me = os.getpid()
    base = rss_bytes(me)
    sent = 0
    with PeakRss([me, *workers]) as peak:
        t0 = time.perf_counter()
        async for chunk in pool.stream(str(pdf), choice, facts):
            sent += len(chunk)  # as on a printer connection: the chunk is gone once sent
        elapsed = time.perf_counter() - t0
    pages = len(facts.page_sizes_pt)
    return {
        "pages": pages,
        "seconds": elapsed,
        "pages_per_min": pages / elapsed * 60,
        "appliance_rss_growth_mib": (peak.peak[me] - base) / MIB,
        "appliance_rss_base_mib": base / MIB,
        "worker_peak_rss_mib": max(peak.peak[w] for w in workers) / MIB,
        "mib_sent": sent / MIB,
    }


async def badges_under_load(
    pool: RenderPool, badge: Path, doc: Path, documents: int, interval_s: float
) -> dict[str, Any]:
    """Badge latency and event-loop lag while ``documents`` 600 dpi handouts stream at once."""
    big = Choice("image/pwg-raster", "sgray_8", Resolution(600, 600), A4_MEDIA)
    small = Choice("image/pwg-raster", "sgray_8", Resolution(300, 300), BADGE_MEDIA)
    doc_facts, badge_facts = await pool.facts(str(doc)), await pool.facts(str(badge))
    done = asyncio.Event()
    lags: list[float] = []

    async def handout() -> None:
        async for _ in pool.stream(str(doc), big, doc_facts):
            pass

    async def ticker() -> None:  # what /healthz would feel: the loop's own delay
        while not done.is_set():
            t0 = time.perf_counter()
            await asyncio.sleep(0.005)
            lags.append((time.perf_counter() - t0 - 0.005) * 1000)

    streams = [asyncio.create_task(handout()) for _ in range(documents)]
    tick = asyncio.create_task(ticker())
    latencies = []
    while not all(t.done() for t in streams):
        t0 = time.perf_counter()
        async for _ in pool.stream(str(badge), small, badge_facts):
            pass
        latencies.append((time.perf_counter() - t0) * 1000)
        await asyncio.sleep(interval_s)
    done.set()
    await asyncio.gather(*streams, tick)
    return {"badge_ms": latencies, "loop_lag_ms": lags}


async def run(quick: bool) -> dict[str, Any]:
    badge_runs = 20 if quick else 60
    pages = 10 if quick else 40
    repeats = 1 if quick else 2
    with tempfile.TemporaryDirectory(prefix="render-bench-") as tmp:
        badge, doc = Path(tmp) / "badge.pdf", Path(tmp) / "handout.pdf"
        badge.write_bytes(make_badge_pdf())
        doc.write_bytes(make_a4_pdf(pages))
        pool = RenderPool(workers=1, pages_ahead=2)
        try:
            workers = await pool.start()
            streams = [await handout(pool, doc, workers, 600) for _ in range(repeats)]
            badge_ms, badge_bytes = await badges(pool, badge, badge_runs)
            short = Path(tmp) / "short.pdf"
            short.write_bytes(make_a4_pdf(3))
            loaded = await badges_under_load(pool, badge, short, 8, 0.2)
        finally:
            await pool.close()
        pool2 = RenderPool(workers=2, pages_ahead=2)
        try:
            await pool2.start()
            loaded2 = await badges_under_load(pool2, badge, short, 8, 0.2)
        finally:
            await pool2.close()
        local_ms = badges_in_process(badge, badge_runs)
    table = [
        row(
            "badge 4x3 in, 300 dpi grey: render + encode via the pool (p50)",
            "ms",
            [statistics.median(badge_ms)],
            f"{badge_runs} badges, p90 {percentile(badge_ms, 90):.1f} ms, "
            f"max {max(badge_ms):.1f} ms; "
            f"{badge_bytes / 1024:.1f} KiB PWG raster; target ≤ 30 ms",
        ),
        row(
            "badge 4x3 in, 300 dpi grey: render + encode in one process (p50)",
            "ms",
            [statistics.median(local_ms)],
            "no process hop: the worker's own cost",
        ),
        row(
            f"{pages}-page A4, 600 dpi grey PWG raster streamed",
            "pages/min",
            [s["pages_per_min"] for s in streams],
            f"{repeats} run(s), 1 worker, 2 pages ahead; target > 60 pages/min",
        ),
        row(
            "  appliance RSS growth while it streams",
            "MiB",
            [s["appliance_rss_growth_mib"] for s in streams],
            f"VmRSS sampled every 10 ms; base {streams[0]['appliance_rss_base_mib']:.1f} MiB; "
            "target < 64 MiB",
        ),
        row(
            "  render worker peak RSS",
            "MiB",
            [s["worker_peak_rss_mib"] for s in streams],
            "one page at a time: its canvas (35 MB at 600 dpi) and encoding",
        ),
        row(
            "badge while 8 handouts (3 pages, 600 dpi) stream on the same pool (p50)",
            "ms",
            [statistics.median(loaded["badge_ms"])],
            f"{len(loaded['badge_ms'])} badges, p90 {percentile(loaded['badge_ms'], 90):.0f} ms, "
            "max "
            f"{max(loaded['badge_ms']):.0f} ms: a badge waits for the page being rendered "
            "(shortest document first); 1 worker",
        ),
        row(
            "  the same with 2 workers (p50)",
            "ms",
            [statistics.median(loaded2["badge_ms"])],
            f"{len(loaded2['badge_ms'])} badges, p90 {percentile(loaded2['badge_ms'], 90):.0f} ms, "
            f"max {max(loaded2['badge_ms']):.0f} ms: handouts hold one worker at most",
        ),
        row(
            "  event-loop lag meanwhile (p99)",
            "ms",
            [percentile(loaded["loop_lag_ms"], 99)],
            f"max {max(loaded['loop_lag_ms']):.1f} ms; 5 ms ticks: what /healthz would wait",
        ),
        row(
            "  PWG raster sent",
            "MiB",
            [s["mib_sent"] for s in streams],
            f"{streams[0]['mib_sent'] / pages:.2f} MiB per page",
        ),
    ]
    return {
        "settings": {"quick": quick, "badge_runs": badge_runs, "pages": pages, "repeats": repeats},
        "table": table,
        "raw": {
            "badge_ms": badge_ms,
            "in_process_ms": local_ms,
            "streams": streams,
            "under_load_1_worker": loaded,
            "under_load_2_workers": loaded2,
        },
    }


def main(argv: list[str] | None = None) -> int:
    args = parser("render", __doc__, "fewer badges, a 10-page document").parse_args(argv)
    with Run("render", args) as bench:
        result = asyncio.run(run(args.quick))
    for k in ("pypdfium2", "numpy"):
        bench.info[k] = importlib.metadata.version(k)
    return bench.finish(figures_markdown(result["table"]), **result)


if __name__ == "__main__":
    raise SystemExit(main())
