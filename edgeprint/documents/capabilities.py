"""What a printer says it can take, from its Get-Printer-Attributes answer (pure).

The input is the printer's attribute group as pyipp parses it: a dict of
attribute name → one value or a list of values (pyipp gives a scalar for one
value), with resolutions as ``(x, y, units)`` tuples (units 3 = dots per inch,
4 = dots per centimetre, RFC 8011 §5.1.16), ranges as ``[low, high]``,
collections as dicts and operations as integers (``IppOperation`` members).

Attributes a printer leaves out read as "not supported" (an empty tuple); an
attribute of the wrong type is ignored rather than trusted, because printers
answer with odd values and one bad attribute must not make a printer unusable.
Sizes are kept as IPP gives them, in hundredths of millimetres.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from edgeprint.ipp.names import Operation

#: resolution units (RFC 8011 §5.1.16).
UNITS_DPI = 3
UNITS_DPCM = 4

#: Hundredths of millimetre per inch, and per PostScript point.
HMM_PER_INCH = 2540
HMM_PER_POINT = 2540 / 72

#: PWG 5101.1 self-describing media name: ``class_name_WxHunit`` (e.g. na_letter_8.5x11in).
_MEDIA_NAME = re.compile(r"^[a-z0-9-]+_[a-z0-9.-]+_(\d+(?:\.\d+)?)x(\d+(?:\.\d+)?)(in|mm)$")


@dataclass(frozen=True, order=True)
class Resolution:
    """A resolution in dots per inch, cross-feed (x) by feed (y)."""

    x_dpi: int
    y_dpi: int

    def __str__(self) -> str:
        return f"{self.x_dpi}dpi" if self.x_dpi == self.y_dpi else f"{self.x_dpi}x{self.y_dpi}dpi"


@dataclass(frozen=True)
class Media:
    """A media size the printer has loaded, in hundredths of millimetres.

    ``name`` is the PWG media name when the printer gave one; margins are the
    unprintable edges (0 for a borderless / label printer).
    """

    name: str | None
    width_hmm: int
    height_hmm: int
    left_hmm: int = 0
    right_hmm: int = 0
    top_hmm: int = 0
    bottom_hmm: int = 0
    media_type: str | None = None  # media-type (PWG 5100.7): labels, stationery, …
    source: str | None = None  # media-source: the tray it is in

    def __str__(self) -> str:
        size = f"{self.width_hmm / 100:g}x{self.height_hmm / 100:g}mm"
        return f"{self.name} ({size})" if self.name else size


@dataclass(frozen=True)
class PrinterCapabilities:
    """What a printer takes: formats, raster types and resolutions, loaded media, copies.

    ``pwg_raster_types`` are PWG 5102.4 keywords (``black_1``, ``sgray_8``,
    ``srgb_8``…); ``urf`` holds the raw ``urf-supported`` keywords, read through
    :attr:`urf_types` (``W8``, ``SRGB24``…) and :attr:`urf_resolutions` (``RS300-600``).
    """

    formats: tuple[str, ...] = ()
    pwg_raster_resolutions: tuple[Resolution, ...] = ()
    pwg_raster_types: tuple[str, ...] = ()
    urf: tuple[str, ...] = ()
    media_ready: tuple[Media, ...] = ()
    copies_max: int = 1
    operations: frozenset[int] = field(default_factory=frozenset)
    ipp_versions: tuple[str, ...] = ()
    color: bool = False

    @property
    def create_job(self) -> bool:
        """Create-Job and Send-Document are both supported (else Print-Job only)."""
        return {Operation.CREATE_JOB, Operation.SEND_DOCUMENT} <= self.operations

    @property
    def urf_types(self) -> tuple[str, ...]:
        """The URF colour keywords: W8 (8-bit sGray), SRGB24 (8-bit sRGB), …"""
        return tuple(k for k in self.urf if _URF_TYPE.match(k))

    @property
    def urf_resolutions(self) -> tuple[Resolution, ...]:
        """Resolutions of ``RS`` (e.g. ``RS300-600``: 300 and 600 dpi, square)."""
        out: list[Resolution] = []
        for k in self.urf:
            if k.startswith("RS"):
                for part in k[2:].split("-"):
                    if part.isdigit() and int(part) > 0:
                        out.append(Resolution(int(part), int(part)))
        return tuple(sorted(set(out)))

    def as_json(self) -> dict[str, Any]:
        """The stable JSON a technician sees (formats, resolutions, media…)."""
        return {
            "formats": list(self.formats),
            "pwg_raster_types": list(self.pwg_raster_types),
            "pwg_raster_resolutions": [str(r) for r in self.pwg_raster_resolutions],
            "urf_supported": list(self.urf),
            "media_ready": [str(m) for m in self.media_ready],
            "copies_max": self.copies_max,
            "create_job": self.create_job,
            "ipp_versions": list(self.ipp_versions),
            "color": self.color,
        }


_URF_TYPE = re.compile(r"^(W8|W16|SRGB24|SRGB48|ADOBERGB24|ADOBERGB48|DEVW8|DEVRGB24|DEVCMYK32)$")


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, list):
        return value
    return [value]


def _strings(value: Any) -> tuple[str, ...]:
    return tuple(v for v in _as_list(value) if isinstance(v, str))


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _resolution(value: Any) -> Resolution | None:
    if not (isinstance(value, tuple | list) and len(value) == 3):
        return None
    x, y, units = (_int(v) for v in value)
    if x is None or y is None or x <= 0 or y <= 0:
        return None
    if units == UNITS_DPI:
        return Resolution(x, y)
    if units == UNITS_DPCM:
        return Resolution(round(x * 2.54), round(y * 2.54))
    return None


def _resolutions(value: Any) -> tuple[Resolution, ...]:
    found = {r for v in _as_list(value) if (r := _resolution(v)) is not None}
    return tuple(sorted(found))


def media_from_name(name: str) -> Media | None:
    """The size a PWG self-describing media name states (``iso_a4_210x297mm``), or None."""
    m = _MEDIA_NAME.match(name)
    if m is None:
        return None
    per_unit = HMM_PER_INCH if m.group(3) == "in" else 100
    w, h = (round(float(m.group(i)) * per_unit) for i in (1, 2))
    if w <= 0 or h <= 0:
        return None
    return Media(name, w, h)


def _media_col(col: Any) -> Media | None:
    if not isinstance(col, Mapping):
        return None
    size = col.get("media-size")
    if not isinstance(size, Mapping):
        return None
    w, h = _int(size.get("x-dimension")), _int(size.get("y-dimension"))
    if w is None or h is None or w <= 0 or h <= 0:  # a range (roll media) is not a ready size
        return None
    name = col.get("media-size-name")
    left, right, top, bottom = (_int(col.get(f"media-{side}-margin")) or 0 for side in _SIDES)
    kind, source = col.get("media-type"), col.get("media-source")
    return Media(
        name if isinstance(name, str) else None,
        w,
        h,
        left,
        right,
        top,
        bottom,
        media_type=kind if isinstance(kind, str) else None,
        source=source if isinstance(source, str) else None,
    )


_SIDES = ("left", "right", "top", "bottom")


def media_ready(attrs: Mapping[str, Any]) -> tuple[Media, ...]:
    """media-col-ready (sizes and margins) first; media-ready names fill in what it lacks."""
    out: list[Media] = []
    seen: set[object] = set()

    def add(items: Iterable[Media | None]) -> None:
        for m in items:
            # The same media named in both (sizes from names are rounded differently).
            if m is not None and m.name not in seen and (m.width_hmm, m.height_hmm) not in seen:
                seen.update({(m.width_hmm, m.height_hmm), m.name} - {None})
                out.append(m)

    add(_media_col(c) for c in _as_list(attrs.get("media-col-ready")))
    add(media_from_name(n) for n in _strings(attrs.get("media-ready")))
    return tuple(out)


def _copies_max(value: Any) -> int:
    """copies-supported is rangeOfInteger [1, N] (pyipp: a list); anything else means 1."""
    if isinstance(value, list | tuple) and len(value) == 2:
        high = _int(value[1])
        return high if high is not None and high >= 1 else 1
    single = _int(value)
    return single if single is not None and single >= 1 else 1


def parse_capabilities(attrs: Mapping[str, Any]) -> PrinterCapabilities:
    """The capabilities in one printer attribute group as pyipp parses it."""
    return PrinterCapabilities(
        formats=_strings(attrs.get("document-format-supported")),
        pwg_raster_resolutions=_resolutions(attrs.get("pwg-raster-document-resolution-supported")),
        pwg_raster_types=_strings(attrs.get("pwg-raster-document-type-supported")),
        urf=_strings(attrs.get("urf-supported")),
        media_ready=media_ready(attrs),
        copies_max=_copies_max(attrs.get("copies-supported")),
        operations=frozenset(
            int(op)
            for v in _as_list(attrs.get("operations-supported"))
            if (op := _int(v)) is not None
        ),
        ipp_versions=_strings(attrs.get("ipp-versions-supported")),
        color=attrs.get("color-supported") is True,
    )


#: The attributes :func:`parse_capabilities` reads (for requested-attributes).
REQUESTED_ATTRIBUTES = (
    "document-format-supported",
    "pwg-raster-document-resolution-supported",
    "pwg-raster-document-type-supported",
    "urf-supported",
    "media-ready",
    "media-col-ready",
    "copies-supported",
    "operations-supported",
    "ipp-versions-supported",
    "color-supported",
)
