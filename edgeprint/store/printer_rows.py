"""Printer rows a technician sets: the paused flag and the ipps certificate pin."""

from __future__ import annotations

from edgeprint.store.interface import Store


class PrinterRows:
    """Queries on the ``printer_flags`` and ``printer_pins`` tables of one :class:`Store`."""

    def __init__(self, store: Store) -> None:
        self._store = store

    # --- printer flags --------------------------------------------------------

    async def paused_printers(self) -> set[str]:
        """Names of printers a technician paused (persisted across restarts)."""
        rows = await self._store.read("SELECT name FROM printer_flags WHERE paused = 1")
        return {str(r[0]) for r in rows}

    async def set_paused(self, printer: str, paused: bool, *, now: float, actor: str) -> None:
        """Persist a printer's paused flag."""
        await self._store.write(
            "INSERT INTO printer_flags (name, paused, updated_at, actor) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (name) DO UPDATE SET paused = excluded.paused, "
            "updated_at = excluded.updated_at, actor = excluded.actor",
            (printer, int(paused), now, actor),
        )

    # --- ipps pins ---------------------------------------------------------------------------

    async def pin(self, printer: str) -> str | None:
        """The certificate fingerprint pinned for ``printer``, or None."""
        rows = await self._store.read(
            "SELECT fingerprint FROM printer_pins WHERE printer = ?", (printer,)
        )
        return str(rows[0][0]) if rows else None

    async def set_pin(self, printer: str, fingerprint: str, *, now: float, actor: str) -> bool:
        """Pin ``fingerprint`` unless a pin exists (trust on *first* use); True if stored."""
        rows = await self._store.write(
            "INSERT INTO printer_pins (printer, fingerprint, pinned_at, actor) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (printer) DO NOTHING RETURNING printer",
            (printer, fingerprint, now, actor),
        )
        return bool(rows)

    async def forget_pin(self, printer: str) -> bool:
        """A technician re-trusts the printer: the next contact pins its certificate anew."""
        rows = await self._store.write(
            "DELETE FROM printer_pins WHERE printer = ? RETURNING printer", (printer,)
        )
        return bool(rows)
