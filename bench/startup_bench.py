"""Start-up of the single-file build (``make dist``) vs the package: spawn → /readyz, size.

.venv/bin/python -m bench.startup_bench [--quick] [--repeat N]
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from bench.harness import REPO, RESULTS, Run, parser, spread
from testbed.config import config_dict, to_toml
from testbed.rig import free_ports

DIST = REPO / "dist" / "edgeprint"
SYSTEM_PYTHON = "/usr/bin/python3"
DEADLINE_S = 30.0


def time_to_ready(command: list[str], work: Path, env: dict[str, str]) -> float:
    """Milliseconds from spawn until GET /readyz answers 200 (a fresh data_dir each time)."""
    port = free_ports(1)[0]
    data = work / f"data-{port}"
    cfg = work / f"config-{port}.toml"
    cfg.write_text(to_toml(config_dict(data, port=port)))
    started = time.perf_counter()
    proc = subprocess.Popen(
        [*command, "serve", "--config", str(cfg)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
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


def main() -> int:
    ap = parser("startup", __doc__, "3 start-ups each")
    ap.set_defaults(out=RESULTS / "dist.json")
    ap.add_argument("--repeat", type=int, default=None, help="start-ups each (7, --quick 3)")
    args = ap.parse_args()
    args.repeat = args.repeat or (3 if args.quick else 7)
    if not DIST.exists() or not Path(SYSTEM_PYTHON).exists():
        print(f"need {DIST} (make dist) and {SYSTEM_PYTHON}", file=sys.stderr)
        return 2
    with Run("startup", args) as run:
        work = run.work
        shiv_root = work / "shiv"
        built_env = {"PATH": "/usr/bin:/bin", "HOME": str(work), "SHIV_ROOT": str(shiv_root)}
        pkg_env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        built = [SYSTEM_PYTHON, str(DIST)]
        package = [sys.executable, "-m", "edgeprint"]
        first = time_to_ready(built, work, built_env)  # unpacks native modules into SHIV_ROOT
        results: dict[str, list[float]] = {"built": [], "package": []}
        for _ in range(args.repeat):
            results["built"].append(time_to_ready(built, work, built_env))
            results["package"].append(time_to_ready(package, work, pkg_env))
    version = subprocess.run(
        [SYSTEM_PYTHON, str(DIST), "--version"],
        capture_output=True,
        text=True,
        check=True,
        env={"PATH": "/usr/bin:/bin", "HOME": tempfile.gettempdir()},
    ).stdout.strip()
    out: dict[str, Any] = {
        "file": str(DIST.relative_to(REPO)),
        "bytes": DIST.stat().st_size,
        "version": version,
        "system_python": subprocess.run(
            [SYSTEM_PYTHON, "--version"], capture_output=True, text=True, check=True
        ).stdout.strip(),
        "first_start_ms": first,
        "built_ready_ms": spread(results["built"]),
        "package_ready_ms": spread(results["package"]),
        "repeat": args.repeat,
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
    return run.finish(table, **out)


if __name__ == "__main__":
    raise SystemExit(main())
