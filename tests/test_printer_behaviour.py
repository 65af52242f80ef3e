"""Every printer answer taken at its word: real printers (ippeveprinter) made to misbehave
by a loopback proxy in front of them (testbed/adversary/proxy.py). The printer's own log is
the ground truth of what came out; the proxy only changes what edgeprint is told.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from edgeprint.ipp import codec
from edgeprint.ipp.names import Operation, Tag
from edgeprint.ipp.values import attr
from edgeprint.server import Running
from testbed.adversary.proxy import AdversaryProxy, Knobs
from testbed.pdfs import make_pdf
from testbed.rig import Printed, Rig
from tests.conftest import TECH_TOKEN
from tests.polling import eventually
from tests.printing import Client, appliance, printed_names, rig_config

pytestmark = pytest.mark.slow

BADGE = make_pdf("badge for the proxy tests", pad_to=4000)
#: A long grace before edgeprint gives up on a job its printer holds (a jam): the tests
#: that hold a job at the printer are about what a person does meanwhile.
PATIENT_S = 60.0


@pytest.fixture
def proxy(printers: Rig) -> Iterator[AdversaryProxy]:
    """A proxy in front of printer-01 (printer-02 stays direct). It reports job-k-octets
    (what it handed the printer), as the printers these tests were written for do;
    ippeveprinter itself reports none."""
    p1 = printers["printer-01"]
    with AdversaryProxy(p1.uri, Knobs(k_octets="exact"), printer_dir=p1.dir) as p:
        yield p


@asynccontextmanager
async def proxied(
    tmp_path: Path,
    printers: Rig,
    proxy: AdversaryProxy,
    printer: dict[str, Any] | None = None,
    **dispatch: Any,
) -> AsyncIterator[tuple[Running, Client]]:
    """An appliance whose printer-01 is reached through ``proxy`` (``printer``: more of its
    ``[[printers]]`` settings)."""
    cfg = rig_config(tmp_path / "data", printers, **dispatch)
    cfg["printers"][0]["uri"] = proxy.uri
    cfg["printers"][0].update(printer or {})
    async with appliance(cfg) as (run, kiosk):
        yield run, kiosk


def printed(rig: Rig, printer: str, job_id: str) -> list[Printed]:
    """Every copy of ``job_id`` that ``printer`` put out (its own log)."""
    return [p for p in rig.printed(printer) if job_id in p.job_name]


def whole(rig: Rig, printer: str, job_id: str) -> list[bool]:
    """For each copy of ``job_id`` on ``printer``'s paper: did every impression come out."""
    return [p.whole for p in printed(rig, printer, job_id)]


async def printer_view(kiosk: Client, name: str) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {TECH_TOKEN}"}
    async with kiosk.http.get(f"{kiosk.url}/v1/printers", headers=headers) as r:
        body = await r.json()
    return next(p for p in body["printers"] if p["name"] == name)


async def cancel_at_the_panel(printer_uri: str, printer_job_id: int) -> int:
    """Cancel-Job sent straight to the printer by someone else (a person at its panel)."""
    msg = codec.request(
        Operation.CANCEL_JOB, 1, printer_uri=printer_uri,
        attributes=[attr("job-id", Tag.INTEGER, printer_job_id),
                    attr("requesting-user-name", Tag.NAME, "front-desk")],
    )  # fmt: skip
    url = printer_uri.replace("ipp://", "http://")
    async with (
        aiohttp.ClientSession() as http,
        http.post(url, data=msg.encode(), headers={"Content-Type": "application/ipp"}) as r,
    ):
        return codec.parse(await r.read()).code


async def test_a_printer_that_renames_every_job_prints_normal_jobs_done(
    tmp_path: Path, printers: Rig, proxy: AdversaryProxy
) -> None:
    """A printer that reports every job as "Print" by "Guest": jobs are matched by job-id and
    time-at-creation, end DONE, and each prints once."""
    proxy.knobs.job_name = "replace"
    proxy.knobs.user_name = "replace"
    async with proxied(tmp_path, printers, proxy) as (_, kiosk):
        jobs = [
            await kiosk.submit(f"renamed-{i}", printer="printer-01", hold=False, doc=BADGE)
            for i in range(3)
        ]
        final = await kiosk.wait_states([j["id"] for j in jobs], {"DONE", "DEAD"})
    assert [j["state"] for j in final] == ["DONE"] * 3, final
    for j in jobs:
        assert whole(printers, "printer-01", j["id"]) == [True]


async def test_cancelled_at_the_printer_panel_stays_cancelled(
    tmp_path: Path, printers: Rig, proxy: AdversaryProxy
) -> None:
    """Someone cancels the job at the printer: edgeprint records CANCELLED with a reason
    saying so, never retries it, and nothing comes out."""
    proxy.knobs.canceled_at_device = True
    printers.fault("printer-01", "hold", "media-jam")  # the job waits at the printer
    async with proxied(tmp_path, printers, proxy, blocked_grace_s=PATIENT_S) as (run, kiosk):
        job = await kiosk.submit("panel-0001", printer="printer-01", hold=False, doc=BADGE)

        async def acknowledged() -> int | None:
            copies = await run.service.worker.copies_of(job["id"])
            return next((c.printer_job_id for c in copies if c.state.value == "acknowledged"), None)

        pjid = await eventually(acknowledged, "the printer to acknowledge the copy", timeout_s=20)
        assert await cancel_at_the_panel(printers["printer-01"].uri, pjid) == 0
        printers.clear_fault("printer-01")
        [final] = await kiosk.wait_states([job["id"]], {"CANCELLED", "DONE", "DEAD", "RELEASED"})
        assert final["state"] == "CANCELLED", final
        assert "cancelled at the printer" in final["last_error"]
        assert "job-canceled-at-device" in final["last_error"]
        assert final["attempts"] == 1
    assert printed(printers, "printer-01", job["id"]) == []
    assert printed(printers, "printer-02", job["id"]) == []


async def test_completed_with_a_document_error_is_not_printed(
    tmp_path: Path, printers: Rig, proxy: AdversaryProxy
) -> None:
    """ "Completed" with document-format-error and nothing out (job-impressions-completed 0)
    is not printed: one more try, then DEAD document_error with the printer's reason; never
    DONE, and nothing on paper."""
    printers.fault("printer-01", "docerror")  # every job: completes, nothing comes out
    proxy.knobs.document_errors = True  # ... and says document-format-error
    async with proxied(tmp_path, printers, proxy) as (_, kiosk):
        job = await kiosk.submit("docerr-0001", printer="printer-01", hold=False, doc=BADGE)
        [final] = await kiosk.wait_states([job["id"]], {"DONE", "DEAD"})
    assert (final["state"], final["dead_reason"]) == ("DEAD", "document_error"), final
    assert final["settled_by"] == "document_error", final
    assert "document-format-error" in final["last_error"]
    assert final["attempts"] == 2
    assert printed(printers, "printer-01", job["id"]) == []
    assert printed(printers, "printer-02", job["id"]) == []


async def test_completed_with_a_document_error_after_pages_came_out_is_outcome_unknown(
    tmp_path: Path, printers: Rig, proxy: AdversaryProxy
) -> None:
    """ "Completed" with document-format-error after its page came out (ippeveprinter counts
    job-impressions-completed 1): something is on paper, so it is never retried (that would
    be a second copy): the copy is incomplete, the job DEAD outcome_unknown for a person."""
    proxy.knobs.completed_reasons = ("document-format-error",)
    async with proxied(tmp_path, printers, proxy) as (run, kiosk):
        job = await kiosk.submit("docerr-0002", printer="printer-01", hold=False, doc=BADGE)
        [final] = await kiosk.wait_states([job["id"]], {"DONE", "DEAD"})
        copies = await run.service.worker.copies_of(job["id"])
    assert (final["state"], final["dead_reason"]) == ("DEAD", "outcome_unknown"), final
    assert final["settled_by"] == "completed_with_document_errors", final
    assert "document-format-error" in final["last_error"]
    assert final["attempts"] == 1
    assert [c.state.value for c in copies] == ["incomplete"]
    assert final["truncated_copies"] == 1
    assert whole(printers, "printer-01", job["id"]) == [True]  # what the printer did with it
    assert printed(printers, "printer-02", job["id"]) == []


async def test_an_upload_cut_short_that_printed_is_outcome_unknown(
    tmp_path: Path, printers: Rig, proxy: AdversaryProxy
) -> None:
    """The connection breaks during the upload of a two-page badge and the printer prints what
    it got (its first page; it says job-impressions-completed 1): never DONE, never a second
    copy: the copy stopped part-way, DEAD outcome_unknown "part of it printed", with
    pages_printed for the person who decides."""
    doc = make_pdf("two-page badge for the cut", pad_to=4000, pages=2)
    proxy.knobs.cut_after, proxy.knobs.cut_once, proxy.knobs.cut_wait_s = 1000, True, 10.0
    async with proxied(tmp_path, printers, proxy) as (_, kiosk):
        job = await kiosk.submit("cut-0001", printer="printer-01", hold=False, doc=doc)
        [final] = await kiosk.wait_states([job["id"]], {"DONE", "DEAD"})
    assert (final["state"], final["dead_reason"]) == ("DEAD", "outcome_unknown"), final
    assert final["settled_by"] == "stopped_after_pages", final
    assert final["pages_printed"] == 1, final
    assert "part of it printed" in final["last_error"]
    assert final["truncated_copies"] == 0  # counts incomplete copies; this one is partial
    assert proxy.record.cuts == 1
    [cut] = printed(printers, "printer-01", job["id"])  # the cut copy, and only it
    assert (cut.bytes, cut.pages, cut.out, cut.whole) == (1000, 2, 1, False)


async def test_an_upload_cut_short_that_printed_nothing_countable_is_outcome_unknown(
    tmp_path: Path, printers: Rig, proxy: AdversaryProxy
) -> None:
    """The same cut of a one-page badge: the printer completes what it got and counts no
    impression out of it, nothing shows it whole: the copy is incomplete (completed, not
    verifiably whole), DEAD outcome_unknown "a possibly truncated copy printed"."""
    proxy.knobs.cut_after, proxy.knobs.cut_once, proxy.knobs.cut_wait_s = 1000, True, 10.0
    async with proxied(tmp_path, printers, proxy) as (_, kiosk):
        job = await kiosk.submit("cut-0003", printer="printer-01", hold=False, doc=BADGE)
        [final] = await kiosk.wait_states([job["id"]], {"DONE", "DEAD"})
    assert (final["state"], final["dead_reason"]) == ("DEAD", "outcome_unknown"), final
    assert final["settled_by"] == "completed_unverified", final
    assert "possibly truncated copy printed" in final["last_error"]
    assert final["truncated_copies"] == 1
    assert proxy.record.cuts == 1
    [cut] = printed(printers, "printer-01", job["id"])  # the cut copy, and only it
    assert (cut.bytes, cut.whole) == (1000, False)


async def test_an_upload_cut_short_still_printing_is_cancelled_and_sent_whole(
    tmp_path: Path, printers: Rig, proxy: AdversaryProxy
) -> None:
    """A cut upload the printer is still working on is cancelled there (its job-k-octets show
    it is short) and the whole document is sent again: one whole copy on paper."""
    proxy.knobs.cut_after, proxy.knobs.cut_once = 1000, True
    printers.set_speed("printer-01", 1.0)
    async with proxied(tmp_path, printers, proxy) as (_, kiosk):
        job = await kiosk.submit("cut-0002", printer="printer-01", hold=False, doc=BADGE)
        [final] = await kiosk.wait_states([job["id"]], {"DONE", "DEAD"})
    assert final["state"] == "DONE", final
    assert proxy.record.cuts == 1
    [copy] = printed(printers, "printer-01", job["id"])
    assert (copy.bytes, copy.whole) == (len(BADGE), True)


async def test_job_monitoring_that_fails_falls_back_to_get_jobs(
    tmp_path: Path, printers: Rig, proxy: AdversaryProxy
) -> None:
    """Get-Job-Attributes answers client-error-bad-request every time: Get-Jobs settles it."""
    proxy.knobs.gja_status = 0x0400
    async with proxied(tmp_path, printers, proxy) as (_, kiosk):
        job = await kiosk.submit("gja-0001", printer="printer-01", hold=False, doc=BADGE)
        [final] = await kiosk.wait_states([job["id"]], {"DONE", "DEAD"})
    assert final["state"] == "DONE", final
    assert whole(printers, "printer-01", job["id"]) == [True]
    assert proxy.count("Get-Jobs") >= 1


async def test_a_printer_that_cannot_report_job_state_is_blamed_not_the_job(
    tmp_path: Path, printers: Rig, proxy: AdversaryProxy
) -> None:
    """Get-Job-Attributes and Get-Jobs both answer HTTP 500: the job is parked DEAD
    outcome_unknown (sent once, never again), the printer is unhealthy with a reason a
    technician can act on, and the next job prints on its healthy peer."""
    async with proxied(tmp_path, printers, proxy, in_hand_timeout_s=1.0) as (_, kiosk):
        proxy.knobs.gja_http, proxy.knobs.jobs_http = 500, 500
        job = await kiosk.submit("mon-0001", printer="printer-01", hold=False, doc=BADGE)
        [final] = await kiosk.wait_states([job["id"]], {"DONE", "DEAD"})
        assert (final["state"], final["dead_reason"]) == ("DEAD", "outcome_unknown"), final
        assert "cannot report job state" in final["last_error"]
        view = await printer_view(kiosk, "printer-01")
        assert not view["healthy"]
        assert view["health_reason"].startswith("cannot report job state")
        # issue 25: in plain words, with its time, first
        assert view["problem"].startswith("cannot report job state since ")
        assert view["problem"].endswith(
            "its job was set aside; check what it printed, then resume it"
        )
        assert view["problems"][0]["kind"] == "cannot-report-job-state"
        nxt = await kiosk.submit("mon-0002", pool="lobby", hold=False, doc=BADGE)
        [done] = await kiosk.wait_states([nxt["id"]], {"DONE", "DEAD"})
        assert done["state"] == "DONE"
    assert whole(printers, "printer-01", job["id"]) == [True]  # once, not resent
    assert whole(printers, "printer-02", nxt["id"]) == [True]


async def test_http_426_says_use_ipps_and_is_probed_slowly(
    tmp_path: Path, printers: Rig, proxy: AdversaryProxy
) -> None:
    """A printer that answers HTTP 426 is unhealthy with "printer requires TLS: use ipps://",
    is probed with a back-off (no storm), and its jobs go to its peer."""
    proxy.knobs.http_status = 426
    async with proxied(tmp_path, printers, proxy) as (_, kiosk):
        view = await eventually(lambda: _unhealthy(kiosk, "printer-01"), "printer-01 unhealthy")
        assert view["health_reason"] == "printer requires TLS: use ipps://"
        assert view["problem"].startswith("wants TLS since ")  # issue 25
        before = proxy.count("Get-Printer-Attributes")
        job = await kiosk.submit("tls-0001", printer="printer-01", hold=False, doc=BADGE)
        [final] = await kiosk.wait_states([job["id"]], {"DONE", "DEAD"})
        await asyncio.sleep(2.0)  # a window in which to count probes, not a synchronisation
        probes = proxy.count("Get-Printer-Attributes") - before
    assert final["state"] == "DONE"
    assert whole(printers, "printer-02", job["id"]) == [True]
    assert probes <= 6, f"{probes} probes in ~2.5 s: no back-off"


async def _unhealthy(kiosk: Client, name: str) -> dict[str, Any] | None:
    view = await printer_view(kiosk, name)
    return view if view["health_reason"] else None


async def test_a_printer_that_refuses_ipp2_is_spoken_to_in_ipp11(
    tmp_path: Path, printers: Rig, proxy: AdversaryProxy
) -> None:
    """server-error-version-not-supported to IPP/2.0: the same request again at IPP/1.1, and
    1.1 from then on; the job prints once."""
    proxy.knobs.ipp11_only = True
    async with proxied(tmp_path, printers, proxy) as (_, kiosk):
        job = await kiosk.submit("v11-0001", printer="printer-01", hold=False, doc=BADGE)
        [final] = await kiosk.wait_states([job["id"]], {"DONE", "DEAD"})
    assert final["state"] == "DONE", final
    versions = proxy.record.versions
    assert len(versions) == len(proxy.record.requests)  # every request was IPP
    assert versions[0] == (2, 0)
    assert set(versions[1:]) == {(1, 1)}, "went back to 2.0 after a refusal"
    assert whole(printers, "printer-01", job["id"]) == [True]


async def test_an_answer_that_is_not_ipp_makes_the_printer_unhealthy_and_touches_no_job(
    tmp_path: Path, printers: Rig, proxy: AdversaryProxy, caplog: pytest.LogCaptureFixture
) -> None:
    """Bytes that are not IPP: the printer is unhealthy with that reason, the first bytes are
    logged once (hex), and a job waiting for it stays RELEASED, untouched."""
    proxy.knobs.garbage = True
    caplog.set_level(logging.WARNING, logger="edgeprint")
    async with proxied(tmp_path, printers, proxy) as (_, kiosk):
        view = await eventually(lambda: _unhealthy(kiosk, "printer-01"), "printer-01 unhealthy")
        assert "not valid IPP" in view["health_reason"]
        job = await kiosk.submit("bad-0001", hold=False, doc=BADGE, printer="printer-01")
        await eventually(lambda: _probes_at_least(proxy, 3), "three probes", timeout_s=15)
        current = await kiosk.job(job["id"])
    # printer-01 is in pool "lobby": its jobs go to the healthy peer, never failed
    assert current["state"] in ("RELEASED", "PRINTING", "DONE")
    assert current["dead_reason"] is None
    hex_lines = [r for r in caplog.records if getattr(r, "event", "") == "printer_bad_answer"]
    assert len(hex_lines) == 1
    assert hex_lines[0].head_hex.startswith("0001")


async def _probes_at_least(proxy: AdversaryProxy, n: int) -> bool:
    return proxy.count("Get-Printer-Attributes") >= n


async def test_a_printer_that_purges_finished_jobs_never_gets_a_blind_second_copy(
    tmp_path: Path, printers: Rig, proxy: AdversaryProxy
) -> None:
    """A printer that forgets finished jobs at once: a copy it acknowledged whole and then
    forgot, in the same epoch with no error seen, is DONE — printed_unverified, saying in
    words what is known (forgotten_after_acknowledged) — printed once, never twice."""
    proxy.knobs.history_s = 0.0
    async with proxied(tmp_path, printers, proxy) as (run, kiosk):
        job = await kiosk.submit("purge-0001", printer="printer-01", hold=False, doc=BADGE)
        [final] = await kiosk.wait_states([job["id"]], {"DONE", "DEAD"})
        copies = await run.service.worker.copies_of(job["id"])
    assert final["state"] == "DONE", final
    assert final["settled_by"] == "forgotten_after_acknowledged", final
    assert final["printed_unverified"], final
    assert [c.state.value for c in copies] == ["unverified"]
    assert printed_names(printers)[f"edgeprint-{job['id']}"] == ["printer-01"]
    assert whole(printers, "printer-01", job["id"]) == [True]


async def test_a_printer_that_purges_finished_jobs_asks_a_person_when_so_configured(
    tmp_path: Path, printers: Rig, proxy: AdversaryProxy
) -> None:
    """The same printer with ``on_forgotten = "ask"``: the forgotten copy is not taken as
    printed: DEAD outcome_unknown with the reason in words — printed once, never twice."""
    proxy.knobs.history_s = 0.0
    async with proxied(tmp_path, printers, proxy, {"on_forgotten": "ask"}) as (_, kiosk):
        job = await kiosk.submit("purge-0002", printer="printer-01", hold=False, doc=BADGE)
        [final] = await kiosk.wait_states([job["id"]], {"DONE", "DEAD"})
    assert (final["state"], final["dead_reason"]) == ("DEAD", "outcome_unknown"), final
    assert final["settled_by"] == "forgotten_after_acknowledged", final
    assert 'on_forgotten = "ask"' in final["last_error"]
    assert final["printed_unverified"] is None
    assert printed_names(printers)[f"edgeprint-{job['id']}"] == ["printer-01"]


async def test_a_printer_that_aborts_every_job_is_quarantined_and_its_peer_prints(
    tmp_path: Path, printers: Rig
) -> None:
    """A printer that takes every job and then aborts it: after three different jobs it is
    unhealthy (quarantined) and the pool's jobs print on its peer, none on it."""
    printers.fault("printer-01", "abort")
    cfg = rig_config(tmp_path / "data", printers, quarantine_s=600)
    async with appliance(cfg) as (_, kiosk):
        jobs = [
            await kiosk.submit(f"abort-{i:04d}", pool="lobby", hold=False, doc=BADGE)
            for i in range(8)
        ]
        final = await kiosk.wait_states([j["id"] for j in jobs], {"DONE", "DEAD"}, timeout_s=60)
        view = await printer_view(kiosk, "printer-01")
    assert [j["state"] for j in final] == ["DONE"] * 8, [j["last_error"] for j in final]
    assert view["health_reason"] == "quarantined: several different jobs failed here"
    assert printers.printed("printer-01") == []
    assert len(printers.printed("printer-02")) == 8


async def test_a_cancel_survives_a_printer_that_dies_before_confirming_it(
    tmp_path: Path, printers: Rig, proxy: AdversaryProxy
) -> None:
    """A person cancels a job its printer holds; the printer dies before it confirms: the job
    ends CANCELLED (never DEAD for a technician to reprint), and nothing comes out."""
    printers.fault("printer-01", "hold", "media-jam")
    async with proxied(
        tmp_path, printers, proxy, in_hand_timeout_s=1.0, blocked_grace_s=PATIENT_S
    ) as (run, kiosk):
        job = await kiosk.submit("cancel-0001", printer="printer-01", hold=False, doc=BADGE)

        async def acknowledged() -> bool:
            return any(
                c.state.value == "acknowledged"
                for c in await run.service.worker.copies_of(job["id"])
            )

        await eventually(acknowledged, "the printer to acknowledge the copy", timeout_s=20)
        proxy.knobs.http_status = None
        printers.kill("printer-01")
        status, body = await kiosk.post(f"/v1/jobs/{job['id']}/cancel")
        assert status == 202, body
        [final] = await kiosk.wait_states([job["id"]], {"CANCELLED", "DEAD", "DONE"})
        assert final["state"] == "CANCELLED", final
        assert "cancelled as asked" in final["last_error"]
    assert printers.printed("printer-01") == []


async def test_a_pool_whose_printers_are_all_paused_takes_jobs_and_they_wait(
    tmp_path: Path, printers: Rig
) -> None:
    """Every printer of the pool paused: a submit is still 201 (the jobs wait for a resume),
    not 503 queue-full; after the resume they print once."""
    cfg = rig_config(tmp_path / "data", printers)
    async with appliance(cfg) as (_, kiosk):
        for name in ("printer-01", "printer-02"):
            status, _ = await kiosk.post(f"/v1/printers/{name}/pause", tech=True)
            assert status == 200
        job = await kiosk.submit("paused-0001", pool="lobby", hold=False, doc=BADGE)
        assert (await kiosk.job(job["id"]))["state"] == "RELEASED"
        status, _ = await kiosk.post("/v1/printers/printer-02/resume", tech=True)
        assert status == 200
        [final] = await kiosk.wait_states([job["id"]], {"DONE", "DEAD"})
    assert final["state"] == "DONE"
    assert printed_names(printers)[f"edgeprint-{job['id']}"] == ["printer-02"]


async def test_a_printer_that_does_not_answer_says_since_when_and_nothing_stale(
    tmp_path: Path, printers: Rig
) -> None:
    """GET /v1/printers of a killed printer: unreachable_since set, no printer-state or queue
    count from before it died."""
    cfg = rig_config(tmp_path / "data", printers)
    async with appliance(cfg) as (_, kiosk):
        await eventually(
            lambda: _state_known(kiosk, "printer-01"), "printer-01's state", timeout_s=20
        )
        printers.kill("printer-01")
        view = await eventually(lambda: _down(kiosk, "printer-01"), "printer-01 down", timeout_s=20)
    assert view["printer_state"] is None
    assert view["queued_job_count"] is None
    assert view["unreachable_since"].endswith("Z") or "+00:00" in view["unreachable_since"]


async def _state_known(kiosk: Client, name: str) -> bool:
    return (await printer_view(kiosk, name))["printer_state"] is not None


async def _down(kiosk: Client, name: str) -> dict[str, Any] | None:
    view = await printer_view(kiosk, name)
    return view if view["unreachable_since"] else None
