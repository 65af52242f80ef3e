"""The jobs' handlers: submit, read, list and search, release, cancel, replay, resolve."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping

from aiohttp import web

from edgeprint import errors
from edgeprint.api.app import (
    CALLER,
    IDEMPOTENCY_KEY_RE,
    deps_of,
    idempotency_key,
    job_id_of,
    job_response,
    json_response,
    optional_json,
    paging,
    query_params,
)
from edgeprint.api.uploads import (
    invalid,
    read_upload,
)
from edgeprint.models import (
    CancelRequest,
    JobListOut,
    JobOut,
    ReleaseRequest,
    ResolveRequest,
    job_json,
)
from edgeprint.service.reprints import ReprintService
from edgeprint.service.search import JobSearch, search_jobs
from edgeprint.states import JobState

_LIST_PARAMS = {
    "state",
    "owner",
    "printer",
    "limit",
    "cursor",
    "idempotency_key",
    "id_prefix",
    "owner_contains",
}
_ID_PREFIX_RE = re.compile(r"^[0-9a-f]{4,32}$")
_PRINTABLE_RE = re.compile(r"^[^\x00-\x1f\x7f-\x9f]+$")


async def submit_job(request: web.Request) -> web.Response:
    """POST /v1/jobs: multipart metadata + document, Idempotency-Key required."""
    deps = deps_of(request)
    caller = request[CALLER]
    key = idempotency_key(request)
    server = deps.config.server
    try:
        # The whole upload within body_timeout_s (a slow client cannot hold the connection
        # for ever); read_upload discards the staged document when cancelled.
        async with asyncio.timeout(server.body_timeout_s):
            upload = await read_upload(
                request,
                deps.service.documents.stage_document,
                max_document_bytes=server.max_document_bytes,
                max_metadata_bytes=server.max_metadata_bytes,
            )
    except TimeoutError:
        raise errors.BodyTimeout(server.body_timeout_s) from None
    result = await deps.service.front.submit(
        upload.metadata, upload.document, key, caller, document_format=upload.document_format
    )
    job = result.job
    if result.created:
        return job_response(job, 201, Location=f"/v1/jobs/{job.id}")
    return job_response(
        job, 200, **{"Idempotent-Replayed": "true", "Location": f"/v1/jobs/{job.id}"}
    )


async def get_job(request: web.Request) -> web.Response:
    """GET /v1/jobs/{id} (with its reprints: only a DONE job has any)."""
    service = deps_of(request).service
    job = await service.get(job_id_of(request))
    if job.state is not JobState.DONE:
        return job_response(job)
    reprints = await ReprintService(service).reprints_of([job.id])
    body = job_json(job, reprints.get(job.id, ()))
    return web.Response(body=body, content_type="application/json")


def _search(q: Mapping[str, str], problems_: list[errors.FieldProblem]) -> dict[str, str]:
    """The search parameters of ``GET /v1/jobs`` (issue 24); bad ones go to ``problems_``."""
    out: dict[str, str] = {}
    if "idempotency_key" in q:
        if IDEMPOTENCY_KEY_RE.match(q["idempotency_key"]):
            out["idempotency_key"] = q["idempotency_key"]
        else:
            problems_.append(
                errors.FieldProblem(
                    "query.idempotency_key", "8–80 printable ASCII characters, no spaces"
                )
            )
    if "id_prefix" in q:
        if _ID_PREFIX_RE.match(q["id_prefix"]):
            out["id_prefix"] = q["id_prefix"]
        else:
            problems_.append(
                errors.FieldProblem("query.id_prefix", "4–32 lowercase hex characters (0-9, a-f)")
            )
    if "owner_contains" in q:
        text = q["owner_contains"]
        if 1 <= len(text) <= 255 and _PRINTABLE_RE.match(text):
            out["owner_contains"] = text
        else:
            problems_.append(
                errors.FieldProblem(
                    "query.owner_contains", "1–255 characters, no control characters"
                )
            )
    return out


async def list_jobs(request: web.Request) -> web.Response:
    """GET /v1/jobs?state=&owner=&printer=&idempotency_key=&id_prefix=&owner_contains=
    &limit=&cursor= (newest first; every filter given must match)."""
    problems_: list[errors.FieldProblem] = []
    q = query_params(request, _LIST_PARAMS, problems_)
    found = _search(q, problems_)
    state = None
    if "state" in q:
        try:
            state = JobState(q["state"])
        except ValueError:
            problems_.append(
                errors.FieldProblem("query.state", f"one of {', '.join(s.value for s in JobState)}")
            )
    limit, before = paging(q, 50, problems_)
    if problems_:
        raise invalid("invalid query parameters", problems_, "query")
    service = deps_of(request).service
    search = JobSearch(state=state, owner=q.get("owner"), printer=q.get("printer"), **found)
    jobs = await search_jobs(service, search, before_seq=before, limit=limit)
    done = [j.id for j in jobs if j.state is JobState.DONE]
    reprints = await ReprintService(service).reprints_of(done)
    next_cursor = str(jobs[-1].seq) if len(jobs) == limit else None
    return json_response(
        JobListOut(
            jobs=[JobOut.from_record(j, reprints.get(j.id, ())) for j in jobs],
            next_cursor=next_cursor,
        )
    )


#: Each body model with no field given (the models are frozen: one instance serves all).


async def release_job(request: web.Request) -> web.Response:
    """POST /v1/jobs/{id}/release with optional {"printer": …} or {"pool": …}."""
    caller = request[CALLER]
    job_id = job_id_of(request)
    body = await optional_json(request, ReleaseRequest)
    job = await deps_of(request).service.front.release(
        job_id, caller, printer=body.printer, pool=body.pool, pin=body.pin
    )
    return job_response(job)


async def cancel_job(request: web.Request) -> web.Response:
    """POST /v1/jobs/{id}/cancel, optional {"pin": …}: 200 CANCELLED, or 202 while the
    printer cancels it. A kiosk cancelling a HELD job that has a release PIN must give it."""
    caller = request[CALLER]
    job_id = job_id_of(request)
    body = await optional_json(request, CancelRequest)
    job = await deps_of(request).service.front.cancel(job_id, caller, pin=body.pin)
    return job_response(job, 202 if job.state is JobState.PRINTING else 200)


async def replay_job(request: web.Request) -> web.Response:
    """POST /v1/jobs/{id}/replay (tech): DEAD → RELEASED once."""
    caller = request[CALLER]
    job = await deps_of(request).service.front.replay(job_id_of(request), caller)
    return job_response(job)


async def resolve_job(request: web.Request) -> web.Response:
    """POST /v1/jobs/{id}/resolve (tech) {"printed": true|false}: settle an unknown outcome."""
    caller = request[CALLER]
    job_id = job_id_of(request)
    body = await optional_json(request, ResolveRequest)
    if body.rest and body.printed is not None:
        raise errors.InvalidRequest(
            'say one thing: {"printed": …} or {"rest": true}',
            [errors.FieldProblem("body.rest", "not together with printed")],
        )
    if body.printed is None and not body.rest:
        raise errors.InvalidRequest(
            'say whether the copy came out: {"printed": true} or {"printed": false}, '
            'or ask for the pages that did not: {"rest": true}',
            [errors.FieldProblem("body.printed", "required: true or false (or rest: true)")],
        )
    job = await deps_of(request).service.resolutions.resolve(
        job_id, caller, printed=bool(body.printed), rest=bool(body.rest)
    )
    return job_response(job)
