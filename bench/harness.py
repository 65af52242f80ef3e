"""The one harness under every benchmark in bench/: arguments, stand, load, ground truth, stats.

* :func:`parser` — the arguments every benchmark takes (``--quick``, ``--out``, ``--keep``);
  :class:`Run` — one run: its work folder, the machine's description, the stands it must
  stop on any exit (SIGTERM/SIGHUP included), its failures, and its result file
  ``bench/results/<name>.json`` (read by :mod:`bench.report`).
* :class:`Stand` — real ``ippeveprinter`` printers (:class:`testbed.rig.Rig`) and the
  appliance as a child process (:class:`testbed.proc.ServeProcess`) configured for them
  with the code's default settings unless told otherwise; optionally from a copy of
  ``edgeprint/`` taken at the start (others may edit the tree meanwhile).
* :class:`Kiosk` / :class:`Tech` — the API calls the benchmarks make, by token role.
* Ground truth — what came out of each printer (its ``prints.log``, ``server.log``)
  and what the appliance recorded (its SQLite file, read-only, also after a SIGKILL).
* Stats — percentiles, median (min–max) over repetitions, ratios, and the rows of the
  results table; the appliance process as /proc sees it (RSS, CPU, descriptors, threads).

A benchmark never imports another benchmark or ``tests/``; what it shares with the tests
(printers, appliance process, PDFs, configs) is in ``testbed/``.
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
import random
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
from collections.abc import (
    AsyncIterator,
    Awaitable,
    Callable,
    Coroutine,
    Iterable,
    Iterator,
    Sequence,
)
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any, Self, TypeVar

import aiohttp

from edgeprint.config import Config, PrinterConfig
from edgeprint.server import DB_FILE
from testbed.config import KIOSK_TOKEN, TECH_TOKEN, config_dict, to_toml
from testbed.pdfs import make_pdf
from testbed.proc import ServeProcess
from testbed.rig import Printed, Rig, RigError, free_ports

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "bench" / "results"
POOL = "lobby"
#: Uploads in flight at once when a benchmark submits many jobs.
SUBMIT_CONCURRENCY = 4
#: A 503 (queue full) to a submit is retried after this (not Retry-After: it would idle printers).
BACKPRESSURE_RETRY_S = 0.05
FILE_POLL_S = 0.002
API_POLL_S = 0.005
JOB_TIMEOUT_S = 15.0
READY_TIMEOUT_S = 30.0
MIB = 2**20
_PROCESSING_RE = re.compile(r"^\[Job (\d+)\] Processing time was ([0-9.]+) seconds")
T = TypeVar("T")


class BenchError(RuntimeError):
    """A run could not be measured (timeout, unexpected HTTP status, child died)."""


# --- arguments and the run ----------------------------------------------------------


def parser(name: str, doc: str | None, quick: str) -> argparse.ArgumentParser:
    """``python -m bench.<name>_bench`` with ``--quick`` (help ``quick``), ``--out``, ``--keep``."""
    ap = argparse.ArgumentParser(
        prog=f"python -m bench.{name}_bench", description=(doc or "").split("\n\n")[0]
    )
    ap.add_argument("--quick", action="store_true", help=quick)
    ap.add_argument("--out", type=Path, default=RESULTS / f"{name}.json", help="JSON results file")
    ap.add_argument("--keep", action="store_true", help="keep the work folder (logs, DBs)")
    return ap


def seed(value: int | None) -> int:
    """``value``, or a random seed (printed in the results so that a run can be replayed)."""
    return value if value is not None else random.SystemRandom().randrange(10**6)


class Run:
    """One benchmark run: ``with Run("print", args) as run: …`` then ``return run.finish(…)``.

    Inside the block SIGTERM and SIGHUP raise SystemExit; on leaving it every stand made by
    :meth:`stand` is stopped and the work folder removed (kept with ``--keep`` or when
    :attr:`keep` was set, e.g. on an anomaly). With ``snapshot`` the appliance runs from a
    copy of ``edgeprint/`` taken at the start.
    """

    def __init__(self, name: str, args: argparse.Namespace, *, snapshot: bool = False) -> None:
        self.name = name
        self.args = args
        self.snapshot = snapshot
        self.info = machine_info()
        self.failures: list[str] = []
        self.stands: list[Stand] = []
        self.keep = bool(getattr(args, "keep", False))
        self.src: Path | None = None
        self.started = time.monotonic()
        self.work = Path(tempfile.mkdtemp(prefix=f"edgeprint-{name}-bench-"))
        self._signals = signals_as_exit()

    def __enter__(self) -> Self:
        self._signals.__enter__()
        if self.snapshot:
            try:
                self.src = snapshot_source(self.work)
            except BaseException:
                self.__exit__(None, None, None)
                raise
            self.info["edgeprint_source"] = "a copy of edgeprint/ taken at the start"
        return self

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            for stand in self.stands:
                with contextlib.suppress(Exception):
                    stand.stop()
        finally:
            self._signals.__exit__(et, e, tb)
            if self.keep:
                print(f"bench: work folder kept: {self.work}", file=sys.stderr)
            else:
                shutil.rmtree(self.work, ignore_errors=True)
            self.info["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
            self.info["bench_seconds"] = round(time.monotonic() - self.started, 1)

    def stand(self, sub: str, printers: int, **kw: Any) -> Stand:
        """A :class:`Stand` in ``work/sub`` (not started) that the run stops on exit."""
        kw.setdefault("source", self.src)
        stand = Stand(self.work / sub, printers, **kw)
        self.stands.append(stand)
        return stand

    def attempt(self, what: str, fn: Callable[[], T]) -> T | None:
        """``fn()``; a BenchError becomes a failure named ``what`` (None is returned)."""
        try:
            return fn()
        except BenchError as exc:
            self.failures.append(f"{what}: {exc}")
            print(f"bench: {what} failed: {exc}", file=sys.stderr)
            return None

    def attempt_async(self, what: str, coro: Coroutine[Any, Any, T]) -> T | None:
        """:meth:`attempt` of ``asyncio.run(coro)``: each phase gets a fresh event loop."""
        return self.attempt(what, lambda: asyncio.run(coro))

    def finish(self, markdown: str, /, **result: Any) -> int:
        """Print ``markdown`` (the table), the failures and the load; write the results file
        (``result`` with the benchmark's name, command, machine and failures, and its
        ``settings``: the bench module's constants, the arguments, the appliance's
        defaults, and ``result["settings"]`` over them); the exit code."""
        print()
        print(markdown)
        for f in self.failures:
            print(f"FAILED: {f}")
        print(
            f"\n{self.info['bench_seconds']} s; load average {self.info['loadavg_start']} → "
            f"{self.info['loadavg_end']} on {self.info['nproc']} CPUs"
        )
        argv = " ".join(sys.argv[1:])
        main = sys.modules["__main__"]
        consts = {k.lower(): v for k, v in vars(main).items() if k.isupper() and k[0] != "_"}
        settings = {
            **{k: v for k, v in consts.items() if isinstance(v, int | float | str | tuple | dict)},
            **{k: v for k, v in vars(self.args).items() if k not in ("out", "keep")},
            "appliance_defaults": default_settings(),
            **result.pop("settings", {}),
        }
        out = {
            "benchmark": self.name,
            "command": f".venv/bin/python -m bench.{self.name}_bench {argv}".rstrip(),
            "settings": settings,
            **result,
            "machine": self.info,
            "failures": self.failures,
            "table_markdown": markdown,
        }
        path: Path = self.args.out
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(out, indent=2, default=str) + "\n")
        print(f"wrote {path}")
        return 1 if self.failures else 0

    def partial(self, **result: Any) -> None:
        """Rewrite the results file with the figures so far, marked ``"partial": true``
        (a long run stopped later keeps them; :meth:`finish` replaces it at the end)."""
        out = {
            "benchmark": self.name,
            "partial": True,
            "command": f".venv/bin/python -m bench.{self.name}_bench {' '.join(sys.argv[1:])}",
            "settings": {k: v for k, v in vars(self.args).items() if k not in ("out", "keep")},
            **result,
            "machine": {**self.info, "loadavg_now": [round(x, 2) for x in os.getloadavg()]},
            "failures": self.failures,
        }
        path: Path = self.args.out
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(out, indent=2, default=str) + "\n")
        tmp.replace(path)


# --- stats and the results table -----------------------------------------------------


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


def percentiles_ms(seconds: Sequence[float], qs: Sequence[int] = (50, 90, 99)) -> dict[str, Any]:
    """``{"p50_ms": …, "p90_ms": …, "p99_ms": …}`` of durations given in seconds."""
    return {f"p{q}_ms": ms(percentile(seconds, q)) for q in qs}


def spread(values: Sequence[float | None]) -> dict[str, float | None]:
    """Median, min and max of the non-None ``values`` (None when there are none)."""
    vals = [v for v in values if v is not None]
    if not vals:
        return {"median": None, "min": None, "max": None}
    return {"median": statistics.median(vals), "min": min(vals), "max": max(vals)}


def ratio(a: float | None, b: float | None, digits: int = 2) -> float | None:
    """``a / b`` rounded, or None when either is missing or ``b`` is 0."""
    return None if a is None or not b else round(a / b, digits)


def row(figure: str, unit: str, values: Sequence[float | None], note: str = "") -> dict[str, Any]:
    """A row of a benchmark's own ``table``: median/min/max of ``values`` (rounded to 0.1)."""
    s = spread(values)
    return {
        "figure": figure,
        "unit": unit,
        **{k: None if v is None else round(v, 1) for k, v in s.items()},
        "note": note,
    }


def versus(
    figure: str, unit: str, value: float | None, other: str, limit: float | None, note: str = ""
) -> dict[str, Any]:
    """A side-by-side row: edgeprint's ``value`` against ``other`` (a baseline or a goal)."""
    return {
        "figure": figure,
        "unit": unit,
        "edgeprint": value,
        other: limit,
        "ratio": ratio(value, limit),
        "note": note,
    }


#: Keys of a side-by-side row that are not the other side's name.
_ROW_KEYS = ("figure", "unit", "edgeprint", "ratio", "note", "section", "key", "cups_config")


def _cell(v: Any) -> str:
    if isinstance(v, dict) and "median" in v:
        lo, hi = v.get("min"), v.get("max")
        if lo is None or hi is None or lo == hi:
            return _cell(v["median"])
        return f"{_cell(v['median'])} ({_cell(lo)}–{_cell(hi)})"
    if v is None:
        return "–"
    if isinstance(v, int) or (isinstance(v, float) and v.is_integer()):
        return f"{int(v):,}"
    return f"{v:,.{2 if abs(v) < 10 else 1}f}" if isinstance(v, float) else str(v)


def figures_markdown(rows: Sequence[dict[str, Any]]) -> str:
    """A benchmark's own ``table`` rows as Markdown (figure, median, min, max, unit, note);
    a side-by-side row (``edgeprint`` and the other side's key) shows both and the ratio."""
    lines = ["| figure | median (edgeprint) | min (or beside) | max (or ratio) | unit | note |"]
    lines.append("|---|---:|---:|---:|---|---|")
    for r in rows:
        figure = f"{r['section']}: {r['figure']}" if r.get("section") else r["figure"]
        if "edgeprint" in r:
            other = next(k for k in r if k not in _ROW_KEYS)
            ratio = "" if r.get("ratio") is None else f"{_cell(r['ratio'])}×"
            cells = [_cell(r["edgeprint"]), f"{other}: {_cell(r[other])}", ratio]
        else:
            cells = [_cell(r["median"]), _cell(r["min"]), _cell(r["max"])]
        tail = f" | {r.get('unit', '')} | {r.get('note', '')} |"
        lines.append(f"| {figure} | " + " | ".join(cells) + tail)
    return "\n".join(lines)


# --- the machine and the processes -------------------------------------------------------


def machine_info() -> dict[str, Any]:
    """nproc, Python, SQLite and library versions, git commit, date, load."""
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, check=False
    )
    return {
        "nproc": os.cpu_count(),
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "aiohttp": importlib.metadata.version("aiohttp"),
        "aiosqlite": importlib.metadata.version("aiosqlite"),
        "platform": platform.platform(),
        "git_commit": head.stdout.strip(),
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


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds used so far by process ``pid`` (all its threads)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def reaped_cpu_s(pid: int) -> float:
    """CPU seconds of ``pid`` and of the children it has reaped (cutime + cstime): a
    printer and every print command it ran."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()
    return sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def rig_cpu_s(rig: Rig) -> float:
    """CPU seconds used so far by the rig's running printers and their print commands."""
    total = 0.0
    for p in rig:
        if p.pid is not None:
            with contextlib.suppress(OSError, ValueError, IndexError):
                total += reaped_cpu_s(p.pid)
    return total


def system_busy_s() -> float:
    """CPU seconds all CPUs of the machine have been busy (not idle, not iowait) since boot."""
    ticks = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")


def proc_status(pid: int) -> dict[str, float]:
    """VmRSS, its parts (RssAnon: heap; RssFile, RssShmem: mapped files such as SQLite's
    WAL index) and VmHWM (peak) in MiB, and the thread count of ``pid`` (/proc/PID/status)."""
    out: dict[str, float] = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM", "RssAnon", "RssFile", "RssShmem"):
                out[key] = round(int(value.split()[0]) / 1024.0, 1)
            elif key == "Threads":
                out[key] = int(value)
    return out


def open_fds(pid: int) -> int:
    """Open file descriptors of ``pid`` (entries of /proc/PID/fd)."""
    return len(os.listdir(f"/proc/{pid}/fd"))


def descendants(pid: int) -> list[int]:
    """``pid`` and every process below it (render workers, …), from /proc/PID/task/*/children."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        with contextlib.suppress(OSError):
            for task in os.listdir(f"/proc/{p}/task"):
                with contextlib.suppress(OSError):
                    todo += [
                        int(c) for c in Path(f"/proc/{p}/task/{task}/children").read_text().split()
                    ]
    return out


def tree_cpu_s(pid: int) -> float:
    """CPU seconds used so far by ``pid`` and its live descendants."""
    total = 0.0
    for p in descendants(pid):
        with contextlib.suppress(OSError, ValueError, IndexError):
            total += process_cpu_s(p)
    return total


# --- the stand: printers + appliance ------------------------------------------------


@dataclass
class Stand:
    """A fresh rig of printers and an appliance child configured for them.

    The config is the tests' (:func:`testbed.config.config_dict`: tokens, a raised rate
    limit) on a fixed free port, every printer in ``pools`` (round robin) with the extra
    ``printer`` keys, and ``dispatch`` as the only ``[dispatch]`` keys: the code's defaults
    for everything else. ``speeds`` sets single printers' seconds per page.
    """

    root: Path
    printers: int
    seconds_per_page: float = 0.0
    #: the rig's print engine: ``full`` (speed, faults) or ``lean`` (many printers)
    engine: str = "full"
    dispatch: dict[str, Any] = field(default_factory=dict)
    #: A folder holding a copy of ``edgeprint/`` for the appliance to run (None: the tree).
    source: Path | None = None
    speeds: dict[str, float] = field(default_factory=dict)
    server: dict[str, Any] = field(default_factory=dict)
    printer: dict[str, Any] = field(default_factory=dict)
    pools: Sequence[str] = (POOL,)
    #: Whole config sections set as given (``store``, ``cluster``, even ``printers``).
    sections: dict[str, Any] = field(default_factory=dict)
    #: A started stand whose printers this one uses (it starts and stops none itself).
    peer: Stand | None = None
    #: Raster-only printers (edgeprint renders for them) beside the others, in no pool,
    #: named ``raster-printer-NN``; :attr:`raster_rig` is theirs.
    raster: int = 0
    rig: Rig = field(init=False)
    raster_rig: Rig = field(init=False)
    serve: ServeProcess = field(init=False)
    data: str = field(init=False, default="data")
    port: int = 0

    def __post_init__(self) -> None:
        if self.peer is not None:
            self.rig = self.peer.rig
        else:
            self.rig = Rig(
                self.root / "rig", seconds_per_page=self.seconds_per_page, engine=self.engine
            )
        self.raster_rig = Rig(self.root / "raster-rig", formats="image/pwg-raster,image/jpeg")
        self.use_data("data")

    def use_data(self, name: str) -> None:
        """Serve from the data folder ``root/name`` (its own config and log) from the next
        start: two stores in front of one set of printers."""
        self.data = name
        suffix = "" if name == "data" else f"-{name}"
        self.serve = ServeProcess(
            self.root / f"config{suffix}.toml", self.root / f"serve{suffix}.log"
        )
        if self.source is not None:
            # PYTHONSAFEPATH: ``-m`` does not put the cwd (the repository) first on sys.path,
            # so the copy on PYTHONPATH wins over the tree and the editable install.
            self.serve.env = {"PYTHONSAFEPATH": "1", "PYTHONPATH": str(self.source)}
        if self.port:
            self.serve.config_path.write_text(to_toml(self.config()))

    @property
    def data_dir(self) -> Path:
        return self.root / self.data

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        assert self.serve.proc is not None
        return self.serve.proc.pid

    def config(self) -> dict[str, Any]:
        cfg = config_dict(self.data_dir, port=self.port, **self.server)
        cfg["printers"] = [
            {"name": p.name, "uri": p.uri, "pool": self.pools[i % len(self.pools)], **self.printer}
            for i, p in enumerate(self.rig)
        ]
        if self.raster:
            cfg["printers"] += [{"name": f"raster-{p.name}", "uri": p.uri} for p in self.raster_rig]
        if self.dispatch:
            cfg["dispatch"] = dict(self.dispatch)
        return {**cfg, **self.sections}

    def start(self, *, serve: bool = True) -> Self:
        """Start the printers, write the config and (with ``serve``) start the appliance;
        BenchError if anything fails."""
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            if self.peer is None:
                self.rig.start(self.printers)
            if self.raster:
                self.raster_rig.start(self.raster)
            for name, spp in self.speeds.items():
                self.rig.set_speed(name, spp)
            rigs = [self.rig, self.raster_rig] if self.raster else [self.rig]
            avoid = {p.port for r in rigs for p in r} | ({self.peer.port} if self.peer else set())
            self.port = free_ports(1, avoid=avoid)[0]
            self.serve.config_path.write_text(to_toml(self.config()))
            if serve:
                self.serve.start()
        except (RigError, TimeoutError) as exc:
            raise BenchError(f"stand did not start: {exc}") from exc
        except RuntimeError as exc:  # ServeProcess: the appliance exited during start
            if isinstance(exc, BenchError):
                raise
            raise BenchError(f"appliance did not start: {exc}") from exc
        return self

    async def spawn(self, http: aiohttp.ClientSession) -> tuple[float, float]:
        """Start the appliance (not running) and poll /readyz every 5 ms: the unix times of
        its first 200 and of the ready log line (read every 20 ms by ServeProcess)."""
        line: list[float] = []

        def start() -> None:
            self.serve.start()
            line.append(time.time())

        starting = asyncio.ensure_future(asyncio.to_thread(start))
        try:

            async def ready() -> bool:
                if starting.done():
                    starting.result()  # raises if the appliance exited during start
                return await readyz(http, self.url) == 200

            t_readyz = await until(ready, READY_TIMEOUT_S, 0.005, "/readyz not 200")
            await starting
        except (RuntimeError, TimeoutError) as exc:
            if isinstance(exc, BenchError):
                raise
            raise BenchError(f"appliance did not start: {exc}") from exc
        finally:
            if not starting.done():
                with contextlib.suppress(BaseException):
                    await starting
        return t_readyz, line[0]

    def stop_appliance(self) -> None:
        """SIGTERM the appliance (SIGKILL if it lingers)."""
        proc = self.serve.proc
        if proc is not None and proc.poll() is None:
            try:
                self.serve.terminate(timeout_s=15.0)
            except subprocess.TimeoutExpired:
                self.serve.kill()

    def stop(self) -> None:
        """Stop the appliance, then the printers (unless they are ``peer``'s)."""
        try:
            self.stop_appliance()
        finally:
            if self.peer is None:
                self.rig.stop()
            if self.raster:
                self.raster_rig.stop()

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


def snapshot_source(work: Path) -> Path:
    """Copy edgeprint/ into ``work``/src: the appliance runs one version all along, even
    while others edit the tree. Returns the folder to put on PYTHONPATH."""
    src = work / "src"
    shutil.copytree(
        REPO / "edgeprint", src / "edgeprint", ignore=shutil.ignore_patterns("__pycache__")
    )
    env = {**os.environ, "PYTHONSAFEPATH": "1", "PYTHONPATH": str(src)}
    found = subprocess.run(
        [sys.executable, "-c", "import edgeprint.server, edgeprint; print(edgeprint.__file__)"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if not found.stdout.strip().startswith(str(src)):
        raise BenchError(f"the copy of edgeprint/ does not import: {found.stdout}{found.stderr}")
    return src


@contextlib.contextmanager
def appliance_errors(stand: Stand) -> Iterator[None]:
    """An API call that finds nothing listening: BenchError with the appliance's exit and log."""
    try:
        yield
    except (aiohttp.ClientError, OSError) as exc:
        proc = stand.serve.proc
        code = None
        if proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                code = proc.wait(timeout=2.0)  # a dying appliance closes its API first
        state = "still running" if code is None else f"exited {code}"
        tail = stand.serve.tail(12) if stand.serve.log_path.exists() else ""
        raise BenchError(f"appliance {state}: {exc!r}; serve.log tail:\n{tail}") from exc


# --- API clients ---------------------------------------------------------------------


class Kiosk:
    """The few API calls the benchmark makes, as the kiosk token."""

    def __init__(self, http: aiohttp.ClientSession, url: str) -> None:
        self.http = http
        self.url = url
        self.headers = {"Authorization": f"Bearer {KIOSK_TOKEN}"}
        #: 503 answers (queue full) to submits, each retried.
        self.backpressured = 0

    async def submit(self, key: str, *, doc: bytes | None = None, **meta: Any) -> str:
        """POST /v1/jobs with ``doc`` (default: a one-page PDF); the new job's id.

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
            body = make_pdf(key) if doc is None else doc
            form.add_field("document", body, content_type="application/pdf", filename="b.pdf")
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
        """POST /v1/jobs/{id}/release; unix time at which the 200 response was read. A 503
        (queue full) is retried as in :meth:`submit`."""
        deadline = time.monotonic() + JOB_TIMEOUT_S
        url = f"{self.url}/v1/jobs/{job_id}/release"
        while True:
            async with self.http.post(url, headers=self.headers) as r:
                body = await r.read()
                if r.status == 200:
                    return time.time()
                if r.status != 503 or time.monotonic() > deadline:
                    raise BenchError(f"release {job_id}: HTTP {r.status}: {body[:300]!r}")
            self.backpressured += 1
            await asyncio.sleep(BACKPRESSURE_RETRY_S)

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


async def bounded(calls: Iterable[Awaitable[T]], limit: int = SUBMIT_CONCURRENCY) -> list[T]:
    """Await ``calls``, at most ``limit`` at a time; their results in order."""
    sem = asyncio.Semaphore(limit)

    async def one(call: Awaitable[T]) -> T:
        async with sem:
            return await call

    return list(await asyncio.gather(*(one(c) for c in calls)))


@contextlib.asynccontextmanager
async def http_session() -> AsyncIterator[aiohttp.ClientSession]:
    """One aiohttp session for a phase (keep-alive, a few connections)."""
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=16)) as http:
        yield http


class Tech:
    """The API calls made as the technician, and job listings with their bodies."""

    def __init__(self, http: aiohttp.ClientSession, url: str) -> None:
        self.http = http
        self.url = url
        self.headers = {"Authorization": f"Bearer {TECH_TOKEN}"}

    async def printers(self) -> dict[str, dict[str, Any]]:
        """GET /v1/printers: name → printer."""
        async with self.http.get(f"{self.url}/v1/printers", headers=self.headers) as r:
            body = await r.json()
            if r.status != 200:
                raise BenchError(f"GET /v1/printers: HTTP {r.status}: {body}")
            return {str(p["name"]): p for p in body["printers"]}

    async def all_healthy(self, n: int) -> bool:
        ps = await self.printers()
        return len(ps) == n and all(p["healthy"] and p["reachable"] for p in ps.values())

    async def get(self, path: str) -> Any:
        """GET ``path``: the parsed JSON body (bytes for other types); BenchError unless 200."""
        async with self.http.get(f"{self.url}{path}", headers=self.headers) as r:
            body = await r.read()
            if r.status != 200:
                raise BenchError(f"GET {path}: HTTP {r.status}: {body[:300]!r}")
            return json.loads(body) if r.content_type == "application/json" else body

    async def post(self, path: str) -> None:
        """POST ``path`` with no body; BenchError unless 200."""
        async with self.http.post(f"{self.url}{path}", headers=self.headers) as r:
            body = await r.read()
            if r.status != 200:
                raise BenchError(f"POST {path}: HTTP {r.status}: {body[:300]!r}")


async def readyz(http: aiohttp.ClientSession, url: str) -> int:
    """Status of GET /readyz, 0 when nothing answers (yet)."""
    try:
        async with http.get(f"{url}/readyz") as r:
            await r.read()
            return r.status
    except (aiohttp.ClientError, OSError, TimeoutError):
        return 0


# --- ground truth: the printers' logs and the appliance's store ---------------------------


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


def stand_finished(store: Store, job_id: str) -> float | None:
    """Unix time the store recorded ``job_id`` DONE (its ``finished_at``), or None."""
    row = store.jobs.get(job_id)
    if row is None or row["state"] != "DONE" or row["finished_at"] is None:
        return None
    return float(row["finished_at"])


def gaps(stand: Stand, store: Store) -> dict[str, list[float]]:
    """Per printer, between consecutive documents: interval, idle gap and its parts (s)."""
    out: dict[str, list[float]] = {
        k: []
        for k in ("interval", "idle", "detect", "done_to_claim", "claim_to_start", "processing")
    }
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


@dataclass(frozen=True)
class Event:
    """One ``job_events`` row."""

    at: float
    from_state: str | None
    to_state: str
    actor: str
    reason: str | None


def read_events(data_dir: Path) -> dict[str, list[Event]]:
    """Every job's events with actor and reason (read-only; fine after the appliance stopped)."""
    uri = f"file:{data_dir / DB_FILE}?mode=ro"
    out: dict[str, list[Event]] = {}
    with contextlib.closing(sqlite3.connect(uri, uri=True)) as db:
        rows = db.execute(
            "SELECT job_id, at, from_state, to_state, actor, reason FROM job_events ORDER BY seq"
        )
        for job_id, at, f, t, actor, reason in rows:
            out.setdefault(str(job_id), []).append(Event(float(at), f, t, actor, reason))
    return out


def state_at(events: Sequence[Event], t: float) -> Event | None:
    """The job's last event at or before unix time ``t``."""
    last = None
    for e in events:
        if e.at > t:
            break
        last = e
    return last


def log_time(rec: dict[str, Any]) -> float | None:
    """Unix seconds of a JSON log record (ms resolution, truncated)."""
    t = rec.get("time")
    return iso_to_unix(t) if isinstance(t, str) else None


def first_log(
    records: Sequence[dict[str, Any]], event: str, after: float, printer: str, *, has: str = ""
) -> float | None:
    """Time of the first ``event`` of ``printer`` at/after ``after`` (1 ms slack: log times
    are truncated to ms), only among records with a ``has`` field when given."""
    for rec in records:
        t = log_time(rec)
        if rec.get("event") != event or rec.get("printer") != printer:
            continue
        if t is not None and t >= after - 0.001 and (not has or has in rec):
            return t
    return None


def paper(stand: Stand) -> dict[str, list[tuple[str, float]]]:
    """Ground truth: edgeprint job id → [(printer, printed at)] over every printer."""
    out: dict[str, list[tuple[str, float]]] = {}
    for p in stand.rig:
        for line in stand.rig.printed(p.name):
            out.setdefault(edgeprint_id(line.job_name), []).append((p.name, printed_at(line)))
    return out


# --- profiles -------------------------------------------------------------------------


@contextlib.contextmanager
def py_spy(pid: int, raw: Path, rate: int = 250) -> Iterator[None]:
    """Sample ``pid`` with py-spy (``.venv/bin/py-spy``, the bench extra) while in the block;
    collapsed stacks in ``raw``. BenchError when py-spy is missing or fails.

    Only samples of a thread holding the GIL count (``--gil``): on this VM py-spy cannot
    tell a thread blocked in a queue or in epoll from a running one, so without it the
    idle executor threads fill the profile. C code that releases the GIL (SQLite's own
    work, fsync) is therefore not in it.
    """
    exe = Path(sys.executable).with_name("py-spy")
    if not exe.exists():
        raise BenchError(f"{exe} missing: pip install -e '.[bench]'")
    argv = [str(exe), "record", "--pid", str(pid), "--rate", str(rate), "--format", "raw", "--gil"]
    spy = subprocess.Popen(
        [*argv, "--output", str(raw)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    time.sleep(0.5)  # time to attach; samples missed meanwhile only shorten the profile
    try:
        yield
    finally:
        spy.send_signal(signal.SIGINT)  # py-spy writes its output on SIGINT
        try:
            _, err = spy.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            spy.kill()
            raise BenchError("py-spy did not stop") from None
    if not raw.exists():
        raise BenchError(f"py-spy wrote nothing: {err.decode(errors='replace')[-500:]}")


def own_cpu(raw: Path, top: int = 30) -> dict[str, Any]:
    """Functions by own CPU (the innermost frame of each sample), shares of all samples in %,
    from py-spy's collapsed stacks."""
    own: Counter[str] = Counter()
    for line in raw.read_text(errors="replace").splitlines():
        stack, _, count = line.rpartition(" ")
        if stack and count.isdigit():
            own[re.sub(r":\d+\)$", ")", stack.split(";")[-1])] += int(count)
    samples = sum(own.values())
    return {
        "samples": samples,
        "own": [
            {"function": f, "samples": n, "pct": round(100 * n / samples, 1)}
            for f, n in own.most_common(top)
        ],
    }


def profile_text(title: str, prof: dict[str, Any]) -> str:
    """The :func:`own_cpu` summary as text."""
    lines = [title, f"{prof['samples']} samples holding the GIL", "", "own  function (file)"]
    lines += [f"{r['pct']:6.1f} %  {r['function']}" for r in prof["own"]]
    return "\n".join(lines) + "\n"
