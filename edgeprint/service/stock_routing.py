"""Stock-aware routing (DESIGN §4 "Stock"): which jobs a printer may claim, and why a
released job waits.

It reads the printers' ready stock as their workers last published it on the board
(``Usability.stock``), the paused printers, and the pools of the config; it writes
nothing but the ``waiting_reason`` of released jobs (:meth:`StockRouting.refresh`), run
by the dispatcher's stock watch after each probe round. A job waiting for stock is not
moved or failed: it stays RELEASED and prints as soon as a printer of its target shows
fitting stock.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from edgeprint.board import PrinterBoard
from edgeprint.config import Config
from edgeprint.logs import log_event
from edgeprint.metrics import Metrics
from edgeprint.records import JobRecord
from edgeprint.states import JobState
from edgeprint.stock import PageSizes, StockView, waiting_reason
from edgeprint.store.stock_sql import StockCondition, stock_condition
from edgeprint.store.waiting import Waiting

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class WaitingGroup:
    """Released jobs of one target and one page size, and why they wait (None: they don't)."""

    printer: str | None
    pool: str | None
    sizes: PageSizes
    jobs: int
    reason: str | None


class StockRouting:
    """The claim's stock condition per printer and the waiting reasons of released jobs."""

    def __init__(
        self,
        config: Config,
        board: PrinterBoard,
        paused: Callable[[], set[str]],
        waiting: Waiting,
        metrics: Metrics,
        clock: Callable[[], float],
    ) -> None:
        self.config = config
        self.board = board
        self._paused = paused
        self._waiting = waiting
        self.metrics = metrics
        self._clock = clock
        #: (printer, pool) target → jobs waiting for stock, as last counted
        self.counts: dict[tuple[str | None, str | None], int] = {}
        #: the groups of released jobs that wait for stock, as last refreshed
        self.waits: list[WaitingGroup] = []

    @property
    def tolerance_hmm(self) -> int:
        return round(self.config.dispatch.media_tolerance_mm * 100)

    def view(self, printer: str) -> StockView | None:
        """What ``printer`` has ready as last published (None: not probed yet)."""
        seen = self.board.usability(printer)
        return seen.stock if seen is not None else None

    def _takes_work(self, printer: str) -> bool:
        seen = self.board.usability(printer)
        return printer not in self._paused() and seen is not None and seen.healthy

    def condition(self, printer: str) -> StockCondition:
        """The jobs ``printer`` may claim for its stock (see ``store.stock_sql``)."""
        cfg = self.config.printer(printer)
        peers: list[StockView] = []
        if cfg is not None and cfg.pool is not None:
            for p in self.config.printers:
                if p.pool == cfg.pool and p.name != printer and self._takes_work(p.name):
                    v = self.view(p.name)
                    if v is not None and v.known:
                        peers.append(v)
        return stock_condition(self.view(printer), peers, self.tolerance_hmm)

    def reason(self, sizes: PageSizes | None, printer: str | None, pool: str | None) -> str | None:
        """Why a released job of ``sizes`` for this target waits for stock (None: it need
        not). A printer not probed yet might fit: no reason is given for it yet."""
        if printer is not None:
            names, target = [printer], printer
        elif pool is not None:
            names, target = [p.name for p in self.config.printers if p.pool == pool], pool
        else:
            return None
        views = {n: self.view(n) for n in names}
        return waiting_reason(sizes, target, views, self.tolerance_hmm)

    async def on_released(self, job: JobRecord) -> JobRecord:
        """A job just became RELEASED: when no printer of its target fits it, it waits with
        its reason from now (the kiosk's answer says so), as the stock watch would mark it a
        moment later (a log line and a ``job.waiting`` webhook)."""
        sizes = job.page_sizes
        if sizes is None or job.state is not JobState.RELEASED:
            return job
        why = self.reason(sizes, job.printer, job.pool)
        if why is None:
            return job
        await self._mark(job.printer, job.pool, sizes, why)
        return job._replace(waiting_reason=why)

    async def _mark(
        self, printer: str | None, pool: str | None, sizes: PageSizes, why: str | None
    ) -> None:
        now = self._clock()
        began = await self._waiting.mark(printer, pool, sizes, why, now=now)
        for job_id in began:
            log_event(
                log,
                "job_waiting",
                message="job waiting for stock",
                job_id=job_id,
                printer=printer,
                pool=pool,
                reason=why,
            )
            await self._waiting.webhook(
                f"msg_{uuid.uuid4().hex}",
                job_id,
                printer,
                now,
                json.dumps(
                    {
                        "id": job_id,
                        "state": "RELEASED",
                        "printer": printer,
                        "pool": pool,
                        "waiting_reason": why,
                    },
                    separators=(",", ":"),
                ),
            )

    async def refresh(self) -> list[WaitingGroup]:
        """Set (or clear) the waiting reason of every released job with known sizes; a
        ``job.waiting`` webhook and log line for each job that begins to wait."""
        groups: list[WaitingGroup] = []
        counts: dict[tuple[str | None, str | None], int] = {}
        for g in await self._waiting.groups():
            why = self.reason(g.sizes, g.printer, g.pool)
            groups.append(WaitingGroup(g.printer, g.pool, g.sizes, g.jobs, why))
            if why is not None:
                key = (g.printer, g.pool)
                counts[key] = counts.get(key, 0) + g.jobs
            if why != g.reason:
                await self._mark(g.printer, g.pool, g.sizes, why)
        for key in set(self.counts) | set(counts):
            self.metrics.jobs_waiting_for_stock.labels(
                target=key[0] or key[1] or "", kind="printer" if key[0] else "pool"
            ).set(counts.get(key, 0))
        self.counts = counts
        self.waits = [g for g in groups if g.reason is not None]
        return groups
