"""The service as one handle: the shared state and its parts, one per kind of caller.

``front`` (the API and the IPP server), ``views`` (their reads), ``resolutions`` (a
technician's word on an unknown outcome), ``worker`` (a printer's worker), ``outcomes`` (how a
worker settles what it holds), ``printers`` (a technician's printer controls), ``documents``
and ``upkeep``. The only module that knows the state machine's meaning is the sum of
them; the store only applies named conditional writes and the API only speaks HTTP.
"""

from __future__ import annotations

import random
import time

from edgeprint.board import PrinterBoard
from edgeprint.config import Config
from edgeprint.documents.cache import RenditionCache
from edgeprint.documents.render import RenderPool
from edgeprint.metrics import Metrics
from edgeprint.service.documents import Documents
from edgeprint.service.front import Front
from edgeprint.service.outcomes import Outcomes
from edgeprint.service.printer_controls import PrinterControls
from edgeprint.service.resolutions import Resolutions
from edgeprint.service.shared import Clock, Shared
from edgeprint.service.upkeep import Upkeep
from edgeprint.service.views import Views
from edgeprint.service.worker_calls import WorkerCalls
from edgeprint.spool import Spool
from edgeprint.store.jobs import Jobs


class JobService(Shared):
    """The shared state and the service's parts (callers call the part they need)."""

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
        super().__init__(
            config,
            jobs,
            spool,
            metrics,
            board=board,
            clock=clock,
            rng=rng,
            renderer=renderer,
            renditions=renditions,
        )
        #: Staging and checking documents, and reading them back for a printer.
        self.documents = Documents(self)
        #: The front doors' use cases (API, IPP server).
        self.front = Front(self, self.documents)
        #: What the front doors read: jobs, dead letters, counts, queues.
        self.views = Views(self)
        #: A technician settles an unknown outcome.
        self.resolutions = Resolutions(self)
        #: What a printer's worker calls: the claim, its copies, its printer's memory.
        self.worker = WorkerCalls(self)
        #: How a worker settles a job it holds.
        self.outcomes = Outcomes(self)
        #: A technician's printer controls, fail-over and printer health.
        self.printers = PrinterControls(self)
        #: Expiry and retention.
        self.upkeep = Upkeep(self)

    def close(self) -> None:
        """Let go of the service's threads (a check in progress finishes on its own)."""
        self.documents.close()
