"""Nothing called healthy that is not, against real printers through a real appliance: LPrint
driving a Zebra whose head is open or whose labels ran out (it reports a bare ``other`` and
``media-empty``), and ippeveprinter with a jam."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from edgeprint.server import Running
from testbed.adversary.proxy import AdversaryProxy, Knobs
from testbed.config import FAST_DISPATCH, config_dict, rig_config
from testbed.pdfs import make_pdf
from testbed.rig import Rig
from tests.conftest import TECH_TOKEN
from tests.lprint_rig import LPrintRig
from tests.polling import eventually
from tests.printing import Client, appliance
from tests.unix_front import UnixFront

pytestmark = pytest.mark.slow

BADGE = make_pdf("badge while the head is open", pad_to=2000)


@pytest.fixture
def front(lprint: LPrintRig) -> Iterator[UnixFront]:
    """LPrint's Unix socket on a loopback TCP port (edgeprint speaks IPP over TCP)."""
    with UnixFront(lprint.socket_path) as f:
        yield f


async def view_of(kiosk: Client, name: str) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {TECH_TOKEN}"}
    async with kiosk.http.get(f"{kiosk.url}/v1/printers", headers=headers) as r:
        assert r.status == 200
        body = await r.json()
    view: dict[str, Any] = next(p for p in body["printers"] if p["name"] == name)
    return view


def status_queries(lprint: LPrintRig) -> int:
    """Connections LPrint opened to the Zebra for its status alone (``~HQES``, no label)."""
    return sum(b"~HQES" in z and b"^XA" not in z for z in lprint.received())


async def test_lprint_zebra_with_its_head_open_or_out_of_labels_takes_no_work(
    tmp_path: Path, lprint: LPrintRig, front: UnixFront
) -> None:
    """A Zebra with its head open (LPrint: bare ``other``) or out of labels (``media-empty``)
    keeps new work from that printer with the reason in plain words and its message; the
    job waits RELEASED with nothing sent, and prints once the head is closed."""
    cfg = config_dict(tmp_path / "data")
    cfg["printers"] = [{"name": "zebra-01", "uri": f"ipp://127.0.0.1:{front.port}/ipp/print"}]
    cfg["dispatch"] = dict(FAST_DISPATCH)
    async with appliance(cfg) as (_, kiosk):

        async def healthy() -> dict[str, Any] | None:
            v = await view_of(kiosk, "zebra-01")
            return v if v["healthy"] and v["printer_state"] == "idle" else None

        view = await eventually(healthy, "zebra-01 probed and healthy", timeout_s=20)
        assert (view["printer_state_reasons"], view["reasons"]) == ([], [])

        lprint.zebra("head-open")

        async def blocked() -> dict[str, Any] | None:
            v = await view_of(kiosk, "zebra-01")
            return v if not v["healthy"] else None

        view = await eventually(blocked, "zebra-01 blocked by its open head", timeout_s=20)
        assert view["printer_state"] == "idle"  # LPrint 1.1 stays idle and accepting
        assert view["printer_state_reasons"] == ["other"]
        assert view["printer_state_message"] == "Idle."
        [reason] = view["reasons"]
        assert {k: reason[k] for k in ("value", "keyword", "severity", "known", "words")} == {
            "value": "other", "keyword": "other", "severity": "error", "known": True,
            "words": "a fault the printer does not name",
        }  # fmt: skip
        assert reason["since"] is not None
        assert view["health_reason"] == (
            "printer-state-reasons: a fault the printer does not name (other); "
            'the printer says "Idle."'
        )

        job = await kiosk.submit("head-open-01", printer="zebra-01", hold=False, doc=BADGE)
        asked = status_queries(lprint)
        # LPrint asked its Zebra twice more (edgeprint probed it while the job waited)
        await eventually(
            lambda: status_queries(lprint) >= asked + 2, "two more status queries", timeout_s=20
        )
        waiting = await kiosk.job(job["id"])
        assert waiting["state"] == "RELEASED"
        assert lprint.labels() == []  # nothing was sent to the printer

        lprint.zebra("ok")  # the head is closed
        [done] = await kiosk.wait_states([job["id"]], {"DONE", "DEAD"}, timeout_s=60)
        assert done["state"] == "DONE", done
        assert len(lprint.wait_labels(1)) == 1
        view = await eventually(healthy, "zebra-01 healthy again", timeout_s=20)
        assert (view["health_reason"], view["reasons"]) == (None, [])

        lprint.zebra("media-out")
        view = await eventually(blocked, "zebra-01 blocked, out of labels", timeout_s=20)
        assert view["printer_state_reasons"] == ["media-empty"]
        assert [(r["value"], r["severity"], r["known"]) for r in view["reasons"]] == [
            ("media-empty", "error", True)
        ]
        assert view["health_reason"] == (
            'printer-state-reasons: out of paper or labels (media-empty); the printer says "Idle."'
        )
        lprint.zebra("ok")  # a new roll
        await eventually(healthy, "zebra-01 healthy after a new roll", timeout_s=20)
    assert len(lprint.labels()) == 1  # one label in all


async def _copy_on(run: Running, job_id: str, printer: str, state: str) -> bool:
    return any(
        c.printer == printer and c.state.value == state
        for c in await run.service.worker.copies_of(job_id)
    )


async def test_a_jam_reported_as_a_warning_stalls_the_job_in_hand_and_it_moves(
    tmp_path: Path, printers: Rig
) -> None:
    """ippeveprinter jammed mid-job says media-jam-warning while processing: new work is kept
    from it (the job in hand is stalled), the reason is shown as a warning, and after
    blocked_grace_s the job is cancelled there and printed once on its pool peer."""
    printers.fault("printer-01", "hold", "media-jam")
    cfg = rig_config(tmp_path / "data", printers, blocked_grace_s=1.0)
    async with appliance(cfg) as (run, kiosk):
        status, body = await kiosk.post("/v1/printers/printer-02/pause", tech=True)
        assert status == 200, body  # the peer takes work only once it is resumed
        job = await kiosk.submit("jam-0001", pool="lobby", hold=False, doc=BADGE)
        await eventually(
            lambda: _copy_on(run, job["id"], "printer-01", "acknowledged"),
            "printer-01 to take the job",
            timeout_s=20,
        )

        async def stalled() -> dict[str, Any] | None:
            v = await view_of(kiosk, "printer-01")
            return v if not v["healthy"] else None

        view = await eventually(stalled, "printer-01 stalled by the jam", timeout_s=20)
        assert view["printer_state"] == "processing"
        assert [(r["value"], r["severity"], r["known"]) for r in view["reasons"]] == [
            ("media-jam-warning", "warning", True)
        ]
        assert view["health_reason"] == (
            "printer-state-reasons: paper or labels jammed (media-jam-warning; the job in hand "
            'is stalled); the printer says "Printing."'
        )
        status, body = await kiosk.post("/v1/printers/printer-02/resume", tech=True)
        assert status == 200, body
        [final] = await kiosk.wait_states([job["id"]], {"DONE", "DEAD"}, timeout_s=30)
        assert final["state"] == "DONE", final
    assert [p.job_name for p in printers.printed("printer-02")] == [f"edgeprint-{job['id']}"]
    assert printers.printed("printer-01") == []


async def test_a_jam_the_printer_reports_as_an_error_keeps_work_away_until_cleared(
    tmp_path: Path, printers: Rig
) -> None:
    """A printer that stops on a jam (printer-state stopped, media-jam-error, as a device does;
    ippeveprinter through the proxy's error_stop) is kept from new work with the error shown;
    a pool job goes to its peer, and once the jam is cleared the held job prints there once."""
    p1 = printers["printer-01"]
    printers.fault("printer-01", "hold", "media-jam")
    with AdversaryProxy(p1.uri, Knobs(error_stop=True), printer_dir=p1.dir) as proxy:
        cfg = rig_config(tmp_path / "data", printers, blocked_grace_s=60.0)
        cfg["printers"][0]["uri"] = proxy.uri
        async with appliance(cfg) as (_, kiosk):
            held = await kiosk.submit("stop-0001", printer="printer-01", hold=False, doc=BADGE)

            async def stopped() -> dict[str, Any] | None:
                v = await view_of(kiosk, "printer-01")
                return v if not v["healthy"] and v["printer_state"] == "stopped" else None

            view = await eventually(stopped, "printer-01 stopped on the jam", timeout_s=20)
            assert [(r["value"], r["severity"], r["known"]) for r in view["reasons"]] == [
                ("media-jam-error", "error", True)
            ]
            assert view["health_reason"].startswith(
                "printer-state-reasons: paper or labels jammed (media-jam-error)"
            )
            other = await kiosk.submit("stop-0002", pool="lobby", hold=False, doc=BADGE)
            [done] = await kiosk.wait_states([other["id"]], {"DONE", "DEAD"}, timeout_s=30)
            assert done["state"] == "DONE", done

            printers.clear_fault("printer-01")  # someone clears the jam
            [final] = await kiosk.wait_states([held["id"]], {"DONE", "DEAD"}, timeout_s=30)
            assert final["state"] == "DONE", final

            async def healthy() -> dict[str, Any] | None:
                v = await view_of(kiosk, "printer-01")
                return v if v["healthy"] else None

            view = await eventually(healthy, "printer-01 healthy once cleared", timeout_s=20)
            assert view["reasons"] == []
    assert [p.job_name for p in printers.printed("printer-01")] == [f"edgeprint-{held['id']}"]
    assert [p.job_name for p in printers.printed("printer-02")] == [f"edgeprint-{other['id']}"]
