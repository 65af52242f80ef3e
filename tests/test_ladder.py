"""The format ladder: capabilities + document facts → what to send (pure; hypothesis invariants)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from edgeprint import errors
from edgeprint.documents import ladder
from edgeprint.documents.capabilities import Media, PrinterCapabilities, Resolution
from edgeprint.documents.ladder import Choice, DocumentFacts

BADGE = (288.0, 216.0)  # 4x3 in
A4 = (595.0, 842.0)
LABEL_4X3 = Media("oe_4x3-label_4x3in", 10160, 7620)
LABEL_2X1 = Media("oe_2x1-label_2x1in", 5080, 2540)
LETTER = Media("na_letter_8.5x11in", 21590, 27940)
A4_MEDIA = Media("iso_a4_210x297mm", 21000, 29700)
R = Resolution

LPRINT_ZEBRA = PrinterCapabilities(
    formats=("image/pwg-raster", "image/urf", "image/jpeg", "image/png"),
    pwg_raster_resolutions=(R(203, 203),),
    pwg_raster_types=("black_1", "black_8", "sgray_8"),
    urf=("V1.5", "W8", "DEVW8", "RS203"),
    media_ready=(LABEL_4X3,),
)


def test_pdf_when_listed() -> None:
    """A printer that lists PDF gets the PDF as submitted, on the smallest loaded media that fits."""
    caps = PrinterCapabilities(
        formats=("application/pdf", "image/pwg-raster"), media_ready=(LETTER, LABEL_4X3)
    )
    assert ladder.choose(caps, DocumentFacts((BADGE,))) == Choice(
        "application/pdf", media=LABEL_4X3
    )


def test_label_printer_gets_gray_pwg_raster() -> None:
    """LPrint's Zebra gets sgray_8 PWG raster at its only resolution (203 dpi) on the 4x3 label."""
    choice = ladder.choose(LPRINT_ZEBRA, DocumentFacts((BADGE,), needs_color=True))
    assert choice == Choice("image/pwg-raster", "sgray_8", R(203, 203), LABEL_4X3)
    assert choice.raster
    assert not choice.one_page_per_job


def test_urf_when_no_pwg() -> None:
    """An AirPrint-only printer gets URF; a colour document on a colour printer gets SRGB24."""
    caps = PrinterCapabilities(
        formats=("image/urf", "image/jpeg"),
        urf=("V1.4", "W8", "SRGB24", "RS300-600"),
        color=True,
        media_ready=(LETTER, A4_MEDIA),
    )
    choice = ladder.choose(caps, DocumentFacts((A4,), needs_color=True))
    assert choice == Choice("image/urf", "srgb_8", R(300, 300), A4_MEDIA)
    assert choice.urf_type == "SRGB24"
    gray = ladder.choose(caps, DocumentFacts((A4,), needs_color=False))
    assert gray.urf_type == "W8"


def test_jpeg_last() -> None:
    """A JPEG-only printer gets one JPEG per page, one page per job, at 300 dpi."""
    caps = PrinterCapabilities(formats=("image/jpeg",), media_ready=(LETTER,))
    choice = ladder.choose(caps, DocumentFacts((BADGE, BADGE)))
    assert choice == Choice("image/jpeg", "sgray_8", R(300, 300), LETTER)
    assert choice.one_page_per_job


def test_nothing_we_can_produce() -> None:
    """A printer listing only formats edgeprint cannot produce is refused, naming what it takes."""
    caps = PrinterCapabilities(formats=("application/postscript", "application/vnd.hp-pcl"))
    with pytest.raises(errors.DocumentUnprintable) as exc:
        ladder.choose(caps, DocumentFacts((BADGE,)))
    assert exc.value.slug == "unsupported-document"
    assert exc.value.takes == ("application/postscript", "application/vnd.hp-pcl")
    assert str(exc.value) == (
        "the printer takes application/postscript, application/vnd.hp-pcl; edgeprint can send "
        "application/pdf, image/pwg-raster, image/urf, image/jpeg"
    )


def test_pwg_without_usable_type_says_why() -> None:
    """PWG raster listed with only CMYK types and no other rung: refused with the reason."""
    caps = PrinterCapabilities(
        formats=("image/pwg-raster",),
        pwg_raster_types=("cmyk_8",),
        pwg_raster_resolutions=(R(300, 300),),
    )
    with pytest.raises(errors.DocumentUnprintable) as exc:
        ladder.choose(caps, DocumentFacts((BADGE,)))
    assert exc.value.slug == "unsupported-document"
    assert "lists none of sgray_8, black_1, srgb_8 (cmyk_8)" in str(exc.value)


def test_no_media_fits() -> None:
    """An A4 page on a printer with only 2x1 in labels loaded: no-media-fits, naming both."""
    caps = PrinterCapabilities(formats=("application/pdf",), media_ready=(LABEL_2X1,))
    with pytest.raises(errors.DocumentUnprintable) as exc:
        ladder.choose(caps, DocumentFacts((A4,)))
    assert exc.value.slug == "no-media-fits"
    assert str(exc.value) == (
        "no loaded media fits a 209.9x297.04mm page (media-ready: oe_2x1-label_2x1in (50.8x25.4mm))"
    )


def test_no_pages() -> None:
    """A document without pages renders to nothing: document-renders-empty."""
    with pytest.raises(errors.DocumentUnprintable) as exc:
        ladder.choose(LPRINT_ZEBRA, DocumentFacts(()))
    assert exc.value.slug == "document-renders-empty"


def test_turned_page_fits() -> None:
    """A portrait 3x4 in page fits a landscape 4x3 in label turned by 90°."""
    assert ladder.needs_turn((216.0, 288.0), LABEL_4X3)
    assert not ladder.needs_turn(BADGE, LABEL_4X3)
    assert ladder.choose_media(LPRINT_ZEBRA, DocumentFacts(((216.0, 288.0),))) == LABEL_4X3


@pytest.mark.parametrize(
    ("listed", "chosen"),
    [
        ((R(150, 150), R(300, 300), R(600, 600)), R(300, 300)),
        ((R(600, 600), R(1200, 1200)), R(600, 600)),
        ((R(203, 203),), R(203, 203)),
        ((R(150, 150), R(203, 203)), R(203, 203)),
        ((R(300, 600),), None),
        ((), None),
    ],
)
def test_resolution_rule(listed: tuple[Resolution, ...], chosen: Resolution | None) -> None:
    """The lowest square resolution ≥ 300 dpi, else the highest below; non-square ones are skipped."""
    assert ladder.choose_resolution(listed) == chosen


# --- invariants -------------------------------------------------------------------

FORMATS = [
    "application/pdf",
    "image/pwg-raster",
    "image/urf",
    "image/jpeg",
    "image/png",
    "application/postscript",
]
resolutions = st.builds(lambda d: R(d, d), st.sampled_from([150, 203, 300, 360, 600, 1200]))
medias = st.builds(
    lambda w, h: Media(None, w, h), st.integers(2000, 30000), st.integers(2000, 40000)
)
capabilities = st.builds(
    PrinterCapabilities,
    formats=st.lists(st.sampled_from(FORMATS), unique=True).map(tuple),
    pwg_raster_resolutions=st.lists(resolutions, unique=True).map(lambda r: tuple(sorted(r))),
    pwg_raster_types=st.lists(
        st.sampled_from(["black_1", "sgray_8", "srgb_8", "cmyk_8"]), unique=True
    ).map(tuple),
    urf=st.lists(
        st.sampled_from(["V1.4", "W8", "SRGB24", "RS300", "RS600", "RS150-300", "DM1"]), unique=True
    ).map(tuple),
    media_ready=st.lists(medias, max_size=4).map(tuple),
    color=st.booleans(),
)
facts = st.builds(
    DocumentFacts,
    page_sizes_pt=st.lists(
        st.tuples(st.floats(50, 1000), st.floats(50, 1000)), min_size=1, max_size=4
    ).map(tuple),
    needs_color=st.booleans(),
    blank=st.booleans(),
)


def _outcome(caps: PrinterCapabilities, doc: DocumentFacts) -> Choice | errors.DocumentUnprintable:
    try:
        return ladder.choose(caps, doc)
    except errors.DocumentUnprintable as exc:
        return exc


@given(capabilities, facts)
def test_choice_is_listed_and_follows_the_ladder(
    caps: PrinterCapabilities, doc: DocumentFacts
) -> None:
    """Any choice is a format the printer lists, the first usable rung, with listed type, resolution and fitting media."""
    choice = _outcome(caps, doc)
    assert doc.blank == (
        isinstance(choice, errors.DocumentUnprintable) and choice.slug == "document-renders-empty"
    )
    if isinstance(choice, errors.DocumentUnprintable):
        if choice.slug == "document-renders-empty":
            return
        if choice.slug == "no-media-fits":
            assert caps.media_ready
            assert not any(
                all(ladder.fits(p, m) or ladder.needs_turn(p, m) for p in doc.page_sizes_pt)
                for m in caps.media_ready
            )
        else:
            assert choice.slug == "unsupported-document"
            assert "application/pdf" not in caps.formats
            assert "image/jpeg" not in caps.formats
            assert choice.takes == caps.formats
        return
    assert choice.format in caps.formats
    assert ("application/pdf" in caps.formats) == (choice.format == "application/pdf")
    if caps.media_ready:
        assert choice.media in caps.media_ready
        assert choice.media is not None
        for page in doc.page_sizes_pt:
            assert ladder.fits(page, choice.media) or ladder.needs_turn(page, choice.media)
    if choice.format == "application/pdf":
        return
    assert choice.media is not None
    assert choice.resolution is not None
    if choice.format == "image/pwg-raster":
        assert choice.color_space in caps.pwg_raster_types
        assert choice.resolution in caps.pwg_raster_resolutions
        listed = caps.pwg_raster_resolutions
    elif choice.format == "image/urf":
        assert choice.urf_type in caps.urf_types
        assert choice.resolution in caps.urf_resolutions
        listed = caps.urf_resolutions
        # URF only when PWG raster is not listed or unusable (no type we make, no square dpi)
        assert (
            "image/pwg-raster" not in caps.formats
            or not {"sgray_8", "black_1", "srgb_8"} & set(caps.pwg_raster_types)
            or ladder.choose_resolution(caps.pwg_raster_resolutions) is None
        )
    else:
        listed = (R(300, 300),)
    high_enough = [r for r in listed if r.x_dpi >= 300]
    assert choice.resolution == (min(high_enough) if high_enough else max(listed))
    if choice.color_space == "srgb_8" and choice.format != "image/jpeg":
        # colour only when wanted and possible, or when it is all the printer takes
        types = caps.pwg_raster_types if choice.format == "image/pwg-raster" else ()
        assert (
            (caps.color and doc.needs_color)
            or not ({"sgray_8", "black_1"} & set(types))
            or choice.format == "image/urf"
        )
    if (
        caps.color
        and doc.needs_color
        and choice.format == "image/pwg-raster"
        and "srgb_8" in caps.pwg_raster_types
    ):
        assert choice.color_space == "srgb_8"


@given(capabilities, facts)
def test_choice_is_deterministic(caps: PrinterCapabilities, doc: DocumentFacts) -> None:
    """The same capabilities and document always give the same answer."""

    first, second = _outcome(caps, doc), _outcome(caps, doc)
    if isinstance(first, errors.DocumentUnprintable):
        assert isinstance(second, errors.DocumentUnprintable)
        assert (first.slug, str(first)) == (second.slug, str(second))
    else:
        assert first == second
