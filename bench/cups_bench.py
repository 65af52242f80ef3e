"""Side by side with CUPS: the same held jobs through edgeprint and a private cupsd class.

Both drive ``--printers`` fresh printers (0 s/page, ~30 KB PDF): submit held, release,
→ all printed; then the scheduler SIGKILLed at the k-th document and restarted (CUPS
with its defaults and with ``DirtyCleanInterval 0``): → serving, → settled, jobs known,
duplicates, losses. Medians of ``--repeat``.

    .venv/bin/python -m bench.cups_bench [--quick]
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import random
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

from bench.harness import (
    POOL,
    BenchError,
    Kiosk,
    Run,
    Stand,
    bounded,
    figures_markdown,
    parser,
    printed_at,
    printed_count,
    read_store,
    seed,
    spread,
    until,
)
from edgeprint.errors import IppParseError
from edgeprint.ipp import codec
from edgeprint.ipp.names import Operation, Tag
from edgeprint.ipp.values import attr
from testbed.cups_rig import Cupsd, CupsError, cups_tools, first, ipp_request
from testbed.pdfs import make_pdf
from testbed.rig import Rig, RigError, printed_names

DOC_BYTES = 30_000
PRINTERS = 3
#: CUPS configurations of the crash runs: key → DirtyCleanInterval (None: CUPS's default).
CUPS_CONFIGS: dict[str, int | None] = {"defaults": None, "dirty0": 0}
CUPS_CONFIG_TITLES = {"defaults": "CUPS defaults", "dirty0": "CUPS DirtyCleanInterval 0"}
#: Poll periods (s): prints.log while waiting for the kill point, and everything else.
KILL_POLL_S = 0.0005
POLL_S = 0.01
#: Bounds (s) of each wait: base + per job per printer (CUPS prints ~1 job/s per printer).
WAIT_BASE_S = 20.0
WAIT_PER_JOB_S = 2.0
REQUEST_TIMEOUT_S = 30.0
BACKPRESSURE_RETRY_S = 0.05


# --- the two sides --------------------------------------------------------------------


@dataclass
class EdgeSide:
    """The appliance (child process, default settings) and its printers, all in one pool."""

    root: Path
    printers: int
    doc: bytes
    tag: str
    source: Path
    name: str = "edgeprint"
    stand: Stand = field(init=False)

    def __post_init__(self) -> None:
        self.stand = Stand(self.root, self.printers, seconds_per_page=0.0, source=self.source)

    @property
    def rig(self) -> Rig:
        return self.stand.rig

    def start(self) -> None:
        self.stand.start()

    async def submit(self, http: aiohttp.ClientSession, i: int) -> str:
        kiosk = Kiosk(http, self.stand.url)
        return await kiosk.submit(f"{self.tag}-{i:05d}", doc=self.doc, pool=POOL, hold=True)

    async def release(self, http: aiohttp.ClientSession, ref: str) -> None:
        await Kiosk(http, self.stand.url).release(ref)

    def expected_name(self, ref: str, i: int) -> str:
        return f"edgeprint-{ref}"

    def kill(self) -> None:
        self.stand.serve.kill()

    def restart(self) -> None:
        try:
            self.stand.serve.start()  # returns once the JSON "ready" line is written
        except (TimeoutError, RuntimeError) as exc:
            raise BenchError(f"edgeprint did not restart: {exc}") from exc

    async def settled(self, http: aiohttp.ClientSession) -> bool:
        kiosk = Kiosk(http, self.stand.url)
        if await kiosk.ids_in("PRINTING") or await kiosk.ids_in("RELEASED"):
            return False
        return await printers_idle(http, self.rig)

    async def known(self, http: aiohttp.ClientSession, refs: list[str]) -> int:
        jobs = read_store(self.stand.data_dir).jobs
        return sum(1 for r in refs if r in jobs)

    def stop(self) -> None:
        self.stand.stop()


@dataclass
class CupsSide:
    """A private cupsd with one raw queue per printer and a class of them (the pool)."""

    root: Path
    printers: int
    doc_path: Path
    tag: str
    dirty_clean_interval: int | None = None
    name: str = "cups"
    rig: Rig = field(init=False)
    cups: Cupsd = field(init=False)

    def __post_init__(self) -> None:
        self.rig = Rig(self.root / "rig", seconds_per_page=0.0)
        self.cups = Cupsd(self.root / "cups", dirty_clean_interval=self.dirty_clean_interval)

    def start(self) -> None:
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            self.rig.start(self.printers)
            self.cups.port = 0
            self.cups.start()
            for p in self.rig:
                self.cups.add_queue(p.name, p.uri)
            self.cups.add_class(POOL, [p.name for p in self.rig])
            self.cups.persist()
        except (RigError, CupsError) as exc:
            raise BenchError(f"CUPS stand did not start: {exc}") from exc

    async def _ipp(self, http: aiohttp.ClientSession, path: str, body: bytes) -> Any:
        async with http.post(
            f"{self.cups.base_url}{path}", data=body, headers={"Content-Type": "application/ipp"}
        ) as r:
            raw = await r.read()
            if r.status != 200:
                raise BenchError(f"cupsd {path}: HTTP {r.status}")
        return codec.parse(raw)

    def job_name(self, i: int) -> str:
        return f"cups-{self.tag}-{i:05d}"

    async def submit(self, http: aiohttp.ClientSession, i: int) -> str:
        body = ipp_request(
            Operation.PRINT_JOB,
            self.cups.uri_class(POOL),
            [
                attr("requesting-user-name", Tag.NAME, "bench"),
                attr("job-name", Tag.NAME, self.job_name(i)),
                attr("document-format", Tag.MIME_MEDIA_TYPE, "application/pdf"),
            ],
            [attr("job-hold-until", Tag.KEYWORD, "indefinite")],
            self.doc_path.read_bytes(),
        )
        resp = await self._ipp(http, f"/classes/{POOL}", body)
        job_id = first(resp, "job-id")
        if resp.status_code >= 0x100 or job_id is None:
            raise BenchError(f"cupsd Print-Job {i}: status 0x{resp.status_code:04x}")
        return str(job_id)

    async def release(self, http: aiohttp.ClientSession, ref: str) -> None:
        body = ipp_request(
            Operation.RELEASE_JOB,
            self.cups.uri_class(POOL),
            [attr("job-id", Tag.INTEGER, int(ref)), attr("requesting-user-name", Tag.NAME, "x")],
        )
        resp = await self._ipp(http, "/jobs", body)
        if resp.status_code >= 0x100:
            raise BenchError(f"cupsd Release-Job {ref}: status 0x{resp.status_code:04x}")

    def expected_name(self, ref: str, i: int) -> str:
        return self.job_name(i)

    def kill(self) -> None:
        self.cups.kill()

    def restart(self) -> None:
        try:
            self.cups.start()
        except CupsError as exc:
            raise BenchError(f"cupsd did not restart: {exc}") from exc

    def _our_jobs(self) -> list[dict[str, Any]]:
        prefix = f"cups-{self.tag}-"
        return [j for j in self.cups.jobs("all") if str(j["name"]).startswith(prefix)]

    async def settled(self, http: aiohttp.ClientSession) -> bool:
        jobs = await asyncio.to_thread(self._our_jobs)
        if any(j["state"] in ("pending", "processing") for j in jobs):
            return False
        return await printers_idle(http, self.rig)

    async def known(self, http: aiohttp.ClientSession, refs: list[str]) -> int:
        return len(await asyncio.to_thread(self._our_jobs))

    def stop(self) -> None:
        try:
            self.cups.stop()
        finally:
            self.rig.stop()


async def printers_idle(http: aiohttp.ClientSession, rig: Rig) -> bool:
    """Every printer of ``rig`` reports printer-state idle (3) and no job queued."""
    for p in rig:
        wanted = attr("requested-attributes", Tag.KEYWORD, "printer-state", "queued-job-count")
        body = ipp_request(Operation.GET_PRINTER_ATTRIBUTES, p.uri, [wanted])
        url = f"http://127.0.0.1:{p.port}/ipp/print"
        try:
            async with http.post(url, data=body, headers={"Content-Type": "application/ipp"}) as r:
                resp = codec.parse(await r.read())
        except (aiohttp.ClientError, OSError, IppParseError):
            return False
        if first(resp, "printer-state") != 3 or first(resp, "queued-job-count") not in (0, None):
            return False
    return True


# --- one run --------------------------------------------------------------------------


def ground_truth(rig: Rig, expected: set[str]) -> dict[str, int]:
    """Duplicates (extra copies), duplicated jobs, losses and strays, by job-name."""
    names = printed_names(rig)
    return {
        "duplicates": sum(len(ps) - 1 for n, ps in names.items() if n in expected and len(ps) > 1),
        "duplicated_jobs": sum(1 for n, ps in names.items() if n in expected and len(ps) > 1),
        "losses": len(expected - set(names)),
        "unexpected": len(set(names) - expected),
    }


def wait_bound(n_jobs: int, printers: int) -> float:
    return WAIT_BASE_S + WAIT_PER_JOB_S * n_jobs / printers


async def run_side(
    side: EdgeSide | CupsSide, n_jobs: int, printers: int, kill_at: int | None
) -> dict[str, Any]:
    """Submit ``n_jobs`` held, release them all, wait until printed (or, with ``kill_at``,
    SIGKILL the scheduler when that many documents are out, restart, wait until settled)."""
    out: dict[str, Any] = {"jobs": n_jobs}
    async with aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=16),
        timeout=aiohttp.ClientTimeout(total=REQUEST_TIMEOUT_S),
    ) as http:
        t0 = time.time()
        refs: list[str] = await bounded(side.submit(http, i) for i in range(n_jobs))
        t1 = time.time()
        out["submit_s"] = round(t1 - t0, 3)
        expected = {side.expected_name(r, i) for i, r in enumerate(refs)}
        if printed_count(side.rig):
            raise BenchError(f"{side.name}: a held job printed before its release")
        t_release = time.time()
        await bounded(side.release(http, r) for r in refs)
        out["release_s"] = round(time.time() - t_release, 3)
        bound = wait_bound(n_jobs, printers)

        if kill_at is None:

            async def all_printed() -> bool:
                return len(expected & set(printed_names(side.rig))) == len(expected)

            try:
                await until(all_printed, bound, POLL_S, f"{side.name}: not all printed")
            finally:
                out.update(ground_truth(side.rig, expected))
            last = max(
                printed_at(line)
                for p in side.rig
                for line in side.rig.printed(p.name)
                if line.job_name in expected
            )
            out["release_to_all_printed_s"] = round(last - t_release, 3)
            return out

        async def kill_point() -> bool:
            return printed_count(side.rig) >= kill_at

        await until(kill_point, bound, KILL_POLL_S, f"{side.name}: {kill_at} not printed")
        side.kill()
        out["printed_at_kill"] = printed_count(side.rig)
        t_restart = time.time()
        await asyncio.to_thread(side.restart)
        out["restart_to_serving_ms"] = round((time.time() - t_restart) * 1000.0, 1)
        out["known_after_restart"] = await side.known(http, refs)
        try:
            t_settled = await until(
                lambda: side.settled(http), bound, POLL_S, f"{side.name}: not settled"
            )
            out["restart_to_settled_s"] = round(t_settled - t_restart, 3)
            out["settled"] = True
        except BenchError:
            out["restart_to_settled_s"] = None
            out["settled"] = False
        out.update(ground_truth(side.rig, expected))
    return out


# --- repetitions, summary, output -----------------------------------------------------


@dataclass
class Plan:
    """What the benchmark does."""

    jobs: int
    repeat: int
    printers: int
    seed: int


@dataclass
class Work:
    """The work folder, the document, the source copy and every side started (to stop)."""

    root: Path
    doc: bytes
    doc_path: Path
    source: Path
    sides: list[EdgeSide | CupsSide] = field(default_factory=list)


async def measure(work: Work, side: EdgeSide | CupsSide, plan: Plan, kill_at: int | None) -> Any:
    work.sides.append(side)
    t0 = time.monotonic()
    try:
        side.start()
        return await run_side(side, plan.jobs, plan.printers, kill_at)
    finally:
        side.stop()
        print(f"bench:   {side.root.name}: {time.monotonic() - t0:.1f} s", file=sys.stderr)


def one_rep(work: Work, rep: int, plan: Plan) -> dict[str, Any]:
    """One repetition: normal runs, then the crash runs (edgeprint, each CUPS config)."""
    rng = random.Random(f"{plan.seed}-{rep}")
    kill_at = rng.randint(max(1, plan.jobs // 4), max(1, (3 * plan.jobs) // 4))

    def edge(key: str) -> EdgeSide:
        return EdgeSide(
            work.root / f"r{rep}-edge-{key}", plan.printers, work.doc, f"cb{rep}{key}", work.source
        )

    def cups(key: str, config: str) -> CupsSide:
        return CupsSide(
            work.root / f"r{rep}-cups-{key}",
            plan.printers,
            work.doc_path,
            f"r{rep}{key}",
            dirty_clean_interval=CUPS_CONFIGS[config],
        )

    run: dict[str, Any] = {"kill_at": kill_at}
    run["normal"] = {
        "edgeprint": asyncio.run(measure(work, edge("normal"), plan, None)),
        "cups": asyncio.run(measure(work, cups("normal", "defaults"), plan, None)),
    }
    run["crash"] = {"edgeprint": asyncio.run(measure(work, edge("crash"), plan, kill_at))}
    for config in CUPS_CONFIGS:
        run["crash"][f"cups_{config}"] = asyncio.run(
            measure(work, cups(f"crash-{config}", config), plan, kill_at)
        )
    return run


#: (key, label, unit) of the rows of each section.
NORMAL_ROWS = [
    ("submit_s", "submit N held jobs", "s"),
    ("release_s", "release N jobs", "s"),
    ("release_to_all_printed_s", "first release → all printed (prints.log)", "s"),
    ("duplicates", "duplicates (extra copies)", "jobs"),
    ("losses", "losses (never printed)", "jobs"),
]
CRASH_ROWS = [
    ("submit_s", "submit N held jobs", "s"),
    ("release_s", "release N jobs", "s"),
    ("printed_at_kill", "documents printed at the SIGKILL", "jobs"),
    ("restart_to_serving_ms", "restart → serving again", "ms"),
    ("restart_to_settled_s", "restart → settled (nothing pending, printers idle)", "s"),
    ("known_after_restart", "jobs the scheduler knows after the restart", "jobs"),
    ("duplicates", "duplicates (extra copies)", "jobs"),
    ("duplicated_jobs", "jobs printed more than once", "jobs"),
    ("losses", "losses (never printed)", "jobs"),
]


def _ratio(e: Any, c: Any) -> float | None:
    if not isinstance(e, int | float) or not isinstance(c, int | float) or c == 0:
        return None
    return round(e / c, 4)


def build_table(runs: list[dict[str, Any]], n_jobs: int, printers: int) -> list[dict[str, Any]]:
    """The table rows: per section and figure, edgeprint, CUPS and ratio spreads."""
    rows: list[dict[str, Any]] = []
    sections: list[tuple[str, str, str, list[tuple[str, str, str]]]] = [
        ("normal", "cups", "defaults", NORMAL_ROWS),
        *[("crash", f"cups_{c}", c, CRASH_ROWS) for c in CUPS_CONFIGS],
    ]
    for section, cups_key, config, keys in sections:
        title = (
            f"{n_jobs} held jobs, released, pool of {printers} (CUPS defaults)"
            if section == "normal"
            else f"SIGKILL mid-run + restart (vs {CUPS_CONFIG_TITLES[config]})"
        )
        for key, label, unit in keys:
            e = [r[section]["edgeprint"].get(key) for r in runs]
            c = [r[section][cups_key].get(key) for r in runs]
            rows.append(
                {
                    "section": title,
                    "cups_config": config,
                    "figure": label,
                    "key": key,
                    "unit": unit,
                    "edgeprint": spread(e),
                    "cups": spread(c),
                    "ratio": spread([_ratio(a, b) for a, b in zip(e, c, strict=True)]),
                }
            )
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; the exit code (see the module docstring)."""
    ap = parser("cups", __doc__, "12 jobs, 1 repetition (~15 s)")
    ap.add_argument("--repeat", type=int, default=None, help="repetitions (default 3, quick 1)")
    ap.add_argument("--jobs", type=int, default=None, help="jobs per run (default 24, quick 12)")
    ap.add_argument("--printers", type=int, default=PRINTERS, help="printers in the pool (3)")
    ap.add_argument("--seed", type=int, default=None, help="random seed (default: random)")
    args = ap.parse_args(argv)
    plan = Plan(
        jobs=args.jobs or (12 if args.quick else 24),
        repeat=args.repeat if args.repeat is not None else (1 if args.quick else 3),
        printers=args.printers,
        seed=seed(args.seed),
    )
    if not (1 <= plan.repeat <= 20 and 4 <= plan.jobs <= 1000 and 1 <= plan.printers <= 20):
        print("bench: --repeat 1–20, --jobs 4–1000, --printers 1–20", file=sys.stderr)
        return 2
    try:
        tools = cups_tools()
    except CupsError as exc:
        print(f"bench: {exc}", file=sys.stderr)
        return 1
    runs: list[dict[str, Any]] = []
    doc = make_pdf("edgeprint vs CUPS", pad_to=DOC_BYTES)
    with Run("cups", args, snapshot=True) as bench:
        bench.info["cupsd"] = tools["cupsd"]
        bench.work.chmod(0o711)  # cupsd's backends run as user lp and read the spool under it
        doc_path = bench.work / "badge.pdf"
        doc_path.write_bytes(doc)
        doc_path.chmod(0o644)
        assert bench.src is not None
        work = Work(bench.work, doc, doc_path, bench.src)
        try:
            for rep in range(plan.repeat):
                print(f"bench: repetition {rep + 1}/{plan.repeat}", file=sys.stderr)
                one = bench.attempt(
                    f"repetition {rep + 1}", functools.partial(one_rep, work, rep, plan)
                )
                if one is not None:
                    runs.append(one)
        finally:
            for side in work.sides:
                with contextlib.suppress(Exception):
                    side.stop()
        bench.keep |= bool(bench.failures)
    for i, run in enumerate(runs):
        for section in ("normal", "crash"):
            e = run[section]["edgeprint"]
            for k in ("duplicates", "losses", "unexpected"):
                if e.get(k):
                    bench.failures.append(f"repetition {i + 1} {section}: edgeprint {k} = {e[k]}")
            if section == "crash" and not e.get("settled"):
                bench.failures.append(f"repetition {i + 1}: edgeprint did not settle after restart")
    table = build_table(runs, plan.jobs, plan.printers)
    print(
        f"\nN = {plan.jobs} jobs of {len(doc)} bytes, pool of {plan.printers} printers "
        f"(0 s/page), CUPS client ipp, CUPS SIGKILL "
        f"cupsd + backends, seed {plan.seed}; "
        f"kill after k documents, k = {[r['kill_at'] for r in runs]}"
    )
    return bench.finish(
        figures_markdown(table),
        settings={**asdict(plan), "document_bytes": len(doc)},
        table=table,
        raw=runs,
        work_folder=str(bench.work) if bench.keep else None,
    )


if __name__ == "__main__":
    sys.exit(main())
