"""The composition root: open store → spool → service → HTTP API, close in reverse.

No globals: config, metrics, store and service are built here and passed down.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
import signal
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import aiohttp

from edgeprint import background, companions, errors, tls_runtime
from edgeprint.api import http_server, tls_info
from edgeprint.api.app import Deps
from edgeprint.api.auth import TokenAuth
from edgeprint.api.factory import build_app
from edgeprint.api.ratelimit import TokenRateLimiter
from edgeprint.board import PrinterBoard
from edgeprint.certificates import CertificateError
from edgeprint.config import Config
from edgeprint.dispatch.dispatcher import Dispatcher
from edgeprint.dispatch.leases import LeaseKeeper
from edgeprint.documents.cache import RenditionCache
from edgeprint.documents.render import RenderPool
from edgeprint.ipp_server import advertise
from edgeprint.logs import log_event
from edgeprint.metrics import Metrics
from edgeprint.service import JobService, clock_watch
from edgeprint.service.previews import Previews
from edgeprint.service.retirements import Retirements
from edgeprint.sighup import Reloads
from edgeprint.spool import Spool
from edgeprint.store import backends, db
from edgeprint.store.interface import Store
from edgeprint.store.jobs import Jobs
from edgeprint.store.leases import Fence, Leases
from edgeprint.store.outbox import Outbox
from edgeprint.systemd import Systemd

log = logging.getLogger(__name__)

DB_FILE = "edgeprint.sqlite3"
LOCK_FILE = "edgeprint.lock"


@dataclass
class Running:
    """A started appliance: its service, store, dispatcher and the API's address."""

    service: JobService
    store: Store
    host: str
    port: int
    dispatcher: Dispatcher
    dispatch_task: asyncio.Task[None]
    #: Applies a reloaded config's live keys (edgeprint.reload) at once.
    reconfigure: Callable[[Config], Awaitable[None]]
    #: The certificate served (None: plain HTTP); a reload reads its files again.
    tls: tls_runtime.ServedCertificate | None = None


async def _sweep_orphans(spool: Spool, jobs: Jobs) -> int:
    """Remove documents no job refers to (a crash between rename and commit)."""
    files = spool.stored_ids()
    orphans = files - await jobs.ids_with_documents(files)
    for job_id in orphans:
        spool.remove(job_id)
    return len(orphans)


@contextlib.asynccontextmanager
async def _leases(
    config: Config, store: Store, fence: Fence | None, metrics: Metrics
) -> AsyncIterator[LeaseKeeper | None]:
    """With a shared store, this appliance's printer leases (DESIGN §10): a heartbeat task
    from start to stop; at a clean stop (the workers are done by then) they are handed
    back, so that another appliance takes them without waiting them out."""
    if fence is None:
        yield None
        return
    keeper = LeaseKeeper(
        Leases(store), fence, [p.name for p in config.printers], config.cluster, metrics
    )
    stop = asyncio.Event()
    task = asyncio.create_task(keeper.run(stop), name="leases:heartbeat")
    try:
        yield keeper
    finally:
        stop.set()
        await task
        await keeper.give_up_all()


def _listen_to_other_appliances(store: Store, service: JobService) -> None:
    """On PostgreSQL, changes other appliances make ring this one's workers at once."""
    if store.dialect != "postgresql":
        return
    from edgeprint.store.pg_connection import Notice
    from edgeprint.store.postgres import PostgresStore

    async def on_notice(n: Notice) -> None:
        await service.printers.notified(n.kind, n.printer, n.pool, n.paused)

    assert isinstance(store, PostgresStore)
    store.listen(on_notice)


@contextlib.contextmanager
def _exclusive(data_dir: Path) -> Iterator[None]:
    """Hold an flock on ``data_dir/edgeprint.lock``: one appliance per data_dir.

    Raises errors.StoreUnavailable when another process holds it.
    """
    fd = os.open(data_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise errors.StoreUnavailable(
                f"another edgeprint is running on {data_dir} (lock {LOCK_FILE} is held)"
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        yield
    finally:
        os.close(fd)


@contextlib.asynccontextmanager
async def running(config: Config) -> AsyncIterator[Running]:
    """Start the appliance for ``config`` and stop it on exit (API first, then store).

    Raises errors.StoreUnavailable when the store cannot be opened, OSError
    when the port cannot be bound.
    """
    data_dir = config.server.data_dir
    data_dir.mkdir(parents=True, exist_ok=True)
    with _exclusive(data_dir):
        async with _running(config, data_dir) as run:
            yield run


@contextlib.asynccontextmanager
async def _running(config: Config, data_dir: Path) -> AsyncIterator[Running]:
    metrics = Metrics()
    served = _certificate(config, metrics)  # before anything opens: a bad pair stops here
    spool = Spool(data_dir, min_free_bytes=config.server.min_free_bytes)
    spool.prepare()
    store = backends.from_config(
        config.store,
        data_dir / DB_FILE,
        appliance_id=config.cluster.appliance_id,
        on_commit=metrics.store_batch_size.observe,
    )
    await store.open()
    try:
        # A shared (PostgreSQL) store: printers are driven through fenced leases.
        fence = Fence(config.cluster.appliance_id) if config.store.shared else None
        # durations run on the run clock, which no wall-clock step moves (issue 27)
        watch = clock_watch.ClockWatch(await clock_watch.start(store), store, metrics)
        jobs = Jobs(store, fence=fence, run=watch.clock.run)
        removed = await _sweep_orphans(spool, jobs)
        if removed:
            log_event(log, "spool_swept", message="orphan documents removed", count=removed)
        async with (
            companions.store_health(store, spool, jobs, metrics),
            companions.keeping_time(watch),
            companions.documents_in_database(spool, store, config.store.shared),
            companions.webhooks(config, Outbox(store), metrics, watch.clock.run),
            _leases(config, store, fence, metrics) as keeper,
            aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit_per_host=4), raise_for_status=False
            ) as session,
        ):
            renditions = RenditionCache(
                data_dir / "renditions", config.dispatch.rendition_cache_bytes
            )
            renderer = RenderPool(workers=config.dispatch.render_workers)
            # The dispatcher publishes its printers' usability on the board and listens
            # there for the service's rings; neither calls the other.
            board = PrinterBoard()
            service = JobService(
                config, jobs, spool, metrics, board=board, renderer=renderer, renditions=renditions
            )
            dispatcher = Dispatcher(
                config,
                service,
                session,
                metrics,
                renderer=renderer,
                renditions=renditions,
                board=board,
                ownership=keeper,
            )
            if keeper is not None:
                keeper.on_change = dispatcher.lease_changed
                keeper.after_beat = (
                    service.printers.load_paused
                )  # a pause made on another appliance
            await service.printers.load_paused()
            await service.event.apply_config(config.event.mode)  # issue 23: [event] mode
            _listen_to_other_appliances(store, service)
            retirements = Retirements(service)
            dispatch_task = asyncio.create_task(
                dispatcher.run(config.server.shutdown_grace_s), name="dispatcher"
            )
            try:
                async with _api(config, service, metrics, store, spool, dispatcher, served) as (
                    host,
                    port,
                    reconfigure_api,
                ):

                    async def reconfigure(new: Config) -> None:
                        kept = {p.name for p in new.printers}
                        removed = [p for p in service.config.printers if p.name not in kept]
                        # First out of every pool and target, then their waiting jobs move:
                        # no new job can be routed to a removed printer after its move.
                        service.reconfigure(new)
                        reconfigure_api(new)
                        if keeper is not None:
                            keeper.set_printers(p.name for p in new.printers)
                        await dispatcher.reconfigure(new)
                        for printer in removed:  # a store error: tried again later
                            await retirements.retire(printer)

                    log_event(
                        log,
                        "ready",
                        message="edgeprint ready",
                        host=host,
                        port=port,
                        data_dir=str(data_dir),
                        tls=served is not None,
                    )
                    yield Running(
                        service, store, host, port, dispatcher, dispatch_task, reconfigure, served
                    )
                    # Stop taking work first; in-flight IPP requests get the grace period.
                    dispatcher.request_stop()
                    await asyncio.wait([dispatch_task])
            finally:
                dispatcher.request_stop()
                if not dispatch_task.done():
                    dispatch_task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await dispatch_task
                await retirements.close()
                service.close()
                await service.audit.flush()  # the last actions' rows, before the store closes
                await renderer.close()
    finally:
        await store.close()
        log_event(log, "stopped", message="edgeprint stopped")


@contextlib.asynccontextmanager
async def _api(
    config: Config,
    service: JobService,
    metrics: Metrics,
    store: Store,
    spool: Spool,
    dispatcher: Dispatcher,
    served: tls_runtime.ServedCertificate | None = None,
) -> AsyncIterator[tuple[str, int, Callable[[Config], None]]]:
    watch = store.health if isinstance(store, db.Store) else None

    async def ready() -> None:
        try:
            spool.check_ready()  # a read-only or full disk: a no-op write would not see it
        except errors.StoreWriteFailed:
            if watch is None:
                raise
        if watch is not None and (failing := watch.problem()) is not None:
            raise failing  # the disk's kind and since when; the probe sees it come back
        await backends.write_probe(store)

    auth = TokenAuth(list(config.tokens))
    limiter = TokenRateLimiter(config.server.rate_limit)
    deps = Deps(
        config,
        service,
        metrics,
        auth,
        ready,
        dispatcher.snapshots,
        dispatcher.identify,
        limiter,
        check=dispatcher.check,
        previews=Previews(service),
    )
    app = build_app(deps)
    if served is not None:
        app[tls_info.SERVED] = served  # GET /v1/tls

    def reconfigure(new: Config) -> None:
        auth.replace(list(new.tokens))
        limiter.reconfigure(new.server.rate_limit)
        deps.config = new

    # Connection cap, head/idle time-out, header limits, problem+json parser errors; TLS.
    context = None if served is None else (lambda: served.context)
    async with (
        http_server.serve(app, config.server, context) as (host, port),
        advertise.advertised(config, host, port),
        _watching(served),
    ):
        yield host, port, reconfigure


def _certificate(config: Config, metrics: Metrics) -> tls_runtime.ServedCertificate | None:
    """The certificate to serve (made first if self-signed and absent); None for plain HTTP.
    Raises CertificateError (logged as one line) when the pair cannot be served."""
    if not config.server.serves_tls:
        return None
    try:
        return tls_runtime.ServedCertificate.start(config.server, metrics)
    except CertificateError as exc:
        log_event(
            log,
            "tls_refused",
            message=tls_runtime.refused(exc, at_start=True),
            level=logging.ERROR,
            path=str(exc.path),
            reason=exc.reason,
        )
        raise


@contextlib.asynccontextmanager
async def _watching(served: tls_runtime.ServedCertificate | None) -> AsyncIterator[None]:
    """While serving TLS: a warning once a day when the certificate is close to its end."""
    if served is None:
        yield
        return
    async with background.running(served.watch(), "tls:expiry"):
        yield


async def serve(config: Config, config_path: Path | None = None) -> None:
    """Run until SIGTERM or SIGINT (then stop gracefully) or until the dispatcher fails.

    Tells systemd READY=1 once the store is open and the API listens, pings
    its watchdog from the event loop, and says STOPPING=1 on the way out.
    Raises what ended the dispatcher (e.g. errors.StoreError), so the process
    exits non-zero and systemd restarts it. With ``config_path``, SIGHUP
    reloads the config from it (edgeprint.sighup).
    """
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    systemd = Systemd()
    async with running(config) as run, systemd.watching():
        status = f"listening on {run.host}:{run.port}, {len(config.printers)} printer(s)"
        systemd.ready(status)
        if config_path is not None:
            audit = run.service.audit
            reloads = Reloads(config, config_path, run.reconfigure, audit, run.tls, systemd, status)
            reloads.install(loop)
        stopping = asyncio.ensure_future(stop.wait())
        await asyncio.wait([stopping, run.dispatch_task], return_when=asyncio.FIRST_COMPLETED)
        stopping.cancel()
        systemd.stopping()
        if run.dispatch_task.done() and not stop.is_set():
            run.dispatch_task.result()  # re-raise what killed the dispatcher
        log_event(log, "stopping")
