"""Printer ownership when several appliances share a PostgreSQL store (DESIGN §10).

:class:`LeaseKeeper` runs one heartbeat task per appliance. Each beat it reads the lease
table, renews the leases it holds, and takes free or lapsed ones up to its share,
``ceil(printers / live appliances)``. Lapsed is judged on this appliance's own monotonic
clock only (no two boxes' clocks are compared): a lease whose row has not changed for
``lease_s + margin_s`` since this appliance first saw it. An owner may send to a printer
only while its monotonic clock is more than ``margin_s`` short of ``lease_s`` after the
start of its last successful renewal; so it has stopped by itself ``2 × margin_s`` before
a taker starts. A taken lease's epoch is one more than the last: every write of a
printer's worker carries (owner, epoch) in its WHERE (:class:`edgeprint.store.leases.Fence`),
so a stale owner's write changes nothing. The taker's worker reconciles the printer's
jobs before it sends anything (the start-up path).

With the SQLite file, :class:`SoleOwner`: this appliance owns every printer.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Protocol

from edgeprint.config import ClusterConfig
from edgeprint.logs import log_event
from edgeprint.metrics import Metrics
from edgeprint.store.leases import Fence, Lease, Leases

#: The logger name its lines have always had (the JSON line's ``logger`` field).
log = logging.getLogger("edgeprint.service.leases")

#: Prefix of the member rows (the lease table's other use): one per live appliance.
MEMBER = "@appliance:"
#: A beat timed for a lapse comes this much after it (never a hair early: a wasted beat).
LAPSE_SLACK_S = 0.01


class Ownership(Protocol):
    """What a printer's worker and the printer views ask about ownership."""

    #: True when other appliances share the store (what they write is not rung here).
    shared: bool

    def may_send(self, printer: str) -> bool:
        """This appliance holds ``printer``'s lease and it cannot have lapsed yet."""
        ...

    def owner(self, printer: str) -> tuple[str | None, int | None]:
        """(owner, epoch) of ``printer``'s lease as last seen (epoch None: no leases)."""
        ...

    def epoch(self, printer: str) -> int:
        """The epoch of ``printer``'s lease held here (changes at each takeover; 0: none)."""
        ...


class SoleOwner:
    """The one appliance of a SQLite store: it owns every printer, always."""

    shared = False

    def __init__(self, appliance_id: str) -> None:
        self.appliance_id = appliance_id

    def may_send(self, printer: str) -> bool:
        return True

    def owner(self, printer: str) -> tuple[str | None, int | None]:
        return self.appliance_id, None

    def epoch(self, printer: str) -> int:
        return 1


class LeaseKeeper:
    """This appliance's leases; :meth:`run` until the stop event (then hands them back)."""

    shared = True

    def __init__(
        self,
        leases: Leases,
        fence: Fence,
        printers: Iterable[str],
        cluster: ClusterConfig,
        metrics: Metrics,
        *,
        on_change: Callable[[str], None] = lambda _printer: None,
        monotonic: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self._leases = leases
        self.fence = fence
        self.me = fence.owner
        self.printers = sorted(printers)
        self._cfg = cluster
        self._metrics = metrics
        #: Told the printer whose lease was taken or lost here (the dispatcher wakes it).
        self.on_change = on_change
        #: Run after every beat: what other appliances may have changed in the shared store
        #: and this one keeps in memory (the paused printers) is read again.
        self.after_beat: Callable[[], Awaitable[object]] | None = None
        self._mono = monotonic
        self._wall = wall
        #: Start (monotonic) of the last successful renewal of each lease held here.
        self._renewed_at: dict[str, float] = {}
        #: Other rows as first seen unchanged: (row, monotonic time first seen).
        self._seen: dict[str, tuple[Lease, float]] = {}
        #: Every lease as last read (for the printer views).
        self.view: dict[str, Lease] = {}

    # --- what workers and views ask ------------------------------------------------------

    def may_send(self, printer: str) -> bool:
        at = self._renewed_at.get(printer)
        if at is None or printer not in self.fence.epochs:
            return False
        return self._mono() < at + self._cfg.lease_s - self._cfg.margin_s

    def owner(self, printer: str) -> tuple[str | None, int | None]:
        lease = self.view.get(printer)
        return (lease.owner, lease.epoch) if lease is not None else (None, None)

    def epoch(self, printer: str) -> int:
        return self.fence.epochs.get(printer, 0)

    def set_printers(self, printers: Iterable[str]) -> None:
        """Follow a reload: added printers are taken at the next beats; a removed printer's
        lease is no longer renewed (it lapses, as at a crash)."""
        self.printers = sorted(printers)

    # --- the heartbeat -------------------------------------------------------------------

    async def run(self, stop: asyncio.Event) -> None:
        """Beat every ``heartbeat_s`` until ``stop``; store errors are logged and retried
        (the leases then lapse by themselves, and this appliance stops sending on time)."""
        while not stop.is_set():
            try:
                await self.beat()
                if self.after_beat is not None:
                    await self.after_beat()
            except Exception as exc:
                log_event(log, "lease_heartbeat_failed", level=logging.WARNING, error=str(exc))
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.next_beat_in()):
                    await stop.wait()

    def next_beat_in(self) -> float:
        """Seconds to the next beat: ``heartbeat_s``, or less when another's row seen
        unchanged lapses before then, so that a dead owner's printers are taken at lease +
        margin after their last renewal was seen, not at the next whole heartbeat after it."""
        now = self._mono()
        wait = self._cfg.heartbeat_s
        for row, first_seen in self._seen.values():
            if row.owner == self.me or row.expires_at == 0:
                continue
            due = first_seen + self._cfg.lease_s + self._cfg.margin_s - now
            if due > 0:
                wait = min(wait, due + LAPSE_SLACK_S)
        return wait

    async def give_up_all(self) -> None:
        """Hand every lease held here back (after the workers stopped): takers need not wait."""
        for printer, epoch in list(self.fence.epochs.items()):
            with contextlib.suppress(Exception):
                await self._leases.give_up(printer, self.me, epoch)
            self._lose(printer, handed_back=True)
        with contextlib.suppress(Exception):
            await self._leases.give_up(MEMBER + self.me, self.me, self._member_epoch)

    _member_epoch = 0

    async def beat(self) -> None:
        """One heartbeat: renew what is held, drop what was lost, take up to the share."""
        start = self._mono()
        rows = await self._leases.all()
        now = self._mono()
        expires = self._wall() + self._cfg.lease_s
        await self._renew_member(rows, start, expires)
        self._observe(rows, now)
        live = 1 + sum(
            1
            for key, row in rows.items()
            if key.startswith(MEMBER) and row.owner != self.me and not self._lapsed(key, row, now)
        )
        share = math.ceil(len(self.printers) / live) if self.printers else 0
        held = [p for p in self.printers if p in self.fence.epochs]
        keep = set(held[:share])  # beyond the share (an appliance joined): left to lapse
        for printer in sorted(self.fence.epochs):  # a printer a reload removed too
            row = rows.get(printer)
            if row is None or row.owner != self.me or row.epoch != self.fence.epochs[printer]:
                self._lose(printer)
                continue
            if printer in keep and await self._leases.renew(
                printer, self.me, row.epoch, expires_at=expires
            ):
                self._renewed_at[printer] = start
                rows[printer] = Lease(printer, self.me, row.epoch, expires)
            elif printer in keep:
                self._lose(printer)
        for printer in self.printers:
            if len([p for p in self.printers if p in self.fence.epochs]) >= share:
                break
            if printer in self.fence.epochs:
                continue
            row = rows.get(printer)
            if row is not None and not self._lapsed(printer, row, now):
                continue
            taken = await self._leases.take(printer, self.me, seen=row, expires_at=expires)
            if taken is None:
                continue
            rows[printer] = taken
            self.fence.epochs[printer] = taken.epoch
            self._renewed_at[printer] = start
            self._seen.pop(printer, None)
            if row is not None:
                self._metrics.printer_takeovers.labels(printer=printer).inc()
            # "from" is a keyword of Python, not of the log line
            taken_from: dict[str, Any] = {"from": row.owner if row is not None else None}
            log_event(
                log,
                "lease_taken",
                message="printer lease taken",
                printer=printer,
                epoch=taken.epoch,
                **taken_from,
            )
            self.on_change(printer)
        self.view = {k: v for k, v in rows.items() if not k.startswith(MEMBER)}

    async def _renew_member(self, rows: dict[str, Lease], start: float, expires: float) -> None:
        """This appliance's member row: how the others count live appliances."""
        key = MEMBER + self.me
        row = rows.get(key)
        if (
            row is not None
            and row.owner == self.me
            and await self._leases.renew(key, self.me, row.epoch, expires_at=expires)
        ):
            self._member_epoch = row.epoch
            return
        taken = await self._leases.take(key, self.me, seen=row, expires_at=expires)
        if taken is not None:
            self._member_epoch = taken.epoch
            rows[key] = taken

    def _observe(self, rows: dict[str, Lease], now: float) -> None:
        """Note when each row was first seen as it is now (every beat, every row)."""
        for key, row in rows.items():
            seen = self._seen.get(key)
            if seen is None or seen[0] != row:
                self._seen[key] = (row, now)

    def _lapsed(self, key: str, row: Lease, now: float) -> bool:
        """True when ``row`` was handed back, or has not changed for lease + margin here."""
        if row.expires_at == 0:
            return True
        seen = self._seen.get(key)
        if seen is None or seen[0] != row:  # pragma: no cover - _observe saw every row
            return False
        return now - seen[1] >= self._cfg.lease_s + self._cfg.margin_s

    def _lose(self, printer: str, *, handed_back: bool = False) -> None:
        if self.fence.epochs.pop(printer, None) is None:
            return
        self._renewed_at.pop(printer, None)
        if handed_back:  # a clean stop: nothing went wrong
            log_event(
                log, "lease_handed_back", message="printer lease handed back", printer=printer
            )
        else:
            log_event(
                log,
                "lease_lost",
                message="printer lease lost",
                level=logging.WARNING,
                printer=printer,
            )
        self.on_change(printer)
