"""Admission (DESIGN §4): where a newly printable job goes, or 503 when its queue is full.

It reads three things and calls nothing above it: the waiting depths (from the
store, through a snapshot at most ``DEPTH_SNAPSHOT_S`` old), the paused
printers (the service keeps them), and each printer's usability as the
dispatcher last published it on the :class:`~edgeprint.board.PrinterBoard`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from edgeprint import errors
from edgeprint.board import PrinterBoard
from edgeprint.config import Config
from edgeprint.documents import ladder
from edgeprint.logs import log_event
from edgeprint.metrics import Metrics
from edgeprint.service.records import Caller

log = logging.getLogger(__name__)

#: Admission reads queue depths from a snapshot at most this old (seconds), or from the
#: snapshot before while the next one is being read.
DEPTH_SNAPSHOT_S = 0.1

Depths = dict[tuple[str | None, str | None], int]


class Admission:
    """Queue depths, paused printers and the board: the facts admission decides on."""

    def __init__(
        self,
        config: Config,
        board: PrinterBoard,
        metrics: Metrics,
        read_depths: Callable[[], Awaitable[Depths]],
        clock: Callable[[], float],
    ) -> None:
        self.config = config
        self.board = board
        self.metrics = metrics
        self._read_depths = read_depths
        self._clock = clock
        self.paused: set[str] = set()
        self._depths: Depths | None = None
        self._depths_at = 0.0
        self._depths_refresh: asyncio.Task[Depths] | None = None
        self._layout_of: Config | None = None
        self._pools: dict[str, tuple[str, ...]] = {}
        self._high_water: dict[str, int] = {}

    def forget_depths(self) -> None:
        """Many jobs may have changed queue: read the depths afresh next time (a read under
        way, begun before the change, is not used)."""
        self._depths = None
        self._depths_refresh = None

    def usable(self, printer: str) -> bool:
        """Not paused and not known to be unhealthy (a printer not probed yet counts as usable)."""
        seen = self.board.usability(printer)
        return printer not in self.paused and (seen is None or seen.healthy)

    async def admit(
        self,
        printer: str | None,
        pool: str | None,
        caller: Caller,
        *,
        labels: int = 1,
        document_format: str = ladder.PDF,
    ) -> tuple[str | None, str | None]:
        """Where a newly printable job of ``labels`` impressions goes: (printer, pool), maybe a
        less loaded peer.

        A job for a full or unusable printer goes to the least-loaded usable
        peer of its pool with room (for a raw document, one that may take its
        format: :meth:`may_take`); so does one for a printer whose label roll runs out
        before it (its runway, issue 23, is shorter than the labels waiting for it: each
        waiting job at least one, this one ``labels``) when a peer's runway is not; a
        pool is full when its waiting jobs reach
        the sum of its unpaused printers' ``high_water``. Raises
        errors.Backpressure (nothing is stored; HTTP 503 with Retry-After).
        The limit is soft: concurrent admissions may pass it by a few jobs.
        """
        depths = await self._waiting_depths()
        retry_after = self.config.dispatch.retry_after_s
        pools, high_water = self._layout()

        def depth(p: str) -> int:
            return depths.get((p, None), 0)

        def room(p: str) -> bool:
            return p in high_water and depth(p) < high_water[p]

        def short(p: str) -> bool:
            seen = self.board.usability(p)
            left = seen.labels_left if seen is not None else None
            return left is not None and left < depth(p) + labels

        if printer is not None:
            self.check_takes(printer)
            runs_out = short(printer)
            if room(printer) and self.usable(printer) and not runs_out:
                return printer, None
            cfg = self.config.printer(printer)
            peers = (
                [
                    p
                    for p in pools.get(cfg.pool or "", ())
                    if p != printer
                    and self.usable(p)
                    and room(p)
                    and self.may_take(p, document_format)
                ]
                if cfg is not None
                else []
            )
            lasting = [p for p in peers if not short(p)]
            # only the runway speaks against it: a peer whose roll lasts, or it stays here
            peers = lasting if room(printer) and self.usable(printer) else lasting or peers
            if peers:
                best = min(peers, key=depth)
                self.metrics.failovers.labels(printer=printer).inc()
                why = "full" if not room(printer) else "unusable"
                if room(printer) and self.usable(printer):
                    why = "runway"
                log_event(
                    log,
                    "job_failed_over",
                    message="job redirected to a peer",
                    printer=printer,
                    to_printer=best,
                    why=why,
                    correlation_id=caller.correlation_id,
                )
                return best, None
            if room(printer):
                # not usable now (or its roll short), but nowhere better: it waits there
                return printer, None
            self._backpressure(f"printer {printer}", caller)
            raise errors.Backpressure(f"printer {printer}", retry_after)
        if pool is not None:
            members = pools.get(pool, ())
            working = [p for p in members if p not in self.paused] or list(members)
            # Every printer paused: jobs wait for a resume, up to the printers' marks (a
            # pause is a technician's short stop, not a full queue).
            capacity = sum(high_water.get(p, 0) for p in working)
            waiting = depths.get((None, pool), 0) + sum(depth(p) for p in members)
            if waiting >= capacity:
                self._backpressure(f"pool {pool}", caller)
                raise errors.Backpressure(f"pool {pool}", retry_after)
        return printer, pool

    def _layout(self) -> tuple[dict[str, tuple[str, ...]], dict[str, int]]:
        """The pools and each printer's ``high_water`` of the current config (read once per
        config: every release asks)."""
        if self._layout_of is not self.config:
            self._pools = self.config.pools
            self._high_water = {p.name: p.high_water for p in self.config.printers}
            self._layout_of = self.config
        return self._pools, self._high_water

    def check_takes(self, printer: str) -> None:
        """A printer named by the client must take some format edgeprint can send (else 422).

        Raises errors.DocumentUnprintable (``unsupported-document``) naming the
        printer and what it takes. A printer not probed yet passes.
        """
        seen = self.board.usability(printer)
        if seen is None or not seen.probed or seen.sends is not None:
            return
        takes = list(seen.takes)
        raise errors.DocumentUnprintable(
            "unsupported-document",
            f"printer {printer} takes {', '.join(takes) or 'no format it names'}: none of "
            "application/pdf, image/pwg-raster, image/urf, image/jpeg, which edgeprint sends",
            takes=takes,
        )

    def check_format(self, printer: str | None, pool: str | None, document_format: str) -> None:
        """A document in a raw label language (ZPL) needs a printer of its target that takes
        it; a PDF can be made into what any printer takes. issue 23 (zpl)

        Raises errors.DocumentUnprintable (``unsupported-document``, ``takes``: what the
        target's printers list) when every printer of the target was probed and none lists
        ``document_format``. While one is not probed yet the job is accepted: a pool job then
        waits for a printer that takes it (no other printer claims it); a printer named
        that turns out not to take it refuses the job unsent (DEAD unsupported_document).
        """
        if document_format == ladder.PDF:
            return
        if printer is not None:
            members: tuple[str, ...] = (printer,)
            target = f"printer {printer} does not take {document_format}"
        else:
            members = self._layout()[0].get(pool or "", ())
            target = f"no printer of pool {pool} takes {document_format}"
        if any(self.may_take(name, document_format) for name in members):
            return
        takes = {f for name in members for f in self._takes(name)}
        raise errors.DocumentUnprintable(
            "unsupported-document",
            f"{target} (listed: {', '.join(sorted(takes)) or 'none'}); send the badge as a PDF, "
            "or to a printer whose document-format-supported lists it",
            takes=sorted(takes),
        )

    def may_take(self, printer: str, document_format: str) -> bool:
        """``printer`` may print ``document_format``: a PDF anywhere; a raw language where
        the printer lists it, or has not been probed yet."""
        if document_format == ladder.PDF:
            return True
        seen = self.board.usability(printer)
        return seen is None or not seen.probed or document_format in seen.takes

    def _takes(self, printer: str) -> tuple[str, ...]:
        seen = self.board.usability(printer)
        return seen.takes if seen is not None else ()

    async def _waiting_depths(self) -> Depths:
        """The waiting depths: a snapshot read at most ``DEPTH_SNAPSHOT_S`` ago, or the one
        before it while its successor is being read (one query per window).

        Only the first admission after start-up or :meth:`forget_depths` waits for a read;
        the others decide at once (under a release load, a read waited for took a tenth of
        the release path's work). Admissions made since the snapshot are added to it by
        :meth:`admitted`, so a burst inside one window is still counted. A read that fails
        in the background is dropped (the next admission reads again); one waited for
        raises errors.StoreError.
        """
        depths = self._depths
        if depths is not None and self._clock() - self._depths_at <= DEPTH_SNAPSHOT_S:
            return depths
        refresh = self._depths_refresh
        if refresh is None:
            refresh = self._depths_refresh = asyncio.create_task(
                self._refresh(), name="admission:depths"
            )
            refresh.add_done_callback(_dropped)
        if depths is not None:
            return depths
        fresh = await asyncio.shield(refresh)
        return self._depths if self._depths is not None else fresh

    async def _refresh(self) -> Depths:
        """Read the depths and keep them, unless :meth:`forget_depths` came first."""
        me = asyncio.current_task()
        started = self._clock()
        try:
            fresh = await self._read_depths()
        finally:
            if self._depths_refresh is me:
                self._depths_refresh = None
            else:
                me = None  # forgotten meanwhile: a newer read decides
        if me is not None:
            self._depths, self._depths_at = dict(fresh), started
        return fresh

    def admitted(self, printer: str | None, pool: str | None, delta: int = 1) -> None:
        """Keep the depth snapshot current between refreshes (jobs in or out of RELEASED)."""
        if self._depths is not None:
            key = (printer, None) if printer is not None else (None, pool)
            self._depths[key] = max(0, self._depths.get(key, 0) + delta)

    def _backpressure(self, target: str, caller: Caller) -> None:
        self.metrics.backpressure.inc()
        log_event(
            log,
            "queue_backpressure",
            message="queue full",
            level=logging.WARNING,
            target=target,
            correlation_id=caller.correlation_id,
        )


def _dropped(task: asyncio.Task[Depths]) -> None:
    """A depth read nobody waited for may fail (the store's own errors reach the writes)."""
    if not task.cancelled():
        task.exception()
