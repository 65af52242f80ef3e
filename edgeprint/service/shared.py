"""What every part of the service shares: the config, the store's queries, the clocks, the
admission and the printer board (one object, so that a reload reaches every part)."""

from __future__ import annotations

import random
import time
from collections.abc import Callable

from edgeprint import errors
from edgeprint.board import PrinterBoard
from edgeprint.config import Config, PrinterConfig
from edgeprint.documents.cache import RenditionCache
from edgeprint.documents.render import RenderPool
from edgeprint.metrics import Metrics
from edgeprint.records import JobRecord
from edgeprint.service.admission import Admission
from edgeprint.service.audit import AuditTrail
from edgeprint.service.event import EventService
from edgeprint.service.stock_routing import StockRouting
from edgeprint.spool import Spool
from edgeprint.store.copies import Copies
from edgeprint.store.jobs import Jobs
from edgeprint.store.printer_rows import PrinterRows
from edgeprint.store.printers import PrinterMemory
from edgeprint.store.waiting import Waiting

Clock = Callable[[], float]


class Shared:
    """The state the service's parts share (each part holds this one object)."""

    def __init__(
        self,
        config: Config,
        jobs: Jobs,
        spool: Spool,
        metrics: Metrics,
        *,
        board: PrinterBoard | None = None,
        clock: Clock = time.time,
        rng: random.Random | None = None,
        renderer: RenderPool | None = None,
        renditions: RenditionCache | None = None,
    ) -> None:
        self.config = config
        self.jobs = jobs
        self.copies = Copies(jobs.store, fence=jobs.fence)
        #: Each printer's epoch and learnt traits (DESIGN §3).
        self.printer_memory = PrinterMemory(jobs.store)
        #: Paused flags and ipps pins.
        self.printer_rows = PrinterRows(jobs.store)
        #: Rasters rendered for printers without PDF; swept with their documents.
        self.renditions = renditions
        #: Renders and converts documents in worker processes.
        self.renderer = renderer
        #: Jitter for retry back-offs.
        self.rng = rng or random.Random()
        self.spool = spool
        self.metrics = metrics
        self.clock = clock
        #: The run clock (edgeprint.clock, issue 27): every duration judged against the store.
        self.run: Clock = jobs.run or clock
        #: The dispatcher's published printer view, and the bell the service rings.
        self.board = board if board is not None else PrinterBoard()
        # the depth snapshot's age is a duration: the run clock (issue 27)
        self.admission = Admission(config, self.board, metrics, jobs.waiting_depths, self.run)
        #: Which jobs each printer's stock fits, and why released jobs wait (issue 23).
        self.stock = StockRouting(
            config,
            self.board,
            lambda: self.admission.paused,
            Waiting(jobs.store),
            metrics,
            clock,
        )
        #: Who did what (issue 26): the front doors record each action through it.
        self.audit = AuditTrail(jobs.store, clock)
        #: The event's mode: rehearsal or live (issue 23).
        self.event = EventService(jobs.store, self.admission, clock, self.run)
        #: The release counter, looked up once (a label lookup per release is measurable).
        self.released_ok = metrics.transitions.labels(action="release", outcome="ok")
        self._pools = config.pools
        self._printers = {p.name for p in config.printers}

    def reconfigure(self, config: Config) -> None:
        """Use ``config`` from now on (a reload: edgeprint.reload says what may differ;
        printers are only ever added)."""
        self.config = config
        self._pools = config.pools
        self._printers = {p.name for p in config.printers}
        self.admission.config = config
        self.admission.forget_depths()

    def check_target(self, printer: str | None, pool: str | None, where: str) -> None:
        """Raise errors.UnknownTarget unless the named printer/pool is configured."""
        if printer is not None and printer not in self._printers:
            raise errors.UnknownTarget(
                f"unknown printer {printer!r}; configured: {sorted(self._printers)}",
                [errors.FieldProblem(f"{where}.printer", "not a configured printer")],
            )
        if pool is not None and pool not in self._pools:
            raise errors.UnknownTarget(
                f"unknown pool {pool!r}; configured: {sorted(self._pools)}",
                [errors.FieldProblem(f"{where}.pool", "not a configured pool")],
            )

    def printer_config(self, name: str) -> PrinterConfig:
        """The configured printer; raises errors.PrinterNotFound."""
        cfg = self.config.printer(name)
        if cfg is None:
            raise errors.PrinterNotFound(name)
        return cfg

    async def get(self, job_id: str) -> JobRecord:
        """The job; raises errors.JobNotFound."""
        job = await self.jobs.get(job_id)
        if job is None:
            raise errors.JobNotFound(job_id)
        return job
