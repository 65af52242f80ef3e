"""``edgeprint release JOB_ID [--printer P | --pool Q] [--pin PIN]`` (issue 25 item 2).

On real printers: a HELD job released to a chosen printer prints once, there; a job that is
not HELD gets the API's 409 words, an unknown id its 404 words, and nothing changes. The CLI
runs as a real process (its exit code and streams are the point).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from testbed.rig import Rig
from tests.conftest import KIOSK_TOKEN, TECH_TOKEN, Appliance
from tests.printing import appliance, assert_each_printed_once, rig_config

ROOT = Path(__file__).resolve().parents[1]


def _edgeprint(url: str, *argv: str, token: str = TECH_TOKEN) -> subprocess.CompletedProcess[str]:
    """``python -m edgeprint ARGV`` against ``url``, the token in the environment."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("EDGEPRINT_")}
    env.update(EDGEPRINT_URL=url, EDGEPRINT_TOKEN=token)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    return subprocess.run(
        [sys.executable, "-m", "edgeprint", *argv],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
        env=env,
    )


async def _run(url: str, *argv: str, token: str = TECH_TOKEN) -> subprocess.CompletedProcess[str]:
    return await asyncio.to_thread(_edgeprint, url, *argv, token=token)


async def test_release_prints_once_on_the_chosen_printer_then_409_words(
    tmp_path: Path, printers: Rig
) -> None:
    """A HELD job for the pool, released to printer-02 by the CLI: printed once, there. A
    second release is the 409's words, exit 1; --json prints the API's JSON."""
    async with appliance(rig_config(tmp_path / "data", printers)) as (_, kiosk):
        job = await kiosk.submit("cli-release-0001", pool="lobby")
        assert job["state"] == "HELD"
        proc = await _run(kiosk.url, "release", job["id"], "--printer", "printer-02")
        assert (proc.returncode, proc.stderr) == (0, "")
        assert proc.stdout == f"released {job['id']}: now RELEASED, for printer printer-02\n"
        [done] = await kiosk.wait_states([job["id"]], {"DONE"})
        assert done["printed_on"] == "printer-02"

        proc = await _run(kiosk.url, "release", job["id"])
        assert proc.returncode == 1
        assert proc.stdout == ""
        assert proc.stderr == (
            f"edgeprint: 409 Conflict: cannot release job {job['id']}: it is DONE\n"
        )
        assert (await kiosk.job(job["id"]))["state"] == "DONE"

        other = await kiosk.submit("cli-release-0002", printer="printer-01")
        proc = await _run(kiosk.url, "release", other["id"], "--pool", "lobby", "--json")
        assert (proc.returncode, proc.stderr) == (0, "")
        answer = json.loads(proc.stdout)
        assert (answer["id"], answer["state"], answer["pool"]) == (other["id"], "RELEASED", "lobby")
        assert answer["printer"] is None
        await kiosk.wait_states([other["id"]], {"DONE"})
    assert_each_printed_once(printers, [job["id"], other["id"]])


async def _held(app: Appliance, key: str, **meta: Any) -> dict[str, Any]:
    resp = await app.submit({"owner": "ann", "pool": "lobby", **meta}, key=key)
    assert resp.status == 201
    job: dict[str, Any] = await resp.json()
    return job


async def test_unknown_id_is_the_404_words(app: Appliance) -> None:
    before = app.snapshot()
    unknown = "0" * 32
    proc = await _run(app.url, "release", unknown)
    assert proc.returncode == 1
    assert proc.stderr == f"edgeprint: 404 Not Found: no job with id '{unknown}'\n"
    assert app.snapshot() == before


async def test_a_job_with_a_pin_needs_it(app: Appliance) -> None:
    """A kiosk releases a job submitted with a release PIN only with that PIN: without it,
    or with a wrong one, the 403's words and the job stays HELD (a wrong PIN is counted)."""
    job = await _held(app, "cli-release-pin1", release_pin="4321")
    proc = await _run(app.url, "release", job["id"], token=KIOSK_TOKEN)
    assert proc.returncode == 1
    assert proc.stderr == (
        f"edgeprint: 403 Forbidden: job {job['id']} needs its release PIN: "
        'send {"pin": "…"} (give --pin PIN)\n'
    )
    proc = await _run(app.url, "release", job["id"], "--pin", "1111", token=KIOSK_TOKEN)
    assert proc.returncode == 1
    assert proc.stderr.startswith("edgeprint: 403 Forbidden: ")
    assert "tech token" not in proc.stderr  # a PIN, not the token, is what is wrong
    still = await (await app.get(f"/v1/jobs/{job['id']}")).json()
    assert (still["state"], still["pool"], still["printer"]) == ("HELD", "lobby", None)
    proc = await _run(app.url, "release", job["id"], "--pin", "4321", token=KIOSK_TOKEN)
    assert (proc.returncode, proc.stderr) == (0, "")
    assert proc.stdout == (
        f"released {job['id']}: now RELEASED, for pool lobby (its first free printer)\n"
    )


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        pytest.param(
            ["release", "a" * 32, "--ids", "b" * 32, "--limit", "1"],
            "release: give JOB_ID, or --filter … or --ids … with --limit N (not both)",
            id="id-and-ids",
        ),
        pytest.param(
            ["release", "a" * 32, "--filter", "owner=ann", "--limit", "1"],
            "release: give JOB_ID, or --filter … or --ids … with --limit N (not both)",
            id="id-and-filter",
        ),
        pytest.param(
            ["release"],
            "release: give JOB_ID, or --filter … or --ids … with --limit N (not both)",
            id="nothing",
        ),
        pytest.param(
            ["release", "a" * 32, "--limit", "1"],
            "release JOB_ID releases one job: --limit and --yes go with --filter or --ids",
            id="id-and-limit",
        ),
        pytest.param(
            ["release", "--ids", "a" * 32, "--limit", "1", "--pin", "4321"],
            "release: --pin goes with one JOB_ID (a bulk call takes no PIN)",
            id="bulk-pin",
        ),
        pytest.param(
            ["release", "a" * 32, "--printer", "printer-01", "--pool", "lobby"],
            "argument --pool: not allowed with argument --printer",
            id="printer-and-pool",
        ),
        pytest.param(
            ["release", "a" * 5], "argument JOB_ID: a job id is 32 hex characters", id="bad-id"
        ),
    ],
)
async def test_usage_errors_exit_2_and_change_nothing(
    app: Appliance, argv: list[str], says: str
) -> None:
    await _held(app, "cli-release-use1")
    before = app.snapshot()
    proc = await _run(app.url, *argv)
    assert proc.returncode == 2
    assert f"error: {says}" in proc.stderr
    assert app.snapshot() == before
