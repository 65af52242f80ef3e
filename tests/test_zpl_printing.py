"""ZPL documents (issue 23 part 5) through a real appliance to real printers.

LPrint lists application/vnd.zebra-zpl: the bytes its Zebra received (recorded by the
LPrint rig) are the ground truth — the document arrives unchanged, once per copy, in
one printer job. ippeveprinter does not list ZPL: a pool of such printers refuses a ZPL
job at submission, and in a pool with LPrint it never claims one.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from edgeprint.ipp.names import Operation, Status, Tag
from edgeprint.ipp.values import attr
from testbed.adversary.proxy import AdversaryProxy, Knobs
from testbed.rig import Rig
from tests.conftest import KIOSK_TOKEN, TECH_TOKEN
from tests.ipp_client import IppQueue, status_message
from tests.lprint_rig import LPrintRig
from tests.polling import eventually
from tests.printing import Client, appliance, rig_config
from tests.rig_fixtures import one_printer

pytestmark = pytest.mark.slow

ZPL = "application/vnd.zebra-zpl"


def badge(name: str, quantity: int | None = None) -> bytes:
    """A 4×3 in badge in ZPL (203 dpi): a name and a barcode, ``^PQ`` when given."""
    pq = f"^PQ{quantity}\n" if quantity else ""
    return (
        f"^XA\n^PW812\n^LL609\n^FO40,60^A0N,70,70^FD{name}^FS\n"
        f"^FO40,200^BCN,100,Y,N,N^FD{abs(hash(name)) % 10**8:08d}^FS\n{pq}^XZ\n"
    ).encode()


@pytest.fixture
def pdf_printer(tmp_path: Path) -> Iterator[Rig]:
    """One ippeveprinter (PDF; no ZPL in its document-format-supported)."""
    yield from one_printer(tmp_path / "pdf", "application/pdf")


@pytest.fixture
def pdf_zpl_printer(tmp_path: Path) -> Iterator[Rig]:
    """One ippeveprinter listing PDF and ZPL (a Zebra with PDF Direct, say)."""
    yield from one_printer(tmp_path / "both", f"application/pdf,{ZPL}")


async def submit_zpl(
    kiosk: Client, key: str, doc: bytes, **meta: Any
) -> tuple[int, dict[str, Any]]:
    form = aiohttp.FormData()
    form.add_field(
        "metadata", json.dumps({"owner": "ann", **meta}), content_type="application/json"
    )
    form.add_field("document", doc, content_type=ZPL, filename="badge.zpl")
    headers = {"Authorization": f"Bearer {KIOSK_TOKEN}", "Idempotency-Key": key}
    async with kiosk.http.post(f"{kiosk.url}/v1/jobs", data=form, headers=headers) as r:
        return r.status, await r.json()


async def probed(kiosk: Client, *names: str, timeout_s: float = 20.0) -> dict[str, Any]:
    """Wait until edgeprint has read every named printer's capabilities; the printers' views."""
    headers = {"Authorization": f"Bearer {TECH_TOKEN}"}

    async def all_probed() -> dict[str, Any] | None:
        async with kiosk.http.get(f"{kiosk.url}/v1/printers", headers=headers) as r:
            views = {p["name"]: p for p in (await r.json())["printers"]}
        return views if all(views[n]["capabilities"] is not None for n in names) else None

    views: dict[str, Any] = await eventually(all_probed, f"{names} probed", timeout_s=timeout_s)
    return views


def bridge(lprint: LPrintRig) -> AdversaryProxy:
    """TCP to LPrint's socket (it listens in its own namespace); nothing else changed."""
    return AdversaryProxy(
        lprint.printer_uri, Knobs(k_octets="exact"), unix_socket=lprint.socket_path
    )


def lprint_config(tmp_path: Path, uri: str, **extra: Any) -> dict[str, Any]:
    # LPrint answers Send-Document only once the label is out (seconds, not ms)
    cfg = rig_config(
        tmp_path / "data", [], pool=None, request_timeout_s=5, upload_timeout_s=60,  # type: ignore[arg-type]
    )  # fmt: skip
    cfg["printers"] = [{"name": "label-01", "uri": uri, **extra}]
    return cfg


async def test_a_zpl_badge_reaches_the_zebra_unchanged_once_per_copy(
    tmp_path: Path, lprint: LPrintRig
) -> None:
    """A ZPL job with copies=2 through the API is DONE; the Zebra behind LPrint received the
    document byte for byte twice over in one connection (one printer job), and nothing else
    with label data; the job counts its labels like pages and its copy says ZPL."""
    doc = badge("Ada Lovelace", quantity=3)
    with bridge(lprint) as link:
        async with appliance(lprint_config(tmp_path, link.uri)) as (run, kiosk):
            await probed(kiosk, "label-01")
            status, job = await submit_zpl(
                kiosk, "zpl-once-0001", doc, printer="label-01", hold=False, copies=2
            )
            assert status == 201, job
            assert job["document"] == {
                "sha256": job["document"]["sha256"], "bytes": len(doc), "pages": 3, "format": ZPL,
                "page_size": None,
            }  # fmt: skip
            [final] = await kiosk.wait_states([job["id"]], {"DONE", "DEAD"}, timeout_s=60)
            copies = await run.service.worker.copies_of(job["id"])
            assert final["state"] == "DONE", (final["last_error"], copies)
            [copy] = copies
            assert (copy.document_format, copy.document_bytes) == (ZPL, 2 * len(doc))
            assert copy.impressions_expected == 3 * 2
    assert lprint.wait_labels(1) == [doc + doc], lprint.received()
    assert lprint.labels() == [doc + doc]


async def test_a_printer_that_takes_pdf_and_zpl_gets_the_zpl_unchanged(
    tmp_path: Path, pdf_zpl_printer: Rig
) -> None:
    """A printer sent PDF by default that also lists ZPL: the ZPL job's copy (opened as for
    a PDF) is redescribed as ZPL and the printer receives the document three times over in one
    job, without an IPP copies attribute."""
    doc = badge("Mary Jackson")
    cfg = rig_config(tmp_path / "data", pdf_zpl_printer, pool=None)
    async with appliance(cfg) as (run, kiosk):
        await probed(kiosk, "printer-01")
        status, job = await submit_zpl(
            kiosk, "zpl-both-0001", doc, printer="printer-01", hold=False, copies=3
        )
        assert status == 201, job
        [final] = await kiosk.wait_states([job["id"]], {"DONE", "DEAD"}, timeout_s=60)
        [copy] = await run.service.worker.copies_of(job["id"])
        assert final["state"] == "DONE", (final, copy)
        assert (copy.document_format, copy.document_bytes) == (ZPL, 3 * len(doc))
    [printed] = pdf_zpl_printer.printed("printer-01")
    assert (printed.job_name, printed.copies, printed.bytes) == (
        f"edgeprint-{job['id']}", 1, 3 * len(doc),
    )  # fmt: skip
    spool = pdf_zpl_printer["printer-01"].spool
    [received] = [f for f in spool.iterdir() if f.is_file() and f.suffix != ".prn"]
    assert received.read_bytes() == doc * 3


async def test_a_zpl_print_job_through_the_ipp_queue_reaches_the_zebra(
    tmp_path: Path, lprint: LPrintRig
) -> None:
    """Print-Job in application/vnd.zebra-zpl on edgeprint's queue for the label printer:
    one job, DONE, the document arrives once and unchanged."""
    doc = badge("Grace Hopper")
    with bridge(lprint) as link:
        async with appliance(lprint_config(tmp_path, link.uri)) as (run, kiosk):
            await probed(kiosk, "label-01")
            queue = IppQueue(kiosk.http, kiosk.url, "label-01")
            answer = await queue.send(
                queue.request(
                    Operation.PRINT_JOB, attr("document-format", Tag.MIME_MEDIA_TYPE, ZPL),
                    job=[attr("job-hold-until", Tag.KEYWORD, "no-hold")], data=doc,
                ),
                Authorization=f"Bearer {KIOSK_TOKEN}",
            )  # fmt: skip
            assert answer.status_code == Status.SUCCESSFUL_OK, status_message(answer)
            [job] = await run.service.jobs.list_jobs()
            assert (job.document_format, job.document_pages) == (ZPL, 1)
            [final] = await kiosk.wait_states([job.id], {"DONE", "DEAD"}, timeout_s=60)
            copies = await run.service.worker.copies_of(job.id)
            assert final["state"] == "DONE", (final["last_error"], copies)
    assert lprint.wait_labels(1) == [doc], lprint.received()


async def test_only_the_printer_that_takes_zpl_claims_a_pool_zpl_job(
    tmp_path: Path, lprint: LPrintRig, pdf_printer: Rig
) -> None:
    """A pool of LPrint and an idle PDF ippeveprinter: every ZPL job prints on LPrint, the
    ippeveprinter (which does not list ZPL) is never sent one, and a PDF job still prints."""
    docs = [badge(f"Guest {i}") for i in range(3)]
    with bridge(lprint) as link:
        cfg = lprint_config(tmp_path, link.uri, pool="lobby")
        cfg["printers"].append({"name": "printer-01", "uri": pdf_printer["printer-01"].uri,
                                "pool": "lobby"})  # fmt: skip
        async with appliance(cfg) as (run, kiosk):
            await probed(kiosk, "label-01", "printer-01")
            ids = []
            for i, doc in enumerate(docs):
                status, job = await submit_zpl(
                    kiosk, f"zpl-pool-{i:04d}", doc, pool="lobby", hold=False
                )
                assert status == 201, job
                ids.append(job["id"])
            finals = await kiosk.wait_states(ids, {"DONE", "DEAD"}, timeout_s=90)
            assert [(f["state"], f["printed_on"]) for f in finals] == [("DONE", "label-01")] * 3
            for job_id in ids:
                assert [c.printer for c in await run.service.worker.copies_of(job_id)] == [
                    "label-01"
                ]
    assert sorted(lprint.wait_labels(3)) == sorted(docs)
    assert pdf_printer.printed("printer-01") == []
    assert pdf_printer.received("printer-01") == 0


async def test_a_pool_without_a_zpl_printer_refuses_zpl_at_submission_and_release(
    tmp_path: Path, pdf_printer: Rig
) -> None:
    """Once every printer of the pool has answered and none lists ZPL: 422
    unsupported-document naming what they take (API and IPP), nothing stored; a HELD ZPL job
    accepted for another target is refused on release to it and stays HELD."""
    cfg = rig_config(tmp_path / "data", pdf_printer)
    cfg["printers"].append({"name": "label-99", "uri": "ipp://127.0.0.1:9/ipp/print"})
    async with appliance(cfg) as (run, kiosk):
        views = await probed(kiosk, "printer-01")
        listed = sorted(views["printer-01"]["capabilities"]["formats"])
        assert "application/pdf" in listed
        assert ZPL not in listed
        status, body = await submit_zpl(kiosk, "zpl-nowhere-01", badge("Hedy"), pool="lobby")
        assert status == 422, body
        assert body["type"] == "urn:edgeprint:problem:unsupported-document"
        assert body["detail"] == (
            f"no printer of pool lobby takes {ZPL} (listed: {', '.join(listed)}); send the badge "
            "as a PDF, or to a printer whose document-format-supported lists it"
        )
        assert body["takes"] == listed
        queue = IppQueue(kiosk.http, kiosk.url, "lobby")
        answer = await queue.send(
            queue.request(
                Operation.PRINT_JOB, attr("document-format", Tag.MIME_MEDIA_TYPE, ZPL),
                data=badge("Hedy"),
            ),
            Authorization=f"Bearer {KIOSK_TOKEN}",
        )  # fmt: skip
        assert answer.status_code == Status.CLIENT_ERROR_DOCUMENT_FORMAT_NOT_SUPPORTED
        assert status_message(answer) == body["detail"]
        validated = await queue.send(
            queue.request(
                Operation.VALIDATE_JOB, attr("document-format", Tag.MIME_MEDIA_TYPE, ZPL)
            ),
            Authorization=f"Bearer {KIOSK_TOKEN}",
        )
        assert validated.status_code == Status.CLIENT_ERROR_DOCUMENT_FORMAT_NOT_SUPPORTED
        assert status_message(validated) == body["detail"]
        assert await run.service.jobs.list_jobs() == []
        # label-99 never answers (not probed): a held ZPL job for it is accepted …
        status, held = await submit_zpl(kiosk, "zpl-held-0001", badge("Hedy"), printer="label-99")
        assert status == 201, held
        # … and refused on its release to the pool that cannot take it
        code, answer_body = await kiosk.post(f"/v1/jobs/{held['id']}/release", {"pool": "lobby"})
        assert code == 422, answer_body
        assert answer_body["type"] == "urn:edgeprint:problem:unsupported-document"
        assert (await kiosk.job(held["id"]))["state"] == "HELD"
    assert pdf_printer.printed("printer-01") == []
    assert pdf_printer.received("printer-01") == 0


async def test_a_printer_named_that_turns_out_not_to_take_zpl_refuses_it_unsent(
    tmp_path: Path, pdf_printer: Rig
) -> None:
    """A ZPL job for a printer that has not answered yet is accepted; when the printer comes
    up without ZPL in its document-format-supported it claims the job and ends it DEAD
    unsupported_document without sending it anything."""
    pdf_printer.kill("printer-01")
    cfg = rig_config(tmp_path / "data", pdf_printer, pool=None)
    async with appliance(cfg) as (run, kiosk):
        status, job = await submit_zpl(
            kiosk, "zpl-late-0001", badge("Katherine"), printer="printer-01", hold=False
        )
        assert status == 201, job
        pdf_printer.restart("printer-01")
        [final] = await kiosk.wait_states([job["id"]], {"DONE", "DEAD"}, timeout_s=60)
        assert final["state"] == "DEAD", final
        assert final["dead_reason"] == "unsupported_document"
        assert final["last_error"] == (
            f"printer-01 does not take {ZPL} (its document-format-supported does not list "
            "it); nothing was sent"
        )
        copies = await run.service.worker.copies_of(job["id"])
        assert [(c.state.value, c.printer_job_id) for c in copies] == [("refused", None)]
    assert pdf_printer.received("printer-01") == 0
