"""Restart → serving, this tree beside git revision REV, on one stored data folder.

Each start spawns ``python -m edgeprint serve`` on the same data folder and config (e.g.
20 printers and 100,000 jobs: ``bench.resources_bench --keep`` leaves one in its work
folder, ``stand/data`` and ``stand/config.toml``), and takes the milliseconds to the first
200 of ``GET /readyz`` and the appliance's CPU (user + system) at that moment. The two
trees alternate (which goes first alternates too); each has its own bytecode cache, filled
by one unmeasured start, so neither compiles. CPU is the figure to compare on a shared
machine: the wall time follows the others' load.

    .venv/bin/python -m bench.restart_bench --data DIR --config TOML [--versus REV] [--repeat N]
"""

from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from bench.harness import REPO, Run, parser, spread
from testbed.rig import free_ports

DEADLINE_S = 60.0


def _export(rev: str, into: Path) -> Path:
    """``edgeprint/`` of git revision ``rev`` under ``into``."""
    into.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(
        ["git", "archive", rev, "edgeprint"], cwd=REPO, capture_output=True, check=True
    )
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into


def start(tree: Path, config: str, data: Path, work: Path) -> tuple[float, float]:
    """One start of ``tree``'s appliance: ms to /readyz 200, its CPU ms then."""
    port = free_ports(1)[0]
    cfg = work / f"config-{port}.toml"
    text = re.sub(r'(?m)^data_dir = ".*"$', f'data_dir = "{data}"', config, count=1)
    cfg.write_text(re.sub(r"(?m)^port = .*$", f"port = {port}", text, count=1))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(PYTHONPATH=str(tree), PYTHONPYCACHEPREFIX=str(work / f"pyc-{tree.name}"))
    argv = [sys.executable, "-m", "edgeprint", "serve", "--config", str(cfg)]
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        argv, cwd=tree, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        while time.perf_counter() - t0 < DEADLINE_S:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=1) as r:
                    if r.status == 200:
                        ready_ms = (time.perf_counter() - t0) * 1e3
                        stat = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1]
                        fields = stat.split()
                        ticks = int(fields[11]) + int(fields[12])
                        return ready_ms, ticks * 1e3 / os.sysconf("SC_CLK_TCK")
            except OSError:
                time.sleep(0.005)  # polling for the port to open, bounded by the deadline
            if proc.poll() is not None:
                raise RuntimeError(f"{tree}: the appliance exited {proc.returncode}")
        raise TimeoutError(f"{tree}: not ready in {DEADLINE_S} s")
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        cfg.unlink()


def main() -> int:
    ap = parser("restart", __doc__, "3 starts each")
    ap.add_argument("--data", type=Path, required=True, help="the data folder to start on")
    ap.add_argument("--config", type=Path, required=True, help="its config (data_dir replaced)")
    ap.add_argument("--versus", metavar="REV", default="main", help="the other tree (main)")
    ap.add_argument("--repeat", type=int, default=None, help="starts each (7, --quick 3)")
    args = ap.parse_args()
    args.repeat = args.repeat or (3 if args.quick else 7)
    config = args.config.read_text()
    with Run("restart", args) as run:
        trees = {"this": REPO, args.versus: _export(args.versus, run.work / "versus")}
        for tree in trees.values():
            start(tree, config, args.data, run.work)  # fills its bytecode cache
        got: dict[str, list[tuple[float, float]]] = {name: [] for name in trees}
        for i in range(args.repeat):
            for name in list(trees) if i % 2 == 0 else list(trees)[::-1]:
                got[name].append(start(trees[name], config, args.data, run.work))
    out: dict[str, Any] = {
        name: {"ready_ms": spread([r for r, _ in v]), "cpu_ms": spread([c for _, c in v])}
        for name, v in got.items()
    }
    cpu = {name: statistics.median(c for _, c in v) for name, v in got.items()}
    ready = {name: statistics.median(r for r, _ in v) for name, v in got.items()}
    rows = [
        {
            "figure": f"restart → /readyz 200 on {args.data.name}: appliance CPU at ready",
            "unit": "ms",
            "edgeprint": out["this"]["cpu_ms"],
            args.versus: out[args.versus]["cpu_ms"],
            "ratio": cpu["this"] / cpu[args.versus],
            "note": f"{args.repeat} starts each, alternating",
        },
        {
            "figure": f"restart → /readyz 200 on {args.data.name}: wall time",
            "unit": "ms",
            "edgeprint": out["this"]["ready_ms"],
            args.versus: out[args.versus]["ready_ms"],
            "ratio": ready["this"] / ready[args.versus],
            "note": "follows the machine's load",
        },
    ]
    table = "\n".join(
        ["| figure | this tree | " + args.versus + " | ratio |", "|---|---|---|---|"]
        + [
            f"| {r['figure']} | {r['edgeprint']['median']:.0f} ms | "
            f"{r[args.versus]['median']:.0f} ms | {r['ratio']:.2f} |"
            for r in rows
        ]
    )
    return run.finish(table, summary=out, table=rows, versus=args.versus)


if __name__ == "__main__":
    raise SystemExit(main())
