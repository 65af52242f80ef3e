"""ipps printers through the appliance: trust on first use, a changed certificate refused
with both fingerprints (nothing sent to it), re-trust by a technician (issue 13)."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

import pytest

from testbed.rig import Rig
from tests.conftest import TECH_TOKEN
from tests.polling import eventually
from tests.printing import Client, appliance, rig_config
from tests.test_tls import file_fingerprint, ipps, plain_http  # noqa: F401 - a fixture

pytestmark = pytest.mark.slow


async def _view(kiosk: Client, name: str) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {TECH_TOKEN}"}
    async with kiosk.http.get(f"{kiosk.url}/v1/printers", headers=headers) as r:
        return next(p for p in (await r.json())["printers"] if p["name"] == name)


async def _until(kiosk: Client, name: str, check: Any) -> dict[str, Any]:
    """The printer's view once ``check(view)`` holds."""

    async def view() -> dict[str, Any] | None:
        v = await _view(kiosk, name)
        return v if check(v) else None

    return await eventually(view, f"{name}'s view to change", timeout_s=20)


async def test_an_ipps_printer_is_pinned_refused_when_reset_and_retrusted(
    tmp_path: Path, ipps_printer: Rig
) -> None:
    """First contact pins the certificate and a badge prints once; after a factory reset the
    printer is unhealthy "certificate changed: was …, now …" and gets nothing; a technician's
    trust lets the waiting badge print once."""
    rig = ipps_printer
    p = rig["printer-01"]
    cfg = rig_config(tmp_path / "data", rig, pool=None)
    cfg["printers"][0]["uri"] = ipps(p)
    async with appliance(cfg) as (run, kiosk):
        first = await kiosk.submit("tls-0001", printer="printer-01", hold=False)
        [done] = await kiosk.wait_states([first["id"]], {"DONE", "DEAD"})
        assert done["state"] == "DONE", done
        pin = await run.service.printers.printer_pin("printer-01")
        assert pin == file_fingerprint(p.dir / "ssl" / "localhost.crt")

        shutil.rmtree(p.dir / "ssl")  # a factory reset: a new self-signed certificate
        rig.restart("printer-01")
        view = await _until(
            kiosk, "printer-01", lambda v: (v["health_reason"] or "").startswith("certificate")
        )
        now = file_fingerprint(p.dir / "ssl" / "localhost.crt")
        assert view["health_reason"] == (
            f"certificate changed: was {pin}, now {now}; re-trust with "
            "`edgeprint printers trust printer-01` or POST /v1/printers/printer-01/trust"
        )
        assert view["problem"].startswith("its certificate changed since ")  # issue 25
        assert view["problem"].endswith(
            "— replaced printer? confirm the new pin: edgeprint printers trust printer-01"
        )
        created = p.server_log.read_text(errors="replace").count("Create-Job")
        second = await kiosk.submit("tls-0002", printer="printer-01", hold=False)
        await asyncio.sleep(1.0)  # a window in which nothing may be sent, not a synchronisation
        assert (await kiosk.job(second["id"]))["state"] == "RELEASED"
        # the printer's own log: no job was created on it while its certificate was refused
        assert p.server_log.read_text(errors="replace").count("Create-Job") == created
        status, _ = await kiosk.post("/v1/printers/printer-01/trust", tech=True)
        assert status == 200
        [again] = await kiosk.wait_states([second["id"]], {"DONE", "DEAD"})
        assert again["state"] == "DONE", again
        assert await run.service.printers.printer_pin("printer-01") == now
    names = [x.job_name for x in rig.printed("printer-01")]
    assert names == [f"edgeprint-{first['id']}", f"edgeprint-{second['id']}"]


async def test_an_ipps_uri_on_a_plain_http_port_is_named(
    tmp_path: Path,
    plain_http: int,  # noqa: F811 - the fixture
) -> None:
    """ipps:// pointing at a port that speaks plain HTTP: unhealthy "no TLS session", with the
    hint that it needs an ipp:// URI."""
    cfg = rig_config(tmp_path / "data", [], pool=None)  # type: ignore[arg-type]
    cfg["printers"] = [{"name": "plain-01", "uri": f"ipps://127.0.0.1:{plain_http}/ipp/print"}]
    async with appliance(cfg) as (_, kiosk):
        view = await _until(kiosk, "plain-01", lambda v: v["health_reason"])
    assert view["health_reason"].startswith("no TLS session")
    assert "needs an ipp:// URI" in view["health_reason"]
