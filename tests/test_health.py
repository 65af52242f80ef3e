"""The printer health model (pure) and its classification of real IPP answers."""

from __future__ import annotations

import struct
from collections.abc import AsyncIterator

import aiohttp
import pytest
from aiohttp import web
from pyipp.enums import IppTag

from edgeprint.printers.health import Health, HealthSettings, reason_keyword, severity
from edgeprint.printers.ipp import IppClient, PrinterStatus

SETTINGS = HealthSettings(
    failure_threshold=3, stopped_grace_s=10, quarantine_after=3, quarantine_s=60
)


def status(
    state: int = 3,
    reasons: tuple[str, ...] = (),
    accepting: bool = True,
    trays: tuple[str, ...] = (),
) -> PrinterStatus:
    attributes = {"printer-input-tray": list(trays)} if trays else {}
    return PrinterStatus(
        state=state, reasons=reasons, message="", queued_job_count=0,
        operations=frozenset({"Create-Job", "Send-Document"}), formats=frozenset(),
        copies_supported=True, accepting_jobs=accepting, up_time_s=1, attributes=attributes,
    )  # fmt: skip


def tray(name: str, level: int) -> str:
    """A printer-input-tray value as PWG 5100.13 and ippeveprinter write it."""
    return f"type=sheetFeedAutoRemovableTray;maxcapacity=250;level={level};status=0;name={name};"


MAIN_FULL, MAIN_EMPTY = tray("main", 100), tray("main", 0)
BYPASS_EMPTY, BYPASS_UNKNOWN = tray("by-pass-tray", 0), tray("by-pass-tray", -2)


@pytest.mark.parametrize(
    ("state", "reasons", "trays", "healthy"),
    [
        (3, (), (), True),
        (3, ("media-low-report",), (), True),
        (3, ("toner-low-warning", "marker-supply-low-report"), (), True),
        # -report and -warning never block by themselves (RFC 8011 §5.4.12)
        (3, ("media-jam-report",), (), True),
        (3, ("com.acme-widget-warning", "other-report"), (), True),
        # -error blocks, and so does a bare keyword (read as an error), known or not
        (3, ("cover-open-error",), (), False),
        (3, ("door-open",), (), False),
        (3, ("other",), (), False),
        (3, ("com.acme-fuser-error",), (), False),
        # paper: by the trays, whatever the suffix
        (3, ("media-empty-report",), (MAIN_EMPTY, BYPASS_EMPTY), False),
        (3, ("media-empty-warning",), (MAIN_FULL, BYPASS_EMPTY), True),
        (3, ("media-empty-error",), (MAIN_FULL, BYPASS_EMPTY), True),
        (3, ("media-empty-error",), (), False),
        (3, (), (MAIN_EMPTY, BYPASS_UNKNOWN), False),
        (3, (), (BYPASS_UNKNOWN,), True),
        # a job in hand that cannot go on: any severity of a stall reason while processing
        (4, ("media-jam-warning",), (), False),
        (4, ("marker-supply-low-warning",), (), True),
        (4, ("media-empty-warning",), (MAIN_FULL, BYPASS_EMPTY), True),
        (4, ("media-needed-warning", "media-empty-warning"), (MAIN_FULL, BYPASS_EMPTY), False),
        (4, ("media-needed-warning", "media-empty-warning"), (MAIN_EMPTY, BYPASS_EMPTY), False),
    ],
)
def test_blocking_by_severity_trays_and_stalls(
    state: int, reasons: tuple[str, ...], trays: tuple[str, ...], healthy: bool
) -> None:
    """-warning/-report never block by themselves; -error and bare keywords do; media reasons
    only when no input tray reports media; a printer processing with a stall reason is stalled."""
    h = Health(SETTINGS)
    h.on_probe(status(state=state, reasons=reasons, trays=trays), now=0)
    assert h.healthy is healthy, h.reason


def test_severity_of_a_bare_keyword_is_error() -> None:
    """RFC 8011 §5.4.12: a keyword without a suffix is an error."""
    assert [severity(r) for r in ("media-jam-report", "toner-low-warning", "other", "x-error")] == [
        "report", "warning", "error", "error",
    ]  # fmt: skip


def test_reason_keyword_strips_severity() -> None:
    """RFC 8011 §5.4.12 suffixes are removed; the keyword stays."""
    assert [reason_keyword(r) for r in ("media-jam-error", "paused", "toner-low-report")] == [
        "media-jam", "paused", "toner-low",
    ]  # fmt: skip


def test_consecutive_failures_then_probe_readmits() -> None:
    """Unhealthy after failure_threshold transport failures in a row; a good probe re-admits."""
    h = Health(SETTINGS)
    h.on_probe(status(), now=0)
    assert h.on_transport_failure("refused", now=1) is None
    assert h.on_transport_failure("refused", now=2) is None
    change = h.on_transport_failure("refused", now=3)
    assert change is not None
    assert (change.healthy, h.reason) == (False, "unreachable: refused")
    back = h.on_probe(status(), now=4)
    assert back is not None
    assert back.healthy


def test_stopped_is_unhealthy_only_after_the_grace() -> None:
    """printer-state stopped (5) is tolerated for stopped_grace_s, then unhealthy."""
    h = Health(SETTINGS)
    assert h.on_probe(status(state=5), now=100) is None
    assert h.on_probe(status(state=5), now=109) is None
    assert h.healthy
    h.on_probe(status(state=5), now=110)
    assert (h.healthy, h.reason) == (False, "printer-state: stopped")  # no message said
    h.on_probe(status(state=3), now=111)
    assert h.healthy


def test_several_different_failing_jobs_quarantine_the_printer() -> None:
    """One job failing twice is the job's problem; three different jobs blame the printer."""
    h = Health(SETTINGS)
    h.on_probe(status(), now=0)
    assert h.on_job_failed("a", now=1) is None
    assert h.on_job_failed("a", now=2) is None
    assert h.on_job_failed("b", now=3) is None
    assert h.on_job_failed("c", now=4) is not None
    assert not h.healthy
    h.on_probe(status(), now=30)
    assert not h.healthy  # still in quarantine
    h.on_probe(status(), now=65)
    assert h.healthy


def test_a_printed_job_breaks_the_run_of_failures() -> None:
    """Failures separated by a success do not quarantine."""
    h = Health(SETTINGS)
    h.on_job_failed("a", now=1)
    h.on_job_failed("b", now=2)
    h.on_job_printed()
    h.on_job_failed("c", now=3)
    assert h.healthy


# --- a printer that reports "stopped": canned IPP answers through the real client ----------


def _attr(tag: IppTag, name: str, value: int | str | bool) -> bytes:
    if isinstance(value, bool):
        raw = struct.pack(">?", value)
    elif isinstance(value, int):
        raw = struct.pack(">i", value)
    else:
        raw = value.encode()
    return (
        struct.pack(">bh", tag.value, len(name)) + name.encode() + struct.pack(">h", len(raw)) + raw
    )


def stopped_printer_answer() -> bytes:
    """A Get-Printer-Attributes answer as CUPS gives for a queue disabled with cupsdisable."""
    body = struct.pack(">bbhi", 2, 0, 0x0000, 1)
    body += struct.pack(">b", IppTag.OPERATION.value)
    body += _attr(IppTag.CHARSET, "attributes-charset", "utf-8")
    body += _attr(IppTag.LANGUAGE, "attributes-natural-language", "en")
    body += struct.pack(">b", IppTag.PRINTER.value)
    body += _attr(IppTag.ENUM, "printer-state", 5)
    body += _attr(IppTag.KEYWORD, "printer-state-reasons", "paused")
    body += _attr(IppTag.TEXT, "printer-state-message", "paper jam")
    body += _attr(IppTag.INTEGER, "queued-job-count", 0)
    body += _attr(IppTag.BOOLEAN, "printer-is-accepting-jobs", True)
    body += struct.pack(">b", IppTag.END.value)
    return body


@pytest.fixture
async def stopped_printer() -> AsyncIterator[str]:
    async def handler(request: web.Request) -> web.Response:
        await request.read()
        return web.Response(body=stopped_printer_answer(), content_type="application/ipp")

    app = web.Application()
    app.router.add_post("/printers/q1", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    yield f"ipp://127.0.0.1:{port}/printers/q1"
    await runner.cleanup()


async def test_stopped_queue_from_recorded_answer(stopped_printer: str) -> None:
    """A CUPS-style stopped queue (state 5, reason paused) parses and is unhealthy at once."""
    async with aiohttp.ClientSession() as http:
        st = await IppClient(stopped_printer, http).get_printer_attributes()
    assert (st.state, st.reasons, st.message) == (5, ("paused",), "paper jam")
    h = Health(SETTINGS)
    h.on_probe(st, now=0)
    assert (h.healthy, h.reason) == (
        False,
        'printer-state-reasons: the printer is paused (paused); the printer says "paper jam"',
    )
