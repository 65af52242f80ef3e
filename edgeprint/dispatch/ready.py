"""The stock a printer has ready, from one Get-Printer-Attributes answer (pure).

``media-col-ready`` (with each media's ``media-type`` and ``media-source``), else
``media-ready``; for a printer that reports none, ``[[printers]] media``. Read on every
probe by the monitor (routing) and by the printer check (preflight), so both see one rule.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from edgeprint.config import PrinterConfig
from edgeprint.documents.capabilities import media_ready
from edgeprint.stock import StockView, configured, stock

Source = Literal["printer", "config"] | None


def ready_stock(attributes: Mapping[str, Any], printer: PrinterConfig) -> tuple[StockView, Source]:
    """The printer's ready stock and where it came from (None: unknown, it fits anything)."""
    found = tuple(
        stock(m.width_hmm, m.height_hmm, name=m.name, media_type=m.media_type, source=m.source)
        for m in media_ready(attributes)
    )
    source: Source = "printer" if found else None
    if not found and printer.media:
        found, source = configured(printer.media), "config"
    return StockView(found, printer.fit), source
