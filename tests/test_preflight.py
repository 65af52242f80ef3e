"""``edgeprint preflight`` and ``POST /v1/printers/{name}/check`` (issue 23) against real
ippeveprinters through a real appliance on loopback; the bad inputs with their exact answers."""

from __future__ import annotations

import asyncio
import io
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from pypdf import PdfWriter

from edgeprint import cli
from edgeprint.cli.preflight import EXIT_NOT_READY
from testbed import pdfs
from testbed.adversary.proxy import AdversaryProxy, Knobs
from testbed.pdfs import make_pdf
from testbed.rig import Rig
from tests.conftest import TECH_TOKEN, Appliance, config_dict, to_toml
from tests.lprint_rig import LPrintRig
from tests.printing import appliance, printed_names, rig_config
from tests.test_printing_tls import file_fingerprint


def _pdf(width_pt: float, height_pt: float) -> bytes:
    """A one-page PDF of that size (pypdf)."""
    writer = PdfWriter()
    writer.add_blank_page(width=width_pt, height=height_pt)
    out = io.BytesIO()
    writer.write(out)
    return bytes(out.getvalue())


async def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """``edgeprint ARGV --token TECH`` in a thread (the appliance's loop keeps serving)."""
    capsys.readouterr()
    code = await asyncio.to_thread(cli.main, [*argv, "--token", TECH_TOKEN])
    out = capsys.readouterr()
    return code, out.out, out.err


def _said(lines: list[str], head: str) -> list[str]:
    """The paragraphs under a printer's head line, each unfolded (a line of facts only by
    its first two words)."""
    out: list[str] = []
    for line in lines[lines.index(head) + 1 :]:
        if not line:
            break
        if line.startswith("    "):
            out[-1] += " " + line.strip()
        else:
            out.append(line.strip())
    return [o if o.startswith(("FAIL", "warn")) else " ".join(o.split()[:2]) for o in out]


def _letter_badge(tmp_path: Path) -> Path:
    path = tmp_path / "letter-badge.pdf"
    path.write_bytes(_pdf(612, 792))
    return path


async def test_preflight_prints_a_test_badge_on_each_printer_and_times_it(
    printers: Rig, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two real printers with the badge's stock ready (letter): both ready, each prints one
    test badge (ground truth: the printers' logs), release → printed is measured; the JSON
    has the stable keys; the test badges are rehearsal jobs in a rehearsal."""
    badge = _letter_badge(tmp_path)
    cfg = rig_config(tmp_path / "data", printers)
    async with appliance(cfg) as (run, client):
        assert (await client.post("/v1/event/rehearsal", tech=True))[0] == 200
        code, out, err = await run_cli(
            capsys, "preflight", "--url", client.url, "--badge", str(badge), "--json"
        )
        assert (code, err) == (0, "")
        body = json.loads(out)
        assert set(body) == {
            "url", "checked_at", "event", "badge", "test_print", "ready", "notes", "printers"
        }  # fmt: skip
        assert body["ready"] is True
        assert body["badge"] == {
            "source": "file", "name": "letter-badge.pdf", "width_mm": 215.9, "height_mm": 279.4
        }  # fmt: skip
        assert body["event"]["mode"] == "rehearsal"
        ids = []
        for p in body["printers"]:
            assert (p["ready"], p["problems"], p["warnings"], p["reachable"]) == (
                True, [], [], True
            )  # fmt: skip
            assert p["stock_fit"] == "exact"
            assert 0 < p["round_trip_s"] < 2
            assert p["printer_state"] == "idle"
            assert p["test_print"]["state"] == "DONE"
            assert 0 < p["test_print"]["release_to_printed_s"] < 30
            job = await client.job(p["test_print"]["job_id"])
            assert (job["printed_on"], job["rehearsal"], job["owner"]) == (
                p["name"], True, "preflight"
            )  # fmt: skip
            ids.append(job["id"])
        names = printed_names(printers)
        assert {n: len(ps) for n, ps in names.items()} == {f"edgeprint-{i}": 1 for i in ids}
        live = await run.service.views.jobs_by_state()
        assert sum(live.values()) == 0  # no live figure counts the test badges


async def test_preflight_says_wrong_stock_and_prints_nothing_there(
    printers: Rig, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A 4x3 in badge where the printers have 4x6 in labels ready (loaded through their own
    /media form): each printer WOULD FAIL with the stock named, exit 4, and no test badge is
    sent to a failing printer (the routing would hold it: label stock fits exactly only)."""
    badge = tmp_path / "badge.pdf"
    badge.write_bytes(_pdf(288, 216))
    for p in printers:
        printers.load_media(p.name, "na_index-4x6_4x6in")
    cfg = rig_config(tmp_path / "data", printers)
    async with appliance(cfg) as (_, client):
        code, out, err = await run_cli(
            capsys, "preflight", "--url", client.url, "--badge", str(badge)
        )
    assert (code, err) == (EXIT_NOT_READY, "")
    lines = out.splitlines()
    assert lines[1] == "badge 4×3 in (from badge.pdf)"
    for p in printers:
        assert _said(lines, f"{p.name}  WOULD FAIL  {p.uri}") == [
            "FAIL wrong stock: na_index-4x6_4x6in (101.6x152.4mm) ready, not the badge's 4×3 in",
            "answers in",
        ]
    assert lines[-1] == "0 of 2 printer(s) ready; would fail the morning: printer-01, printer-02"
    assert printed_names(printers) == {}


async def test_preflight_warns_of_a_small_badge_on_sheet_stock(
    printers: Rig, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A 4x3 in badge on office printers with letter ready: ready, with a warning that it
    comes out on letter, scaled or centred (the routing's default fit for sheet stock)."""
    badge = tmp_path / "badge.pdf"
    badge.write_bytes(make_pdf())
    cfg = rig_config(tmp_path / "data", printers)
    async with appliance(cfg) as (_, client):
        code, out, err = await run_cli(
            capsys, "preflight", "--url", client.url, "--badge", str(badge), "--no-print"
        )
    assert (code, err) == (0, "")
    lines = out.splitlines()
    for p in printers:
        assert _said(lines, f"{p.name}  ready  {p.uri}") == [
            "warn no 4×3 in stock ready: the badge comes out on na_letter_8.5x11in, scaled or "
            "centred (sheet stock)",
            "answers in",
        ]


async def test_preflight_against_unreachable_printers(
    app: Appliance, capsys: pytest.CaptureFixture[str]
) -> None:
    """Printers nobody answers for: each says it does not answer and why, exit 4; nothing
    is submitted; with neither --badge nor [event] badge_media it says the stock is not
    checked."""
    before = app.snapshot()
    code, out, err = await run_cli(capsys, "preflight", "--url", app.url)
    assert (code, err) == (EXIT_NOT_READY, "")
    lines = out.splitlines()
    assert lines[1:4] == [
        "stock not checked: no badge size known; pass --badge FILE (the badge PDF) or set",
        "  [event] badge_media (e.g. oe_4x3-label_4x3in) in the config",
        "the event is live: the test badges are live jobs and count in the live figures",
    ]
    for p in app.config.printers:
        port = p.uri.split(":")[2].split("/")[0]
        assert _said(lines, f"{p.name}  WOULD FAIL  {p.uri}") == [
            "FAIL does not answer: Get-Printer-Attributes: cannot connect: Cannot connect to "
            f"host 127.0.0.1:{port} ssl:default [Connect call failed ('127.0.0.1', {port})]"
        ]
    assert lines[-2:] == [
        "0 of 3 printer(s) ready; would fail the morning: printer-01, printer-02,",
        "  printer-03",
    ]
    assert app.snapshot() == before


async def test_preflight_badge_that_is_not_a_pdf(
    app: Appliance, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--badge with a file that is not a PDF, or does not exist: exit 2 naming it; nothing
    is asked of the printers and nothing stored changes."""
    text = tmp_path / "badge.txt"
    text.write_text("hello")
    broken = tmp_path / "broken.pdf"
    broken.write_bytes(b"%PDF-1.4\nnot really")
    before = app.snapshot()
    code, out, err = await run_cli(capsys, "preflight", "--url", app.url, "--badge", str(text))
    assert (code, out) == (2, "")
    assert err == f"edgeprint: --badge {text}: not a PDF (it does not begin with %PDF-)\n"
    code, out, err = await run_cli(
        capsys, "preflight", "--url", app.url, "--badge", str(tmp_path / "none.pdf")
    )
    assert (code, out) == (2, "")
    assert err == f"edgeprint: --badge {tmp_path / 'none.pdf'}: No such file or directory\n"
    code, out, err = await run_cli(capsys, "preflight", "--url", app.url, "--badge", str(broken))
    assert (code, out) == (2, "")
    assert err.startswith(f"edgeprint: --badge {broken}: not a readable PDF: ")
    assert app.snapshot() == before


async def test_preflight_takes_badge_media_from_config_and_the_url_from_config(
    printers: Rig, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """[event] badge_media is the badge's size when no --badge is given; --config finds the
    API; --no-print prints nothing."""
    cfg = rig_config(tmp_path / "data", printers)
    cfg["event"] = {"badge_media": "na_letter_8.5x11in"}
    async with appliance(cfg) as (run, _):
        path = tmp_path / "config.toml"
        path.write_text(to_toml({**cfg, "server": {**cfg["server"], "port": run.port}}))
        code, out, err = await run_cli(capsys, "preflight", "--config", str(path), "--no-print")
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[1:3] == [
        "badge 8.5×11 in ([event] na_letter_8.5x11in)",
        "no test badge printed (--no-print)",
    ]
    for p in printers:
        assert f"{p.name}  ready  {p.uri}" in lines
    assert lines[-1] == "2 of 2 printer(s) ready"
    assert printed_names(printers) == {}


async def test_check_endpoint(printers: Rig, tmp_path: Path) -> None:
    """POST /v1/printers/{name}/check: a real printer's answer now, timed; an unknown printer
    404; a body 422; a kiosk token 403."""
    name = printers.printers[0].name
    cfg = rig_config(tmp_path / "data", printers)
    cfg["event"] = {"badge_media": "oe_4x3-label_4x3in"}
    async with appliance(cfg) as (_, client):
        status, body = await client.post(f"/v1/printers/{name}/check", tech=True)
        assert status == 200
        assert body["printer"] == name
        assert body["reachable"] is True
        assert body["error"] is None
        assert 0 < body["round_trip_s"] < 2
        assert body["printer_state"] == "idle"
        assert body["media_ready"] == [
            "na_letter_8.5x11in (215.9x279.4mm)", "na_number-10_4.125x9.5in (104.77x241.3mm)"
        ]  # fmt: skip
        assert (body["badge_media"], body["stock_fit"], body["tls"]) == (
            "oe_4x3-label_4x3in", "sheet", None
        )  # fmt: skip
        status, body = await client.post("/v1/printers/printer-99/check", tech=True)
        assert (status, body["type"]) == (404, "urn:edgeprint:problem:printer-not-found")
        status, body = await client.post(f"/v1/printers/{name}/check", {"x": 1}, tech=True)
        assert (status, body["type"]) == (422, "urn:edgeprint:problem:invalid-request")
        status, body = await client.post(f"/v1/printers/{name}/check")
        assert (status, body["type"]) == (403, "urn:edgeprint:problem:forbidden")


async def test_check_endpoint_and_preflight_on_an_ipps_pin(
    ipps_printer: Rig, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An ipps printer: the check holds the certificate it presents against the pin stored at
    first contact; after a factory reset (a new certificate) preflight says it would fail and
    how to re-trust it, exit 4."""
    p = ipps_printer.printers[0]
    cfg = rig_config(tmp_path / "data", ipps_printer)
    cfg["printers"][0]["uri"] = p.uri.replace("ipp://", "ipps://")
    async with appliance(cfg) as (run, client):
        pin = await _eventually_pinned(run, p.name)
        status, body = await client.post(f"/v1/printers/{p.name}/check", tech=True)
        assert status == 200
        assert body["reachable"] is True
        assert body["tls"] == {
            "mode": "pin", "pinned": pin, "presented": pin, "matches": True, "error": None
        }  # fmt: skip
        shutil.rmtree(p.dir / "ssl")  # a factory reset: a new self-signed certificate
        ipps_printer.restart(p.name)
        code, out, err = await run_cli(capsys, "preflight", "--url", client.url, "--no-print")
        now = file_fingerprint(p.dir / "ssl" / "localhost.crt")
    assert (code, err) == (EXIT_NOT_READY, "")
    said = _said(out.splitlines(), f"{p.name}  WOULD FAIL  {cfg['printers'][0]['uri']}")
    assert (
        f"FAIL presents another certificate ({now}) than the pinned one ({pin}): nothing "
        f"is sent to it; if the printer was reset, edgeprint printers trust {p.name}" in said
    )


async def _eventually_pinned(run: Any, name: str) -> str:
    from tests.polling import eventually

    pin: str = await eventually(
        lambda: run.service.printers.printer_pin(name), "the first contact's pin"
    )
    return pin


def test_check_config_names_event_keys(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """[event] keys out of range or unknown: check-config exits 2 naming the key."""
    cases = {
        "badge_media": (
            {"badge_media": "4x3 labels"},
            "event.badge_media: '4x3 labels' is not a PWG self-describing media name "
            "(class_name_WxHunit, e.g. oe_4x3-label_4x3in or na_letter_8.5x11in)",
        ),
        "too_big": (
            {"badge_media": "oe_huge_100x3in"},
            "event.badge_media: 'oe_huge_100x3in' states 100×3 in; each side must be 10 to 1200 mm",
        ),
        "mode": ({"mode": "dress"}, "event.mode: Input should be 'live' or 'rehearsal'"),
        "unknown": ({"badge": "x"}, "event.badge: unknown key"),
    }
    for name, (event, said) in cases.items():
        path = tmp_path / f"{name}.toml"
        path.write_text(to_toml({**config_dict(tmp_path / "data"), "event": event}))
        code = cli.main(["check-config", str(path)])
        err = capsys.readouterr().err
        assert code == 2, name
        assert f"  {said}" in err.splitlines() or said in err, (name, err)


async def test_preflight_on_a_label_printer(
    tmp_path: Path, lprint: LPrintRig, capsys: pytest.CaptureFixture[str]
) -> None:
    """LPrint (a Zebra with 4x3 in labels loaded): a 4x3 in badge fits and its test badge
    comes out as one label; a letter badge is wrong stock there (labels take no larger
    page), exit 4, and nothing more is printed."""
    bridge = AdversaryProxy(
        lprint.printer_uri, Knobs(k_octets="exact"), unix_socket=lprint.socket_path
    )
    badge = tmp_path / "badge.pdf"
    badge.write_bytes(pdfs.make_badge_pdf("Hedy Lamarr"))
    with bridge:
        cfg = rig_config(
            tmp_path / "data",
            [],
            pool=None,
            request_timeout_s=5,
            upload_timeout_s=60,  # type: ignore[arg-type]
        )
        cfg["printers"] = [{"name": "label-01", "uri": bridge.uri}]
        async with appliance(cfg) as (_, client):
            code, out, err = await run_cli(
                capsys, "preflight", "--url", client.url, "--badge", str(badge), "--json"
            )
            assert (code, err) == (0, "")
            [p] = json.loads(out)["printers"]
            assert (p["ready"], p["stock_fit"], p["test_print"]["state"]) == (True, "exact", "DONE")
            assert p["media_ready"] == ["oe_4x3-label_4x3in (101.6x76.2mm)"]
            lprint.wait_labels(1)
            code, out, err = await run_cli(
                capsys, "preflight", "--url", client.url, "--badge", str(_letter_badge(tmp_path))
            )
    assert (code, err) == (EXIT_NOT_READY, "")
    assert _said(out.splitlines(), f"label-01  WOULD FAIL  {bridge.uri}")[0] == (
        "FAIL wrong stock: oe_4x3-label_4x3in (101.6x76.2mm) ready, not the badge's 8.5×11 in"
    )
    assert len(lprint.labels()) == 1


def test_supplies_and_runway_are_read_when_the_appliance_has_them() -> None:
    """GET /v1/printers' supplies and runway (when present) become problems and warnings;
    without them preflight says nothing of them (pure: the verdict over the API's JSON)."""
    from edgeprint.cli.preflight import _judge
    from edgeprint.models import RunwayOut, SupplyOut

    def supply(name: str, level: int | None) -> dict[str, object]:  # as GET /v1/printers has it
        return SupplyOut(name=name, kind="toner", level_percent=level).model_dump()

    def runway(left: int, minutes: float) -> dict[str, object]:
        out = RunwayOut(labels_left=left, labels_per_roll=500, per_minute=2.0, minutes_left=minutes)
        return out.model_dump()

    check = {
        "reachable": True, "round_trip_s": 0.01, "printer_state": "idle",
        "printer_state_reasons": ["media-low-report"], "printer_state_message": "",
        "accepting_jobs": True, "media_ready": [], "error": None, "tls": None,
    }  # fmt: skip
    plain = _judge({"name": "p", "uri": "ipp://x", "healthy": True}, check, None)
    assert (plain.problems, plain.warnings) == ([], [])
    empty = _judge(
        {"name": "p", "uri": "ipp://x", "healthy": True,
         "supplies": [supply("black toner", 0), supply("drum", 7), supply("waste", None)],
         "runway": runway(0, 0)},
        check, None,
    )  # fmt: skip
    assert empty.problems == ["black toner is empty", "the roll is used up (runway: 0 labels left)"]
    assert empty.warnings == ["drum is low (7%)"]
    short = _judge(
        {"name": "p", "uri": "ipp://x", "healthy": True,
         "runway": runway(40, 20)},
        {**check, "printer_state_reasons": ["media-jam-warning"], "printer_state_message": "Jam"},
        None,
    )  # fmt: skip
    assert short.problems == []
    assert short.warnings == [
        "reports media-jam-warning (Jam)", "the roll runs out in about 20 min at the current rate"
    ]  # fmt: skip
