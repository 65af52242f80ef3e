"""Liveness, readiness and the Prometheus metrics."""

from __future__ import annotations

import asyncio

from aiohttp import web

from edgeprint import errors
from edgeprint.api.app import authorize, deps_of, json_response
from edgeprint.metrics import CONTENT_TYPE as METRICS_CONTENT_TYPE
from edgeprint.models import (
    Health,
)


async def healthz(request: web.Request) -> web.Response:
    """GET /healthz: the process and its event loop answer."""
    return json_response(Health(status="ok"))


async def readyz(request: web.Request) -> web.Response:
    """GET /readyz: 200 when the store takes a write transaction within 2 s, else 503."""
    try:
        async with asyncio.timeout(2.0):
            await deps_of(request).ready()
    except (errors.StoreError, TimeoutError) as exc:
        return json_response(
            Health(status="unavailable", detail=str(exc) or "store timed out"), 503
        )
    return json_response(Health(status="ok"))


async def metrics(request: web.Request) -> web.Response:
    """GET /metrics: Prometheus text format (a token with ``[metrics] token_required``)."""
    deps = deps_of(request)
    if deps.config.metrics.token_required:  # read per request: a reload applies it at once
        await authorize(request, "read")
    deps.metrics.set_job_counts(await deps.service.views.jobs_by_state())
    deps.metrics.set_rehearsal_counts(await deps.service.views.jobs_by_state(rehearsal=True))
    mode = await deps.service.event.current()  # read here: another appliance may change it
    deps.metrics.event_rehearsal.set(int(mode.mode == "rehearsal"))
    queues = await deps.service.views.queues()
    deps.metrics.set_queues(
        {p.name: p.pool for p in deps.config.printers},
        queues.waiting,
        queues.oldest_waiting,
        queues.at,
    )
    for snap in deps.printers():
        deps.metrics.set_printer(snap.name, snap.printer_state_reasons, snap.queued_job_count)
        deps.metrics.set_problems(snap.name, {p.kind for p in snap.problems if p.until is None})
        deps.metrics.set_supplies(
            snap.name,
            {x.name: x.level_percent for x in snap.supply_levels},
            {x.tray: x.level_percent for x in snap.media_levels},
            (snap.runway.labels_left, snap.runway.minutes_left) if snap.runway else None,
        )
    return web.Response(body=deps.metrics.render(), headers={"Content-Type": METRICS_CONTENT_TYPE})
