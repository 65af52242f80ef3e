"""API: edgeprint against bare aiohttp + aiosqlite (:mod:`bench.baseline_server`).

Each run starts a server afresh and drives it from :mod:`bench.loadgen` (own process):
``--submits`` held uploads over ``--concurrency`` connections, a release of each, and
``--burst`` simultaneous releases of one job. Requests/s, p50/p99, server CPU per
request; medians of ``--repeat`` runs, servers alternating; py-spy profile of release.

    .venv/bin/python -m bench.api_bench [--quick]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import select
import signal
import subprocess
import sys
import tarfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from bench.harness import (
    REPO,
    BenchError,
    Run,
    figures_markdown,
    own_cpu,
    parser,
    process_cpu_s,
    profile_text,
    py_spy,
    spread,
    system_busy_s,
)

SERVERS = ("baseline", "edgeprint")
POOL = "lobby"
#: Seconds a server gets to print its ready line.
READY_TIMEOUT_S = 30.0
#: Seconds a child gets to exit after SIGTERM before it is killed.
STOP_TIMEOUT_S = 10.0
#: Other processes using more CPU than this (cores) disturb the figures.
QUIET_CORES = 0.2
#: Longest a phase may issue requests (s).
PHASE_TIMEOUT_S = 60.0
#: Seconds the server's CPU use is sampled after each run, with no request in flight.
IDLE_SAMPLE_S = 1.0
#: A server using more than this many cores with no request in flight works in the background.
IDLE_BUSY_CORES = 0.05


# --- child processes ------------------------------------------------------------------


def _die_with_parent() -> None:
    """In the child before exec: get SIGTERM if the benchmark dies without cleaning up."""
    if sys.platform == "linux":
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


class Children:
    """Child processes started by the benchmark; :meth:`stop_all` ends every one."""

    def __init__(self) -> None:
        self._procs: list[tuple[str, subprocess.Popen[bytes]]] = []

    def start(
        self,
        name: str,
        argv: list[str],
        log: Path,
        *,
        env: dict[str, str] | None = None,
        pipe_stdio: bool = False,
        cwd: Path = REPO,
    ) -> subprocess.Popen[bytes]:
        """Start ``argv`` in ``cwd``; output goes to ``log`` unless ``pipe_stdio``.

        With ``pipe_stdio`` stdin and stdout are pipes and only stderr goes to ``log``.
        The child runs in its own session (Ctrl-C reaches only the benchmark, which
        then stops the child) and gets SIGTERM if the benchmark dies.
        """
        with open(log, "ab") as log_fh:
            proc = subprocess.Popen(
                argv,
                cwd=cwd,
                env=env,
                stdin=subprocess.PIPE if pipe_stdio else subprocess.DEVNULL,
                stdout=subprocess.PIPE if pipe_stdio else log_fh,
                stderr=log_fh,
                start_new_session=True,
                preexec_fn=_die_with_parent,
            )
        self._procs.append((name, proc))
        return proc

    def stop(self, proc: subprocess.Popen[bytes]) -> None:
        """SIGTERM ``proc``, wait up to STOP_TIMEOUT_S, then SIGKILL; forget it."""
        for entry in [e for e in self._procs if e[1] is proc]:
            self._stop_one(*entry)
            self._procs.remove(entry)

    def _stop_one(self, name: str, proc: subprocess.Popen[bytes]) -> None:
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                proc.terminate()
        try:
            proc.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            print(f"bench: {name} (pid {proc.pid}) ignored SIGTERM; killing", file=sys.stderr)
            proc.kill()
            proc.wait()
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()

    def stop_all(self) -> None:
        """SIGTERM every live child (newest first), wait up to STOP_TIMEOUT_S, then SIGKILL."""
        for _, proc in reversed(self._procs):
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    proc.terminate()
        for name, proc in reversed(self._procs):
            self._stop_one(name, proc)
        self._procs.clear()


def _baseline_writer_stats(log: Path) -> dict[str, Any] | None:
    """The baseline's group-commit counters from its ``stopped`` line, with the mean batch."""
    with contextlib.suppress(OSError):
        for line in log.read_text(errors="replace").splitlines():
            if '"stopped"' in line:
                stats: dict[str, Any] = json.loads(line)
                if stats.get("batches"):
                    stats["mean_statements_per_commit"] = stats["statements"] / stats["batches"]
                return stats
    return None


def _log_tail(log: Path, lines: int = 20) -> str:
    with contextlib.suppress(OSError):
        return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
    return ""


def wait_ready(name: str, proc: subprocess.Popen[bytes], log: Path) -> int:
    """The port from the ``{"event": "ready", "port": …}`` line ``proc`` writes to ``log``.

    Raises RuntimeError when the process exits or READY_TIMEOUT_S seconds pass first.
    """
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError):
            for line in log.read_text(errors="replace").splitlines():
                if '"ready"' not in line:
                    continue
                with contextlib.suppress(ValueError):
                    event = json.loads(line)
                    if event.get("event") == "ready":
                        return int(event["port"])
        if proc.poll() is not None:
            raise RuntimeError(f"{name} exited with {proc.returncode}:\n{_log_tail(log)}")
        time.sleep(0.05)
    raise RuntimeError(f"{name} not ready after {READY_TIMEOUT_S} s:\n{_log_tail(log)}")


class LoadGenClient:
    """Sends commands to the :mod:`bench.loadgen` process and reads its answers."""

    def __init__(self, proc: subprocess.Popen[bytes], log: Path) -> None:
        assert proc.stdin is not None
        assert proc.stdout is not None
        self._proc = proc
        self._stdin: IO[bytes] = proc.stdin
        self._stdout: IO[bytes] = proc.stdout
        self._log = log

    def call(self, cmd: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        """Run one command; raises RuntimeError on failure or after ``timeout_s`` seconds."""
        self._stdin.write(json.dumps(cmd).encode() + b"\n")
        self._stdin.flush()
        ready, _, _ = select.select([self._stdout], [], [], timeout_s)
        if not ready:
            raise RuntimeError(f"load generator: no answer to {cmd['op']!r} in {timeout_s} s")
        line = self._stdout.readline()
        if not line:
            raise RuntimeError(f"load generator exited:\n{_log_tail(self._log)}")
        out: dict[str, Any] = json.loads(line)
        if "failed" in out:
            raise RuntimeError(f"load generator {cmd['op']!r} failed: {out['failed']}")
        return out

    def quit(self) -> None:
        """Ask the load generator to exit (it is stopped anyway by :class:`Children`)."""
        with contextlib.suppress(OSError):
            self._stdin.write(b'{"op": "quit"}\n')
            self._stdin.flush()


@dataclass(frozen=True)
class Target:
    """One server under test: its process, log file and URLs."""

    name: str
    proc: subprocess.Popen[bytes]
    log: Path
    submit_url: str
    release_url: str  #: contains ``{id}``

    @property
    def pid(self) -> int:
        """The server's process id."""
        return self.proc.pid

    def check_alive(self, during: str) -> None:
        """Raise RuntimeError, with the end of the server's log, if the server has exited."""
        if self.proc.poll() is not None:
            raise RuntimeError(
                f"{self.name} exited with code {self.proc.returncode} during {during}; "
                f"end of its log:\n{_log_tail(self.log, 40)}"
            )


#: server → one entry per measured run → phase → result.
Runs = dict[str, list[dict[str, dict[str, Any]]]]


# --- setup --------------------------------------------------------------------------


def new_kiosk_token(root: Path = REPO) -> tuple[str, str, str]:
    """A fresh kiosk token from ``edgeprint token new``: (token, its [[tokens]] TOML, sha256).

    ``root`` is the folder holding the edgeprint package to ask.
    """
    out = subprocess.run(
        [sys.executable, "-m", "edgeprint", "token", "new", "--role", "kiosk", "--name", "bench"],
        cwd=root,
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout
    lines = out.splitlines()
    token = next(ln[2:].strip() for ln in lines[1:] if ln.startswith("# "))
    toml = "\n".join(ln for ln in lines if not ln.startswith("#"))
    digest = next(ln.split('"')[1] for ln in lines if ln.startswith("sha256"))
    return token, toml, digest


def edgeprint_config(data_dir: Path, tokens_toml: str, high_water: int) -> str:
    """An edgeprint TOML config: loopback, port 0, FULL sync, printers 01–02 in the pool.

    The printers' addresses refuse connections, so released jobs never leave
    the queue; ``high_water`` (waiting jobs per printer before 503) must hold
    every release of a run.
    """
    return f"""\
[server]
host = "127.0.0.1"
port = 0
data_dir = {json.dumps(str(data_dir))}
# one kiosk token drives the whole load: lift the per-token limit (default 50/second)
rate_limit = "1000000/second"

[store]
synchronous = "FULL"

[[printers]]
name = "printer-01"
uri = "ipp://127.0.0.1:1/ipp/print"
pool = "{POOL}"
high_water = {high_water}

[[printers]]
name = "printer-02"
uri = "ipp://127.0.0.1:2/ipp/print"
pool = "{POOL}"
high_water = {high_water}

{tokens_toml}
"""


def export_edgeprint(rev: str, dest: Path) -> str:
    """Write the ``edgeprint`` package as of git revision ``rev`` under ``dest``; its full sha.

    Lets the benchmark run a commit while the working tree is being edited.
    Raises subprocess.CalledProcessError for an unknown revision.
    """
    sha = subprocess.run(
        ["git", "rev-parse", "--verify", f"{rev}^{{commit}}"],
        cwd=REPO, capture_output=True, text=True, timeout=30, check=True,
    ).stdout.strip()  # fmt: skip
    archive = subprocess.run(
        ["git", "archive", "--format=tar", sha, "edgeprint"],
        cwd=REPO, capture_output=True, timeout=60, check=True,
    ).stdout  # fmt: skip
    dest.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(dest, filter="data")
    return sha


# --- phases -----------------------------------------------------------------------


def _measured(
    gen: LoadGenClient, target: Target, cmd: dict[str, Any], timeout_s: float
) -> dict[str, Any]:
    """Run ``cmd`` against ``target``; add CPU use of the server and of everything else.

    ``other_cpu_cores`` is the machine's busy CPU time during the command that
    was neither the server's nor the load generator's, per second of wall
    time: other users of this machine disturbing the figures.
    """
    target.check_alive(f"before {cmd['op']}")
    cpu0, busy0, t0 = process_cpu_s(target.pid), system_busy_s(), time.monotonic()
    out = gen.call(cmd, timeout_s)
    target.check_alive(cmd["op"])
    cpu = process_cpu_s(target.pid) - cpu0
    busy, elapsed = system_busy_s() - busy0, time.monotonic() - t0
    out["server_cpu_s"] = cpu
    out["server_cpu_us_per_req"] = cpu / out["responses"] * 1e6 if out["responses"] else None
    out["client_cpu_cores"] = out["client_cpu_s"] / out["wall_s"] if out["wall_s"] else None
    out["other_cpu_cores"] = max(0.0, busy - cpu - out["client_cpu_s"]) / elapsed
    return out


def run_round(
    gen: LoadGenClient,
    target: Target,
    args: argparse.Namespace,
    n: int,
    *,
    idle_sample: bool = True,
) -> dict[str, dict[str, Any]]:
    """Phases a, b, c against ``target`` with ``n`` submissions; results by phase.

    Then, with ``idle_sample``, ``idle``: the server's CPU use (cores) over
    IDLE_SAMPLE_S seconds with no request in flight (background work such as
    printer dispatch).
    """
    limit = PHASE_TIMEOUT_S
    meta = {"owner": "bench", "pool": POOL, "hold": True}
    submit_cmd = {
        "op": "submit", "url": target.submit_url, "n": n, "concurrency": args.concurrency,
        "max_seconds": limit, "doc_bytes": args.doc_kib * 1024, "metadata": meta,
    }  # fmt: skip
    sub = _measured(gen, target, submit_cmd, limit + 30)
    ids: list[str] = sub.pop("ids")
    release_cmd = {
        "op": "release", "urls": [target.release_url.format(id=i) for i in ids],
        "concurrency": args.concurrency, "max_seconds": limit,
    }  # fmt: skip
    rel = _measured(gen, target, release_cmd, limit + 30)
    one = gen.call({**submit_cmd, "n": 1, "concurrency": 1}, limit + 30)
    target.check_alive("the contention job's submit")
    if one["statuses"] != {"201": 1}:
        raise RuntimeError(f"{target.name}: could not submit the contention job: {one}")
    burst_cmd = {
        "op": "burst", "url": target.release_url.format(id=one["ids"][0]), "n": args.burst,
        "max_seconds": limit,
    }  # fmt: skip
    con = _measured(gen, target, burst_cmd, limit + 30)
    con["wall_ms"] = con["wall_s"] * 1000.0
    sub["expected"] = {"201": n}
    rel["expected"] = {"200": len(ids)}
    con["expected"] = {"200": 1, "409": args.burst - 1}
    out = {"submit": sub, "release": rel, "contention": con}
    if idle_sample:
        cpu0 = process_cpu_s(target.pid)
        time.sleep(IDLE_SAMPLE_S)
        out["idle"] = {"server_cpu_cores": (process_cpu_s(target.pid) - cpu0) / IDLE_SAMPLE_S}
    return out


def problems_in(server: str, phase: str, run: int, res: dict[str, Any]) -> list[str]:
    """Why a phase result is wrong (unexpected statuses, transport errors, cut short)."""
    out = []
    if res["statuses"] != res["expected"] or res["errors"]:
        out.append(
            f"{server} {phase} run {run}: statuses {res['statuses']} errors {res['errors']}, "
            f"expected {res['expected']}"
        )
    if any(int(code) >= 500 for code in res["statuses"]):
        out.append(f"{server} {phase} run {run}: 5xx answers {res['statuses']}")
    return out


# --- report -------------------------------------------------------------------------

#: (phase, result key, label, digits, ratio?): ratio is edgeprint / baseline of the medians,
#: given for performance figures only (not for the diagnostics).
METRICS: list[tuple[str, str, str, int, bool]] = [
    ("submit", "rate_per_s", "throughput (req/s)", 0, True),
    ("submit", "p50_ms", "p50 latency (ms)", 1, True),
    ("submit", "p99_ms", "p99 latency (ms)", 1, True),
    ("submit", "server_cpu_us_per_req", "server CPU per request (µs)", 0, True),
    ("submit", "client_cpu_cores", "load-generator CPU (cores)", 2, False),
    ("submit", "other_cpu_cores", "other processes' CPU (cores)", 2, False),
    ("release", "rate_per_s", "throughput (req/s)", 0, True),
    ("release", "p50_ms", "p50 latency (ms)", 1, True),
    ("release", "p99_ms", "p99 latency (ms)", 1, True),
    ("release", "server_cpu_us_per_req", "server CPU per request (µs)", 0, True),
    ("release", "client_cpu_cores", "load-generator CPU (cores)", 2, False),
    ("release", "other_cpu_cores", "other processes' CPU (cores)", 2, False),
    ("contention", "wall_ms", "burst wall time (ms)", 0, True),
    ("contention", "p99_ms", "p99 latency (ms)", 0, True),
    ("idle", "server_cpu_cores", "server CPU, no request in flight (cores)", 2, False),
    ("writer", "mean_statements_per_commit", "statements per group commit (mean)", 1, False),
]


def summarize(runs: Runs) -> dict[str, Any]:
    """Per server and metric: median/min/max over runs; ratios edgeprint/baseline of medians."""
    summary: dict[str, Any] = {}
    for server, rounds in runs.items():
        per: dict[str, Any] = {}
        for phase, key, _, _, _ in METRICS:
            values = [r[phase][key] for r in rounds if r.get(phase, {}).get(key) is not None]
            if values:
                per.setdefault(phase, {})[key] = spread(values)
        per.setdefault("contention", {})["statuses"] = [r["contention"]["statuses"] for r in rounds]
        summary[server] = per
    if all(s in summary for s in SERVERS):
        ratios: dict[str, dict[str, float]] = {}
        for phase, key, _, _, with_ratio in METRICS:
            if not with_ratio:
                continue
            base = summary["baseline"].get(phase, {}).get(key)
            edge = summary["edgeprint"].get(phase, {}).get(key)
            if base and edge and base["median"]:
                ratios.setdefault(phase, {})[key] = edge["median"] / base["median"]
        summary["ratio_edgeprint_over_baseline"] = ratios
    return summary


def table_rows(summary: dict[str, Any], args: argparse.Namespace) -> list[dict[str, Any]]:
    """Per phase and metric: edgeprint beside the baseline (median, min–max) and the ratio."""
    names = {
        "submit": f"a. submit {args.doc_kib} KiB PDF",
        "release": "b. release",
        "contention": f"c. {args.burst} releases of one job",
        "idle": "idle after each run",
        "writer": "whole run",
    }
    ratios = summary.get("ratio_edgeprint_over_baseline", {})
    out = []
    for phase, key, label, _, _ in METRICS:
        cell = {s: summary.get(s, {}).get(phase, {}).get(key) for s in SERVERS}
        r = ratios.get(phase, {}).get(key)
        out.append({"figure": f"{names[phase]}: {label}", "unit": "", **cell, "ratio": r})
    for s in SERVERS:
        runs = summary.get(s, {}).get("contention", {}).get("statuses", [])
        seen = {json.dumps(r, sort_keys=True) for r in runs}
        statuses = " / ".join(
            " + ".join(f"{n}×{c}" for c, n in sorted(json.loads(x).items())) for x in sorted(seen)
        )
        out.append({"figure": f"{names['contention']}: statuses (all runs), {s}", "unit": "",
                    "median": statuses, "min": None, "max": None})  # fmt: skip
    return out


# --- main ---------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    p = parser("api", __doc__, "small run (about 20 s)")
    p.add_argument("--repeat", type=int, default=3, help="measured runs per phase (default 3)")
    p.add_argument(
        "--submits", type=int, default=None, help="submissions per run (default 5000, quick 1000)"
    )
    p.add_argument("--concurrency", type=int, default=50, help="connections for phases a, b")
    p.add_argument("--burst", type=int, default=1000, help="simultaneous releases in phase c")
    p.add_argument("--doc-kib", type=int, default=30, help="PDF size in KiB (default 30)")
    p.add_argument(
        "--edgeprint-root",
        type=Path,
        default=REPO,
        help="folder holding the edgeprint package to run (default: this checkout)",
    )
    p.add_argument(
        "--edgeprint-rev",
        default=None,
        metavar="REV",
        help="run edgeprint as committed at git revision REV (e.g. HEAD), not the working tree",
    )
    p.add_argument(
        "--no-profile",
        dest="profile",
        action="store_false",
        help="skip the py-spy profile of edgeprint's release phase (an extra run)",
    )
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; returns the exit code (0 all answers as expected, 1 otherwise)."""
    args = _parser().parse_args(argv)
    if args.submits is None:
        args.submits = 1000 if args.quick else 5000
    args.warmup = min(200, args.submits)
    if min(args.repeat, args.submits, args.concurrency, args.burst, args.doc_kib) < 1:
        print("bench: --repeat, --submits, --concurrency, --burst, --doc-kib must be ≥ 1")
        return 2
    settings = {
        "submits": args.submits, "repeat": args.repeat, "concurrency": args.concurrency,
        "burst": args.burst, "doc_kib": args.doc_kib, "quick": args.quick,
        "phase_timeout_s": PHASE_TIMEOUT_S, "warmup_submits": args.warmup,
        "edgeprint_root": str(args.edgeprint_root),
    }  # fmt: skip
    with Run("api", args) as bench:
        if args.edgeprint_rev is not None:
            src = bench.work / "src"
            try:
                settings["edgeprint_rev"] = export_edgeprint(args.edgeprint_rev, src)
            except subprocess.CalledProcessError as exc:
                print(f"bench: cannot export edgeprint at {args.edgeprint_rev!r}: {exc.stderr}")
                return 2
            args.edgeprint_root = src
            settings["edgeprint_root"] = f"git archive {settings['edgeprint_rev']}"
        children = Children()
        try:
            runs, failures = _run(args, settings, bench.work, children)
        finally:
            children.stop_all()
    bench.failures += failures
    summary = summarize(runs)
    notes = []
    ratios = summary.get("ratio_edgeprint_over_baseline", {})
    for phase in ("submit", "release"):
        r = ratios.get(phase, {}).get("rate_per_s")
        if r is not None:
            verdict = "meets" if r >= 0.5 else "BELOW"
            notes.append(
                f"edgeprint {phase} throughput = {r:.2f} × baseline ({verdict} the ≥ 0.5 goal)"
            )
    for phase in ("submit", "release"):
        for server in SERVERS:
            other = summary.get(server, {}).get(phase, {}).get("other_cpu_cores")
            if other and other["max"] > QUIET_CORES:
                notes.append(
                    f"WARNING: other processes used up to {other['max']:.2f} cores during "
                    f"{server} {phase} runs; figures are disturbed (see --wait-quiet)"
                )
    for server in SERVERS:
        idle = summary.get(server, {}).get("idle", {}).get("server_cpu_cores")
        if idle and idle["max"] > IDLE_BUSY_CORES:
            notes.append(
                f"WARNING: {server} used up to {idle['max']:.2f} cores with no request in "
                "flight: background work competes with the API in every phase"
            )
    profile = settings.pop("release_profile", None)
    return bench.finish(
        figures_markdown(table_rows(summary, args)) + "".join(f"\n\n{n}" for n in notes),
        settings=settings,
        release_profile=profile,
        summary=summary,
        runs=runs,
    )


@dataclass(frozen=True)
class _Credentials:
    token: str
    tokens_toml: str
    sha256: str


def start_server(
    name: str, args: argparse.Namespace, folder: Path, creds: _Credentials, children: Children
) -> tuple[Target, subprocess.Popen[bytes], Path]:
    """Start server ``name`` with an empty data folder under ``folder``: (target, process, log)."""
    folder.mkdir(parents=True)
    log = folder / "server.log"
    if name == "edgeprint":
        cfg = folder / "edgeprint.toml"
        high_water = min(100_000, args.submits + 2 * args.warmup + 10)
        cfg.write_text(edgeprint_config(folder / "data", creds.tokens_toml, high_water))
        argv = [sys.executable, "-m", "edgeprint", "serve", "--config", str(cfg)]
        proc = children.start(name, argv, log, cwd=args.edgeprint_root)
        base = f"http://127.0.0.1:{wait_ready(name, proc, log)}"
        urls = (f"{base}/v1/jobs", base + "/v1/jobs/{id}/release")
        return Target(name, proc, log, *urls), proc, log
    argv = [sys.executable, "-m", "bench.baseline_server", "--data-dir", str(folder / "data")]
    argv += ["--token-sha256", creds.sha256]
    proc = children.start(name, argv, log)
    base = f"http://127.0.0.1:{wait_ready(name, proc, log)}"
    return Target(name, proc, log, f"{base}/submit", base + "/release/{id}"), proc, log


def _run(
    args: argparse.Namespace, settings: dict[str, Any], work: Path, children: Children
) -> tuple[Runs, list[str]]:
    """The measured runs: each on a freshly started server with an empty data folder.

    Every run starts the server, warms it up (``warmup_submits`` jobs through
    phases a–c, not recorded), measures phases a–c, then stops the server; the
    servers alternate order between runs. One load generator serves all runs.
    Data folders are deleted only at the end (about 1 GB for a full run), so no
    mass deletion disturbs the filesystem between runs.
    """
    servers = list(SERVERS)
    creds = _Credentials(*new_kiosk_token(args.edgeprint_root))
    log = work / "loadgen.log"
    env = {**os.environ, "BENCH_TOKEN": creds.token}
    gen_proc = children.start(
        "loadgen", [sys.executable, "-m", "bench.loadgen"], log, env=env, pipe_stdio=True
    )
    gen = LoadGenClient(gen_proc, log)
    print(f"bench: load generator pid {gen_proc.pid}; data in {work}", file=sys.stderr)
    runs: Runs = {s: [] for s in servers}
    failures: list[str] = []
    for r in range(args.repeat):
        order = servers if r % 2 == 0 else servers[::-1]
        for name in order:
            folder = work / f"{name}-{r + 1}"
            target, proc, server_log = start_server(name, args, folder, creds, children)
            print(f"bench: run {r + 1}/{args.repeat} {name} pid {proc.pid}", file=sys.stderr)
            run_round(gen, target, args, settings["warmup_submits"], idle_sample=False)
            res = run_round(gen, target, args, args.submits)
            children.stop(proc)
            if name == "baseline":
                res["writer"] = _baseline_writer_stats(server_log) or {}
            runs[name].append(res)
            for phase, pres in res.items():
                if "expected" in pres:
                    failures += problems_in(name, phase, r + 1, pres)
            print(
                f"bench: run {r + 1}/{args.repeat} {name}: "
                f"submit {res['submit']['rate_per_s']:,.0f}/s "
                f"p99 {res['submit']['p99_ms']:.1f} ms; "
                f"release {res['release']['rate_per_s']:,.0f}/s "
                f"p99 {res['release']['p99_ms']:.1f} ms; "
                f"burst {res['contention']['wall_ms']:.0f} ms {res['contention']['statuses']}",
                file=sys.stderr,
            )
    if "edgeprint" in servers and args.profile:
        try:
            settings["release_profile"] = profile_release(
                gen, args, settings, work, creds, children
            )
        except (BenchError, RuntimeError) as exc:
            failures.append(f"release profile: {exc}")
    gen.quit()
    return runs, failures


def profile_release(
    gen: LoadGenClient,
    args: argparse.Namespace,
    settings: dict[str, Any],
    work: Path,
    creds: _Credentials,
    children: Children,
) -> dict[str, Any]:
    """py-spy on edgeprint during phase b (an extra, unmeasured run): functions by own CPU,
    written to bench/results/release_profile.txt."""
    target, proc, _ = start_server("edgeprint", args, work / "profile", creds, children)
    run_round(gen, target, args, settings["warmup_submits"], idle_sample=False)
    meta = {"owner": "bench", "pool": POOL, "hold": True}
    submit = {
        "op": "submit", "url": target.submit_url, "n": args.submits, "metadata": meta,
        "concurrency": args.concurrency, "max_seconds": PHASE_TIMEOUT_S,
        "doc_bytes": args.doc_kib * 1024,
    }  # fmt: skip
    ids = gen.call(submit, PHASE_TIMEOUT_S + 30)["ids"]
    release = {
        "op": "release", "urls": [target.release_url.format(id=i) for i in ids],
        "concurrency": args.concurrency, "max_seconds": PHASE_TIMEOUT_S,
    }  # fmt: skip
    raw = work / "release.pyspy"
    with py_spy(proc.pid, raw):
        res = gen.call(release, PHASE_TIMEOUT_S + 30)
    children.stop(proc)
    prof = own_cpu(raw)
    title = (
        f"edgeprint under release load: {res['responses']} releases, {args.concurrency} "
        f"connections, {res['rate_per_s']:.0f}/s while sampled by py-spy (sampling slows it)"
    )
    out = args.out.with_name("release_profile.txt")
    out.write_text(profile_text(title, prof))
    print(f"bench: release profile in {out}", file=sys.stderr)
    return {"release": res, "profile": {**prof, "file": out.name}}


if __name__ == "__main__":
    raise SystemExit(main())
