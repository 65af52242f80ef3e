"""Printer rows: what edgeprint remembers of each printer's life (epoch), personality and
label roll (issue 23: the count since the roll was changed, edgeprint.runway).

Both are written by the printer's worker (after a probe, after an answer that taught
it something) and read when the worker starts, so that an appliance restart does
not forget that a printer restarted meanwhile, nor what it is known to keep.
"""

from __future__ import annotations

import json

from edgeprint.epochs import Epoch
from edgeprint.personality import Traits
from edgeprint.runway import Roll
from edgeprint.store.interface import Store

_EPOCH_COLUMNS = (
    "epoch, began_at, cause, up_time_s, seen_at, boot_id, boot_s, printer_uuid, "
    "config_change_time, config_change_dt"
)


class PrinterMemory:
    """Queries on ``printer_epochs`` and ``printer_traits`` of one :class:`Store`."""

    def __init__(self, store: Store) -> None:
        self._store = store

    async def epoch(self, printer: str) -> Epoch | None:
        """The printer's epoch as last stored (None: never seen)."""
        rows = await self._store.read(
            f"SELECT {_EPOCH_COLUMNS} FROM printer_epochs WHERE printer = ?", (printer,)
        )
        if not rows:
            return None
        r = rows[0]
        return Epoch(
            number=int(r[0]),
            began_at=float(r[1]),
            cause=str(r[2]),
            up_time_s=None if r[3] is None else int(r[3]),
            seen_at=float(r[4]),
            boot_id=str(r[5]),
            boot_s=float(r[6]),
            printer_uuid=r[7],
            config_change_time=None if r[8] is None else int(r[8]),
            config_change_dt=r[9],
        )

    async def save_epoch(self, printer: str, e: Epoch) -> None:
        """Store the printer's epoch (a new one, or the same one's latest reading)."""
        await self._store.write(
            f"INSERT INTO printer_epochs (printer, {_EPOCH_COLUMNS}) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (printer) DO UPDATE SET epoch = excluded.epoch, "
            "began_at = excluded.began_at, cause = excluded.cause, "
            "up_time_s = excluded.up_time_s, seen_at = excluded.seen_at, "
            "boot_id = excluded.boot_id, boot_s = excluded.boot_s, "
            "printer_uuid = excluded.printer_uuid, "
            "config_change_time = excluded.config_change_time, "
            "config_change_dt = excluded.config_change_dt",
            (
                printer,
                e.number,
                e.began_at,
                e.cause,
                e.up_time_s,
                e.seen_at,
                e.boot_id,
                e.boot_s,
                e.printer_uuid,
                e.config_change_time,
                e.config_change_dt,
            ),
        )

    async def traits(self, printer: str) -> Traits | None:
        """What the printer is known to keep and echo (None: nothing learnt yet)."""
        rows = await self._store.read(
            "SELECT traits FROM printer_traits WHERE printer = ?", (printer,)
        )
        return Traits.from_json(json.loads(rows[0][0])) if rows else None

    async def save_traits(self, printer: str, traits: Traits, *, now: float) -> None:
        await self._store.write(
            "INSERT INTO printer_traits (printer, traits, updated_at) VALUES (?, ?, ?) "
            "ON CONFLICT (printer) DO UPDATE SET traits = excluded.traits, "
            "updated_at = excluded.updated_at",
            (printer, json.dumps(traits.as_json(), sort_keys=True), now),
        )

    async def roll(self, printer: str) -> Roll | None:
        """The printer's label roll as last stored (None: never counted)."""
        rows = await self._store.read(
            "SELECT printed, changed_at, media, empty FROM printer_rolls WHERE printer = ?",
            (printer,),
        )
        if not rows:
            return None
        r = rows[0]
        media = json.loads(r[2]) if r[2] is not None else None
        return Roll(
            printed=int(r[0]),
            changed_at=None if r[1] is None else float(r[1]),
            media=tuple(str(m) for m in media) if isinstance(media, list) else None,
            empty=bool(r[3]),
        )

    async def save_roll(self, printer: str, roll: Roll, *, now: float) -> None:
        await self._store.write(
            "INSERT INTO printer_rolls (printer, printed, changed_at, media, empty, updated_at) "
            "VALUES (?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (printer) DO UPDATE SET printed = excluded.printed, "
            "changed_at = excluded.changed_at, media = excluded.media, "
            "empty = excluded.empty, updated_at = excluded.updated_at",
            (
                printer,
                roll.printed,
                roll.changed_at,
                None if roll.media is None else json.dumps(list(roll.media)),
                int(roll.empty),
                now,
            ),
        )
