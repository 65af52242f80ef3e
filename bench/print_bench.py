"""Print-path benchmark: edgeprint driving real IPP printers, as a user gets it.

The appliance runs as a real child process (``python -m edgeprint serve``, via
:class:`testbed.proc.ServeProcess`) with the **default** ``[dispatch]`` and
``[store]`` settings (not the tests' fast dispatch settings); the printers are
real ``ippeveprinter`` processes from :class:`testbed.rig.Rig` with a print
engine that takes no time (0 s/page). Ground truth is each printer's own
``prints.log`` (one line, millisecond UTC timestamp, per document that came
out) and its ``server.log`` (``Processing time was X seconds`` per job); the
appliance's own view is its SQLite ``job_events`` table (one row per state
change, unix seconds) read after each phase. Every phase starts from a fresh
rig, data folder and appliance. Phases, per repetition:

1. latency — ``--latency-jobs`` jobs, one at a time, on an idle printer: submit
   held, wait 0.15 s, release; release-response → printed (prints.log) and
   release-response → ``finished_at`` (the store's DONE time), p50/p99 in ms,
   split into release → claim, claim → printed, printed → DONE.
2. drain — ``--drain-jobs`` jobs submitted with ``hold=false`` (4 uploads at a
   time), first to one named printer, then to a pool of two: first submit →
   last printed (s), jobs/s per printer end to end and in steady state (first
   → last printed), and the idle gap each printer sees between jobs (interval
   between consecutive prints.log lines minus the next job's processing time
   from server.log), median and p90 in ms, split into printed → DONE recorded
   (completion detection), DONE → next claim, claim → printer starts.
3. recovery — ``--recovery-jobs`` jobs across a pool of two; right after a
   document comes out (so its job is still PRINTING in the store) the
   appliance is SIGKILLed and restarted: restart → ``/readyz`` 200 (polled every
   5 ms on a fixed port), restart → every job that was PRINTING at the kill has
   left PRINTING (store events, and as seen by polling
   ``GET /v1/jobs?state=PRINTING``), restart → all jobs DONE (ms).

Every phase counts duplicates and losses against the printers' ground truth
(must be 0/0). Each figure is the median of ``--repeat`` runs with min and max.
The drain rate is compared with the reference figure of the project's rig notes
(``/work/shared/rig/README.md``, "CUPS baseline"): a CUPS queue in front of the
same ippeveprinter drains about 1 job/s per printer (not measured here).

Prints a Markdown table and writes ``bench/results/print.json``. Exit code 0
when every job printed exactly once and nothing timed out, 1 otherwise, 2 on
bad usage. Every child (appliance, printers, dbus-daemon) is stopped on exit,
error, Ctrl-C, SIGTERM or SIGHUP (not after SIGKILL of the benchmark itself).

Run from the repository root::

    .venv/bin/python -m bench.print_bench            # full, 3 runs: about 1.5 minutes on 2 cores
    .venv/bin/python -m bench.print_bench --quick    # 1 smaller run: about 10–15 s
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import importlib.metadata
import itertools
import json
import os
import platform
import re
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

import aiohttp

from edgeprint.config import Config, PrinterConfig
from edgeprint.server import DB_FILE
from testbed.config import KIOSK_TOKEN, config_dict, to_toml
from testbed.pdfs import make_pdf
from testbed.proc import ServeProcess
from testbed.rig import Printed, Rig, free_ports

REPO = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO / "bench" / "results" / "print.json"
RIG_NOTES = "/work/shared/rig/README.md"
POOL = "lobby"
#: Reference drain rate of a CUPS queue in front of ippeveprinter, jobs/s per printer
#: (rig notes, "CUPS baseline": 200 jobs in 201 s on 1 queue, 66 s on a class of 3).
CUPS_JOBS_PER_S_PER_PRINTER = 1.0
#: Seconds the printer is left idle before each release in the latency phase.
IDLE_BEFORE_RELEASE_S = 0.15
#: Simultaneous uploads while submitting a drain or recovery batch.
SUBMIT_CONCURRENCY = 4
#: Seconds before a submit answered 503 (queue full) is retried with the same key.
BACKPRESSURE_RETRY_S = 0.05
#: Drain submits keep at most this many jobs per printer submitted but not printed:
#: below the appliance's per-printer ``high_water`` (default 50, when the running
#: code has it), so the queue never runs dry and admission never pushes back.
_HIGH_WATER = getattr(PrinterConfig.model_fields.get("high_water"), "default", None)
DRAIN_WINDOW_PER_PRINTER = max(1, min(40, _HIGH_WATER - 10)) if isinstance(_HIGH_WATER, int) else 40
#: Poll period (seconds) for ground-truth files and API state while waiting.
FILE_POLL_S = 0.002
API_POLL_S = 0.005
#: Upper bounds (seconds) for each wait; a run that exceeds one fails.
JOB_TIMEOUT_S = 15.0
DRAIN_BASE_TIMEOUT_S = 30.0
DRAIN_PER_JOB_TIMEOUT_S = 0.6
RECOVERY_TIMEOUT_S = 45.0
_PROCESSING_RE = re.compile(r"^\[Job (\d+)\] Processing time was ([0-9.]+) seconds")


class BenchError(RuntimeError):
    """A run could not be measured (timeout, unexpected HTTP status, child died)."""


# --- small helpers ------------------------------------------------------------------


def percentile(values: Sequence[float], q: float) -> float | None:
    """The ``q``-th percentile (0–100) by linear interpolation; None for no values."""
    if not values:
        return None
    s = sorted(values)
    pos = (len(s) - 1) * q / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def ms(seconds: float | None) -> float | None:
    """Seconds → milliseconds (rounded to 0.1 ms); None stays None."""
    return None if seconds is None else round(seconds * 1000.0, 1)


def iso_to_unix(text: str) -> float:
    """``2026-11-29T08:07:02.539Z`` (prints.log, API) → unix seconds."""
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def printed_at(line: Printed) -> float:
    """Unix seconds at which the print command logged the document (ms resolution)."""
    return iso_to_unix(line.time)


def edgeprint_id(job_name: str) -> str:
    """The edgeprint job id inside a printer job-name (``edgeprint-<id>``)."""
    return job_name.removeprefix("edgeprint-")


def processing_times(server_log: Path) -> dict[int, float]:
    """Printer job id → seconds the print engine ran, from ippeveprinter's ``-v`` log."""
    out: dict[int, float] = {}
    with contextlib.suppress(OSError):
        for line in server_log.read_text(errors="replace").splitlines():
            m = _PROCESSING_RE.match(line)
            if m:
                out[int(m.group(1))] = float(m.group(2))
    return out


def ground_truth(rig: Rig, job_ids: Sequence[str]) -> dict[str, int]:
    """Duplicates, losses and strays of ``job_ids`` according to the printers' own logs."""
    copies: Counter[str] = Counter()
    for p in rig:
        copies.update(edgeprint_id(line.job_name) for line in rig.printed(p.name))
    expected = set(job_ids)
    return {
        "duplicates": sum(n - 1 for n in copies.values() if n > 1),
        "losses": len(expected - set(copies)),
        "unexpected": len(set(copies) - expected),
    }


def printed_count(rig: Rig) -> int:
    """Documents printed so far on every printer of ``rig`` (newline count of prints.log)."""
    total = 0
    for p in rig:
        with contextlib.suppress(FileNotFoundError):
            total += p.prints_log.read_bytes().count(b"\n")
    return total


@dataclass
class Store:
    """What the appliance recorded: job rows and state-change events (unix seconds)."""

    jobs: dict[str, dict[str, Any]]
    events: dict[str, list[tuple[float, str | None, str]]]

    def first(
        self, job_id: str, to_state: str | None = None, after: float = 0.0, src: str | None = None
    ) -> float | None:
        """Time of the first event of ``job_id`` at/after ``after`` matching the filters."""
        for at, from_state, to in self.events.get(job_id, []):
            if at < after or (to_state and to != to_state) or (src and from_state != src):
                continue
            return at
        return None

    def last_claim_before(self, job_id: str, before: float) -> float | None:
        """Time of the last RELEASED → PRINTING of ``job_id`` before ``before``."""
        claims = [at for at, _, to in self.events.get(job_id, []) if to == "PRINTING"]
        earlier = [at for at in claims if at <= before]
        return max(earlier) if earlier else None

    def count(self, from_state: str, to_state: str) -> int:
        """Number of ``from_state`` → ``to_state`` transitions over all jobs."""
        return sum(
            1
            for evs in self.events.values()
            for _, f, t in evs
            if f == from_state and t == to_state
        )


def read_store(data_dir: Path) -> Store:
    """Read the appliance's SQLite file read-only (also fine right after a SIGKILL)."""
    uri = f"file:{data_dir / DB_FILE}?mode=ro"
    with contextlib.closing(sqlite3.connect(uri, uri=True)) as db:
        db.row_factory = sqlite3.Row
        jobs = {r["id"]: dict(r) for r in db.execute("SELECT * FROM jobs")}
        events: dict[str, list[tuple[float, str | None, str]]] = {}
        for r in db.execute("SELECT job_id, at, from_state, to_state FROM job_events ORDER BY seq"):
            events.setdefault(r[0], []).append((float(r[1]), r[2], r[3]))
    return Store(jobs, events)


# --- the stand: printers + appliance -------------------------------------------------


@dataclass
class Stand:
    """A fresh rig of printers and an appliance child configured for it (default dispatch)."""

    root: Path
    printers: int
    rig: Rig = field(init=False)
    serve: ServeProcess = field(init=False)
    port: int = 0

    def __post_init__(self) -> None:
        self.rig = Rig(self.root / "rig", seconds_per_page=0.0)
        self.serve = ServeProcess(self.root / "config.toml", self.root / "serve.log")

    @property
    def data_dir(self) -> Path:
        return self.root / "data"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> Stand:
        """Start the printers, write the config (fixed free port, no [dispatch]) and serve."""
        self.root.mkdir(parents=True, exist_ok=True)
        self.rig.start(self.printers)
        self.port = free_ports(1, avoid={p.port for p in self.rig})[0]
        cfg = config_dict(self.data_dir, port=self.port)
        cfg["printers"] = [{"name": p.name, "uri": p.uri, "pool": POOL} for p in self.rig]
        (self.root / "config.toml").write_text(to_toml(cfg))
        self.serve.start()
        return self

    def stop(self) -> None:
        """SIGTERM the appliance (SIGKILL if it lingers), then stop the printers."""
        try:
            proc = self.serve.proc
            if proc is not None and proc.poll() is None:
                try:
                    self.serve.terminate(timeout_s=15.0)
                except subprocess.TimeoutExpired:
                    self.serve.kill()
        finally:
            self.rig.stop()

    def log_events(self, offset: int = 0) -> list[dict[str, Any]]:
        """The appliance's JSON log records written after byte ``offset``."""
        out: list[dict[str, Any]] = []
        with contextlib.suppress(OSError):
            for line in self.serve.log_path.read_bytes()[offset:].splitlines():
                with contextlib.suppress(ValueError):
                    rec = json.loads(line)
                    if isinstance(rec, dict):
                        out.append(rec)
        return out


class Kiosk:
    """The few API calls the benchmark makes, as the kiosk token."""

    def __init__(self, http: aiohttp.ClientSession, url: str) -> None:
        self.http = http
        self.url = url
        self.headers = {"Authorization": f"Bearer {KIOSK_TOKEN}"}
        #: 503 answers (queue full) to submits, each retried.
        self.backpressured = 0

    async def submit(self, key: str, **meta: Any) -> str:
        """POST /v1/jobs with a one-page PDF; the new job's id.

        A 503 (queue full: backpressure) is retried with the same key after
        BACKPRESSURE_RETRY_S (not the server's Retry-After, which would idle the
        printer) and counted in :attr:`backpressured`; any other non-201 fails.
        """
        form_meta = json.dumps({"owner": "bench", **meta})
        headers = {**self.headers, "Idempotency-Key": key}
        deadline = time.monotonic() + JOB_TIMEOUT_S
        while True:
            form = aiohttp.FormData()
            form.add_field("metadata", form_meta, content_type="application/json")
            form.add_field(
                "document", make_pdf(key), content_type="application/pdf", filename="b.pdf"
            )
            async with self.http.post(f"{self.url}/v1/jobs", data=form, headers=headers) as r:
                body = await r.json()
                if r.status == 201:
                    return str(body["id"])
                if r.status != 503 or time.monotonic() > deadline:
                    raise BenchError(f"submit {key}: HTTP {r.status}: {body}")
            self.backpressured += 1
            await asyncio.sleep(BACKPRESSURE_RETRY_S)

    async def submit_many(
        self,
        prefix: str,
        n: int,
        *,
        window: int | None = None,
        printed: Callable[[], int] | None = None,
        **meta: Any,
    ) -> list[str]:
        """``n`` submits, SUBMIT_CONCURRENCY at a time; ids in submission order.

        With ``window``, a submit starts only while fewer than ``window`` jobs are
        submitted but not yet printed (``printed()`` counts documents on paper):
        the waiting queue stays full without crossing the appliance's high-water mark.
        """
        sem = asyncio.Semaphore(SUBMIT_CONCURRENCY)
        issued = 0

        async def one(i: int) -> str:
            nonlocal issued
            async with sem:
                if window is not None and printed is not None:
                    deadline = time.monotonic() + JOB_TIMEOUT_S
                    while issued - printed() >= window:
                        if time.monotonic() > deadline:
                            raise BenchError(f"window of {window} jobs did not move")
                        await asyncio.sleep(API_POLL_S)
                issued += 1
                return await self.submit(f"{prefix}-{i:05d}", **meta)

        return list(await asyncio.gather(*(one(i) for i in range(n))))

    async def release(self, job_id: str) -> float:
        """POST /v1/jobs/{id}/release; unix time at which the 200 response was read."""
        async with self.http.post(
            f"{self.url}/v1/jobs/{job_id}/release", headers=self.headers
        ) as r:
            body = await r.read()
            if r.status != 200:
                raise BenchError(f"release {job_id}: HTTP {r.status}: {body[:300]!r}")
        return time.time()

    async def job(self, job_id: str) -> dict[str, Any]:
        """GET /v1/jobs/{id}."""
        async with self.http.get(f"{self.url}/v1/jobs/{job_id}", headers=self.headers) as r:
            body: dict[str, Any] = await r.json()
            if r.status != 200:
                raise BenchError(f"get {job_id}: HTTP {r.status}: {body}")
            return body

    async def ids_in(self, state: str, limit: int = 500) -> set[str]:
        """Ids of (up to ``limit``) jobs in ``state``."""
        url = f"{self.url}/v1/jobs?state={state}&limit={limit}"
        async with self.http.get(url, headers=self.headers) as r:
            body = await r.json()
            if r.status != 200:
                raise BenchError(f"list {state}: HTTP {r.status}: {body}")
            return {str(j["id"]) for j in body["jobs"]}

    async def readyz(self) -> int:
        """Status of GET /readyz, 0 when nothing answers (yet)."""
        try:
            async with self.http.get(f"{self.url}/readyz") as r:
                await r.read()
                return r.status
        except (aiohttp.ClientError, OSError):
            return 0

    async def wait_settled(self, timeout_s: float) -> None:
        """Until no job is RELEASED or PRINTING (polled every 10 ms), at most ``timeout_s``.

        Two lists are two moments: a job can go RELEASED → PRINTING between them and
        be missed by both. So RELEASED is asked before and after PRINTING: a job
        claimed in between was RELEASED at the first look.
        """

        async def settled() -> bool:
            for state in ("RELEASED", "PRINTING", "RELEASED"):
                if await self.ids_in(state, 1):
                    return False
            return True

        await until(settled, timeout_s, 0.01, "jobs still RELEASED/PRINTING")


async def until(
    check: Callable[[], Awaitable[bool]], timeout_s: float, period_s: float, what: str
) -> float:
    """Poll ``check`` every ``period_s`` s until true; unix time then; BenchError on timeout."""
    deadline = time.monotonic() + timeout_s
    while True:
        if await check():
            return time.time()
        if time.monotonic() > deadline:
            raise BenchError(f"timeout after {timeout_s:g} s: {what}")
        await asyncio.sleep(period_s)


@contextlib.asynccontextmanager
async def http_session() -> AsyncIterator[aiohttp.ClientSession]:
    """One aiohttp session for a phase (keep-alive, a few connections)."""
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=16)) as http:
        yield http


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
    store = read_store(stand.data_dir)
    paper = {edgeprint_id(p.job_name): printed_at(p) for p in stand.rig.printed(printer.name)}
    to_printed, to_finished, to_claim, claim_to_printed, detect = [], [], [], [], []
    for job_id, t_rel in released.items():
        finished = stand_finished(store, job_id)
        claim = store.first(job_id, "PRINTING")
        if job_id in paper:
            to_printed.append(paper[job_id] - t_rel)
            if claim is not None:
                claim_to_printed.append(paper[job_id] - claim)
            if finished is not None:
                detect.append(finished - paper[job_id])
        if finished is not None:
            to_finished.append(finished - t_rel)
        if claim is not None:
            to_claim.append(claim - t_rel)
    return {
        "jobs": n_jobs,
        "release_to_printed_p50_ms": ms(percentile(to_printed, 50)),
        "release_to_printed_p99_ms": ms(percentile(to_printed, 99)),
        "release_to_finished_p50_ms": ms(percentile(to_finished, 50)),
        "release_to_finished_p99_ms": ms(percentile(to_finished, 99)),
        "release_to_claim_p50_ms": ms(percentile(to_claim, 50)),
        "claim_to_printed_p50_ms": ms(percentile(claim_to_printed, 50)),
        "printed_to_done_p50_ms": ms(percentile(detect, 50)),
        **ground_truth(stand.rig, ids),
    }


def stand_finished(store: Store, job_id: str) -> float | None:
    """Unix time the store recorded ``job_id`` DONE (its ``finished_at``), or None."""
    row = store.jobs.get(job_id)
    if row is None or row["state"] != "DONE" or row["finished_at"] is None:
        return None
    return float(row["finished_at"])


# --- phase 2: drain ------------------------------------------------------------------


def gaps(stand: Stand, store: Store) -> dict[str, list[float]]:
    """Per printer, between consecutive documents: interval, idle gap and its parts (s)."""
    out: dict[str, list[float]] = {k: [] for k in ("interval", "idle", "detect", "done_to_claim",
                                                   "claim_to_start", "processing")}  # fmt: skip
    for p in stand.rig:
        proc = processing_times(p.server_log)
        lines = sorted(stand.rig.printed(p.name), key=printed_at)
        out["processing"] += [proc[x.job_id] for x in lines if x.job_id in proc]
        for prev, nxt in itertools.pairwise(lines):
            t0, t1 = printed_at(prev), printed_at(nxt)
            out["interval"].append(t1 - t0)
            if nxt.job_id not in proc:
                continue
            start = t1 - proc[nxt.job_id]
            out["idle"].append(start - t0)
            done = stand_finished(store, edgeprint_id(prev.job_name))
            claim = store.last_claim_before(edgeprint_id(nxt.job_name), t1)
            if done is not None and claim is not None:
                out["detect"].append(done - t0)
                out["done_to_claim"].append(claim - done)
                out["claim_to_start"].append(start - claim)
    return out


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
        t_submitted = time.time()

        async def all_out() -> bool:
            return printed_count(stand.rig) >= n_jobs

        timeout = DRAIN_BASE_TIMEOUT_S + DRAIN_PER_JOB_TIMEOUT_S * n_jobs
        await until(all_out, timeout, 0.02, f"fewer than {n_jobs} printed")
        await kiosk.wait_settled(JOB_TIMEOUT_S)
    stand.stop()
    store = read_store(stand.data_dir)
    lines = [x for p in stand.rig for x in stand.rig.printed(p.name)]
    times = sorted(printed_at(x) for x in lines)
    last, first = times[-1], times[0]
    g = gaps(stand, store)
    per_printer = {p.name: len(stand.rig.printed(p.name)) for p in stand.rig}
    steady = (len(times) - 1) / (last - first) / n_printers if last > first else None
    return {
        "jobs": n_jobs,
        "printers": n_printers,
        "submit_s": round(t_submitted - t_first, 3),
        "first_submit_to_last_printed_s": round(last - t_first, 3),
        "jobs_per_s_per_printer": round(n_jobs / (last - t_first) / n_printers, 2),
        "ratio_vs_cups": round(
            n_jobs / (last - t_first) / n_printers / CUPS_JOBS_PER_S_PER_PRINTER, 1
        ),
        "steady_jobs_per_s_per_printer": None if steady is None else round(steady, 2),
        "interval_p50_ms": ms(percentile(g["interval"], 50)),
        "interval_p90_ms": ms(percentile(g["interval"], 90)),
        "idle_gap_p50_ms": ms(percentile(g["idle"], 50)),
        "idle_gap_p90_ms": ms(percentile(g["idle"], 90)),
        "idle_gap_max_ms": ms(max(g["idle"], default=None)),
        "processing_p50_ms": ms(percentile(g["processing"], 50)),
        "detect_p50_ms": ms(percentile(g["detect"], 50)),
        "detect_p90_ms": ms(percentile(g["detect"], 90)),
        "done_to_claim_p50_ms": ms(percentile(g["done_to_claim"], 50)),
        "claim_to_start_p50_ms": ms(percentile(g["claim_to_start"], 50)),
        "requeues": store.count("PRINTING", "RELEASED"),
        "backpressured_submits": kiosk.backpressured,
        "per_printer": per_printer,
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
        printed_at_kill = printed_count(stand.rig)
    at_kill = read_store(stand.data_dir)
    printing = {i for i, row in at_kill.jobs.items() if row["state"] == "PRINTING"}
    in_flight = sum(1 for row in at_kill.jobs.values() if row["state"] in ("RELEASED", "PRINTING"))
    offset = stand.serve.log_path.stat().st_size

    async with http_session() as http:
        kiosk = Kiosk(http, stand.url)
        ready_line: list[float] = []

        def restart() -> None:
            stand.serve.start()  # returns once it has read the JSON "ready" line
            ready_line.append(time.time())

        t_restart = time.time()
        starting = asyncio.ensure_future(asyncio.to_thread(restart))

        async def ready() -> bool:
            if starting.done():
                starting.result()  # raise if the appliance failed to start
            return await kiosk.readyz() == 200

        t_readyz = await until(ready, RECOVERY_TIMEOUT_S, API_POLL_S, "/readyz not 200")
        await starting
        t_ready_line = ready_line[0]
        left: set[str] = set()

        async def reconciled() -> bool:
            left.update(printing - await kiosk.ids_in("PRINTING"))
            return left >= printing

        t_seen = await until(reconciled, RECOVERY_TIMEOUT_S, API_POLL_S, "still PRINTING")
        await kiosk.wait_settled(RECOVERY_TIMEOUT_S)
    stand.stop()
    store = read_store(stand.data_dir)
    left_at = [store.first(i, after=t_restart, src="PRINTING") for i in printing]
    done_at = [stand_finished(store, i) for i in ids]
    verdicts = Counter(
        str(r.get("verdict"))
        for r in stand.log_events(offset)
        if r.get("event") == "job_reconciled"
    )
    states = Counter(str(r["state"]) for r in store.jobs.values())
    return {
        "jobs": n_jobs,
        "printed_at_kill": printed_at_kill,
        "in_flight_at_kill": in_flight,
        "printing_at_kill": len(printing),
        "restart_to_ready_line_ms": ms(t_ready_line - t_restart),
        "restart_to_readyz_ms": ms(t_readyz - t_restart),
        "restart_to_reconciled_ms": (
            ms(max(t for t in left_at if t is not None) - t_restart)
            if printing and all(t is not None for t in left_at)
            else None
        ),
        "restart_to_reconciled_seen_ms": ms(t_seen - t_restart) if printing else None,
        "restart_to_all_done_ms": (
            ms(max(t for t in done_at if t is not None) - t_restart)
            if all(t is not None for t in done_at)
            else None
        ),
        "reconcile_verdicts": dict(verdicts),
        "final_states": dict(states),
        "left_printing": states.get("PRINTING", 0),
        **ground_truth(stand.rig, ids),
    }


# --- runs, summary, output -----------------------------------------------------------

#: (phase, key, label, unit) rows of the table, in order.
ROWS: list[tuple[str, str, str, str]] = [
    ("latency", "release_to_printed_p50_ms", "release → printed (prints.log), p50", "ms"),
    ("latency", "release_to_printed_p99_ms", "release → printed (prints.log), p99", "ms"),
    ("latency", "release_to_finished_p50_ms", "release → finished_at (DONE), p50", "ms"),
    ("latency", "release_to_finished_p99_ms", "release → finished_at (DONE), p99", "ms"),
    ("latency", "release_to_claim_p50_ms", "  of which release → claimed, p50", "ms"),
    ("latency", "claim_to_printed_p50_ms", "  of which claimed → printed, p50", "ms"),
    ("latency", "printed_to_done_p50_ms", "  of which printed → DONE recorded, p50", "ms"),
    ("drain1", "first_submit_to_last_printed_s", "first submit → last printed", "s"),
    ("drain1", "submit_s", "  (all submits answered after)", "s"),
    ("drain1", "jobs_per_s_per_printer", "drain rate, end to end", "jobs/s/printer"),
    ("drain1", "ratio_vs_cups", "  ÷ CUPS reference, ~1 job/s/printer (rig notes)", "×"),
    (
        "drain1",
        "steady_jobs_per_s_per_printer",
        "drain rate, first → last printed",
        "jobs/s/printer",
    ),
    ("drain1", "interval_p50_ms", "print-to-print interval, median", "ms"),
    ("drain1", "idle_gap_p50_ms", "printer idle gap between jobs, median", "ms"),
    ("drain1", "idle_gap_p90_ms", "printer idle gap between jobs, p90", "ms"),
    ("drain1", "processing_p50_ms", "printer busy per job (server.log), median", "ms"),
    ("drain1", "detect_p50_ms", "  gap part: printed → DONE recorded, median", "ms"),
    ("drain1", "detect_p90_ms", "  gap part: printed → DONE recorded, p90", "ms"),
    ("drain1", "done_to_claim_p50_ms", "  gap part: DONE → next claimed, median", "ms"),
    ("drain1", "claim_to_start_p50_ms", "  gap part: claimed → printer starts, median", "ms"),
    ("drain2", "first_submit_to_last_printed_s", "first submit → last printed", "s"),
    ("drain2", "jobs_per_s_per_printer", "drain rate, end to end", "jobs/s/printer"),
    ("drain2", "ratio_vs_cups", "  ÷ CUPS reference, ~1 job/s/printer (rig notes)", "×"),
    (
        "drain2",
        "steady_jobs_per_s_per_printer",
        "drain rate, first → last printed",
        "jobs/s/printer",
    ),
    ("drain2", "idle_gap_p50_ms", "printer idle gap between jobs, median", "ms"),
    ("drain2", "idle_gap_p90_ms", "printer idle gap between jobs, p90", "ms"),
    ("drain2", "detect_p50_ms", "  gap part: printed → DONE recorded, median", "ms"),
    ("recovery", "in_flight_at_kill", "jobs RELEASED/PRINTING at SIGKILL", "jobs"),
    ("recovery", "printing_at_kill", "jobs PRINTING at SIGKILL", "jobs"),
    ("recovery", "restart_to_readyz_ms", "restart → /readyz 200", "ms"),
    ("recovery", "restart_to_ready_line_ms", "restart → ready log line seen (20 ms poll)", "ms"),
    ("recovery", "restart_to_reconciled_ms", "restart → PRINTING-at-kill all left (store)", "ms"),
    ("recovery", "restart_to_reconciled_seen_ms", "restart → same, seen via API poll", "ms"),
    ("recovery", "restart_to_all_done_ms", "restart → every job DONE", "ms"),
]
PHASE_TITLES = {
    "latency": "1. release → completed, idle printer",
    "drain1": "2a. drain, one named printer",
    "drain2": "2b. drain, pool of 2 printers",
    "recovery": "3. recovery after SIGKILL (pool of 2)",
}
CHECK_KEYS = ("duplicates", "losses", "unexpected")


def spread(values: Sequence[float | None]) -> dict[str, float | None]:
    """Median, min and max of the non-None ``values`` (None when there are none)."""
    vals = [v for v in values if v is not None]
    if not vals:
        return {"median": None, "min": None, "max": None}
    return {"median": statistics.median(vals), "min": min(vals), "max": max(vals)}


def summarize(runs: list[dict[str, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """phase → key → {median, min, max} over the repetitions (numeric figures only)."""
    out: dict[str, dict[str, Any]] = {}
    for phase in PHASE_TITLES:
        keys: dict[str, None] = {}
        for run in runs:
            keys.update(dict.fromkeys(k for k, v in run.get(phase, {}).items()
                                      if isinstance(v, int | float) or v is None))  # fmt: skip
        out[phase] = {k: spread([run.get(phase, {}).get(k) for run in runs]) for k in keys}
    return out


def _fmt(v: float | None) -> str:
    if v is None:
        return "–"
    if isinstance(v, int) or float(v).is_integer():
        return f"{int(v)}"
    return f"{v:.2f}" if abs(v) < 10 else f"{v:.1f}"


def markdown(summary: dict[str, dict[str, Any]], runs: int) -> str:
    """The summary as a Markdown table (median [min–max] over ``runs`` runs)."""
    lines = [
        f"| figure | median of {runs} | min | max | unit |",
        "|---|---:|---:|---:|---|",
    ]
    current = ""
    for phase, key, label, unit in ROWS:
        if phase != current:
            lines.append(f"| **{PHASE_TITLES[phase]}** | | | | |")
            current = phase
        s = summary.get(phase, {}).get(key, {})
        lines.append(
            f"| {label} | {_fmt(s.get('median'))} | {_fmt(s.get('min'))} | "
            f"{_fmt(s.get('max'))} | {unit} |"
        )
    lines.append("| **ground truth, all phases** | | | | |")
    for k in CHECK_KEYS:
        total = sum(int(summary[p].get(k, {}).get("max") or 0) for p in PHASE_TITLES)
        lines.append(f"| {k} (worst run, summed over phases) | {total} | | | jobs |")
    return "\n".join(lines)


def git_commit() -> dict[str, Any]:
    """HEAD commit and whether the work tree differs from it."""

    def git(*args: str) -> str:
        out = subprocess.run(
            ["git", *args], cwd=REPO, capture_output=True, text=True, timeout=10, check=False
        )
        return out.stdout.strip()

    return {"commit": git("rev-parse", "HEAD") or None, "dirty": bool(git("status", "--porcelain"))}


def machine_info() -> dict[str, Any]:
    """nproc, Python, SQLite, library and printer versions, git commit, date, load."""

    def version(dist: str) -> str | None:
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            return None

    ipp_utils = None
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        ipp_utils = subprocess.run(
            ["dpkg-query", "-W", "-f", "${Version}", "cups-ipp-utils"],
            capture_output=True, text=True, timeout=10, check=False,
        ).stdout.strip() or None  # fmt: skip
    return {
        "nproc": os.cpu_count(),
        "cpus_usable": len(os.sched_getaffinity(0)),
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "aiohttp": version("aiohttp"),
        "aiosqlite": version("aiosqlite"),
        "cups_ipp_utils": ipp_utils,
        "platform": platform.platform(),
        "git": git_commit(),
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "loadavg_start": [round(x, 2) for x in os.getloadavg()],
    }


def default_settings() -> dict[str, Any]:
    """The appliance settings in force: every section's defaults (the config sets none)."""
    sections = Config().model_dump(mode="json", exclude={"printers", "tokens", "server"})
    printer = {
        name: f.default for name, f in PrinterConfig.model_fields.items() if not f.is_required()
    }
    return {**sections, "printer": printer}


@dataclass
class Sizes:
    """How much work each phase does."""

    latency_jobs: int
    drain_jobs: int
    recovery_jobs: int


async def one_run(work: Path, rep: int, sizes: Sizes, stands: list[Stand]) -> dict[str, Any]:
    """One repetition of every phase, each on a fresh stand; phase → figures."""
    run: dict[str, Any] = {}

    def fresh(name: str, printers: int) -> Stand:
        stand = Stand(work / f"r{rep}-{name}", printers)
        stands.append(stand)
        return stand.start()

    plan: list[tuple[str, int, Callable[[Stand], Awaitable[dict[str, Any]]]]] = [
        ("latency", 1, lambda s: phase_latency(s, sizes.latency_jobs, f"lat-{rep}")),
        ("drain1", 1, lambda s: phase_drain(s, sizes.drain_jobs, f"dr1-{rep}",
                                            {"printer": "printer-01"})),
        ("drain2", 2, lambda s: phase_drain(s, sizes.drain_jobs, f"dr2-{rep}", {"pool": POOL})),
        ("recovery", 2, lambda s: phase_recovery(s, sizes.recovery_jobs, f"rec-{rep}")),
    ]  # fmt: skip
    for name, printers, phase in plan:
        t0 = time.monotonic()
        stand = fresh(name, printers)
        try:
            run[name] = await phase(stand)
        finally:
            stand.stop()
        run[name]["phase_s"] = round(time.monotonic() - t0, 2)
        print(f"bench: run {rep + 1} {name}: {_brief(run[name])}", file=sys.stderr)
    return run


def _brief(figures: dict[str, Any]) -> str:
    keys = ("release_to_printed_p50_ms", "jobs_per_s_per_printer", "idle_gap_p50_ms",
            "restart_to_reconciled_ms", "duplicates", "losses", "phase_s")  # fmt: skip
    return ", ".join(f"{k}={figures[k]}" for k in keys if k in figures)


@contextlib.contextmanager
def signals_as_exit() -> Iterator[None]:
    """SIGTERM/SIGHUP raise SystemExit, so every ``finally`` stops the children."""

    def handler(signum: int, frame: FrameType | None) -> None:
        raise SystemExit(128 + signum)

    old = {s: signal.signal(s, handler) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="python -m bench.print_bench",
        description="edgeprint print path on real ippeveprinter printers (default dispatch)",
    )
    ap.add_argument("--quick", action="store_true", help="fewer jobs, one run (about 15 s)")
    ap.add_argument("--repeat", type=int, default=None, help="runs (default 3, --quick 1)")
    ap.add_argument("--latency-jobs", type=int, default=None, help="default 40 (--quick 10)")
    ap.add_argument("--drain-jobs", type=int, default=None, help="default 200 (--quick 60)")
    ap.add_argument("--recovery-jobs", type=int, default=20, help="default 20")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="JSON results file")
    ap.add_argument("--keep", action="store_true", help="keep the work folder (logs, DBs)")
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; the exit code (0 all printed exactly once, 1 otherwise)."""
    args = _parser().parse_args(argv)
    repeat = args.repeat if args.repeat is not None else (1 if args.quick else 3)
    sizes = Sizes(
        latency_jobs=args.latency_jobs or (10 if args.quick else 40),
        drain_jobs=args.drain_jobs or (60 if args.quick else 200),
        recovery_jobs=args.recovery_jobs,
    )
    if min(repeat, sizes.latency_jobs, sizes.drain_jobs, sizes.recovery_jobs) < 1 or repeat > 20:
        print("bench: --repeat (1–20) and job counts must be ≥ 1", file=sys.stderr)
        return 2
    info = machine_info()
    work = Path(tempfile.mkdtemp(prefix="edgeprint-print-bench-"))
    stands: list[Stand] = []
    runs: list[dict[str, Any]] = []
    failures: list[str] = []
    started = time.monotonic()
    try:
        with signals_as_exit():
            for rep in range(repeat):
                try:
                    runs.append(asyncio.run(one_run(work, rep, sizes, stands)))
                except BenchError as exc:
                    failures.append(f"run {rep + 1}: {exc}")
                    print(f"bench: run {rep + 1} failed: {exc}", file=sys.stderr)
    finally:
        for stand in stands:
            with contextlib.suppress(Exception):
                stand.stop()
        if args.keep:
            print(f"bench: work folder kept: {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)
    info["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
    info["bench_seconds"] = round(time.monotonic() - started, 1)
    summary = summarize(runs)
    for phase in PHASE_TITLES:
        for k in CHECK_KEYS:
            worst = summary[phase].get(k, {}).get("max")
            if worst:
                failures.append(f"{phase}: {k} = {worst} in the worst run")
        if summary[phase].get("left_printing", {}).get("max"):
            failures.append(f"{phase}: jobs left PRINTING at the end")
    ratios = {
        phase: spread([
            (run[phase]["jobs_per_s_per_printer"] / CUPS_JOBS_PER_S_PER_PRINTER) for run in runs
        ])
        for phase in ("drain1", "drain2")
    }  # fmt: skip
    table = markdown(summary, len(runs))
    print()
    print(table)
    for phase, r in ratios.items():
        if r["median"] is not None:
            print(
                f"\n{PHASE_TITLES[phase]}: edgeprint drains {r['median']:.1f}× the reference "
                f"CUPS rate (~{CUPS_JOBS_PER_S_PER_PRINTER:g} job/s per printer, rig notes "
                f"{RIG_NOTES}, 'CUPS baseline'; not measured here) [min {r['min']:.1f}, "
                f"max {r['max']:.1f}]"
            )
    defaults = default_settings()
    print(f"\nsettings used (the code's defaults): {json.dumps(defaults)}")
    print(f"drain submit window: {DRAIN_WINDOW_PER_PRINTER} jobs per printer not yet printed")
    for f in failures:
        print(f"FAILED: {f}")
    print(
        f"\n{info['bench_seconds']} s, {len(runs)} run(s); load average "
        f"{info['loadavg_start']} → {info['loadavg_end']} on {info['nproc']} CPUs"
    )
    result = {
        "benchmark": "print",
        "command": " ".join([".venv/bin/python -m bench.print_bench", *(argv or sys.argv[1:])]),
        "settings": {
            "quick": args.quick,
            "repeat": repeat,
            "latency_jobs": sizes.latency_jobs,
            "drain_jobs": sizes.drain_jobs,
            "recovery_jobs": sizes.recovery_jobs,
            "printer_seconds_per_page": 0.0,
            "idle_before_release_s": IDLE_BEFORE_RELEASE_S,
            "submit_concurrency": SUBMIT_CONCURRENCY,
            "drain_window_per_printer": DRAIN_WINDOW_PER_PRINTER,
            "appliance_defaults": defaults,
        },
        "reference": {
            "cups_jobs_per_s_per_printer": CUPS_JOBS_PER_S_PER_PRINTER,
            "source": f"{RIG_NOTES}, section 'CUPS baseline' (not measured by this benchmark)",
            "ratio_edgeprint_over_cups": ratios,
        },
        "machine": info,
        "summary": summary,
        "failures": failures,
        "table_markdown": table,
        "runs": runs,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
