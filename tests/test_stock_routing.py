"""Stock-aware routing on real printers: the stock is set through ippeveprinter's own /media
form, a real appliance routes, and the printers' own logs say what printed where.

A badge (testbed.pdfs.make_pdf: 4×3 in) waits RELEASED with a waiting reason while no printer
of its pool has fitting stock, and prints once, on the printer whose stock was changed, as
soon as it is loaded; a pool prefers the printer whose stock fits exactly over one that
would scale; a job named for one printer without fitting stock waits there.
"""

from __future__ import annotations

import io
from typing import Any

import pypdf
import pytest

from testbed.config import TECH_TOKEN
from testbed.rig import Rig
from tests.polling import eventually
from tests.printing import Client, appliance, assert_each_printed_once, rig_config
from tests.test_cli_tech import run_cli

pytestmark = pytest.mark.slow

LABEL_4X3 = "oe_4x3-label_4x3in"


def _letter_pdf() -> bytes:
    w = pypdf.PdfWriter()
    w.add_blank_page(width=612, height=792)
    out = io.BytesIO()
    w.write(out)
    return out.getvalue()


async def _get(kiosk: Client, path: str) -> Any:
    headers = {"Authorization": f"Bearer {TECH_TOKEN}"}
    async with kiosk.http.get(f"{kiosk.url}{path}", headers=headers) as r:
        assert r.status == 200, path
        return await (r.json() if r.content_type == "application/json" else r.text())


async def _printer(kiosk: Client, name: str) -> dict[str, Any]:
    body = await _get(kiosk, "/v1/printers")
    [p] = [p for p in body["printers"] if p["name"] == name]
    return dict(p)


async def test_a_badge_waits_for_its_stock_and_prints_once_it_is_loaded(
    tmp_path: Any, printers: Rig, capsys: pytest.CaptureFixture[str]
) -> None:
    rig = printers
    rig.load_media("printer-01", "na_index-4x6_4x6in")
    rig.load_media("printer-02", "na_index-3x5_3x5in")
    cfg = rig_config(tmp_path / "data", rig)
    async with appliance(cfg) as (_run, kiosk):
        for name in ("printer-01", "printer-02"):
            await eventually(
                lambda n=name: _printed_media(kiosk, n), f"{name}'s stock read", timeout_s=10
            )
        p1 = await _printer(kiosk, "printer-01")
        assert p1["media_from"] == "printer"
        assert {(m["size"], m["label"], m["fit"]) for m in p1["media_ready"]} == {
            ("4×6 in", True, "exact")
        }
        job = await kiosk.submit("badge-0001", pool="lobby", hold=False)
        assert job["document"]["page_size"] == {
            "size": "4×3 in", "width_mm": 76.2, "length_mm": 101.6, "uniform": True
        }  # fmt: skip
        # the kiosk's answer already says why (every printer of the pool has been read)
        assert job["waiting_reason"] == (
            "no printer in lobby has 4×3 in stock ready; printer-01 has 4×6 in; "
            "printer-02 has 3×5 in"
        )
        waited = await kiosk.job(job["id"])
        assert waited["state"] == "RELEASED"
        assert waited["waiting_reason"] == (
            "no printer in lobby has 4×3 in stock ready; printer-01 has 4×6 in; "
            "printer-02 has 3×5 in"
        )

        async def counted() -> bool:  # the stock watch's next round (every second)
            gauge = 'edgeprint_jobs_waiting_for_stock{kind="pool",target="lobby"} 1.0'
            return gauge in await _get(kiosk, "/metrics")

        await eventually(counted, "the waiting gauge at 1", timeout_s=5)
        listed = await _get(kiosk, "/v1/printers")
        assert listed["waiting_for_stock"] == [
            {"printer": None, "pool": "lobby", "size": "4×3 in", "jobs": 1,
             "reason": waited["waiting_reason"]}
        ]  # fmt: skip
        code, out, _ = await run_cli(capsys, "status", "--url", kiosk.url)
        assert code == 0
        assert f"WAITING FOR STOCK  1 job(s): {waited['waiting_reason']}" in " ".join(
            line.strip() for line in out.splitlines()
        )
        assert "printer-01: stock: 4×6 in" in out
        assert rig.printed("printer-01") == rig.printed("printer-02") == []

        rig.load_media("printer-02", LABEL_4X3)
        [done] = await kiosk.wait_states([job["id"]], {"DONE", "DEAD"}, timeout_s=20)
        assert (done["state"], done["printed_on"], done["waiting_reason"]) == (
            "DONE", "printer-02", None,
        )  # fmt: skip

        async def none_waiting() -> bool:
            gauge = 'edgeprint_jobs_waiting_for_stock{kind="pool",target="lobby"} 0.0'
            return gauge in await _get(kiosk, "/metrics")

        await eventually(none_waiting, "the waiting gauge back at 0", timeout_s=5)
    assert_each_printed_once(rig, [job["id"]])
    assert [x.job_name for x in rig.printed("printer-02")] == [f"edgeprint-{job['id']}"]


async def _printed_media(kiosk: Client, name: str) -> bool:
    return bool((await _printer(kiosk, name)).get("media_ready"))


async def test_a_pool_prefers_the_printer_whose_stock_fits_exactly(
    tmp_path: Any, printers: Rig
) -> None:
    """printer-01 has letter (sheet stock: it would scale a badge), printer-02 4×3 labels:
    every badge prints on printer-02 though printer-01 is idle; a letter page, which no label
    fits, prints on printer-01; a letter page named for printer-02 waits there."""
    rig = printers
    rig.load_media("printer-02", LABEL_4X3)
    for p in rig:
        rig.set_speed(p.name, 0.05)
    cfg = rig_config(tmp_path / "data", rig)
    async with appliance(cfg) as (_run, kiosk):
        for name in ("printer-01", "printer-02"):
            await eventually(
                lambda n=name: _printed_media(kiosk, n), f"{name}'s stock read", timeout_s=10
            )
        badges = [(await kiosk.submit(f"badge-{i:04d}", pool="lobby", hold=False))["id"]
                  for i in range(6)]  # fmt: skip
        sheet = (await kiosk.submit("letter-0001", doc=_letter_pdf(), pool="lobby", hold=False))[
            "id"
        ]
        named = await kiosk.submit(
            "letter-0002", doc=_letter_pdf(), printer="printer-02", hold=False
        )
        done = await kiosk.wait_states([*badges, sheet], {"DONE", "DEAD"}, timeout_s=30)
        assert {j["printed_on"] for j in done if j["id"] in badges} == {"printer-02"}
        assert [j["printed_on"] for j in done if j["id"] == sheet] == ["printer-01"]

        async def waiting() -> dict[str, Any] | None:
            j = await kiosk.job(named["id"])
            return j if j["waiting_reason"] else None

        held = await eventually(waiting, "the named job's waiting reason", timeout_s=10)
        assert held["state"] == "RELEASED"
        assert held["waiting_reason"] == ("printer-02 has no 8.5×11 in stock ready; it has 4×3 in")
        assert (await _cancel(kiosk, named["id"])) == 200
    assert_each_printed_once(rig, [*badges, sheet])


async def _cancel(kiosk: Client, job_id: str) -> int:
    status, _ = await kiosk.post(f"/v1/jobs/{job_id}/cancel")
    return status


async def test_a_printer_that_reports_no_media_uses_the_configured_stock(
    tmp_path: Any, printers: Rig
) -> None:
    """[[printers]] media stands in for a printer that reports no ready media (its trays' sizes
    unset through its /media form); once it reports some (restarted), what it reports wins."""
    rig = printers
    rig.load_media("printer-01", "")  # no size in either tray: media-ready is empty
    rig.load_media("printer-02", "na_index-4x6_4x6in")
    cfg = rig_config(tmp_path / "data", rig)
    cfg["printers"][0]["media"] = LABEL_4X3
    async with appliance(cfg) as (_run, kiosk):
        await eventually(lambda: _printed_media(kiosk, "printer-01"), "stock read", timeout_s=10)
        p1 = await _printer(kiosk, "printer-01")
        assert p1["media_from"] == "config"
        assert [(m["name"], m["size"], m["label"]) for m in p1["media_ready"]] == [
            (LABEL_4X3, "4×3 in", True)
        ]
        job = await kiosk.submit("badge-0001", pool="lobby", hold=False)
        [done] = await kiosk.wait_states([job["id"]], {"DONE", "DEAD"}, timeout_s=20)
        assert (done["state"], done["printed_on"]) == ("DONE", "printer-01")

        # its /media form cannot set media once it has none ("No media-col-ready defined"):
        # restarted, it reports its own (letter) again
        rig.restart("printer-01")

        async def reported() -> bool:
            return (await _printer(kiosk, "printer-01"))["media_from"] == "printer"

        await eventually(reported, "printer-01's own media", timeout_s=10)
    assert_each_printed_once(rig, [job["id"]])
