"""The printer board: what the dispatcher publishes of its printers, and the service's bell.

A leaf both sides hold from construction (the composition root makes it first):
the dispatcher's workers *publish* each printer's usability here whenever their
view of it changes, and admission (``edgeprint.service.admission``) *reads* it
— no call from the service into a worker. The other way, the service rings the
board (``wake``, ``control``, ``resumed``, ``media_loaded``) and whoever listens (the dispatcher)
acts on it; with no listener (tests, a service without a dispatcher) a ring is
a no-op.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from edgeprint.stock import StockView


@dataclass(frozen=True, slots=True)
class Usability:
    """What admission needs to know of one printer, as its worker last saw it."""

    healthy: bool
    #: The format edgeprint sends it (None: none of the formats it takes).
    sends: str | None
    #: The document formats it says it takes (empty before the first probe).
    takes: tuple[str, ...] = ()
    #: Whether its capabilities were read (a printer not probed yet takes anything).
    probed: bool = False
    #: The stock it has ready, read on every probe (None: not probed yet).
    stock: StockView | None = None
    #: Labels left on its roll (issue 23, edgeprint.runway); None: not counted.
    labels_left: int | None = None


class Listener(Protocol):
    """Who acts on the service's rings (the dispatcher)."""

    def wake(self, printer: str | None, pool: str | None) -> None: ...

    def control(self, printer: str | None) -> None: ...

    def resumed(self, printer: str | None) -> None: ...

    def media_loaded(self, printer: str) -> None: ...


class PrinterBoard:
    """The published printer view (written by the dispatcher) and the rings to it."""

    def __init__(self) -> None:
        self._seen: dict[str, Usability] = {}
        self._listener: Listener | None = None

    # --- the dispatcher's side --------------------------------------------------------

    def publish(self, printer: str, usability: Usability) -> None:
        """``printer``'s worker saw this (replaces what it published before)."""
        self._seen[printer] = usability

    def withdraw(self, printer: str) -> None:
        """``printer`` has no worker any more (a reload removed it): unknown again."""
        self._seen.pop(printer, None)

    def listen(self, listener: Listener) -> None:
        """``listener`` acts on every ring from now on (one listener: the dispatcher)."""
        self._listener = listener

    # --- the service's side -----------------------------------------------------------

    def usability(self, printer: str) -> Usability | None:
        """What the worker last published of ``printer`` (None: not seen yet, or unknown)."""
        return self._seen.get(printer)

    def wake(self, printer: str | None, pool: str | None) -> None:
        """A job became printable for ``printer`` or ``pool``."""
        if self._listener is not None:
            self._listener.wake(printer, pool)

    def control(self, printer: str | None) -> None:
        """A technician acted on ``printer`` (a cancel of the job it holds, a pause)."""
        if self._listener is not None:
            self._listener.control(printer)

    def resumed(self, printer: str | None) -> None:
        """A technician resumed ``printer`` (clears what only a person may clear)."""
        if self._listener is not None:
            self._listener.resumed(printer)

    def media_loaded(self, printer: str) -> None:
        """A technician loaded a new roll in ``printer`` (its runway starts again)."""
        if self._listener is not None:
            self._listener.media_loaded(printer)
