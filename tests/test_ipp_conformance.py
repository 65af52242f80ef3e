"""CUPS's own IPP conformance files (ipptool) against an edgeprint queue backed by real printers.

ipptool and its test files come with Debian's ``cups-ipp-utils`` (as does the
rig's ippeveprinter). The files print a few documents: ``document-a4.pdf`` and
friends are made here next to copies of the test files (ipptool looks for them
beside the test file); the JPEG and PostScript ones are only read when the queue
claims those formats, which it does not.
"""

from __future__ import annotations

import asyncio
import io
import re
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from testbed.pdfs import make_pdf
from testbed.rig import Rig, find_tool
from tests.conftest import KIOSK_TOKEN
from tests.printing import appliance, rig_config

TESTS_DIR = Path("/usr/share/cups/ipptool")
#: What ipp-everywhere.test's first test asks for that edgeprint's queues cannot honestly
#: claim: printer icons, supplies, page-ranges and overrides, which edgeprint does not have
#: or do, and ipp-features-supported (which would then claim ipp-everywhere).
EVERYWHERE_NOT_YET = {
    "ipp-features-supported",
    "overrides-supported",
    'page-ranges-supported WITH-VALUE "true"',
    "printer-icons",
    "printer-supply",
    "printer-supply-description",
    "printer-supply-info-uri",
}


def _workdir(tmp: Path) -> Path:
    work = tmp / "ipptool"
    work.mkdir()
    for name in ("ipp-1.1.test", "ipp-2.0.test", "ipp-everywhere.test"):
        shutil.copy(TESTS_DIR / name, work / name)
    for name in ("testfile.pdf", "document-a4.pdf", "document-letter.pdf"):
        (work / name).write_bytes(make_pdf(name))
    for name, data in {
        "color.jpg": _jpeg("RGB"), "gray.jpg": _jpeg("L"),
        "document-a4.ps": b"%!PS-Adobe-3.0\nshowpage\n",
        "document-letter.ps": b"%!PS-Adobe-3.0\nshowpage\n",
    }.items():  # fmt: skip
        (work / name).write_bytes(data)
    return work


def _jpeg(mode: str) -> bytes:
    """A small real JPEG photo (what a phone sends), 2 x 1.5 in at 150 dpi."""
    from PIL import Image

    out = io.BytesIO()
    Image.new(mode, (300, 225), "teal" if mode == "RGB" else 96).save(out, "JPEG", dpi=(150, 150))
    return out.getvalue()


async def _ipptool(work: Path, uri: str, test: str) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        "ipptool", "-t", "-T", "30", "-f", str(work / "testfile.pdf"), uri, test,
        cwd=work, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    out, _ = await asyncio.wait_for(proc.communicate(), 300)
    assert proc.returncode is not None
    return proc.returncode, out.decode(errors="replace")


async def _settled(client: Any, timeout_s: float = 30.0) -> list[dict[str, Any]]:
    """Every job of the appliance once none is RELEASED or PRINTING (deadline ``timeout_s``)."""
    deadline = time.monotonic() + timeout_s
    while True:
        headers = {"Authorization": f"Bearer {KIOSK_TOKEN}"}
        async with client.http.get(f"{client.url}/v1/jobs?limit=500", headers=headers) as r:
            assert r.status == 200
            jobs: list[dict[str, Any]] = (await r.json())["jobs"]
        if all(j["state"] not in ("RELEASED", "PRINTING") for j in jobs):
            return jobs
        assert time.monotonic() < deadline, [j["state"] for j in jobs]
        await asyncio.sleep(0.05)  # polling a condition, bounded by the deadline


def _printed_once(rig: Rig, jobs: list[dict[str, Any]]) -> None:
    """Ground truth: each DONE job printed once, nothing else printed."""
    printed: dict[str, int] = {}
    for p in rig:
        for line in rig.printed(p.name):
            printed[line.job_name] = printed.get(line.job_name, 0) + 1
    done = {f"edgeprint-{j['id']}" for j in jobs if j["state"] == "DONE"}
    assert done, "the test files print documents"
    assert printed == dict.fromkeys(done, 1)


@pytest.fixture
def ipptool() -> None:
    if find_tool("ipptool") is None or not (TESTS_DIR / "ipp-1.1.test").exists():
        pytest.skip("ipptool and its test files: apt-get install cups-ipp-utils")


@pytest.mark.slow
@pytest.mark.usefixtures("ipptool")
@pytest.mark.parametrize("test", ["ipp-1.1.test", "ipp-2.0.test"])
async def test_cups_conformance_file_passes(test: str, printers: Rig, tmp_path: Path) -> None:
    """ipptool's ipp-1.1.test / ipp-2.0.test pass against the pool queue, and each document they print comes out exactly once."""
    async with appliance(rig_config(tmp_path / "data", printers)) as (run, client):
        uri = f"ipp://127.0.0.1:{run.port}/ipp/print/lobby"
        code, out = await _ipptool(_workdir(tmp_path), uri, test)
        assert code == 0, out
        assert "[FAIL]" not in out
        _printed_once(printers, await _settled(client))


@pytest.mark.slow
@pytest.mark.usefixtures("ipptool")
async def test_ipp_everywhere_file_fails_only_on_what_needs_raster(
    printers: Rig, tmp_path: Path
) -> None:
    """ipp-everywhere.test fails only its required-attributes test, and only on the raster formats and device features a PDF-only queue does not claim; every job it prints comes out once."""
    async with appliance(rig_config(tmp_path / "data", printers)) as (run, client):
        uri = f"ipp://127.0.0.1:{run.port}/ipp/print/printer-01"
        _code, out = await _ipptool(_workdir(tmp_path), uri, "ipp-everywhere.test")
        failed = re.findall(r"^\s+(.+?)\s+\[FAIL\]$", out, re.M)
        assert failed == ["PWG 5100.14 section 5.1/5.2 - Required Operations and Attributes"], out
        expected = set(re.findall(r"^\s+EXPECTED: (.+)$", out, re.M))
        assert expected <= EVERYWHERE_NOT_YET, expected - EVERYWHERE_NOT_YET
        jobs = await _settled(client)
        if any(j["state"] == "DONE" for j in jobs):
            _printed_once(printers, jobs)
