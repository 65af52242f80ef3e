"""The rig's label stock against real ippeveprinter processes: ``load_media`` puts a
stock in every tray (what media-ready shows), a power cycle keeps it, and with
``record_media`` each printed document's media is in ``media.log`` as the printer answered.

What bench.morning_bench counts wrong-stock badges with.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pyipp import IPP
from pyipp.enums import IppOperation
from pyipp.exceptions import IPPError

from testbed.pdfs import make_pdf
from testbed.rig import MediaPrinted, Rig
from tests.polling import eventually
from tests.rig_fixtures import require_ippeveprinter

PROJECT_ROOT = Path(__file__).resolve().parent.parent
LABEL = "oe_4x3-label_4x3in"
CARD = "na_index-4x6_4x6in"
SERVER_ERROR_BUSY = 0x0507
DEFAULT_READY = ["na_letter_8.5x11in", "na_number-10_4.125x9.5in"]


@pytest.fixture
def labels(tmp_path: Path) -> Iterator[Rig]:
    """One printer whose print command records media-ready per document."""
    require_ippeveprinter()
    rig = Rig(tmp_path / "rig", record_media=True)
    rig.start(1)
    try:
        yield rig
    finally:
        rig.stop()


async def media_ready(rig: Rig) -> list[str]:
    async with IPP(rig["printer-01"].uri, request_timeout=5) as ipp:
        resp = await ipp.execute(
            IppOperation.GET_PRINTER_ATTRIBUTES,
            {"operation-attributes-tag": {"requested-attributes": ["media-ready"]}},
        )
    value: Any = resp["printers"][0].get("media-ready")
    return value if isinstance(value, list) else [value]


async def print_one(rig: Rig, name: str) -> None:
    """Print-Job of a one-page badge named ``name`` (again while the printer answers
    server-error-busy: it takes one job at a time); until its ground truth is written."""

    async def sent() -> bool:
        async with IPP(rig["printer-01"].uri, request_timeout=5) as ipp:
            try:
                await ipp.execute(
                    IppOperation.PRINT_JOB,
                    {
                        "operation-attributes-tag": {
                            "requesting-user-name": "rig-test",
                            "job-name": name,
                            "document-format": "application/pdf",
                        },
                        "data": make_pdf(name),
                    },
                )
            except IPPError as exc:
                if exc.args[1].get("status-code") == SERVER_ERROR_BUSY:
                    return False
                raise
        return True

    await eventually(sent, f"{name} accepted", timeout_s=15.0)

    async def written() -> bool:
        logs = rig.media_printed("printer-01") if rig.record_media else rig.printed("printer-01")
        return any(x.job_name == name for x in logs)

    await eventually(written, f"{name} printed", timeout_s=15.0)


async def test_size_puts_the_stock_in_every_tray_and_each_print_records_it(labels: Rig) -> None:
    assert await media_ready(labels) == DEFAULT_READY
    await print_one(labels, "on-letter")
    labels.load_media("printer-01", LABEL)
    assert await media_ready(labels) == [LABEL, LABEL]
    await print_one(labels, "on-label")
    labels.load_media("printer-01", CARD)
    assert await media_ready(labels) == [CARD, CARD]
    await print_one(labels, "on-card")
    got = [(m.job_name, m.media_ready) for m in labels.media_printed("printer-01")]
    assert got == [
        ("on-letter", tuple(DEFAULT_READY)),
        ("on-label", (LABEL, LABEL)),
        ("on-card", (CARD, CARD)),
    ]
    # the same documents, the same times as the ground truth
    times = {p.job_name: p.time for p in labels.printed("printer-01")}
    assert {m.job_name: m.time for m in labels.media_printed("printer-01")} == times


async def test_an_empty_roll_stays_that_roll_and_a_power_cycle_keeps_it(labels: Rig) -> None:
    labels.load_media("printer-01", LABEL)
    labels.load_media("printer-01", LABEL, level=0)  # the roll in the printer ran out
    assert await media_ready(labels) == [LABEL, LABEL]
    labels.kill("printer-01")
    labels.restart("printer-01")
    assert await media_ready(labels) == [LABEL, LABEL]  # loaded again, same stock
    await print_one(labels, "after-power-cycle")
    assert [m.media_ready for m in labels.media_printed("printer-01")] == [(LABEL, LABEL)]


def test_without_record_media_nothing_is_asked_or_logged(tmp_path: Path) -> None:
    require_ippeveprinter()
    rig = Rig(tmp_path / "rig")
    rig.start(1)
    try:
        asyncio.run(print_one(rig, "plain"))
        assert [p.job_name for p in rig.printed("printer-01")] == ["plain"]
        assert rig.media_printed("printer-01") == []
        assert not (rig["printer-01"].dir / "media.log").exists()
    finally:
        rig.stop()


@pytest.mark.parametrize("size", ["4x3", "oe_4x3-label_4x3", "OE_4x3-label_4x3in", "a b"])
def test_a_bad_size_is_refused_before_the_printer_is_touched(tmp_path: Path, size: str) -> None:
    rig = Rig(tmp_path / "never-started")  # no printer: the ValueError comes first
    with pytest.raises(ValueError, match="size must be a PWG self-describing media name"):
        rig.load_media("printer-01", size)
    assert not (tmp_path / "never-started").exists()


def test_media_log_lines_parse() -> None:
    line = "2026-12-07T08:00:00.123Z\t7\tedgeprint-abc\toe_4x3-label_4x3in,oe_4x3-label_4x3in\n"
    assert MediaPrinted.parse(line) == MediaPrinted(
        "2026-12-07T08:00:00.123Z", 7, "edgeprint-abc", (LABEL, LABEL)
    )
    assert MediaPrinted.parse("t\t1\tx\t?").media_ready == ()
    with pytest.raises(ValueError, match=r"not a media\.log line"):
        MediaPrinted.parse("t\t1\tx")


def test_command_line_media_with_a_size(tmp_path: Path) -> None:
    require_ippeveprinter()
    d = tmp_path / "cli-rig"
    rig = Rig(d)
    rig.start(1)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "testbed.rig", "media", str(d), "printer-01", "loaded",
             "--size", CARD],
            cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert (done.returncode, done.stdout) == (0, f"printer-01 media loaded {CARD}: ok\n")

        assert asyncio.run(media_ready(rig)) == [CARD, CARD]
        bad = subprocess.run(
            [sys.executable, "-m", "testbed.rig", "media", str(d), "printer-01", "loaded",
             "--size", "letter"],
            cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert bad.returncode == 1
        assert "size must be a PWG self-describing media name" in bad.stderr
        assert asyncio.run(media_ready(rig)) == [CARD, CARD]  # unchanged
    finally:
        rig.stop()
