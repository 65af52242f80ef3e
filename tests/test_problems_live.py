"""Printer problems in plain words with their times, from real printers through a real
appliance: ippeveprinter switched off (killed: connection refused) and back, then jammed
mid-job; read from GET /v1/printers and from ``edgeprint status`` / ``edgeprint printers``."""

from __future__ import annotations

import asyncio
import re
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from edgeprint import cli, printable
from edgeprint.printers import problems
from edgeprint.timefmt import clock_time
from testbed.adversary.proxy import AdversaryProxy, Knobs
from testbed.pdfs import make_pdf
from testbed.rig import Rig
from tests.conftest import TECH_TOKEN
from tests.polling import eventually
from tests.printing import Client, appliance, rig_config

pytestmark = pytest.mark.slow

CLOCK = r"\d\d:\d\d:\d\d"
#: Every time in the API: RFC 3339 UTC with milliseconds, as a job's created_at.
RFC3339 = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z"


def ts(text: str) -> float:
    """A problem's since/until (RFC 3339 UTC, as every time in the API) as unix seconds."""
    assert re.fullmatch(RFC3339, text), text
    return datetime.fromisoformat(text).timestamp()


async def listing(kiosk: Client) -> list[dict[str, Any]]:
    headers = {"Authorization": f"Bearer {TECH_TOKEN}"}
    async with kiosk.http.get(f"{kiosk.url}/v1/printers", headers=headers) as r:
        assert r.status == 200
        body = await r.json()
    printers: list[dict[str, Any]] = body["printers"]
    return printers


async def view_of(kiosk: Client, name: str) -> dict[str, Any]:
    return next(p for p in await listing(kiosk) if p["name"] == name)


async def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """``edgeprint ARGV --token …`` in a thread (the appliance's loop keeps serving); stdout,
    its white space runs made one space (the CLI folds lines at 80 columns)."""
    capsys.readouterr()
    code = await asyncio.to_thread(cli.main, [*argv, "--token", TECH_TOKEN])
    out = capsys.readouterr()
    assert (code, out.err) == (0, "")
    return " ".join(out.out.split())


async def _metrics(kiosk: Client) -> str:
    async with kiosk.http.get(f"{kiosk.url}/metrics") as r:
        assert r.status == 200
        return await r.text()


async def test_an_unplugged_printer_then_a_jam_read_as_sentences_with_their_times(
    tmp_path: Path, printers: Rig, capsys: pytest.CaptureFixture[str]
) -> None:
    port = printers["printer-02"].port
    cfg = rig_config(tmp_path / "data", printers, blocked_grace_s=60.0)
    async with appliance(cfg) as (_, kiosk):

        async def all_healthy() -> list[dict[str, Any]] | None:
            ps = await listing(kiosk)
            return ps if all(p["healthy"] and p["printer_state"] for p in ps) else None

        ps = await eventually(all_healthy, "both printers probed and healthy", timeout_s=20)
        assert [(p["name"], p["problems"], p["problem"]) for p in ps] == [
            ("printer-01", [], None),
            ("printer-02", [], None),
        ]

        # --- switched off: connection refused -------------------------------------------
        printers.kill("printer-02")
        off_at = time.time()

        async def down() -> list[dict[str, Any]] | None:
            ps = await listing(kiosk)
            return ps if not ps[0]["healthy"] else None

        ps = await eventually(down, "printer-02 shown down", timeout_s=20)
        p2 = ps[0]
        assert [p["name"] for p in ps] == ["printer-02", "printer-01"]  # the problem first
        [problem] = p2["problems"]
        assert problem["kind"] == "not-answering"
        assert problem["until"] is None
        assert off_at - 1 <= ts(problem["since"]) <= time.time()
        since = clock_time(ts(problem["since"]), time.time())
        assert problem["text"] == (
            f"not answering at 127.0.0.1:{port} since {since} — switched off or unplugged?"
        )
        assert re.fullmatch(CLOCK, since)
        assert p2["problem"] == problem["text"]
        series = 'edgeprint_printer_problem{kind="not-answering",printer="printer-02"} 1.0'
        assert series in await _metrics(kiosk)  # the alerts' word for it is the same
        assert "cannot connect" in problem["evidence"]  # the transport's words stay there
        assert "ssl:default" not in problem["text"]
        assert "cannot connect" in p2["last_error"]

        out = await run_cli(capsys, "status", "--url", kiosk.url)
        assert f"printer-02: {problem['text']}" in out
        assert out.index("printer-02 lobby DOWN") < out.index("printer-01 lobby ok")
        out = await run_cli(capsys, "printers", "--url", kiosk.url)
        assert f"problem: {problem['text']} evidence: unreachable: " in out
        assert out.index("printer-02 ipp://") < out.index("printer-01 ipp://")

        # --- back on ------------------------------------------------------------------
        printers.restart("printer-02")

        async def recovered() -> dict[str, Any] | None:
            v = await view_of(kiosk, "printer-02")
            return v if v["healthy"] and v["reachable"] else None

        p2 = await eventually(recovered, "printer-02 back and healthy", timeout_s=20)
        assert p2["last_error"] is None  # it never outlives the recovery
        assert p2["problem"] is None
        assert 'edgeprint_printer_problem{kind="not-answering"' not in await _metrics(kiosk)
        [was] = p2["problems"]
        assert (was["kind"], was["since"]) == ("not-answering", problem["since"])
        assert ts(was["until"]) >= ts(was["since"])
        assert was["text"] == (
            f"was: not answering at 127.0.0.1:{port}, until {clock_time(ts(was['until']), time.time())}"
        )
        assert [p["name"] for p in await listing(kiosk)] == ["printer-01", "printer-02"]
        out = await run_cli(capsys, "status", "--url", kiosk.url)
        assert f"printer-02: {was['text']}" in out
        assert "last error" not in out

        # --- a jam mid-job --------------------------------------------------------------
        printers.fault("printer-01", "hold", "media-jam")
        job = await kiosk.submit(
            "jam-words-01", printer="printer-01", hold=False, doc=make_pdf("jam", pad_to=2000)
        )

        async def jammed() -> dict[str, Any] | None:
            v = await view_of(kiosk, "printer-01")
            return v if v["problem"] else None

        p1 = await eventually(jammed, "printer-01 shown jammed", timeout_s=20)
        [jam] = p1["problems"]
        assert jam["kind"] == "media-jam"
        assert jam["text"] == (
            f"paper jam since {clock_time(ts(jam['since']), time.time())} "
            "(printer says media-jam-warning)"
        )
        assert jam["evidence"].startswith("printer-state-reasons: paper or labels jammed")
        assert (await listing(kiosk))[0]["name"] == "printer-01"
        out = await run_cli(capsys, "status", "--url", kiosk.url)
        jam_line = out.index(f"printer-01: {jam['text']}")
        # the new jam is its own line, apart from printer-02's ended connection problem
        assert out.index(f"printer-02: {was['text']}") > jam_line

        printers.clear_fault("printer-01")  # someone clears the jam: the job prints
        [done] = await kiosk.wait_states([job["id"]], {"DONE", "DEAD"}, timeout_s=30)
        assert done["state"] == "DONE", done

        async def cleared() -> dict[str, Any] | None:
            v = await view_of(kiosk, "printer-01")
            return v if v["problem"] is None and v["problems"] else None

        p1 = await eventually(cleared, "printer-01's jam shown ended", timeout_s=20)
        [ended] = p1["problems"]
        assert (
            ended["text"] == f"was: paper jam, until {clock_time(ts(ended['until']), time.time())}"
        )
    assert [p.job_name for p in printers.printed("printer-01")] == [f"edgeprint-{job['id']}"]


async def test_a_hung_printer_and_one_out_of_paper_read_as_sentences(
    tmp_path: Path, printers: Rig
) -> None:
    """A printer that takes the connection and never answers (SIGSTOP) is "not responding";
    one whose every tray is empty is "out of paper/labels"; both first, both with a time."""
    port = printers["printer-01"].port
    cfg = rig_config(tmp_path / "data", printers, request_timeout_s=0.5)
    async with appliance(cfg) as (_, kiosk):

        async def all_healthy() -> bool:
            return all(p["healthy"] and p["printer_state"] for p in await listing(kiosk))

        await eventually(all_healthy, "both printers probed and healthy", timeout_s=20)
        printers.media("printer-02", "empty")
        printers.hang("printer-01")
        try:

            async def both() -> list[dict[str, Any]] | None:
                ps = await listing(kiosk)
                kinds = [[x["kind"] for x in p["problems"]] for p in ps]
                return ps if kinds == [["not-responding"], ["media-empty"]] else None

            p1, p2 = await eventually(both, "printer-01 hung, printer-02 out of paper")
            now = time.time()
            assert p1["problem"] == (
                f"not responding at 127.0.0.1:{port} since "
                f"{clock_time(ts(p1['problems'][0]['since']), now)} — hung? power-cycle it"
            )
            assert "no answer in time" in p1["problems"][0]["evidence"]
            assert p2["problem"] == (
                f"out of paper/labels since {clock_time(ts(p2['problems'][0]['since']), now)} "
                "(printer says media-empty-report)"
            )
        finally:
            printers.resume("printer-01")
        printers.media("printer-02", "loaded")

        async def over() -> list[dict[str, Any]] | None:
            ps = await listing(kiosk)
            return ps if all(p["healthy"] and p["problem"] is None for p in ps) else None

        ps = await eventually(over, "both printers well again", timeout_s=20)
        assert [[x["text"].split(",")[0] for x in p["problems"]] for p in ps] == [
            [f"was: not responding at 127.0.0.1:{port}"],
            ["was: out of paper/labels"],
        ]
        assert [p["last_error"] for p in ps] == [None, None]


#: A printer's hostile words: an escape sequence in a vendor reason, 4 KB of junk (controls
#: included) as its printer-state-message.
HOSTILE_REASON = "com.acme-\x1b[2Jfuser-error"
HOSTILE_MESSAGE = "\x1b[31mjammed\x07\r\n" + "junk\x00" * 820


async def test_a_printers_control_characters_and_4kb_of_junk_are_shown_escaped_and_cut(
    tmp_path: Path, printers: Rig, capsys: pytest.CaptureFixture[str]
) -> None:
    p1 = printers["printer-01"]
    knobs = Knobs(extra_reasons=(HOSTILE_REASON,), state_message=HOSTILE_MESSAGE)
    with AdversaryProxy(p1.uri, knobs, printer_dir=p1.dir) as proxy:
        cfg = rig_config(tmp_path / "data", printers)
        cfg["printers"][0]["uri"] = proxy.uri
        async with appliance(cfg) as (_, kiosk):

            async def hostile() -> dict[str, Any] | None:
                v = await view_of(kiosk, "printer-01")
                return v if v["problem"] else None

            v = await eventually(hostile, "printer-01 blocked by its vendor error", timeout_s=20)
            assert v["printer_state_message"] == HOSTILE_MESSAGE  # its own field: verbatim
            [p] = v["problems"]
            assert p["kind"] == "other"
            assert p["text"] == (
                f"a fault edgeprint does not know since {clock_time(ts(p['since']), time.time())} "
                "(printer says com.acme-\\x1b[2Jfuser-error)"
            )
            assert p["evidence"].startswith(
                "printer-state-reasons: an error edgeprint does not know (com.acme-\\x1b[2Jfuser)"
                ' (com.acme-\\x1b[2Jfuser-error); the printer says "\\x1b[31mjammed\\x07\\x0d'
            )
            assert len(p["evidence"]) == problems.EVIDENCE_CHARS
            assert p["evidence"].endswith("…")
            for text in (p["text"], p["evidence"], v["health_reason"]):
                assert not printable.CONTROL_RE.search(text), text
            assert len(v["health_reason"]) <= 1000
            assert v["health_reason"].endswith("…")
            first, *_ = await listing(kiosk)
            assert first["name"] == "printer-01"

            capsys.readouterr()
            code = await asyncio.to_thread(
                cli.main, ["status", "--url", kiosk.url, "--token", TECH_TOKEN]
            )
            out = capsys.readouterr().out
            assert code == 0
            assert not printable.CONTROL_RE.search(out.replace("\n", ""))
            assert f"printer-01: {p['text']}" in " ".join(out.split())
