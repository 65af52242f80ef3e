"""Printer capabilities read from real ippeveprinter answers (pyipp-parsed) and odd values."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from edgeprint.documents import capabilities as caps_mod
from edgeprint.documents.capabilities import Media, Resolution, parse_capabilities
from testbed.rig import Rig
from tests.ipp_helpers import printer_attributes
from tests.lprint_rig import LPrintRig
from tests.rig_fixtures import one_printer

LETTER = Media("na_letter_8.5x11in", 21590, 27940, 635, 635, 635, 635, "stationery", "main")
ENVELOPE = Media(
    "na_number-10_4.125x9.5in", 10477, 24130, 635, 635, 635, 635, "envelope", "by-pass-tray"
)


async def test_raster_only_ippeveprinter(pwg_printer: Rig) -> None:
    """A raster-only ippeveprinter's answer gives formats, PWG types and resolutions, media, copies."""
    attrs = await printer_attributes(pwg_printer["printer-01"].uri)
    caps = parse_capabilities(attrs)
    assert set(caps.formats) == {"application/octet-stream", "image/jpeg", "image/pwg-raster"}
    assert caps.pwg_raster_resolutions == (Resolution(300, 300), Resolution(600, 600))
    assert caps.pwg_raster_types == ("black_1", "sgray_8")
    assert caps.urf == ()
    assert caps.media_ready == (LETTER, ENVELOPE)
    assert caps.copies_max == 999
    assert caps.create_job
    assert caps.ipp_versions == ("1.1", "2.0")
    assert caps.color is False


async def test_urf_only_ippeveprinter(urf_printer: Rig) -> None:
    """An Apple-raster ippeveprinter's urf-supported gives the W8 type and RS600."""
    caps = parse_capabilities(await printer_attributes(urf_printer["printer-01"].uri))
    assert "image/urf" in caps.formats
    assert "application/pdf" not in caps.formats
    assert caps.pwg_raster_types == ()
    assert caps.urf_types == ("W8",)
    assert caps.urf_resolutions == (Resolution(600, 600),)
    assert caps.as_json()["urf_supported"] == list(caps.urf)


@pytest.fixture
def pdf_printer(tmp_path: Path) -> Iterator[Rig]:
    """The rig's default printer: PDF."""
    yield from one_printer(tmp_path / "pdf", "application/pdf")


async def test_pdf_printer_json(pdf_printer: Rig) -> None:
    """The default rig printer (PDF) reads as such, and its JSON form is stable."""
    caps = parse_capabilities(await printer_attributes(pdf_printer["printer-01"].uri))
    assert caps.as_json() == {
        "formats": ["application/octet-stream", "application/pdf"],
        "pwg_raster_types": [],
        "pwg_raster_resolutions": [],
        "urf_supported": [],
        "media_ready": [
            "na_letter_8.5x11in (215.9x279.4mm)",
            "na_number-10_4.125x9.5in (104.77x241.3mm)",
        ],
        "copies_max": 999,
        "create_job": True,
        "ipp_versions": ["1.1", "2.0"],
        "color": False,
    }


async def test_lprint_label_printer(lprint: LPrintRig) -> None:
    """LPrint's answer: raster, URF, JPEG and PNG but no PDF, 203 dpi, grey and 1-bit, the loaded label."""
    caps = parse_capabilities(
        await printer_attributes(lprint.printer_uri, unix_socket=lprint.socket_path)
    )
    assert "application/pdf" not in caps.formats
    assert {"image/pwg-raster", "image/urf", "image/jpeg", "image/png"} <= set(caps.formats)
    assert caps.pwg_raster_resolutions == (Resolution(203, 203),)
    assert caps.pwg_raster_types == ("black_1", "black_8", "sgray_8")
    assert caps.urf_types == ("W8", "DEVW8")
    assert caps.urf_resolutions == (Resolution(203, 203),)
    assert [(m.name, m.width_hmm, m.height_hmm) for m in caps.media_ready] == [
        ("oe_4x3-label_4x3in", 10160, 7620)
    ]
    assert caps.create_job
    assert caps.copies_max == 999
    assert caps.color is False


def test_empty_answer_means_nothing_supported() -> None:
    """A printer that answers with no attributes supports nothing and one copy."""
    caps = parse_capabilities({})
    assert caps.formats == ()
    assert caps.media_ready == ()
    assert caps.copies_max == 1
    assert not caps.create_job
    assert not caps.color


def test_single_values_and_odd_types() -> None:
    """pyipp's scalars for single values are read; values of the wrong type are ignored."""
    caps = parse_capabilities({
        "document-format-supported": "image/pwg-raster",
        "pwg-raster-document-resolution-supported": (203, 203, 3),
        "pwg-raster-document-type-supported": ["black_1", 7],
        "media-ready": "oe_4x3-label_4x3in",
        "media-col-ready": {"media-size": {"x-dimension": [100, 200], "y-dimension": 5}},
        "copies-supported": "lots",
        "operations-supported": [2, "Create-Job", True],
        "color-supported": 1,
    })  # fmt: skip
    assert caps.formats == ("image/pwg-raster",)
    assert caps.pwg_raster_resolutions == (Resolution(203, 203),)
    assert caps.pwg_raster_types == ("black_1",)
    assert caps.media_ready == (Media("oe_4x3-label_4x3in", 10160, 7620),)
    assert caps.copies_max == 1
    assert caps.operations == frozenset({2})
    assert not caps.create_job
    assert caps.color is False  # only the IPP boolean true counts


def test_resolution_units() -> None:
    """Dots per centimetre are converted to dots per inch; unknown units are dropped."""
    caps = parse_capabilities(
        {"pwg-raster-document-resolution-supported": [(118, 118, 4), (300, 300, 9), (0, 5, 3)]}
    )
    assert caps.pwg_raster_resolutions == (Resolution(300, 300),)


@pytest.mark.parametrize(
    ("name", "size"),
    [
        ("iso_a4_210x297mm", (21000, 29700)),
        ("na_letter_8.5x11in", (21590, 27940)),
        ("oe_4x3-label_4x3in", (10160, 7620)),
        ("custom_max_4x39.6in", (10160, 100584)),
        ("roll_max_4x39.6in", (10160, 100584)),
        ("na_letter", None),
        ("iso_a4_0x297mm", None),
        ("iso_a4_210x297pt", None),
    ],
)
def test_media_names(name: str, size: tuple[int, int] | None) -> None:
    """PWG 5101.1 self-describing names give their size in hundredths of mm, or None."""
    media = caps_mod.media_from_name(name)
    assert (None if media is None else (media.width_hmm, media.height_hmm)) == size


def test_urf_keywords() -> None:
    """urf-supported RS lists several resolutions; only colour keywords count as types."""
    caps = parse_capabilities({"urf-supported": ["V1.4", "W8", "SRGB24", "RS300-600", "DM1"]})
    assert caps.urf_types == ("W8", "SRGB24")
    assert caps.urf_resolutions == (Resolution(300, 300), Resolution(600, 600))
