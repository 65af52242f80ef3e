"""The dispatcher: one :class:`PrinterWorker` per configured printer in one TaskGroup."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable

import aiohttp

from edgeprint import errors
from edgeprint.board import PrinterBoard
from edgeprint.config import Config, PrinterConfig
from edgeprint.dispatch import check
from edgeprint.dispatch.leases import Ownership, SoleOwner
from edgeprint.dispatch.worker import PrinterWorker
from edgeprint.documents.cache import RenditionCache
from edgeprint.documents.capabilities import REQUESTED_ATTRIBUTES
from edgeprint.documents.render import RenderPool
from edgeprint.logs import log_event
from edgeprint.metrics import Metrics
from edgeprint.printers import supplies
from edgeprint.printers.health import PrinterSnapshot
from edgeprint.printers.ipp import IppClient
from edgeprint.printers.testpage import render_test_page
from edgeprint.service import Identified, JobService, PrinterCheck

log = logging.getLogger(__name__)

#: How often released jobs are checked against the printers' ready stock (seconds): a job
#: that begins to wait for stock says so within this, and a roll change clears it.
STOCK_WATCH_S = 1.0


class Dispatcher:
    """Owns the printer workers; :meth:`run` until :meth:`request_stop`.

    It listens on the ``board`` for the service's rings (``wake``, ``control``,
    ``resumed``, ``media_loaded``) and its workers publish their printers' usability there: the
    service never imports this module nor calls into it.
    """

    def __init__(
        self,
        config: Config,
        service: JobService,
        session: aiohttp.ClientSession,
        metrics: Metrics,
        *,
        renderer: RenderPool | None = None,
        renditions: RenditionCache | None = None,
        board: PrinterBoard | None = None,
        ownership: Ownership | None = None,
    ) -> None:
        self.config = config
        #: Which printers this appliance drives (leases on a shared store; else all).
        self.ownership: Ownership = ownership or SoleOwner(config.cluster.appliance_id)
        self.board = board if board is not None else PrinterBoard()
        self._renderer = renderer
        self._renditions = renditions
        self.stop = asyncio.Event()
        self.workers: dict[str, PrinterWorker] = {}
        self._session = session
        self._metrics = metrics
        self.service = service
        #: Each worker's own stop event (set for all by request_stop), so that a reload
        #: can stop one printer's worker.
        self._stops: dict[str, asyncio.Event] = {}
        self._running: dict[str, asyncio.Task[None]] = {}
        for p in config.printers:
            self.workers[p.name] = self._worker(p)
        self._pools = config.pools
        self._group: asyncio.TaskGroup | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._grace_s = config.server.shutdown_grace_s
        #: Printers a reload removed; their workers run on until the next restart.
        self.retired: set[str] = set()
        self.board.listen(self)

    def _worker(self, p: PrinterConfig) -> PrinterWorker:
        metrics = self._metrics

        def observe(op: str, outcome: str, seconds: float) -> None:
            metrics.ipp_request_duration.labels(
                printer=p.name, operation=op, outcome=outcome
            ).observe(seconds)

        client = IppClient(
            p.uri,
            self._session,
            request_timeout_s=self.config.dispatch.request_timeout_s,
            upload_timeout_s=self.config.dispatch.upload_timeout_s,
            probe_timeout_s=min(
                self.config.dispatch.probe_timeout_s, self.config.dispatch.request_timeout_s
            ),
            observe=observe,
            on_held=metrics.ipp_requests_held.labels(printer=p.name).inc,
            probe_attributes=(*REQUESTED_ATTRIBUTES, *supplies.SUPPLY_ATTRIBUTES),
        )
        stop = self._stops[p.name] = asyncio.Event()
        if self.stop.is_set():
            stop.set()
        return PrinterWorker(
            p,
            client,
            self.service,
            self.config.dispatch,
            metrics,
            stop,
            renderer=self._renderer,
            renditions=self._renditions,
            board=self.board,
            ownership=self.ownership,
        )

    def _start(self, name: str) -> None:
        if self._group is not None and not self.stop.is_set():
            task = self._group.create_task(self.workers[name].run(), name=f"printer:{name}")
            self._running[name] = task
            self._tasks.append(task)  # the grace period at shutdown covers it too

    async def reconfigure(self, config: Config) -> None:
        """Follow a reload (the service already follows ``config``).

        - An added printer gets a worker at once.
        - A changed printer (URI, pool, limits), or one added back after an earlier reload
          removed it, gets a new worker: the old one is stopped as at shutdown (its
          request in flight finishes within the grace period; a job in hand stays
          PRINTING), then the new one starts, and like any worker at start it reconciles
          the printer's PRINTING jobs, now at the new URI, before it sends anything.
        - A removed printer's worker finishes the job in hand (and settles what the
          printer may hold) but claims nothing new; it is hidden from the printer views
          and stops at the next restart.
        """
        before = {name: w.config for name, w in self.workers.items()}
        names = {p.name for p in config.printers}
        self.retired |= {n for n in self.workers if n not in names}
        for name in self.retired:
            self.workers[name].retired = True  # finishes what it holds, claims nothing new
            self.board.withdraw(name)
        self.config = config
        self._pools = config.pools
        for p in config.printers:
            if p.name not in before:
                self.workers[p.name] = self._worker(p)
                self._start(p.name)
            elif before[p.name] != p or p.name in self.retired:
                await self._stop_worker(p.name)
                self.retired.discard(p.name)
                self.board.withdraw(p.name)  # the new worker publishes after its first probe
                self.workers[p.name] = self._worker(p)
                self._start(p.name)
                log_event(
                    log,
                    "printer_reconfigured",
                    message="printer worker restarted for its new config",
                    printer=p.name,
                )

    async def _stop_worker(self, name: str) -> None:
        self._stops[name].set()
        task = self._running.get(name)
        if task is None:
            return
        done, _ = await asyncio.wait([task], timeout=self._grace_s)
        if not done:
            log_event(
                log,
                "worker_cancelled",
                message="worker cancelled after grace",
                level=logging.WARNING,
                printer=name,
            )
            task.cancel()
            await asyncio.wait([task])

    def wake(self, printer: str | None, pool: str | None) -> None:
        """Wake the worker(s) that can print a job for ``printer`` or ``pool``."""
        if printer is not None and printer in self.workers:
            self.workers[printer].wake()
        if pool is not None:
            for name in self._pools.get(pool, ()):
                self.workers[name].wake()

    def lease_changed(self, printer: str) -> None:
        """``printer``'s lease was taken or lost here: its worker looks at once."""
        worker = self.workers.get(printer)
        if worker is not None:
            worker.wake()

    def control(self, printer: str | None) -> None:
        """Tell ``printer``'s worker that a technician acted (pause, resume, cancel)."""
        if printer is not None and printer in self.workers:
            self.workers[printer].control()

    def resumed(self, printer: str | None) -> None:
        """A technician resumed ``printer``: its worker forgets what only a person may clear."""
        if printer is not None and printer in self.workers:
            self.workers[printer].resumed()

    def media_loaded(self, printer: str) -> None:
        """A technician loaded a new roll in ``printer``: its runway starts again."""
        worker = self.workers.get(printer)
        if worker is not None:
            worker.monitor.rolls.media_loaded()
            worker.monitor.publish()

    def snapshot(self, printer: str) -> PrinterSnapshot | None:
        """The live view of ``printer`` (None when no such printer)."""
        worker = self.workers.get(printer)
        if worker is None or printer in self.retired:
            return None
        return worker.snapshot()

    def snapshots(self) -> list[PrinterSnapshot]:
        """Every configured printer's live view."""
        return [w.snapshot() for n, w in self.workers.items() if n not in self.retired]

    def request_stop(self) -> None:
        """Stop taking work; workers finish their current request and return."""
        self.stop.set()
        for stop in self._stops.values():
            stop.set()

    async def run(self, grace_s: float) -> None:
        """Run every worker in one TaskGroup until stopped.

        After :meth:`request_stop`, workers get ``grace_s`` seconds to finish
        the IPP request in hand; then they are cancelled (what they held stays
        PRINTING and is reconciled at the next start). A worker that raises
        (a broken store) ends the group and the error propagates.
        """
        self._grace_s = grace_s
        async with asyncio.TaskGroup() as group:
            self._group = group
            tasks = self._tasks
            for name in self.workers:
                self._start(name)
            tasks.append(group.create_task(self._housekeeping(), name="housekeeping"))
            tasks.append(group.create_task(self._stock_watch(), name="stock-watch"))
            group.create_task(self._enforce_grace(tasks, grace_s), name="dispatcher:grace")
        self._group = None

    async def _housekeeping(self) -> None:
        """Expire held jobs and delete old documents every ``retention.interval_s``."""
        await self._every(
            self.config.retention.interval_s, self.service.upkeep.housekeeping, "housekeeping"
        )

    async def _stock_watch(self) -> None:
        """Every ``STOCK_WATCH_S``: mark released jobs no printer of their target has fitting
        stock for (``waiting_reason``, a ``job.waiting`` webhook), and clear the mark once
        one has."""
        await self._every(STOCK_WATCH_S, self.service.stock.refresh, "stock_watch")

    async def _every(
        self, interval_s: float, work: Callable[[], Awaitable[object]], name: str
    ) -> None:
        """``work`` every ``interval_s`` until stopped. A lost database connection
        (PostgreSQL reconnects) or a disk that refuses writes (it may come back) skips a
        round; other store failures end the dispatcher (the process exits and systemd
        restarts it)."""
        while not self.stop.is_set():
            try:
                await work()
            except (errors.StoreTransient, errors.StorageFull) as exc:
                log_event(
                    log,
                    f"{name}_store_lost",
                    message=f"store unavailable: {name.replace('_', ' ')} skips a round",
                    level=logging.WARNING,
                    error=str(exc),
                )
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(interval_s):
                    await self.stop.wait()

    async def _enforce_grace(self, tasks: list[asyncio.Task[None]], grace_s: float) -> None:
        await self.stop.wait()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(grace_s):
                await asyncio.gather(*tasks, return_exceptions=True)
        late = [t for t in tasks if not t.done()]
        for t in late:
            log_event(
                log,
                "worker_cancelled",
                message="worker cancelled after grace",
                level=logging.WARNING,
                printer=t.get_name().removeprefix("printer:"),
            )
            t.cancel()

    async def identify(self, printer: str, how: str, by: str) -> Identified:
        """Make ``printer`` show itself: Identify-Printer, or a one-page test print.

        ``how``: ``auto`` (Identify-Printer when the printer lists it in
        operations-supported, else a test page), ``identify`` or ``test-page``.
        Raises errors.PrinterNotFound, errors.IdentifyUnsupported, errors.PrinterError.
        """
        worker = self.workers.get(printer)
        if worker is None or printer in self.retired:
            raise errors.PrinterNotFound(printer)
        status = await worker.client.get_printer_attributes()
        supported = "Identify-Printer" in status.operations
        if how == "identify" or (how == "auto" and supported):
            if not supported:
                raise errors.IdentifyUnsupported(printer)
            await worker.client.identify(by)
            return Identified("identify-printer", None)
        document = render_test_page(printer, by, time.time())
        made = await worker.client.print_job(
            f"test-page-{printer}", by, document, "application/pdf"
        )
        await worker.monitor.rolls.printed(1)  # a label off the roll too
        return Identified("test-page", made.job_id)

    async def check(self, printer: str) -> PrinterCheck:
        """Ask ``printer`` now and time it (preflight). Raises errors.PrinterNotFound."""
        worker = self.workers.get(printer)
        if worker is None or printer in self.retired:
            raise errors.PrinterNotFound(printer)
        return await check.check_printer(
            worker.config, worker.client, self.service, self.config.dispatch.request_timeout_s
        )
