"""Supply and media levels from a probe's answer, in percent, for metrics and technicians.

Pure: no I/O. Reads ``printer-supply`` (PWG 5100.13: an octetString
``index=…;type=…;unit=…;maxcapacity=…;level=…;colorantname=…;`` per supply, named by
``printer-supply-description``), the ``marker-*`` attributes (RFC 3805 as CUPS names
them; levels already in percent), ``printer-input-tray`` (PWG 5100.13: ``level`` of
``maxcapacity``) with ``media-col-ready`` naming what each tray holds, and
``media-ready``. A printer that answers nonsense gets fewer rows, never an exception:
every value is checked for its type and range, names are cut to :data:`MAX_NAME` and at
most :data:`MAX_ROWS` rows are kept (they become Prometheus labels).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

#: Longest supply or tray name kept (a label value; longer ones are cut).
MAX_NAME = 64
#: Most supplies, trays or ready media kept of one printer (labels stay bounded).
MAX_ROWS = 32
_SUFFIXES = ("-report", "-warning", "-error")


@dataclass(frozen=True)
class SupplyLevel:
    """One supply: its name, its kind (PWG ``type`` or the marker's type) and its level."""

    name: str
    kind: str
    level_percent: int | None  # None: the printer does not say (-1, -2, -3, or no capacity)


@dataclass(frozen=True)
class MediaLevel:
    """One input tray: its name, the media it holds (when said), its level."""

    tray: str
    media: str | None
    level_percent: int | None


def _values(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, list | tuple) else [value]


def _text(value: Any) -> str | None:
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if not isinstance(value, str):
        return None
    clean = "".join(c for c in value if c.isprintable()).strip()
    return clean[:MAX_NAME] or None


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str | bytes):
        try:
            return int(value)
        except ValueError:
            return None
    return None


def _fields(value: Any) -> dict[str, str]:
    """``a=1;b=two;`` → {"a": "1", "b": "two"} (parts without ``=`` are dropped)."""
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if not isinstance(value, str):
        return {}
    out: dict[str, str] = {}
    for part in value.split(";"):
        key, eq, val = part.partition("=")
        if eq and key.strip():
            out.setdefault(key.strip(), val.strip())
    return out


def _percent(level: int | None, capacity: int | None, unit: str | None = None) -> int | None:
    """``level`` of ``capacity`` in percent; None when either is unknown (negative)."""
    if level is None or level < 0:
        return None
    if capacity is not None and capacity > 0:
        percent = max(0, min(100, round(100 * level / capacity)))
        return 1 if percent == 0 and level > 0 else percent  # some left is never 0 %
    if unit == "percent" and level <= 100:
        return level
    return None


def _unique(names: Iterable[str]) -> list[str]:
    """Names made unique (``Black Toner``, ``Black Toner (2)``): they are label values."""
    taken: set[str] = set()
    out = []
    for n in names:
        name, i = n, 1
        while name in taken:
            i += 1
            suffix = f" ({i})"
            name = n[: MAX_NAME - len(suffix)] + suffix
        taken.add(name)
        out.append(name)
    return out


def _pwg_supplies(attrs: Mapping[str, Any]) -> list[SupplyLevel]:
    raw = _values(attrs.get("printer-supply"))[:MAX_ROWS]
    descriptions = _values(attrs.get("printer-supply-description"))
    rows = []
    for i, value in enumerate(raw):
        f = _fields(value)
        if not f:
            continue
        kind = _text(f.get("type")) or "unknown"
        said = _text(descriptions[i]) if len(descriptions) == len(raw) else None
        colorant = _text(f.get("colorantname"))
        name = said or (f"{colorant} {kind}" if colorant and colorant != "unknown" else kind)
        level = _percent(_int(f.get("level")), _int(f.get("maxcapacity")), f.get("unit"))
        if said is None and kind == "unknown" and level is None:
            continue  # nothing to name it by, nothing it says: not a supply
        rows.append(SupplyLevel(name, kind, level))
    return rows


def _markers(attrs: Mapping[str, Any]) -> list[SupplyLevel]:
    names = [_text(n) for n in _values(attrs.get("marker-names"))[:MAX_ROWS]]
    levels = _values(attrs.get("marker-levels"))
    types = _values(attrs.get("marker-types"))
    if len(levels) < len(names):
        return []
    rows = []
    for i, name in enumerate(names):
        if name is None:
            continue
        kind = (_text(types[i]) if len(types) == len(names) else None) or "unknown"
        level = _int(levels[i])
        rows.append(
            SupplyLevel(name, kind, level if level is not None and 0 <= level <= 100 else None)
        )
    return rows


def supply_levels(attrs: Mapping[str, Any]) -> tuple[SupplyLevel, ...]:
    """The printer's supplies: ``printer-supply`` where it says any, else ``marker-*``."""
    rows = _pwg_supplies(attrs) or _markers(attrs)
    names = _unique(r.name for r in rows)
    return tuple(SupplyLevel(n, r.kind, r.level_percent) for n, r in zip(names, rows, strict=True))


def _media_by_source(attrs: Mapping[str, Any]) -> dict[str, str]:
    out: dict[str, str] = {}
    for col in _values(attrs.get("media-col-ready"))[:MAX_ROWS]:
        if not isinstance(col, Mapping):
            continue
        source = _text(col.get("media-source"))
        name = _text(col.get("media-size-name")) or _text(col.get("media-key"))
        if source and name:
            out.setdefault(source, name)
    return out


def media_levels(attrs: Mapping[str, Any]) -> tuple[MediaLevel, ...]:
    """The printer's input trays (``printer-input-tray``, ``auto`` left out) with their levels
    and, from ``media-col-ready``, the media each holds."""
    media = _media_by_source(attrs)
    rows = []
    for value in _values(attrs.get("printer-input-tray"))[:MAX_ROWS]:
        f = _fields(value)
        tray = _text(f.get("name"))
        if tray is None or tray == "auto":
            continue
        level = _percent(_int(f.get("level")), _int(f.get("maxcapacity")), f.get("unit"))
        rows.append(MediaLevel(tray, media.get(tray), level))
    trays = _unique(r.tray for r in rows)
    return tuple(MediaLevel(t, r.media, r.level_percent) for t, r in zip(trays, rows, strict=True))


def loaded_media(attrs: Mapping[str, Any]) -> tuple[str, ...] | None:
    """``media-ready`` as a sorted tuple: empty when the printer says nothing is ready
    (no value), None when the answer does not carry it or carries nothing readable."""
    if "media-ready" not in attrs:
        return None
    raw = _values(attrs.get("media-ready"))[:MAX_ROWS]
    names = {n for n in (_text(v) for v in raw) if n is not None}
    if raw and not names:
        return None  # nonsense is not "nothing loaded"
    return tuple(sorted(names))


def _keyword(reason: str) -> str:
    for suffix in _SUFFIXES:
        if reason.endswith(suffix):
            return reason[: -len(suffix)]
    return reason


def media_empty(reasons: Iterable[str], attrs: Mapping[str, Any]) -> bool:
    """The printer says it is out of media: ``media-empty`` (any severity), or every input
    tray that reports a level is empty."""
    if any(_keyword(r) == "media-empty" for r in reasons):
        return True
    known = [m.level_percent for m in media_levels(attrs) if m.level_percent is not None]
    return bool(known) and not any(known)
