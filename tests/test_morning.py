"""bench.morning_bench at CI size: a small opening morning with every fault, printed exactly
once according to the printers' own logs (timing goals live in the benchmark, not here)."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.rig_fixtures import require_ippeveprinter

pytestmark = pytest.mark.slow

PROJECT_ROOT = Path(__file__).resolve().parent.parent
#: The bench's own deadline is 150 s after doors open; this bounds start-up and teardown too.
TIMEOUT_S = 240.0
LINE = re.compile(
    r"morning: 90 badges, capacity used [0-9.]+ \(goal 0\.97\), wait p99 [0-9.]+ s vs ideal "
    r"[0-9.]+ s, wrong stock [0-9]+, duplicates 0, lost 0"
)


def run_bench(out: Path) -> subprocess.CompletedProcess[str]:
    """``python -m bench.morning_bench --ci``; on timeout SIGTERM first (the bench stops its
    printers and appliance on it), SIGKILL only if it lingers."""
    argv = [sys.executable, "-m", "bench.morning_bench", "--ci", "--seed", "23", "--out", str(out)]
    proc = subprocess.Popen(
        argv, cwd=PROJECT_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        stdout, stderr = proc.communicate(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGTERM)
        try:
            stdout, stderr = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            stdout, stderr = proc.communicate()
        pytest.fail(f"morning bench still running after {TIMEOUT_S:g} s:\n{stderr[-3000:]}")
    return subprocess.CompletedProcess(argv, proc.returncode, stdout, stderr)


def test_a_small_morning_prints_every_badge_once_through_every_fault(tmp_path: Path) -> None:
    require_ippeveprinter()
    out = tmp_path / "morning.json"
    done = run_bench(out)
    why = f"stdout:\n{done.stdout[-3000:]}\nstderr:\n{done.stderr[-3000:]}"
    lines = done.stdout.strip().splitlines()
    assert lines, why
    assert LINE.fullmatch(lines[-1]), why
    assert sum(1 for x in lines if x.startswith("morning: ")) == 1, why
    r = json.loads(out.read_text())["summary"]
    # ground truth: every badge accepted, printed once, nothing printed that was not asked for
    assert (r["accepted"], r["printed"], r["duplicates"], r["losses"]) == (90, 90, 0, 0), why
    assert r["states"] == {"DONE": 90}, why
    # every fault of the morning happened, and the appliance came back
    assert sorted(w["kind"] for w in r["windows"]) == ["appliance", "power", "roll", "stock"]
    assert len(r["appliance_restart_to_ready_s"]) == 1
    assert done.returncode == 0, why
