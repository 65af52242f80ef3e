"""Admission of ZPL jobs (issue 23 part 5): which targets can take them, decided on the
printers' published view (edgeprint/service/admission.py, board.PrinterBoard)."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgeprint import errors
from edgeprint.board import PrinterBoard, Usability
from edgeprint.config import parse_config
from edgeprint.metrics import Metrics
from edgeprint.service.admission import Admission, Depths
from edgeprint.service.records import Caller
from testbed.config import config_dict

CALLER = Caller("kiosk-1", "kiosk", "cid")
ZPL = "application/vnd.zebra-zpl"
PDF = "application/pdf"
LABEL = Usability(healthy=True, sends="image/pwg-raster", takes=("image/pwg-raster", ZPL),
                  probed=True)  # fmt: skip
OFFICE = Usability(healthy=True, sends=PDF, takes=("application/octet-stream", PDF), probed=True)


def _admission(tmp_path: Path, board: PrinterBoard) -> Admission:
    async def read_depths() -> Depths:
        return {}

    config = parse_config(config_dict(tmp_path / "data"))  # lobby: printer-01, printer-02
    return Admission(config, board, Metrics(), read_depths, clock=lambda: 0.0)


def test_a_pool_refuses_zpl_only_once_every_printer_answered_without_it(tmp_path: Path) -> None:
    """Not probed yet: accepted. Every printer probed, none lists ZPL: unsupported-document
    with what they list. One that lists it: accepted. A PDF: always."""
    board = PrinterBoard()
    admission = _admission(tmp_path, board)
    board.publish("printer-01", OFFICE)
    admission.check_format(None, "lobby", ZPL)  # printer-02 has not answered yet
    board.publish("printer-02", OFFICE)
    with pytest.raises(errors.DocumentUnprintable) as caught:
        admission.check_format(None, "lobby", ZPL)
    assert caught.value.slug == "unsupported-document"
    assert caught.value.detail == (
        f"no printer of pool lobby takes {ZPL} (listed: application/octet-stream, "
        f"{PDF}); send the badge as a PDF, or to a printer whose document-format-supported "
        "lists it"
    )
    assert caught.value.takes == ("application/octet-stream", PDF)
    admission.check_format(None, "lobby", PDF)
    board.publish("printer-02", LABEL)
    admission.check_format(None, "lobby", ZPL)
    with pytest.raises(errors.DocumentUnprintable, match=f"printer printer-01 does not take {ZPL}"):
        admission.check_format("printer-01", None, ZPL)
    admission.check_format("printer-02", None, ZPL)


async def test_a_zpl_job_is_never_redirected_to_a_peer_without_zpl(tmp_path: Path) -> None:
    """A job for an unusable printer goes to a usable peer — a PDF to any, a ZPL job only to
    one that may take it (else it waits on its own printer)."""
    board = PrinterBoard()
    admission = _admission(tmp_path, board)
    board.publish("printer-01", Usability(healthy=False, sends="image/pwg-raster",
                                          takes=LABEL.takes, probed=True))  # fmt: skip
    board.publish("printer-02", OFFICE)
    assert await admission.admit("printer-01", None, CALLER) == ("printer-02", None)
    zpl = await admission.admit("printer-01", None, CALLER, document_format=ZPL)
    assert zpl == ("printer-01", None)
    board.withdraw("printer-02")  # not probed (e.g. a lease just taken): it may take ZPL
    zpl = await admission.admit("printer-01", None, CALLER, document_format=ZPL)
    assert zpl == ("printer-02", None)
