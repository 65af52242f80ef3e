"""CUPS's own IPP conformance files (ipptool) against an edgeprint queue backed by real printers.

ipptool and its test files come with Debian's ``cups-ipp-utils`` (as does the
rig's ippeveprinter). The files print documents: ``document-a4.pdf``, the JPEGs and
the PWG raster samples of ``ipp-everywhere.test`` (tests/ipp_samples.py) are made here
next to copies of the test files (ipptool looks for them beside the test file); the
PostScript ones are only read when the queue claims PostScript, which it does not.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from edgeprint.ipp_server import attributes as A
from testbed.pdfs import make_pdf
from testbed.rig import Rig, find_tool
from tests import ipp_samples
from tests.conftest import KIOSK_TOKEN
from tests.polling import eventually
from tests.printing import appliance, rig_config
from tests.tls_rig import tls_appliance

TESTS_DIR = Path("/usr/share/cups/ipptool")
#: What the queues claim in pwg-raster-document-resolution-supported and -type-supported:
#: ipp-everywhere.test prints the samples of these (and skips the others).
CLAIMED_DPI = set(A.PWG_RASTER_DPI)
CLAIMED_TYPES = set(A.PWG_RASTER_TYPES)


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


async def _ipptool(work: Path, uri: str, test: str, *flags: str) -> tuple[int, str]:
    """ipptool's report on ``test`` against ``uri``, bounded: an ipptool that hangs (CUPS
    2.4's waits for ever on a TLS 1.3 server that sends session tickets) is killed and fails.
    Its HOME is ``work``: a fresh trust store for ipps (ipptool trusts on first use)."""
    proc = await asyncio.create_subprocess_exec(
        "ipptool", "-t", *flags, "-T", "30", "-f", str(work / "testfile.pdf"), uri, test,
        cwd=work, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        env={**os.environ, "HOME": str(work)},
    )  # fmt: skip
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), 300)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise AssertionError(f"ipptool {test} on {uri} did not finish in 300 s") from None
    assert proc.returncode is not None
    return proc.returncode, out.decode(errors="replace")


async def _settled(client: Any, timeout_s: float = 30.0) -> list[dict[str, Any]]:
    """Every job of the appliance once none is RELEASED or PRINTING (deadline ``timeout_s``)."""
    jobs: list[dict[str, Any]] = []

    async def settled() -> bool:
        headers = {"Authorization": f"Bearer {KIOSK_TOKEN}"}
        async with client.http.get(f"{client.url}/v1/jobs?limit=500", headers=headers) as r:
            assert r.status == 200
            jobs[:] = (await r.json())["jobs"]
        return all(j["state"] not in ("RELEASED", "PRINTING") for j in jobs)

    def states() -> str:
        return f"no job RELEASED or PRINTING: {[j['state'] for j in jobs]}"

    await eventually(settled, states, timeout_s=timeout_s, every_s=0.05)
    return jobs


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


#: The PWG raster samples rendered so far in this session (the same for every queue).
_RENDERED: dict[str, bytes] = {}


async def _everywhere_samples(work: Path) -> set[str]:
    """The files ipp-everywhere.test names, made in ``work``: the claimed resolutions and
    types rendered as real PWG raster, the others empty (see tests/ipp_samples.py). Returns
    the ipptool test names of the real ones ("document-a4 @ 300dpi, black-1")."""
    from edgeprint.documents import ladder
    from edgeprint.documents.capabilities import Media, Resolution
    from edgeprint.documents.render import RenderPool

    real: set[str] = set()
    pool = RenderPool(workers=1)
    try:
        for name in ipp_samples.referenced_files(work / "ipp-everywhere.test"):
            path = work / name
            path.parent.mkdir(parents=True, exist_ok=True)
            what = ipp_samples.sample(path.name)
            if what is None or what[1] not in CLAIMED_TYPES or what[2] not in CLAIMED_DPI:
                path.write_bytes(b"")  # read by ipptool's parser only: its test is skipped
                continue
            document, color_space, dpi = what
            media, width, height, _pages, _color = ipp_samples.DOCUMENTS[document]
            if name not in _RENDERED:
                pdf = work / f"{document}.source.pdf"
                pdf.write_bytes(ipp_samples.source_pdf(document))
                facts = await pool.facts(str(pdf))
                choice = ladder.Choice(
                    "image/pwg-raster", color_space, Resolution(dpi, dpi),
                    Media(media, width, height),
                )  # fmt: skip
                _RENDERED[name] = b"".join([c async for c in pool.stream(str(pdf), choice, facts)])
            path.write_bytes(_RENDERED[name])
            real.add(f"{document} @ {dpi}dpi, {color_space.replace('_', '-')}")
    finally:
        await pool.close()
    return real


@pytest.mark.slow
@pytest.mark.usefixtures("ipptool")
async def test_cups_conformance_file_passes_over_ipps(printers: Rig, tmp_path: Path) -> None:
    """tls = "self-signed": ipptool's ipp-2.0.test (with ipp-1.1.test) passes over ipps:// against the pool queue (ipptool trusts the certificate on first use and finishes: no session tickets), the queue names itself ipps:// with uri-security-supported tls, and each document it prints comes out exactly once."""
    async with tls_appliance(rig_config(tmp_path / "data", printers), tmp_path) as (run, c, _):
        uri = f"ipps://127.0.0.1:{run.port}/ipp/print/lobby"
        work = _workdir(tmp_path)
        code, out = await _ipptool(work, uri, "ipp-2.0.test")
        assert code == 0, out
        assert "[FAIL]" not in out
        _printed_once(printers, await _settled(c))
        code, out = await _ipptool(work, uri, str(TESTS_DIR / "get-printer-attributes.test"), "-v")
        assert code == 0, out
        # named as the client reached it (ipptool's Host header is "localhost")
        own = rf"ipps://(127\.0\.0\.1|localhost):{run.port}/ipp/print/lobby"
        assert re.search(rf"printer-uri-supported \(uri\) = {own}$", out, re.M), out
        assert re.search(r"printer-more-info \(uri\) = https://", out, re.M), out
        assert re.search(r"uri-security-supported \(keyword\) = tls$", out, re.M), out


@pytest.mark.slow
@pytest.mark.usefixtures("ipptool")
@pytest.mark.parametrize(
    ("queue", "scheme"), [("printer-01", "ipp"), ("lobby", "ipp"), ("lobby", "ipps")]
)
async def test_ipp_everywhere_file_passes(
    printers: Rig, tmp_path: Path, queue: str, scheme: str
) -> None:
    """ipp-everywhere.test (which includes ipp-2.0.test and ipp-1.1.test) passes against a printer queue and a pool queue, and over ipps against an appliance with tls = "self-signed": no test fails, it skips only the samples of resolutions, raster types and compressions the queue does not claim, and every document it prints comes out once, with all its pages."""
    work = _workdir(tmp_path)
    real = await _everywhere_samples(work)
    assert len(real) == 34  # 2 resolutions x 3 types x 6 documents, but gray.jpg has no srgb
    cfg = rig_config(tmp_path / "data", printers)
    async with contextlib.AsyncExitStack() as stack:
        if scheme == "ipps":
            run, client, _ = await stack.enter_async_context(tls_appliance(cfg, tmp_path))
        else:
            run, client = await stack.enter_async_context(appliance(cfg))
        uri = f"{scheme}://127.0.0.1:{run.port}/ipp/print/{queue}"
        code, out = await _ipptool(work, uri, "ipp-everywhere.test")
        assert code == 0, out
        results = re.findall(r"^\s+(.+?)\s+\[(PASS|FAIL|SKIP)\]$", out, re.M)
        assert [n for n, r in results if r == "FAIL"] == [], out
        printed = {n for n, r in results if r == "PASS" and "dpi," in n}
        skipped = {n for n, r in results if r == "SKIP" and "dpi," in n}
        assert printed == {f"Print {c}" for c in real}, out
        assert not any(n.removeprefix("Print ") in real for n in skipped)
        jobs = await _settled(client, timeout_s=180)
    _printed_once(printers, jobs)
    pages = {f"edgeprint-{j['id']}": j["document"]["pages"] for j in jobs}
    lines = [line for p in printers for line in printers.printed(p.name)]
    assert all(line.pages == pages[line.job_name] for line in lines)
    assert len([j for j in jobs if j["state"] == "DONE"]) >= len(real)
