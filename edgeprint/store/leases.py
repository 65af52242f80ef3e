"""Printer leases: which appliance drives which printer, fenced by an epoch (DESIGN §10).

A lease row ``(printer, owner, epoch, expires_at)`` is taken with ``epoch + 1`` and
renewed by its owner's heartbeat. No query here compares clocks of two boxes:
``expires_at`` is the owner's wall clock plus the lease, shown to people; whether a
lease lapsed is judged by the taker on its own monotonic clock (it saw no renewal for
``lease_s + margin_s``), see :mod:`edgeprint.dispatch.leases`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from edgeprint.store.interface import Store


@dataclass(frozen=True, slots=True)
class Lease:
    """One printer's lease as stored."""

    printer: str
    owner: str
    epoch: int
    expires_at: float


@dataclass
class Fence:
    """What this appliance's printer writes carry: its name and the epoch of each lease held.

    A printer whose lease is not held here is fenced with epoch 0, which no lease has
    (``CHECK (epoch >= 1)``): such a write changes nothing.
    """

    owner: str
    epochs: dict[str, int] = field(default_factory=dict)

    def params(self, printer: str) -> tuple[str, int]:
        """The guard's (owner, epoch) for a write on ``printer``."""
        return (self.owner, self.epochs.get(printer, 0))


class Leases:
    """Queries on ``printer_leases``."""

    def __init__(self, store: Store) -> None:
        self._store = store

    async def all(self) -> dict[str, Lease]:
        """Every lease, by printer."""
        rows = await self._store.read(
            "SELECT printer, owner, epoch, expires_at FROM printer_leases"
        )
        return {r[0]: Lease(r[0], r[1], int(r[2]), float(r[3])) for r in rows}

    async def take(
        self, printer: str, owner: str, *, seen: Lease | None, expires_at: float
    ) -> Lease | None:
        """Take ``printer``'s lease from ``seen`` (None: never leased) with the next epoch.

        Conditional on the row being still what the taker saw, so of two takers one
        wins; None when another appliance changed it first.
        """
        if seen is None:
            rows = await self._store.write(
                "INSERT INTO printer_leases (printer, owner, epoch, expires_at) "
                "VALUES (?, ?, 1, ?) ON CONFLICT (printer) DO NOTHING "
                "RETURNING printer, owner, epoch, expires_at",
                (printer, owner, expires_at),
            )
        else:
            rows = await self._store.write(
                "UPDATE printer_leases SET owner = ?, epoch = epoch + 1, expires_at = ? "
                "WHERE printer = ? AND owner = ? AND epoch = ? AND expires_at = ? "
                "RETURNING printer, owner, epoch, expires_at",
                (owner, expires_at, printer, seen.owner, seen.epoch, seen.expires_at),
            )
        return Lease(rows[0][0], rows[0][1], int(rows[0][2]), float(rows[0][3])) if rows else None

    async def renew(self, printer: str, owner: str, epoch: int, *, expires_at: float) -> bool:
        """Push the owner's lease on; False when it was taken over (the epoch moved on)."""
        rows = await self._store.write(
            "UPDATE printer_leases SET expires_at = ? "
            "WHERE printer = ? AND owner = ? AND epoch = ? RETURNING epoch",
            (expires_at, printer, owner, epoch),
        )
        return bool(rows)

    async def give_up(self, printer: str, owner: str, epoch: int) -> bool:
        """Hand a lease back at once (a clean stop): its row's expiry becomes 0, so the
        next taker knows it is free without waiting it out."""
        rows = await self._store.write(
            "UPDATE printer_leases SET expires_at = 0 "
            "WHERE printer = ? AND owner = ? AND epoch = ? RETURNING epoch",
            (printer, owner, epoch),
        )
        return bool(rows)
