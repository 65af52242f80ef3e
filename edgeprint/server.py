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
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import aiohttp

from edgeprint import background, errors, reload, tls_runtime
from edgeprint.api import http_server, tls_info
from edgeprint.api.app import Deps
from edgeprint.api.auth import TokenAuth
from edgeprint.api.factory import build_app
from edgeprint.api.ratelimit import TokenRateLimiter
from edgeprint.board import PrinterBoard
from edgeprint.certificates import CertificateError
from edgeprint.config import Config, load_config
from edgeprint.dispatch.dispatcher import Dispatcher
from edgeprint.dispatch.leases import LeaseKeeper
from edgeprint.documents.cache import RenditionCache
from edgeprint.documents.render import RenderPool
from edgeprint.ipp_server import advertise
from edgeprint.metrics import Metrics
from edgeprint.service import Caller, JobService, clock_watch
from edgeprint.service.previews import Previews
from edgeprint.service.retirements import Retirements
from edgeprint.spool import Spool
from edgeprint.store import backends, db, documents, health
from edgeprint.store.interface import Store
from edgeprint.store.jobs import Jobs
from edgeprint.store.leases import Fence, Leases
from edgeprint.store.outbox import Outbox
from edgeprint.systemd import Systemd
from edgeprint.webhooks.delivery import Deliveries

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


@contextlib.asynccontextmanager
async def _documents_in_database(spool: Spool, store: Store, shared: bool) -> AsyncIterator[None]:
    """With PostgreSQL, documents are kept in the database too (edgeprint.store.documents):
    drop the ones no job refers to, fetch the ones this data_dir lacks (a new appliance),
    mirror new ones, delete removed ones in a task of their own."""
    if store.dialect != "postgresql":
        yield
        return
    docs = documents.DbDocuments(store)
    # an upload on another appliance stores its chunks before its job row: spare an hour's
    dropped = await docs.sweep_orphans(older_than_s=_OTHERS_UPLOADS_S if shared else 0.0)
    restored = await documents.restore(docs, spool.dir, spool.tmp_dir)
    if dropped or restored:
        log.info(
            "documents synchronised with the database",
            extra={"event": "documents_restored", "count": len(restored), "dropped": dropped},
        )
    spool.mirror = docs
    task = asyncio.create_task(docs.run_discards(), name="documents:discards")
    try:
        yield
    finally:
        spool.mirror = None
        docs.stop_discards()
        await task


#: How old a document without a job must be before a start-up sweep of a shared database
#: drops it (another appliance may be storing its job right now).
_OTHERS_UPLOADS_S = 3600.0


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
            log.info("orphan documents removed", extra={"event": "spool_swept", "count": removed})
        async with (
            _store_health(store, spool, jobs, metrics),
            _keeping_time(watch),
            _documents_in_database(spool, store, config.store.shared),
            _webhooks(config, Outbox(store), metrics, watch.clock.run),
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
                config, jobs, spool, metrics, board=board, renderer=renderer,
                renditions=renditions,
            )  # fmt: skip
            dispatcher = Dispatcher(
                config, service, session, metrics, renderer=renderer, renditions=renditions,
                board=board, ownership=keeper,
            )  # fmt: skip
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

                    log.info(
                        "edgeprint ready",
                        extra={"event": "ready", "host": host, "port": port,
                               "data_dir": str(data_dir), "tls": served is not None},
                    )  # fmt: skip
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
        log.info("edgeprint stopped", extra={"event": "stopped"})


@contextlib.asynccontextmanager
async def _store_health(
    store: Store, spool: Spool, jobs: Jobs, metrics: Metrics
) -> AsyncIterator[None]:
    """With SQLite, a disk that refuses writes is waited out (edgeprint.store.health): the
    spool and the store report to the store's health, a task probes until writes work."""
    if not isinstance(store, db.Store):
        metrics.store_writable.set(1)  # PostgreSQL: its outages are store-unavailable, not this
        yield
        return
    watch = store.health
    watch.on_change = lambda ok: metrics.store_writable.set(int(ok))
    watch.on_error = lambda kind: metrics.store_write_errors.labels(kind=kind).inc()
    metrics.store_writable.set(1)
    spool.on_disk_error = watch.failed

    async def store_probe() -> None:
        await store.probe()
        await spool.sweep_leftovers(jobs.ids_with_documents)

    probing = health.probe_until_writable(watch, spool.probe, store_probe, store.reopen)
    async with background.running(probing, "store:health"):
        yield


@contextlib.asynccontextmanager
async def _keeping_time(watch: clock_watch.ClockWatch) -> AsyncIterator[None]:
    """Watch the wall clock and store the run clock while running; store it at a clean stop."""
    async with background.running(watch.run(), "clock"):
        yield
    with contextlib.suppress(errors.StoreError):
        await watch.advance()


@contextlib.asynccontextmanager
async def _webhooks(
    config: Config, outbox: Outbox, metrics: Metrics, run: Callable[[], float]
) -> AsyncIterator[None]:
    """Subscribe the outbox to the configured events; deliver them in a task of their own."""
    deliveries = Deliveries(
        config.webhooks,
        outbox,
        metrics,
        retention_s=config.retention.document_retention_s,
        run=run,
    )
    await deliveries.prepare(time.time())  # before any job can change state
    if not config.webhooks:
        yield
        return
    async with background.running(deliveries.run(), "webhooks"):
        yield


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
        log.error(
            tls_runtime.refused(exc, at_start=True),
            extra={"event": "tls_refused", "path": str(exc.path), "reason": exc.reason},
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


def reload_certificate(served: tls_runtime.ServedCertificate | None, config: Config) -> bool:
    """Read the certificate files again (every reload); False when the new pair is refused
    (logged with its reason; the running certificate stays)."""
    return certificate_refused(served, config) is None


def certificate_refused(served: tls_runtime.ServedCertificate | None, config: Config) -> str | None:
    """Read the certificate files again; why the new pair is refused ("file: reason", never
    key material; logged, the running certificate stays), or None when it is served."""
    if served is None or not config.server.serves_tls:
        return None
    try:
        served.reload(config.server)
    except CertificateError as exc:
        log.error(
            tls_runtime.refused(exc, at_start=False),
            extra={"event": "tls_reload_refused", "path": str(exc.path), "reason": exc.reason},
        )
        folder = f"{exc.path.parent}{os.sep}"  # names within the folder: the row is short
        return f"{exc.path.name}: {exc.reason.replace(folder, '')}"
    return None


async def serve(config: Config, config_path: Path | None = None) -> None:
    """Run until SIGTERM or SIGINT (then stop gracefully) or until the dispatcher fails.

    Tells systemd READY=1 once the store is open and the API listens, pings
    its watchdog from the event loop, and says STOPPING=1 on the way out.
    Raises what ended the dispatcher (e.g. errors.StoreError), so the process
    exits non-zero and systemd restarts it. With ``config_path``, SIGHUP
    reloads the config from it (:func:`_reload`).
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
            current = [config]
            one_at_a_time = asyncio.Lock()
            reloads: set[asyncio.Task[None]] = set()

            async def reload_now() -> None:
                async with one_at_a_time:
                    systemd.reloading()
                    try:
                        current[0], outcome, detail = await _reload(run, current[0], config_path)
                        refused = certificate_refused(run.tls, current[0])
                        if refused is not None:  # the config part still applied, if it did
                            outcome, detail = "refused", f"{detail}; certificate refused: {refused}"
                        await _audit_reload(run, config_path, outcome, detail)
                    finally:
                        systemd.ready(status)

            def on_hup() -> None:
                task = asyncio.create_task(reload_now(), name="reload")
                reloads.add(task)  # held until done (the loop keeps only weak references)
                task.add_done_callback(reloads.discard)

            loop.add_signal_handler(signal.SIGHUP, on_hup)
        stopping = asyncio.ensure_future(stop.wait())
        await asyncio.wait([stopping, run.dispatch_task], return_when=asyncio.FIRST_COMPLETED)
        stopping.cancel()
        systemd.stopping()
        if run.dispatch_task.done() and not stop.is_set():
            run.dispatch_task.result()  # re-raise what killed the dispatcher
        log.info("stopping", extra={"event": "stopping"})


async def _reload(run: Running, current: Config, path: Path) -> tuple[Config, str, str]:
    """Read ``path`` again and apply it if it is valid and changes only live keys; the config
    now in force, and the audit row's outcome and detail. A refusal is logged with
    check-config's message and changes nothing."""
    try:
        new = load_config(path)
    except errors.ConfigError as exc:
        log.error(
            "config reload refused: invalid config; the running config stays",
            extra={"event": "reload_refused", "detail": str(exc)},
        )
        return current, "refused", "invalid config"  # its message may quote values
    blocked = reload.restart_keys(current, new)
    if blocked:
        log.error(
            "config reload refused: these keys change only at a restart (systemctl restart "
            "edgeprint); the running config stays",
            extra={"event": "reload_refused", "keys": blocked},
        )
        return current, "refused", "restart keys: " + ", ".join(blocked)
    changed = reload.changed_keys(current, new)
    try:
        await run.reconfigure(new)
    except errors.StoreError as exc:  # while moving a removed printer's waiting jobs
        # The new config is in force; the move is tried again until the store takes it
        # (edgeprint.service.retirements: the removed printer's worker claims nothing new).
        log.error(
            "config reload: the store failed while moving jobs",
            extra={"event": "reload_store_failed", "error": str(exc)},
        )
    log.info("config reloaded", extra={"event": "config_reloaded", "keys": changed})
    return new, "done", ", ".join(changed) or "nothing changed"


async def _audit_reload(run: Running, path: Path, outcome: str, detail: str) -> None:
    """The reload's audit row: who is ``signal`` (SIGHUP), what the config file (by name),
    the detail the changed keys or why it was refused (a certificate's reason included)."""
    who = Caller("signal", "tech", kind="system")
    await run.service.audit.record(who, "config-reload", "config", path.name, outcome, detail)
