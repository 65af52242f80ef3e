"""A printer's supplies as its probe answer says them: ``printer-supply`` (PWG 5100.13)
and the ``marker-*`` attributes CUPS reads (RFC 3805's prtMarkerSupplies, as CUPS names them).

Pure: no I/O. The values are kept as the printer sent them; edgeprint's queues relay
them (``edgeprint.ipp_server.attributes``), never invent a level.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

#: What the probe asks for besides the printer's state and capabilities.
SUPPLY_ATTRIBUTES = (
    "printer-supply",
    "printer-supply-description",
    "printer-supply-info-uri",
    "marker-colors",
    "marker-high-levels",
    "marker-levels",
    "marker-low-levels",
    "marker-names",
    "marker-types",
)


@dataclass(frozen=True)
class Marker:
    """One ``marker-*`` row: name, colour (``#RRGGBB`` or ``none``), type, levels in %
    (-1 unavailable, -2 unknown, -3 some left, as RFC 3805 says)."""

    name: str
    color: str
    type: str
    level: int
    low_level: int
    high_level: int


@dataclass(frozen=True)
class Supplies:
    """What one printer says of its supplies."""

    #: (printer-supply value, printer-supply-description), in the printer's order.
    supplies: tuple[tuple[str, str], ...] = ()
    info_uri: str | None = None
    markers: tuple[Marker, ...] = ()


def _list(value: Any) -> list[Any]:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def _strs(value: Any) -> list[str]:
    return [v for v in _list(value) if isinstance(v, str)]


def _ints(value: Any) -> list[int]:
    return [v for v in _list(value) if isinstance(v, int) and not isinstance(v, bool)]


def from_attributes(attrs: Mapping[str, Any]) -> Supplies | None:
    """The supplies in a Get-Printer-Attributes answer as pyipp parsed it (None: it says
    nothing about supplies). Rows whose parallel attributes disagree in length are dropped,
    not guessed."""
    supply = _strs(attrs.get("printer-supply"))
    description = _strs(attrs.get("printer-supply-description"))
    rows = tuple(zip(supply, description, strict=True)) if len(supply) == len(description) else ()
    names = _strs(attrs.get("marker-names"))
    columns = (
        _strs(attrs.get("marker-colors")),
        _strs(attrs.get("marker-types")),
        _ints(attrs.get("marker-levels")),
        _ints(attrs.get("marker-low-levels")),
        _ints(attrs.get("marker-high-levels")),
    )
    markers: tuple[Marker, ...] = ()
    if names and all(len(c) == len(names) for c in columns):
        colors, types, levels, lows, highs = columns
        markers = tuple(
            Marker(n, str(c), str(t), int(lv), int(lo), int(hi))
            for n, c, t, lv, lo, hi in zip(names, colors, types, levels, lows, highs, strict=True)
        )
    info = attrs.get("printer-supply-info-uri")
    info_uri = info if isinstance(info, str) and info else None
    if not rows and not markers and info_uri is None:
        return None
    return Supplies(rows, info_uri, markers)
