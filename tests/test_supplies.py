"""Supplies and label runway on real printers through a real appliance (issue 23 part 2).

The printers are ippeveprinters (testbed/rig.py); their paper is set through their own
``/media`` form (``rig.media``). printer-01 is given ``labels_per_roll``; printer-02 not.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from edgeprint import cli
from edgeprint.server import DB_FILE
from testbed.adversary.proxy import AdversaryProxy, Knobs
from testbed.config import KIOSK_TOKEN, TECH_TOKEN
from testbed.pdfs import make_pdf
from testbed.rig import Rig
from tests.conftest import config_dict, to_toml
from tests.polling import eventually
from tests.printing import Client, appliance, printed_names, rig_config
from tests.test_cli_tech import run_cli

PER_ROLL = 10


def _config(tmp_path: Path, rig: Rig, per_roll: int = PER_ROLL) -> dict[str, Any]:
    cfg = rig_config(tmp_path / "data", rig)
    cfg["printers"][0]["labels_per_roll"] = per_roll
    return cfg


async def _printers(kiosk: Client) -> dict[str, dict[str, Any]]:
    headers = {"Authorization": f"Bearer {TECH_TOKEN}"}
    async with kiosk.http.get(f"{kiosk.url}/v1/printers", headers=headers) as r:
        assert r.status == 200
        body = await r.json()
    return {p["name"]: p for p in body["printers"]}


async def _runway(kiosk: Client, name: str = "printer-01") -> dict[str, Any] | None:
    runway: dict[str, Any] | None = (await _printers(kiosk))[name]["runway"]
    return runway


async def _metrics(kiosk: Client) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    async with kiosk.http.get(f"{kiosk.url}/metrics") as r:
        text = await r.text()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


async def _print(kiosk: Client, key: str, *, pages: int = 1, copies: int = 1) -> dict[str, Any]:
    job = await kiosk.submit(
        key, doc=make_pdf(key, pages=pages), printer="printer-01", hold=False, copies=copies
    )
    (done,) = await kiosk.wait_states([job["id"]], {"DONE"}, timeout_s=30)
    return done


async def _probed(kiosk: Client) -> bool:
    """Both printers described by a probe (their supplies are in)."""
    return all(p["supplies"] for p in (await _printers(kiosk)).values())


async def _left_is(kiosk: Client, n: int) -> bool:
    runway = await _runway(kiosk)
    return runway is not None and runway["labels_left"] == n


async def test_levels_and_runway_in_the_printer_view_and_metrics(
    tmp_path: Path, printers: Rig
) -> None:
    """GET /v1/printers shows each printer's supplies and trays as it reports them, and
    printer-01's runway counted down by real prints (pages × copies) with a forecast;
    /metrics shows the same."""
    for p in printers:
        printers.media(p.name, "loaded")  # main 250 of 250, by-pass 25 of 25
    async with appliance(_config(tmp_path, printers)) as (_, kiosk):
        await eventually(lambda: _probed(kiosk), "the printers probed")
        view = await _printers(kiosk)
        one, two = view["printer-01"], view["printer-02"]
        assert one["runway"] == {
            "labels_left": PER_ROLL, "labels_per_roll": PER_ROLL, "per_minute": 0.0,
            "minutes_left": None,
        }  # fmt: skip
        assert two["runway"] is None
        assert {"name": "Black Toner", "kind": "toner", "level_percent": 75} in one["supplies"]
        assert {"name": "Toner Waste Tank", "kind": "wasteToner", "level_percent": 25} in one[
            "supplies"
        ]
        assert {"tray": "main", "media": "na_letter_8.5x11in", "level_percent": 100} in one[
            "media_levels"
        ]

        await _print(kiosk, "two-by-two", pages=2, copies=2)
        await _print(kiosk, "job-one-0001")
        runway = await _runway(kiosk)
        assert runway is not None
        assert runway["labels_left"] == PER_ROLL - 5
        assert runway["per_minute"] == pytest.approx(5.0)  # up under a minute: over one minute
        assert runway["minutes_left"] == pytest.approx(1.0)

        m = await _metrics(kiosk)
        p1 = (("printer", "printer-01"),)
        assert m[("edgeprint_printer_labels_left", p1)] == PER_ROLL - 5
        assert m[("edgeprint_printer_runway_seconds", p1)] == pytest.approx(60.0)
        assert ("edgeprint_printer_labels_left", (("printer", "printer-02"),)) not in m
        key = (("printer", "printer-02"), ("supply", "Black Toner"))
        assert m[("edgeprint_printer_supply_level", key)] == 75
        key = (("printer", "printer-01"), ("tray", "by-pass-tray"))
        assert m[("edgeprint_printer_media_level", key)] == 100

        printers.media("printer-01", "low")  # main 10 of 250, by-pass 5 of 25

        async def low() -> bool:
            p = (await _printers(kiosk))["printer-01"]
            return "media-low-report" in p["printer_state_reasons"]

        await eventually(low, "media-low seen")
        trays = {t["tray"]: t["level_percent"] for t in (await _printers(kiosk))["printer-01"]["media_levels"]}  # fmt: skip
        assert trays == {"main": 4, "manual": None, "by-pass-tray": 20}
        m = await _metrics(kiosk)
        assert m[("edgeprint_printer_media_level", key)] == 20
        assert ("edgeprint_printer_media_level", (("printer", "printer-01"), ("tray", "manual"))) not in m  # fmt: skip


async def test_roll_change_seen_counted_and_told(tmp_path: Path, printers: Rig) -> None:
    """media-empty → ready is a roll change (full again); so is a technician's media-loaded
    (tech only, 404 for an unknown printer); the count survives a restart of the appliance."""
    cfg = _config(tmp_path, printers)
    async with appliance(cfg) as (_, kiosk):
        await eventually(lambda: _probed(kiosk), "the printers probed")
        await _print(kiosk, "job-a-0001", pages=3)
        assert await _left_is(kiosk, PER_ROLL - 3)

        printers.media("printer-01", "empty")

        async def empty_seen() -> bool:
            p = (await _printers(kiosk))["printer-01"]
            return "media-empty-report" in p["printer_state_reasons"]

        await eventually(empty_seen, "media-empty seen")
        assert await _left_is(kiosk, PER_ROLL - 3)  # ran out: not a new roll yet
        printers.media("printer-01", "loaded")
        await eventually(lambda: _left_is(kiosk, PER_ROLL), "the roll change seen")
        m = await _metrics(kiosk)
        assert m[("edgeprint_printer_roll_changes_total", (("printer", "printer-01"),))] == 1

        await _print(kiosk, "job-b-0001", copies=2)
        assert await _left_is(kiosk, PER_ROLL - 2)

        status, body = await kiosk.post("/v1/printers/printer-01/media-loaded", tech=False)
        assert (status, body["type"]) == (403, "urn:edgeprint:problem:forbidden")
        status, body = await kiosk.post("/v1/printers/printer-99/media-loaded", tech=True)
        assert (status, body["type"]) == (404, "urn:edgeprint:problem:printer-not-found")
        assert await _left_is(kiosk, PER_ROLL - 2)  # neither touched the count

        await _print(kiosk, "job-c-0001")
    # a restart mid-roll keeps counting from what was stored
    async with appliance(cfg) as (_, kiosk):
        await eventually(lambda: _probed(kiosk), "the printers probed")
        assert await _left_is(kiosk, PER_ROLL - 3)  # the stored count
        status, body = await kiosk.post("/v1/printers/printer-01/media-loaded", tech=True)
        assert status == 200
        assert body["printer"] == "printer-01"
        assert body["runway"]["labels_left"] == PER_ROLL
        status, body = await kiosk.post("/v1/printers/printer-02/media-loaded", tech=True)
        assert (status, body) == (200, {"printer": "printer-02", "runway": None})
        m = await _metrics(kiosk)
        assert m[("edgeprint_printer_roll_changes_total", (("printer", "printer-01"),))] == 1
    with sqlite3.connect(Path(cfg["server"]["data_dir"]) / DB_FILE) as db:
        rows = db.execute("SELECT printer, printed, empty FROM printer_rolls ORDER BY 1").fetchall()
    assert rows == [("printer-01", 0, 0), ("printer-02", 0, 0)]


async def test_admission_prefers_a_peer_whose_roll_lasts(tmp_path: Path, printers: Rig) -> None:
    """A job named for printer-01 whose labels outrun its roll goes to its pool peer; one
    that fits stays; printed where admitted."""
    async with appliance(_config(tmp_path, printers, per_roll=2)) as (_, kiosk):
        await eventually(lambda: _probed(kiosk), "the printers probed")
        long = await kiosk.submit(
            "long-0001", doc=make_pdf("long", pages=3), printer="printer-01", hold=False
        )
        short = await kiosk.submit("short-0001", printer="printer-01", hold=False)
        assert (long["printer"], short["printer"]) == ("printer-02", "printer-01")
        await kiosk.wait_states([long["id"], short["id"]], {"DONE"}, timeout_s=30)
        names = printed_names(printers)
        assert names[f"edgeprint-{long['id']}"] == ["printer-02"]
        assert names[f"edgeprint-{short['id']}"] == ["printer-01"]
        assert await _left_is(kiosk, 1)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (0, "printers[0].labels_per_roll: Input should be greater than or equal to 1"),
        (100_001, "printers[0].labels_per_roll: Input should be less than or equal to 100000"),
        ("many", "printers[0].labels_per_roll: Input should be a valid integer"),
    ],
)
def test_check_config_names_labels_per_roll(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: object, message: str
) -> None:
    """labels_per_roll out of range: check-config exits 2 naming the key."""
    data = config_dict(tmp_path / "data")
    data["printers"][0]["labels_per_roll"] = value
    path = tmp_path / "config.toml"
    path.write_text(to_toml(data))
    assert cli.main(["check-config", str(path)]) == 2
    out = capsys.readouterr()
    assert message in out.out + out.err


async def test_media_loaded_unknown_printer_changes_nothing(tmp_path: Path) -> None:
    """Without printers to reach: 404 for an unknown printer, 401 without a token, and no
    roll row is written."""
    cfg = config_dict(tmp_path / "data")
    async with appliance(cfg) as (_, kiosk):
        status, body = await kiosk.post("/v1/printers/nope/media-loaded", tech=True)
        assert (status, body["type"]) == (404, "urn:edgeprint:problem:printer-not-found")
        async with kiosk.http.post(f"{kiosk.url}/v1/printers/printer-01/media-loaded") as r:
            assert r.status == 401
        async with kiosk.http.post(
            f"{kiosk.url}/v1/printers/printer-01/media-loaded",
            headers={"Authorization": f"Bearer {KIOSK_TOKEN}"},
        ) as r:
            assert r.status == 403
    with sqlite3.connect(Path(cfg["server"]["data_dir"]) / DB_FILE) as db:
        assert db.execute("SELECT count(*) FROM printer_rolls").fetchone() == (0,)


async def test_new_media_loaded_is_a_roll_change(tmp_path: Path, printers: Rig) -> None:
    """Other media in a tray (media-ready changes) starts a full roll without a technician;
    the same media again does not."""
    printers.media("printer-01", "loaded")
    async with appliance(_config(tmp_path, printers)) as (_, kiosk):
        await eventually(lambda: _probed(kiosk), "the printers probed")
        await _print(kiosk, "job-d-0001", pages=2)
        assert await _left_is(kiosk, PER_ROLL - 2)
        printers.media("printer-01", "loaded")  # the same letter paper again: no change

        printers.load_media("printer-01", "na_index-4x6_4x6in", "stationery", 250)
        await eventually(
            lambda: _left_is(kiosk, PER_ROLL), "the new media-ready seen as a roll change"
        )
        trays = (await _printers(kiosk))["printer-01"]["media_levels"]
        assert {"tray": "main", "media": "na_index-4x6_4x6in", "level_percent": 100} in trays
        m = await _metrics(kiosk)
        assert m[("edgeprint_printer_roll_changes_total", (("printer", "printer-01"),))] == 1


async def test_a_printer_answering_nonsense_about_supplies_still_prints(
    tmp_path: Path, printers: Rig
) -> None:
    """printer-01 behind a proxy that answers its supplies, trays and media-ready with
    nonsense: it stays healthy and prints, shows no supply or tray it cannot read, its
    runway counts on (no roll change invented), and /metrics renders."""
    p1 = printers["printer-01"]
    with AdversaryProxy(p1.uri, Knobs(garbage_supplies=True), printer_dir=p1.dir) as proxy:
        cfg = _config(tmp_path, printers)
        cfg["printers"][0]["uri"] = proxy.uri
        async with appliance(cfg) as (_, kiosk):
            await eventually(lambda: _probes(proxy, 3), "three probes")
            one = (await _printers(kiosk))["printer-01"]
            assert (one["healthy"], one["supplies"], one["media_levels"]) == (True, [], [])
            await _print(kiosk, "job-g-0001", pages=2)
            seen = proxy.count("Get-Printer-Attributes")
            await eventually(lambda: _probes(proxy, seen + 2), "two more probes")
            assert await _left_is(kiosk, PER_ROLL - 2)
            m = await _metrics(kiosk)
            assert m[("edgeprint_printer_labels_left", (("printer", "printer-01"),))] == 8
            assert ("edgeprint_printer_roll_changes_total", (("printer", "printer-01"),)) in m
            assert m[("edgeprint_printer_roll_changes_total", (("printer", "printer-01"),))] == 0
            assert not [k for k in m if k[0] == "edgeprint_printer_supply_level"
                        and ("printer", "printer-01") in k[1]]  # fmt: skip


async def _probes(proxy: AdversaryProxy, n: int) -> bool:
    return proxy.count("Get-Printer-Attributes") >= n


async def test_a_test_page_is_a_label_off_the_roll(
    tmp_path: Path, printers: Rig, capsys: pytest.CaptureFixture[str]
) -> None:
    """The technician's test page (printed directly, not as a job) takes one label too;
    ``edgeprint status`` shows the count."""
    async with appliance(_config(tmp_path, printers)) as (_, kiosk):
        await eventually(lambda: _probed(kiosk), "the printers probed")
        status, body = await kiosk.post(
            "/v1/printers/printer-01/identify", {"how": "test-page"}, tech=True
        )
        assert (status, body["action"]) == (200, "test-page")
        assert await _left_is(kiosk, PER_ROLL - 1)
        code, out, _ = await run_cli(capsys, "status", "--url", kiosk.url)
    assert code == 0, out
    assert "labels: 9 of 10 left, about 9 min at 1.0/min" in " ".join(out.split())
