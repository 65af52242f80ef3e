"""Start-up of the single-file build vs the package: spawn → /readyz 200, and the file's size.

Run ``make dist`` first. ``python -m bench.startup_bench [--repeat N]`` prints a
Markdown table and writes bench/results/dist.json. Times in milliseconds,
medians over N runs (default 7) with min/max; the built file is run with
Debian's own /usr/bin/python3, the package with the development interpreter.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DIST = ROOT / "dist" / "edgeprint"
SYSTEM_PYTHON = "/usr/bin/python3"
DEADLINE_S = 30.0

sys.path.insert(0, str(ROOT))
from testbed.config import config_dict, to_toml  # noqa: E402


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def time_to_ready(command: list[str], work: Path, env: dict[str, str]) -> float:
    """Milliseconds from spawn until GET /readyz answers 200 (a fresh data_dir each time)."""
    port = _free_port()
    data = work / f"data-{port}"
    cfg = work / f"config-{port}.toml"
    cfg.write_text(to_toml(config_dict(data, port=port)))
    started = time.perf_counter()
    proc = subprocess.Popen(
        [*command, "serve", "--config", str(cfg)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
    )  # fmt: skip
    try:
        while time.perf_counter() - started < DEADLINE_S:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=1) as r:
                    if r.status == 200:
                        return (time.perf_counter() - started) * 1e3
            except OSError:
                time.sleep(0.005)  # polling for the port to open, bounded by the deadline
            if proc.poll() is not None:
                raise RuntimeError(f"{command} exited {proc.returncode}")
        raise TimeoutError(f"{command} not ready in {DEADLINE_S} s")
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        shutil.rmtree(data, ignore_errors=True)


def spread(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--repeat", type=int, default=7)
    args = p.parse_args()
    if not DIST.exists() or not Path(SYSTEM_PYTHON).exists():
        print(f"need {DIST} (make dist) and {SYSTEM_PYTHON}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        shiv_root = work / "shiv"
        built_env = {"PATH": "/usr/bin:/bin", "HOME": str(work), "SHIV_ROOT": str(shiv_root)}
        pkg_env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        built = [SYSTEM_PYTHON, str(DIST)]
        package = [sys.executable, "-m", "edgeprint"]
        first = time_to_ready(built, work, built_env)  # unpacks native modules into SHIV_ROOT
        results = {"built": [], "package": []}
        for _ in range(args.repeat):
            results["built"].append(time_to_ready(built, work, built_env))
            results["package"].append(time_to_ready(package, work, pkg_env))
    version = subprocess.run(
        [SYSTEM_PYTHON, str(DIST), "--version"], capture_output=True, text=True, check=True,
        env={"PATH": "/usr/bin:/bin", "HOME": tempfile.gettempdir()},
    ).stdout.strip()  # fmt: skip
    out: dict[str, Any] = {
        "file": str(DIST.relative_to(ROOT)),
        "bytes": DIST.stat().st_size,
        "version": version,
        "system_python": subprocess.run(
            [SYSTEM_PYTHON, "--version"], capture_output=True, text=True, check=True
        ).stdout.strip(),
        "first_start_ms": first,
        "built_ready_ms": spread(results["built"]),
        "package_ready_ms": spread(results["package"]),
        "repeat": args.repeat,
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "nproc": os.cpu_count(),
    }
    ratio = out["built_ready_ms"]["median"] / out["package_ready_ms"]["median"]
    table = "\n".join(
        [
            "| figure | value |",
            "|---|---|",
            f"| {out['file']} size | {out['bytes'] / 2**20:.1f} MiB ({out['bytes']:,} B) |",
            f"| `--version` | {version} |",
            f"| built file, first start (unpacks native modules) → /readyz | {first:.0f} ms |",
            "| built file ({}) → /readyz, median [min–max] | {:.0f} [{:.0f}–{:.0f}] ms |".format(
                out["system_python"], *out["built_ready_ms"].values()
            ),
            "| package (python -m edgeprint) → /readyz, median [min–max] | "
            "{:.0f} [{:.0f}–{:.0f}] ms |".format(*out["package_ready_ms"].values()),
            f"| built ÷ package | {ratio:.2f} |",
        ]
    )
    print(table)
    out["table_markdown"] = table
    results_dir = ROOT / "bench" / "results"
    results_dir.mkdir(parents=True, exist_ok=True)
    (results_dir / "dist.json").write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {results_dir / 'dist.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
