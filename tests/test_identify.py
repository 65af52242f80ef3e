"""POST /v1/printers/{name}/identify and ``edgeprint identify``, on real printers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from testbed.rig import Rig
from tests.polling import eventually
from tests.printing import appliance, rig_config
from tests.test_cli_tech import run_cli

PROBLEM = "urn:edgeprint:problem:"


def identify_requests(rig: Rig, name: str) -> int:
    """How many Identify-Printer requests the printer's own log shows."""
    return rig[name].server_log.read_text(errors="replace").count("Identify-Printer")


async def wait_printed(rig: Rig, name: str, job_name: str) -> None:
    """Until the printer's own log shows ``job_name`` printed on ``name``."""
    await eventually(
        lambda: any(p.job_name == job_name for p in rig.printed(name)),
        f"{job_name} printed on {name}",
        timeout_s=20,
    )


async def test_identify_uses_identify_printer_or_a_test_page(tmp_path: Path, printers: Rig) -> None:
    """auto → Identify-Printer (ippeveprinter lists it); test-page → one page in its log."""
    async with appliance(rig_config(tmp_path / "data", printers)) as (_, kiosk):
        before = identify_requests(printers, "printer-01")
        status, body = await kiosk.post("/v1/printers/printer-01/identify", tech=True)
        assert (status, body) == (
            200, {"printer": "printer-01", "action": "identify-printer", "printer_job_id": None}
        )  # fmt: skip
        assert identify_requests(printers, "printer-01") == before + 1
        assert printers.printed("printer-01") == []  # no paper for an Identify-Printer
        status, body = await kiosk.post(
            "/v1/printers/printer-02/identify", {"how": "test-page"}, tech=True
        )
        assert (status, body["action"]) == (200, "test-page")
        assert isinstance(body["printer_job_id"], int)
        await wait_printed(printers, "printer-02", "test-page-printer-02")
        [page] = printers.printed("printer-02")
        assert (page.pages, page.user) == (1, "tech-1")


async def test_identify_bad_input(tmp_path: Path, printers: Rig) -> None:
    """Unknown printer 404, bad how 422, kiosk 403, printer gone 502 printer-error."""
    async with appliance(rig_config(tmp_path / "data", printers)) as (_, kiosk):
        status, body = await kiosk.post("/v1/printers/printer-99/identify", tech=True)
        assert (status, body["type"]) == (404, PROBLEM + "printer-not-found")
        status, body = await kiosk.post(
            "/v1/printers/printer-01/identify", {"how": "sing"}, tech=True
        )
        assert (status, body["type"]) == (422, PROBLEM + "invalid-request")
        status, body = await kiosk.post("/v1/printers/printer-01/identify")
        assert (status, body["type"]) == (403, PROBLEM + "forbidden")
        printers.kill("printer-02")
        status, body = await kiosk.post("/v1/printers/printer-02/identify", tech=True)
        assert (status, body["type"]) == (502, PROBLEM + "printer-error")
    assert printers.printed("printer-01") == []


async def test_cli_identify(
    tmp_path: Path, printers: Rig, capsys: pytest.CaptureFixture[str]
) -> None:
    """edgeprint identify PRINTER [--test-page] [--json]."""
    async with appliance(rig_config(tmp_path / "data", printers)) as (_, kiosk):
        code, out, err = await run_cli(capsys, "identify", "printer-01", "--url", kiosk.url)
        assert (code, err) == (0, "")
        assert "printer-01: Identify-Printer sent" in out
        code, out, _ = await run_cli(
            capsys, "identify", "printer-02", "--test-page", "--json", "--url", kiosk.url
        )
        assert code == 0
        assert json.loads(out)["action"] == "test-page"
        code, _, err = await run_cli(capsys, "identify", "printer-99", "--url", kiosk.url)
        assert code == 1
        assert "printer-99" in err
