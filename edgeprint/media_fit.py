"""Preflight's questions to the stock rule (pure; a leaf over :mod:`edgeprint.stock`).

Preflight holds a badge's size against what a printer has ready, as the routing does: it
asks :meth:`edgeprint.stock.StockView.match` (the claim's own rule, with its default
tolerance), and answers in preflight's words: ``exact`` (stock of the badge's size is
ready), ``sheet`` (only other stock the printer may scale or centre the badge on: a
warning), ``none`` (the wrong stock: the routing would make the badge wait). Sizes are in
hundredths of a millimetre, as IPP's media-size.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from edgeprint.stock import (
    DEFAULT_TOLERANCE_HMM,
    HMM_PER_INCH,
    PageSizes,
    Stock,
    StockView,
    media_name_size,
    size_words,
    stock,
)

#: Hundredths of millimetre per PostScript point (PDF page sizes).
HMM_PER_POINT = HMM_PER_INCH / 72

#: A size as a printer's capabilities show ready media: ``101.6x76.2mm``, alone or in
#: brackets after the name (``oe_4x3-label_4x3in (101.6x76.2mm)``).
_SHOWN_SIZE = re.compile(r"(?:^|\()(\d+(?:\.\d+)?)x(\d+(?:\.\d+)?)mm\)?$")

Fit = Literal["exact", "sheet", "none"]


@dataclass(frozen=True)
class Size:
    """A page or media size in hundredths of a millimetre; ``name`` as given, if any."""

    width_hmm: int
    height_hmm: int
    name: str | None = None

    def inches(self) -> str:
        """``4×3 in`` (as a person at a badge desk says it)."""
        return size_words(self.width_hmm, self.height_hmm)

    def pages(self) -> PageSizes:
        page = PageSizes.of([(self.width_hmm, self.height_hmm)])
        assert page is not None  # sizes here are positive
        return page

    def __str__(self) -> str:
        return f"{self.name} ({self.inches()})" if self.name else self.inches()


def from_media_name(name: str) -> Size | None:
    """The size a PWG self-describing media name states, or None for any other text."""
    size = media_name_size(name)
    return Size(size[0], size[1], name) if size is not None else None


def from_points(width_pt: float, height_pt: float) -> Size:
    """A PDF page's size (PostScript points)."""
    return Size(round(width_pt * HMM_PER_POINT), round(height_pt * HMM_PER_POINT))


def from_shown(text: str) -> Size | None:
    """A ready medium as a printer's capabilities show it (``name (WxHmm)``, ``WxHmm`` or a
    PWG name); None when no size can be read from it (a printer's garbage name)."""
    m = _SHOWN_SIZE.search(text.strip())
    name = text.split(" (", 1)[0].strip() if " (" in text else None
    if m is not None:
        w, h = (round(float(m.group(i)) * 100) for i in (1, 2))
        if w > 0 and h > 0:
            return Size(w, h, name)
    return from_media_name(text.strip())


def view_of(ready: Sequence[Mapping[str, Any] | str], fit: str | None = None) -> StockView:
    """The printer's stock from GET /v1/printers' ``media_ready`` (objects with
    ``width_mm``, ``length_mm``, ``label``, ``fit``) or capabilities' strings."""
    stocks: list[Stock] = []
    fits: set[str] = set()
    for item in ready:
        if isinstance(item, Mapping):
            try:
                short = round(float(item["width_mm"]) * 100)
                long = round(float(item["length_mm"]) * 100)
            except (KeyError, TypeError, ValueError):
                continue
            if short > 0 and long > 0:
                stocks.append(
                    Stock(
                        min(short, long),
                        max(short, long),
                        bool(item.get("label")),
                        item.get("name"),
                    )
                )
                if item.get("fit") in ("exact", "center", "scale"):
                    fits.add(str(item["fit"]))
        else:
            size = from_shown(item)
            if size is not None:
                stocks.append(stock(size.width_hmm, size.height_hmm, name=size.name))
    chosen = fit if fit in ("exact", "center", "scale") else None
    if chosen is None and len(fits) == 1:  # [[printers]] fit set, or one kind of stock
        chosen = fits.pop()
    return StockView(tuple(stocks), chosen)  # type: ignore[arg-type]


def judge(page: Size, ready: Sequence[Mapping[str, Any] | str], fit: str | None = None) -> Fit:
    """``exact``: stock of the page's size is ready; ``sheet``: only other stock the printer
    may scale or centre it on; ``none``: the wrong stock (nothing ready counts as none)."""
    return judge_view(page, view_of(ready, fit))


def judge_view(page: Size, view: StockView) -> Fit:
    """:func:`judge` against a printer's stock as the routing reads it."""
    if not view.known:
        return "none"
    match = view.match(page.pages(), DEFAULT_TOLERANCE_HMM)
    return "exact" if match == "exact" else ("sheet" if match == "other" else "none")


def fitting(page: Size, ready: Sequence[Mapping[str, Any] | str]) -> list[str]:
    """Those of ``ready`` the page fits exactly (their names or sizes, as shown)."""
    out = []
    for item in ready:
        if judge(page, [item], "exact") == "exact":
            out.append(_shown(item))
    return out


def sheet_fitting(
    page: Size, ready: Sequence[Mapping[str, Any] | str], fit: str | None = None
) -> list[str]:
    """Those of ``ready`` the printer would scale or centre the page on."""
    return [_shown(i) for i in ready if judge(page, [i], fit) == "sheet"]


def _shown(item: Mapping[str, Any] | str) -> str:
    if isinstance(item, Mapping):
        return str(item.get("name") or item.get("size") or "?")
    return item
