"""Printer capabilities + document facts → what to send (pure).

The ladder, first rung that the printer lists and edgeprint can produce wins:
``application/pdf`` (sent as submitted), ``image/pwg-raster`` (PWG 5102.4),
``image/urf`` (Apple raster), ``image/jpeg`` (one page per job).

For a raster, the colour space and bit depth come from what the printer lists:
``srgb_8`` / ``SRGB24`` when the printer is colour, the document needs colour
and the printer lists it; else ``sgray_8`` / ``W8``, else ``black_1`` (PWG
only), else whatever of those is left. The resolution is the lowest square
resolution listed at or above 300 dpi, else the highest below. The media is the
smallest loaded one (``media-ready``) that every page fits, turned by 90° if
need be; a printer that lists no loaded media gets the first page's own size.
"""

from __future__ import annotations

from dataclasses import dataclass

from edgeprint import errors
from edgeprint.documents.capabilities import HMM_PER_POINT, Media, PrinterCapabilities, Resolution

PDF = "application/pdf"
PWG_RASTER = "image/pwg-raster"
URF = "image/urf"
JPEG = "image/jpeg"
#: The formats edgeprint can send, best first.
LADDER = (PDF, PWG_RASTER, URF, JPEG)

#: PWG raster types edgeprint can produce, and the URF keyword of the same pixels.
SGRAY_8 = "sgray_8"
BLACK_1 = "black_1"
SRGB_8 = "srgb_8"
_URF_OF = {SGRAY_8: "W8", SRGB_8: "SRGB24"}

#: The resolution a raster aims at (the lowest listed ≥ this, else the highest below).
TARGET_DPI = 300
#: JPEG has no resolution attribute in IPP Everywhere: rendered at this.
JPEG_DPI = 300
#: A page fits a media up to this much larger (PDF writers round page sizes to points).
FIT_TOLERANCE_HMM = 100


@dataclass(frozen=True)
class DocumentFacts:
    """What the ladder needs to know of a document.

    ``page_sizes_pt``: (width, height) of each page's box in PostScript points;
    ``needs_color``: some page has colour (a grey-only printer still prints it, in grey);
    ``blank``: no page has a single mark (it would print as blank paper).
    """

    page_sizes_pt: tuple[tuple[float, float], ...]
    needs_color: bool = False
    blank: bool = False


@dataclass(frozen=True)
class Choice:
    """What to send: the format and, for a raster or JPEG, how to render it.

    ``color_space`` is a PWG raster type keyword (``sgray_8``, ``black_1``,
    ``srgb_8``) for every raster format; :attr:`urf_type` gives the URF keyword.
    ``media`` is None when the printer is left to choose (a PDF on a printer
    that lists no loaded media).
    """

    format: str
    color_space: str | None = None
    resolution: Resolution | None = None
    media: Media | None = None

    @property
    def raster(self) -> bool:
        return self.format != PDF

    @property
    def one_page_per_job(self) -> bool:
        return self.format == JPEG

    @property
    def urf_type(self) -> str | None:
        return _URF_OF.get(self.color_space or "")


def page_hmm(size_pt: tuple[float, float]) -> tuple[int, int]:
    """A page size in points as hundredths of millimetres (rounded)."""
    return round(size_pt[0] * HMM_PER_POINT), round(size_pt[1] * HMM_PER_POINT)


def fits(size_pt: tuple[float, float], media: Media) -> bool:
    """The page fits the media as it is (no turn)."""
    w, h = page_hmm(size_pt)
    return w <= media.width_hmm + FIT_TOLERANCE_HMM and h <= media.height_hmm + FIT_TOLERANCE_HMM


def needs_turn(size_pt: tuple[float, float], media: Media) -> bool:
    """The page fits the media only when turned by 90°."""
    return not fits(size_pt, media) and fits((size_pt[1], size_pt[0]), media)


def _fits_either_way(size_pt: tuple[float, float], media: Media) -> bool:
    return fits(size_pt, media) or needs_turn(size_pt, media)


def choose_media(caps: PrinterCapabilities, facts: DocumentFacts) -> Media | None:
    """The smallest loaded media every page fits; None when the printer lists none loaded.

    Raises errors.DocumentUnprintable ``no-media-fits`` naming the largest page
    and the loaded media.
    """
    if not caps.media_ready:
        return None
    fitting = [
        m for m in caps.media_ready if all(_fits_either_way(p, m) for p in facts.page_sizes_pt)
    ]
    if fitting:
        # Stable: among equal areas the printer's first listed wins.
        return min(fitting, key=lambda m: m.width_hmm * m.height_hmm)
    w, h = max((page_hmm(p) for p in facts.page_sizes_pt), key=lambda s: s[0] * s[1])
    loaded = ", ".join(str(m) for m in caps.media_ready)
    raise errors.DocumentUnprintable(
        "no-media-fits",
        f"no loaded media fits a {w / 100:g}x{h / 100:g}mm page (media-ready: {loaded})",
    )


def _page_media(facts: DocumentFacts) -> Media:
    w, h = page_hmm(facts.page_sizes_pt[0])
    return Media(None, w, h)


def choose_resolution(listed: tuple[Resolution, ...]) -> Resolution | None:
    """The lowest square resolution ≥ TARGET_DPI, else the highest square one below."""
    square = sorted({r for r in listed if r.x_dpi == r.y_dpi})
    at_least = [r for r in square if r.x_dpi >= TARGET_DPI]
    if at_least:
        return at_least[0]
    return square[-1] if square else None


def _color_space(available: list[str], caps: PrinterCapabilities, facts: DocumentFacts) -> str:
    color_first = caps.color and facts.needs_color
    order = [SRGB_8, SGRAY_8, BLACK_1] if color_first else [SGRAY_8, BLACK_1, SRGB_8]
    return next(c for c in order if c in available)


def _pwg(caps: PrinterCapabilities, facts: DocumentFacts) -> tuple[str, Resolution] | str:
    """(colour space, resolution) for PWG raster, or why not."""
    types = [t for t in (SGRAY_8, BLACK_1, SRGB_8) if t in caps.pwg_raster_types]
    res = choose_resolution(caps.pwg_raster_resolutions)
    if not types:
        listed = ", ".join(caps.pwg_raster_types) or "none"
        return (
            f"pwg-raster-document-type-supported lists none of sgray_8, black_1, srgb_8 ({listed})"
        )
    if res is None:
        return "pwg-raster-document-resolution-supported lists no square resolution"
    return _color_space(types, caps, facts), res


def _urf(caps: PrinterCapabilities, facts: DocumentFacts) -> tuple[str, Resolution] | str:
    types = [t for t, k in _URF_OF.items() if k in caps.urf_types]
    res = choose_resolution(caps.urf_resolutions)
    if not types:
        return f"urf-supported lists neither W8 nor SRGB24 ({', '.join(caps.urf) or 'none'})"
    if res is None:
        return "urf-supported lists no RS resolution"
    return _color_space(types, caps, facts), res


def choose(caps: PrinterCapabilities, facts: DocumentFacts) -> Choice:
    """What to send this printer for this document (see the module docstring).

    Raises errors.DocumentUnprintable: ``unsupported-document`` when the
    printer lists no format edgeprint can produce (``takes``: what it lists),
    ``no-media-fits`` when no loaded media is large enough for a page,
    ``document-renders-empty`` for a document without pages or whose pages are all blank.
    """
    if not facts.page_sizes_pt:
        raise errors.DocumentUnprintable("document-renders-empty", "the document has no pages")
    if facts.blank:
        raise errors.DocumentUnprintable(
            "document-renders-empty",
            f"all {len(facts.page_sizes_pt)} page(s) of the document render blank: "
            "nothing would be printed",
        )
    media = choose_media(caps, facts)
    if PDF in caps.formats:
        return Choice(PDF, media=media)
    raster_media = media or _page_media(facts)
    why_not: list[str] = []
    for fmt, pick in ((PWG_RASTER, _pwg), (URF, _urf)):
        if fmt not in caps.formats:
            continue
        picked = pick(caps, facts)
        if isinstance(picked, str):
            why_not.append(f"{fmt}: {picked}")
            continue
        color_space, res = picked
        return Choice(fmt, color_space, res, raster_media)
    if JPEG in caps.formats:
        color_space = SRGB_8 if caps.color and facts.needs_color else SGRAY_8
        return Choice(JPEG, color_space, Resolution(JPEG_DPI, JPEG_DPI), raster_media)
    takes = ", ".join(caps.formats) or "nothing"
    unusable = f" ({'; '.join(why_not)})" if why_not else ""
    raise errors.DocumentUnprintable(
        "unsupported-document",
        f"the printer takes {takes}{unusable}; edgeprint can send {', '.join(LADDER)}",
        takes=caps.formats,
    )
