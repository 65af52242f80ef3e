"""What runs beside the API and the workers for an appliance's lifetime, each a context
manager the composition root (edgeprint.server) enters after the store opens: the store's
health on a failing disk, the run clock, webhook delivery, documents kept in PostgreSQL.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable

from edgeprint import background, errors
from edgeprint.config import Config
from edgeprint.logs import log_event
from edgeprint.metrics import Metrics
from edgeprint.service import clock_watch
from edgeprint.spool import Spool
from edgeprint.store import db, documents, health
from edgeprint.store.interface import Store
from edgeprint.store.jobs import Jobs
from edgeprint.store.outbox import Outbox
from edgeprint.webhooks.delivery import Deliveries

# The lines keep the logger they were always logged with (their JSON "logger" field).
log = logging.getLogger("edgeprint.server")


@contextlib.asynccontextmanager
async def documents_in_database(spool: Spool, store: Store, shared: bool) -> AsyncIterator[None]:
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
        log_event(
            log,
            "documents_restored",
            message="documents synchronised with the database",
            count=len(restored),
            dropped=dropped,
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


@contextlib.asynccontextmanager
async def store_health(
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
async def keeping_time(watch: clock_watch.ClockWatch) -> AsyncIterator[None]:
    """Watch the wall clock and store the run clock while running; store it at a clean stop."""
    async with background.running(watch.run(), "clock"):
        yield
    with contextlib.suppress(errors.StoreError):
        await watch.advance()


@contextlib.asynccontextmanager
async def webhooks(
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
