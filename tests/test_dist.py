"""The single-file build (make dist) runs with Debian's system python3 and prints a job."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import aiohttp
import pytest

from edgeprint import __version__
from testbed.proc import ServeProcess
from testbed.rig import Rig
from tests.conftest import to_toml
from tests.printing import Client, assert_each_printed_once, rig_config
from tests.rig_fixtures import in_ci

pytestmark = pytest.mark.slow

DIST = Path(__file__).parent.parent / "dist" / "edgeprint"
#: The target's interpreter: Debian 12's own python3, not the development one.
SYSTEM_PYTHON = "/usr/bin/python3"


@pytest.fixture
def built(tmp_path: Path) -> list[str]:
    """The command that runs the built file with the system python3 (fails in CI if missing)."""
    missing = [p for p in (DIST, Path(SYSTEM_PYTHON)) if not p.exists()]
    if missing:
        why = f"{', '.join(map(str, missing))} missing: run `make dist` (needs Debian's python3)"
        if in_ci():
            pytest.fail(why, pytrace=False)
        pytest.skip(why)
    return [SYSTEM_PYTHON, str(DIST)]


def _env(tmp_path: Path) -> dict[str, str]:
    # As on the mini-PC: no virtual environment on the path, a cache folder for the unpacking.
    return {"SHIV_ROOT": str(tmp_path / "shiv"), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}


def test_version_names_the_commit(built: list[str], tmp_path: Path) -> None:
    """`edgeprint --version` prints the version and the commit it was built from."""
    out = subprocess.run(
        [*built, "--version"], capture_output=True, text=True, timeout=60, check=True,
        env=_env(tmp_path),
    )  # fmt: skip
    assert out.stdout.startswith(f"edgeprint {__version__} (commit ")
    assert "unknown" not in out.stdout


async def test_built_file_prints_a_job_end_to_end(
    built: list[str], tmp_path: Path, printers: Rig
) -> None:
    """The built file serves the API and prints a released job exactly once on a real printer."""
    cfg = tmp_path / "config.toml"
    cfg.write_text(to_toml(rig_config(tmp_path / "data", printers)))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "PYTHON"))}
    server = ServeProcess(cfg, tmp_path / "serve.log", env={**env, **_env(tmp_path)}, command=built)
    async with aiohttp.ClientSession() as http:
        with server.start():
            kiosk = Client(http, server.url)
            job = await kiosk.submit("dist-0001", pool="lobby")
            status, _ = await kiosk.post(f"/v1/jobs/{job['id']}/release")
            assert status == 200
            [done] = await kiosk.wait_states([job["id"]], {"DONE"}, timeout_s=30)
            assert server.terminate() == 0
    assert done["printed_on"] in ("printer-01", "printer-02")
    assert_each_printed_once(printers, [job["id"]])
