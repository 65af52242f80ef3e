"""A badge submitted as PDF prints exactly once on printers that take no PDF (issue 13).

Real printers: raster-only ippeveprinters (PWG raster; Apple raster) and LPrint (a
PAPPL label printer driving a recorded Zebra). Ground truth is each printer's own
record: ippeveprinter's prints.log, the ZPL bytes LPrint sent its Zebra.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from testbed import pdfs
from testbed.adversary.proxy import AdversaryProxy, Knobs
from testbed.rig import Rig
from tests.conftest import TECH_TOKEN
from tests.lprint_rig import LPrintRig
from tests.polling import eventually
from tests.printing import Client, appliance, rig_config
from tests.rig_fixtures import one_printer

pytestmark = pytest.mark.slow


@pytest.fixture
def text_printer(tmp_path: Path) -> Iterator[Rig]:
    yield from one_printer(tmp_path / "txt", "text/plain")


async def _printers(kiosk: Client) -> dict[str, dict[str, Any]]:
    headers = {"Authorization": f"Bearer {TECH_TOKEN}"}
    async with kiosk.http.get(f"{kiosk.url}/v1/printers", headers=headers) as r:
        return {p["name"]: p for p in (await r.json())["printers"]}


async def _probed(kiosk: Client, name: str, timeout_s: float = 20.0) -> dict[str, Any]:
    """The printer's view once edgeprint has probed it (capabilities known)."""

    async def probed() -> dict[str, Any] | None:
        view = (await _printers(kiosk))[name]
        return view if view["capabilities"] is not None else None

    return await eventually(probed, f"{name} probed", timeout_s=timeout_s)


async def _print_badge(tmp_path: Path, rig: Rig, fmt: str) -> None:
    cfg = rig_config(tmp_path / "data", rig, pool=None)
    badge = pdfs.make_badge_pdf("Grace Hopper")
    async with appliance(cfg) as (run, kiosk):
        job = await kiosk.submit("raster-0001", printer="printer-01", hold=False, doc=badge)
        [final] = await kiosk.wait_states([job["id"]], {"DONE", "DEAD"}, timeout_s=60)
        assert final["state"] == "DONE", final
        [copy] = await run.service.worker.copies_of(job["id"])
        assert copy.document_format == fmt
        view = (await _printers(kiosk))["printer-01"]
        assert view["sends"] == fmt
        assert "application/pdf" not in view["capabilities"]["formats"]
    [printed] = [p for p in rig.printed("printer-01") if job["id"] in p.job_name]
    assert printed.bytes == copy.document_bytes  # the whole rendition came out, once


async def test_a_pdf_badge_prints_once_on_a_pwg_raster_only_printer(
    tmp_path: Path, pwg_printer: Rig
) -> None:
    """A printer that takes PWG raster and JPEG only gets the badge as PWG raster, once."""
    await _print_badge(tmp_path, pwg_printer, "image/pwg-raster")


async def test_a_pdf_badge_prints_once_on_an_urf_only_printer(
    tmp_path: Path, urf_printer: Rig
) -> None:
    """An AirPrint-style printer (URF and JPEG) gets the badge as Apple raster, once."""
    await _print_badge(tmp_path, urf_printer, "image/urf")


async def test_a_printer_that_takes_nothing_edgeprint_makes_is_refused_up_front(
    tmp_path: Path, text_printer: Rig
) -> None:
    """A printer listing only text/plain is unhealthy with the reason, and a job naming it is
    refused with 422 unsupported-document naming what it takes; nothing is stored."""
    cfg = rig_config(tmp_path / "data", text_printer, pool=None)
    async with appliance(cfg) as (run, kiosk):
        view = await _probed(kiosk, "printer-01")
        assert view["sends"] is None
        assert view["health_reason"].startswith("takes none of the formats edgeprint can send")
        form_body = {"owner": "ann", "printer": "printer-01", "hold": False}
        form = aiohttp.FormData()
        form.add_field("metadata", json.dumps(form_body), content_type="application/json")
        form.add_field(
            "document", pdfs.make_pdf(), content_type="application/pdf", filename="b.pdf"
        )
        async with kiosk.http.post(
            f"{kiosk.url}/v1/jobs", data=form,
            headers={"Authorization": "Bearer kiosk-token-for-tests", "Idempotency-Key": "txt-00001"},
        ) as r:  # fmt: skip
            body = await r.json()
            assert r.status == 422, body
        assert body["type"].endswith(":unsupported-document")
        assert "text/plain" in body["takes"]
        assert await run.service.jobs.list_jobs() == []


async def test_a_pdf_badge_prints_as_one_label_on_lprint(tmp_path: Path, lprint: LPrintRig) -> None:
    """LPrint (PAPPL, a Zebra label printer; no PDF) prints the badge submitted as PDF once:
    one ZPL label reaches the Zebra."""
    # the proxy only bridges TCP to LPrint's socket; job-k-octets as the older bridge reported
    bridge = AdversaryProxy(
        lprint.printer_uri, Knobs(k_octets="exact"), unix_socket=lprint.socket_path
    )
    with bridge:
        # LPrint answers Send-Document only once the label is made (seconds, not ms)
        cfg = rig_config(
            tmp_path / "data",
            [],  # type: ignore[arg-type]
            pool=None,
            request_timeout_s=5,
            upload_timeout_s=60,
        )
        cfg["printers"] = [{"name": "label-01", "uri": bridge.uri}]
        async with appliance(cfg) as (run, kiosk):
            badge = pdfs.make_badge_pdf("Hedy Lamarr")
            job = await kiosk.submit("label-0001", printer="label-01", hold=False, doc=badge)
            [final] = await kiosk.wait_states([job["id"]], {"DONE", "DEAD"}, timeout_s=60)
            copies = await run.service.worker.copies_of(job["id"])
            assert final["state"] == "DONE", (final["last_error"], copies)
            [copy] = copies
            assert copy.document_format == "image/pwg-raster"
    (label,) = lprint.wait_labels(1)
    assert lprint.labels() == [label]
    assert label.count(b"^PQ1,") == 1


@pytest.fixture
def pdf_and_pwg_printer(tmp_path: Path) -> Iterator[Rig]:
    yield from one_printer(tmp_path / "both", "application/pdf,image/pwg-raster")


async def test_a_pdf_the_printer_cannot_print_is_retried_once_in_raster(
    tmp_path: Path, pdf_and_pwg_printer: Rig
) -> None:
    """A printer that lists PDF but could not print this one (it completes it, nothing comes
    out, and it reports document-format-error): the job gets one more copy, in PWG raster, on
    the same printer, which prints it (DONE); the raster copy is the only one on paper."""
    rig = pdf_and_pwg_printer
    p1 = rig["printer-01"]
    rig.fault("printer-01", "docerror", once=True)  # the first job: nothing out
    knobs = Knobs(k_octets="exact", document_errors=True)  # ... said document-format-error
    with AdversaryProxy(p1.uri, knobs, printer_dir=p1.dir) as proxy:
        cfg = rig_config(tmp_path / "data", rig, pool=None)
        cfg["printers"][0]["uri"] = proxy.uri
        async with appliance(cfg) as (run, kiosk):
            job = await kiosk.submit("pdf-err-01", printer="printer-01", hold=False)
            [final] = await kiosk.wait_states([job["id"]], {"DONE", "DEAD"}, timeout_s=60)
            copies = await run.service.worker.copies_of(job["id"])
    assert final["state"] == "DONE", final
    assert [(c.document_format, c.state.value) for c in copies] == [
        ("application/pdf", "document_error"),
        ("image/pwg-raster", "printed"),
    ]
    # the raster retry, whole, once
    [printed] = [p for p in rig.printed("printer-01") if job["id"] in p.job_name]
    assert printed.whole
    assert printed.bytes == copies[1].document_bytes


@pytest.mark.parametrize(
    ("behaviours", "settled_by"),
    [
        # a label printer that forgets finished jobs and renames them: acknowledged, forgotten
        ({"history_s": 0.0, "job_name": "replace", "user_name": "replace"},
         "forgotten_after_acknowledged"),
        # monitoring that fails now and then, answers that come late, keep-alive dropped
        ({"monitoring_http": 0.34, "delay_s": (0.02, 0.1), "keepalive_s": 0.05},
         "completed_acknowledged"),
    ],
)  # fmt: skip
async def test_lprint_behind_the_adversary_prints_one_label(
    tmp_path: Path, lprint: LPrintRig, behaviours: dict[str, object], settled_by: str
) -> None:
    """LPrint (not ippeveprinter) behind the adversary proxy with several catalogue behaviours
    at once: the badge ends DONE with the evidence expected, and exactly one label reaches
    the Zebra (the device's own bytes are the ground truth)."""
    knobs = Knobs(**behaviours)  # type: ignore[arg-type]
    with AdversaryProxy(lprint.printer_uri, knobs, unix_socket=lprint.socket_path) as proxy:
        cfg = rig_config(
            tmp_path / "data", [], pool=None,  # type: ignore[arg-type]
            request_timeout_s=5, upload_timeout_s=60,
        )  # fmt: skip
        cfg["printers"] = [{"name": "label-01", "uri": proxy.uri}]
        async with appliance(cfg) as (_, kiosk):
            badge = pdfs.make_badge_pdf("Grace Hopper")
            job = await kiosk.submit("label-adv-1", printer="label-01", hold=False, doc=badge)
            [final] = await kiosk.wait_states([job["id"]], {"DONE", "DEAD"}, timeout_s=60)
    assert (final["state"], final["settled_by"]) == ("DONE", settled_by), final
    assert bool(final["printed_unverified"]) == (settled_by == "forgotten_after_acknowledged")
    (label,) = lprint.wait_labels(1)
    assert lprint.labels() == [label]
