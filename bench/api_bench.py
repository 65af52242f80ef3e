"""API: edgeprint against bare aiohttp + aiosqlite (:mod:`bench.baseline_server`), and
edgeprint over TLS (``[server] tls = "self-signed"``) against edgeprint over plain HTTP.

Each run starts a server afresh and drives it from :mod:`bench.loadgen` (own process):
``--submits`` held uploads over ``--concurrency`` connections, a release of each, and
``--burst`` simultaneous releases of one job. Requests/s, p50/p99, server CPU per
request; medians of ``--repeat`` runs, servers alternating; py-spy profile of release.
Over TLS the load generator trusts exactly the appliance's self-signed certificate (as a
pinning kiosk does) and keeps its connections alive; each burst request is a new
connection (a handshake each).

    .venv/bin/python -m bench.api_bench [--quick]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import select
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from bench.harness import (
    POOL,
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
)
from edgeprint import certificates
from edgeprint.api.auth import token_digest
from testbed.config import KIOSK_TOKEN, config_dict, to_toml

SERVERS = ("baseline", "edgeprint", "edgeprint-tls")
#: Seconds a server gets to print its ready line.
READY_TIMEOUT_S = 30.0
#: Longest a phase may issue requests (s).
PHASE_TIMEOUT_S = 60.0
#: (phase, figure): medians over the runs, and edgeprint / baseline of the medians.
METRICS = [
    ("submit", "rate_per_s"),
    ("submit", "p50_ms"),
    ("submit", "p99_ms"),
    ("submit", "server_cpu_us_per_req"),
    ("release", "rate_per_s"),
    ("release", "p50_ms"),
    ("release", "p99_ms"),
    ("release", "server_cpu_us_per_req"),
    ("release", "client_cpu_us_per_req"),
    ("contention", "wall_ms"),
]
#: Issue 26's goal: release and submit rates over TLS at least this share of plain HTTP's.
TLS_GOAL = 0.8


class LoadGen:
    """The :mod:`bench.loadgen` process: a command per line on its stdin, an answer per line."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stdin is not None
        assert proc.stdout is not None
        self.stdin: IO[bytes] = proc.stdin
        self.stdout: IO[bytes] = proc.stdout

    def call(self, cmd: dict[str, Any]) -> dict[str, Any]:
        """Run one command; BenchError on failure or after PHASE_TIMEOUT_S + 30 s."""
        self.stdin.write(json.dumps(cmd).encode() + b"\n")
        self.stdin.flush()
        if not select.select([self.stdout], [], [], PHASE_TIMEOUT_S + 30)[0]:
            raise BenchError(f"load generator: no answer to {cmd['op']!r}")
        out: dict[str, Any] = json.loads(self.stdout.readline() or b'{"failed": "exited"}')
        if "failed" in out:
            raise BenchError(f"load generator {cmd['op']!r} failed: {out['failed']}")
        return out


@dataclass(frozen=True)
class Target:
    """One server under test: its process and URLs."""

    proc: subprocess.Popen[bytes]
    submit_url: str
    release_url: str  #: contains ``{id}``
    cafile: str | None = None  #: the certificate the load generator trusts (https)


@contextlib.contextmanager
def child(argv: list[str], log: Path, *, pipes: bool = False) -> Iterator[subprocess.Popen[bytes]]:
    """``argv`` running while in the block (stderr, and stdout unless ``pipes``, to ``log``)."""
    with open(log, "ab") as fh:
        proc = subprocess.Popen(
            argv,
            cwd=REPO,
            env={**os.environ, "BENCH_TOKEN": KIOSK_TOKEN},
            stdin=subprocess.PIPE if pipes else subprocess.DEVNULL,
            stdout=subprocess.PIPE if pipes else fh,
            stderr=fh,
        )
    try:
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def wait_ready(proc: subprocess.Popen[bytes], log: Path, scheme: str = "http") -> str:
    """``http://127.0.0.1:PORT`` from the ``{"event": "ready", "port": …}`` line in ``log``."""
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        for line in log.read_text(errors="replace").splitlines():
            with contextlib.suppress(ValueError):
                event = json.loads(line)
                if isinstance(event, dict) and event.get("event") == "ready":
                    return f"{scheme}://127.0.0.1:{event['port']}"
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    raise BenchError(f"{log.parent.name} not ready:\n{log.read_text(errors='replace')[-2000:]}")


@contextlib.contextmanager
def server(name: str, folder: Path, high_water: int) -> Iterator[Target]:
    """Server ``name`` on an empty data folder: edgeprint's printers refuse connections, so
    released jobs never leave the queue (``high_water`` holds every release of a run)."""
    folder.mkdir(parents=True)
    log = folder / "server.log"
    cafile = None
    if name.startswith("edgeprint"):
        cfg = config_dict(folder / "data")
        cfg["store"] = {"synchronous": "FULL"}
        two = cfg["printers"][:2]  # printer-01 and -02, both in the pool
        cfg["printers"] = [{**p, "pool": POOL, "high_water": high_water} for p in two]
        if name == "edgeprint-tls":
            cert = certificates.make_self_signed(
                folder / "tls.crt", folder / "tls.key", ["127.0.0.1"]
            )
            cfg["server"] = {**cfg["server"], "tls": "self-signed"}  # tls.crt, tls.key beside
            cafile = str(cert.cert_file)
        (folder / "edgeprint.toml").write_text(to_toml(cfg))
        argv = ["-m", "edgeprint", "serve", "--config", str(folder / "edgeprint.toml")]
        paths = ("/v1/jobs", "/v1/jobs/{id}/release")
    else:
        argv = ["-m", "bench.baseline_server", "--data-dir", str(folder / "data")]
        argv += ["--token-sha256", token_digest(KIOSK_TOKEN)]
        paths = ("/submit", "/release/{id}")
    with child([sys.executable, *argv], log) as proc:
        url = wait_ready(proc, log, "https" if cafile else "http")
        yield Target(proc, url + paths[0], url + paths[1], cafile)


def submit_cmd(target: Target, args: argparse.Namespace, n: int) -> dict[str, Any]:
    """The load generator's command for ``n`` held uploads to ``target``."""
    return {
        "op": "submit",
        "url": target.submit_url,
        "n": n,
        "concurrency": args.concurrency,
        "max_seconds": PHASE_TIMEOUT_S,
        "doc_bytes": args.doc_kib * 1024,
        "metadata": {"owner": "bench", "pool": POOL, "hold": True},
        "cafile": target.cafile,
    }


def release_cmd(target: Target, args: argparse.Namespace, ids: list[str]) -> dict[str, Any]:
    """The load generator's command releasing each of ``ids`` once."""
    return {
        "op": "release",
        "urls": [target.release_url.format(id=i) for i in ids],
        "concurrency": args.concurrency,
        "max_seconds": PHASE_TIMEOUT_S,
        "cafile": target.cafile,
    }


def measured(gen: LoadGen, target: Target, cmd: dict[str, Any]) -> dict[str, Any]:
    """Run ``cmd`` against ``target``; with the server's CPU per response."""
    cpu0 = process_cpu_s(target.proc.pid)
    out = gen.call(cmd)
    if target.proc.poll() is not None:
        raise BenchError(f"server exited with {target.proc.returncode} during {cmd['op']}")
    cpu = process_cpu_s(target.proc.pid) - cpu0
    out["server_cpu_us_per_req"] = cpu / out["responses"] * 1e6 if out["responses"] else None
    return out


def run_round(gen: LoadGen, target: Target, args: argparse.Namespace, n: int) -> dict[str, Any]:
    """Phases submit, release and contention against ``target``; results by phase. BenchError
    on an unexpected status or a transport error."""
    submit = submit_cmd(target, args, n)
    sub = measured(gen, target, submit)
    ids = sub.pop("ids")
    release = release_cmd(target, args, ids)
    rel = measured(gen, target, release)
    one = gen.call({**submit, "n": 1, "concurrency": 1})["ids"]
    burst = {
        "op": "burst",
        "url": target.release_url.format(id=one[0]),
        "n": args.burst,
        "max_seconds": PHASE_TIMEOUT_S,
        "cafile": target.cafile,
    }
    con = measured(gen, target, burst)
    con["wall_ms"] = con["wall_s"] * 1000.0
    expected = [
        (sub, {"201": n}),
        (rel, {"200": len(ids)}),
        (con, {"200": 1, "409": args.burst - 1}),
    ]
    for res, wanted in expected:
        statuses = {code: count for code, count in wanted.items() if count}
        if res["statuses"] != statuses or res["errors"]:
            raise BenchError(f"statuses {res['statuses']} errors {res['errors']}, not {statuses}")
    return {"submit": sub, "release": rel, "contention": con}


def summarize(runs: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """Per server and metric: median/min/max over runs; ratios edgeprint/baseline and
    edgeprint over TLS / over plain HTTP of the medians."""
    summary: dict[str, Any] = {}
    for name, rounds in runs.items():
        per: dict[str, Any] = {}
        for phase, key in METRICS:
            per.setdefault(phase, {})[key] = spread([r[phase][key] for r in rounds])
        per["contention"]["statuses"] = [r["contention"]["statuses"] for r in rounds]
        summary[name] = per
    for label, (top, bottom) in RATIOS.items():
        ratios: dict[str, dict[str, float]] = {}
        for phase, key in METRICS:
            a, b = (summary[s][phase][key]["median"] for s in (top, bottom))
            if a is not None and b:
                ratios.setdefault(phase, {})[key] = a / b
        summary[label] = ratios
    return summary


#: The ratios of medians the summary gives: (numerator server, denominator server).
RATIOS = {
    "ratio_edgeprint_over_baseline": ("edgeprint", "baseline"),
    "ratio_tls_over_plain": ("edgeprint-tls", "edgeprint"),
}


def profile_release(gen: LoadGen, args: argparse.Namespace, work: Path) -> dict[str, Any]:
    """py-spy on edgeprint during the release phase of an extra, unmeasured run: functions by
    own CPU, also written to bench/results/release_profile.txt."""
    with server("edgeprint", work / "profile", args.submits + 10) as target:
        release = release_cmd(target, args, gen.call(submit_cmd(target, args, args.submits))["ids"])
        with py_spy(target.proc.pid, work / "release.pyspy"):
            res = gen.call(release)
    prof = own_cpu(work / "release.pyspy")
    title = (
        f"edgeprint under release load: {res['responses']} releases, {args.concurrency} "
        f"connections, {res['rate_per_s']:.0f}/s while sampled by py-spy (sampling slows it)"
    )
    out = args.out.with_name("release_profile.txt")
    out.write_text(profile_text(title, prof))
    return {"release": res, "profile": {**prof, "file": out.name}}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; returns the exit code (0 all answers as expected, 1 otherwise)."""
    p = parser("api", __doc__, "small run (about 20 s)")
    p.add_argument("--repeat", type=int, default=3, help="measured runs per server (default 3)")
    p.add_argument("--submits", type=int, default=None, help="per run (default 5000, quick 1000)")
    p.add_argument("--concurrency", type=int, default=50, help="connections for submit, release")
    p.add_argument("--burst", type=int, default=1000, help="simultaneous releases of one job")
    p.add_argument("--doc-kib", type=int, default=30, help="PDF size in KiB (default 30)")
    p.add_argument("--no-profile", dest="profile", action="store_false", help="skip py-spy")
    args = p.parse_args(argv)
    args.submits = args.submits or (1000 if args.quick else 5000)
    warmup = min(200, args.submits)
    if min(args.repeat, args.submits, args.concurrency, args.burst, args.doc_kib) < 1:
        print("bench: --repeat, --submits, --concurrency, --burst, --doc-kib must be ≥ 1")
        return 2
    runs: dict[str, list[dict[str, Any]]] = {s: [] for s in SERVERS}
    profile = None
    with Run("api", args) as bench:
        loadgen = [sys.executable, "-m", "bench.loadgen"]
        with child(loadgen, bench.work / "loadgen.log", pipes=True) as proc:
            gen = LoadGen(proc)
            for r in range(args.repeat):
                for name in SERVERS if r % 2 == 0 else SERVERS[::-1]:
                    high_water = args.submits + 2 * warmup + 10
                    with server(name, bench.work / f"{name}-{r + 1}", high_water) as target:
                        bench.attempt(
                            f"{name} warm-up", lambda: run_round(gen, target, args, warmup)
                        )
                        res = bench.attempt(
                            f"{name} run {r + 1}",
                            lambda: run_round(gen, target, args, args.submits),
                        )
                    if res is not None:
                        runs[name].append(res)
                        print(
                            f"bench: {name} run {r + 1}: "
                            + ", ".join(f"{ph} {res[ph][k]:,.0f} {k}" for ph, k in METRICS),
                            file=sys.stderr,
                        )
            if args.profile:
                profile = bench.attempt(
                    "release profile", lambda: profile_release(gen, args, bench.work)
                )
    if not all(runs.values()):
        return bench.finish("no complete run", runs=runs)
    summary = summarize(runs)
    ratios = summary["ratio_edgeprint_over_baseline"]
    rows = [
        {
            "figure": f"{phase}: {key}",
            "unit": "",
            **{s: summary[s][phase][key] for s in ("edgeprint", "baseline")},
            "ratio": ratios.get(phase, {}).get(key),
        }
        for phase, key in METRICS
    ]
    tls = summary["ratio_tls_over_plain"]
    rows += [
        {
            "figure": f"over TLS: {phase}: {key}",
            "unit": "",
            "edgeprint": summary["edgeprint-tls"][phase][key],
            "plain http": summary["edgeprint"][phase][key],
            "ratio": tls.get(phase, {}).get(key),
            "note": f"goal ≥ {TLS_GOAL}×" if key == "rate_per_s" else "",
        }
        for phase, key in METRICS
    ]
    return bench.finish(figures_markdown(rows), release_profile=profile, summary=summary, runs=runs)


if __name__ == "__main__":
    raise SystemExit(main())
