"""The bulk handlers: ``POST /v1/jobs/release``, ``/cancel``, ``/replay`` and ``/resolve``.

Each takes ``{"ids": [...], "limit": N}`` or ``{"filter": {...}, "limit": N}`` (the models
in :mod:`edgeprint.models`) and answers 200 with one outcome per selected job
(:class:`~edgeprint.models.BulkOut`); the use cases are in :mod:`edgeprint.service.bulk`.
A bad body is refused whole (422, nothing done); a job that cannot be acted on is one
result among the others, never the whole call's status.
"""

from __future__ import annotations

from collections import Counter
from typing import TypeVar

from aiohttp import web

from edgeprint.api import app, audited
from edgeprint.models import (
    BulkCancelRequest,
    BulkOut,
    BulkReleaseRequest,
    BulkReplayRequest,
    BulkResolveRequest,
    BulkResultOut,
)
from edgeprint.service.bulk import BulkActions, BulkAnswer, BulkFilter, Selector

_Req = TypeVar("_Req", BulkReleaseRequest, BulkCancelRequest, BulkReplayRequest, BulkResolveRequest)


async def _body(request: web.Request, model: type[_Req]) -> _Req:
    """The required JSON body as ``model`` (app.required_json: 400, 408, 413, 415, 422)."""
    return await app.required_json(request, model, '{"ids": ["…"], "limit": 1}')


def _selector(
    body: BulkReleaseRequest | BulkCancelRequest | BulkReplayRequest | BulkResolveRequest,
) -> Selector:
    f = body.filter
    if f is None:
        return Selector(limit=body.limit, ids=body.ids, dry_run=body.dry_run)
    where = BulkFilter(
        state=f.state,
        owner=f.owner,
        pool=f.pool,
        printer=f.printer,
        dead_reason=f.dead_reason,
        created_after=None if f.created_after is None else f.created_after.timestamp(),
        created_before=None if f.created_before is None else f.created_before.timestamp(),
    )
    return Selector(limit=body.limit, where=where, dry_run=body.dry_run)


def _answer(request: web.Request, result: BulkAnswer) -> web.Response:
    counts = Counter(r.outcome for r in result.results)  # the audit row's detail
    audited.note(request).detail = f"matched {result.matched}: " + ", ".join(
        f"{n} {outcome}" for outcome, n in sorted(counts.items())
    )
    out = BulkOut(
        matched=result.matched,
        more=result.more,
        results=[
            BulkResultOut.model_construct(
                id=r.id, outcome=r.outcome, state=r.state, detail=r.detail
            )
            for r in result.results
        ],
    )
    return web.Response(body=out.model_dump_json().encode(), content_type="application/json")


def _actions(request: web.Request) -> BulkActions:
    return BulkActions(request.app[app.DEPS].service)


async def release_jobs(request: web.Request) -> web.Response:
    """POST /v1/jobs/release: release each selected HELD job."""
    body = await _body(request, BulkReleaseRequest)
    result = await _actions(request).release(
        _selector(body), request[app.CALLER], printer=body.printer, pool=body.pool
    )
    return _answer(request, result)


async def cancel_jobs(request: web.Request) -> web.Response:
    """POST /v1/jobs/cancel: cancel each selected job."""
    body = await _body(request, BulkCancelRequest)
    return _answer(request, await _actions(request).cancel(_selector(body), request[app.CALLER]))


async def replay_jobs(request: web.Request) -> web.Response:
    """POST /v1/jobs/replay (tech): replay each selected DEAD job."""
    body = await _body(request, BulkReplayRequest)
    return _answer(request, await _actions(request).replay(_selector(body), request[app.CALLER]))


async def resolve_jobs(request: web.Request) -> web.Response:
    """POST /v1/jobs/resolve (tech): settle each selected DEAD outcome_unknown job."""
    body = await _body(request, BulkResolveRequest)
    result = await _actions(request).resolve(
        _selector(body), request[app.CALLER], printed=body.printed
    )
    return _answer(request, result)
