"""The badge desk's handlers (issue 24): reprint a DONE job with a record, and a job's story.

``POST /v1/jobs/{id}/reprint`` takes ``{"reason"}`` and an ``Idempotency-Key`` as a
submission does (201 a new reprint; 200 ``Idempotent-Replayed: true`` for the same key
again); ``GET /v1/jobs/{id}/events`` answers :class:`~edgeprint.models.JobStoryOut`.
"""

from __future__ import annotations

from aiohttp import web

from edgeprint.api.app import CALLER, DEPS, idempotency_key, job_id_of, required_json
from edgeprint.models import JobOut, JobStoryOut, ReprintRequest, StoryEntryOut, job_json
from edgeprint.service.reprints import ReprintService
from edgeprint.service.story import StoryEntry, story
from edgeprint.timefmt import rfc3339_ms


async def reprint_job(request: web.Request) -> web.Response:
    """POST /v1/jobs/{id}/reprint {"reason": …} with an Idempotency-Key (kiosk, tech)."""
    caller = request[CALLER]
    job_id = job_id_of(request)
    key = idempotency_key(request)
    body = await required_json(request, ReprintRequest, '{"reason": "badge lost"}')
    result = await ReprintService(request.app[DEPS].service).reprint(
        job_id, body.reason, key, caller
    )
    job = result.job
    headers = {"Location": f"/v1/jobs/{job.id}"}
    if not result.created:
        headers["Idempotent-Replayed"] = "true"
    return web.Response(
        status=201 if result.created else 200,
        body=job_json(job),
        content_type="application/json",
        headers=headers,
    )


def _entry(e: StoryEntry) -> StoryEntryOut:
    return StoryEntryOut(
        at=rfc3339_ms(e.at),
        kind=e.kind,  # type: ignore[arg-type]
        words=e.words,
        actor=e.actor,
        reason=e.reason,
        from_state=e.from_state,
        to_state=e.to_state,
        printer=e.printer,
        printer_job_id=e.printer_job_id,
        copy_id=e.copy_id,
        copy_state=e.copy_state,
        outcome=e.outcome,
        settled_by=e.settled_by,
        job_state_reasons=e.job_state_reasons,
    )


async def job_story(request: web.Request) -> web.Response:
    """GET /v1/jobs/{id}/events (kiosk): state changes, copies, who and why, oldest first."""
    service = request.app[DEPS].service
    job_id = job_id_of(request)
    reprints = (await ReprintService(service).reprints_of([job_id])).get(job_id, [])
    told = await story(service, job_id, reprints)
    out = JobStoryOut(
        job=JobOut.from_record(told.job, told.reprints),
        entries=[_entry(e) for e in told.entries],
    )
    return web.Response(body=out.model_dump_json().encode(), content_type="application/json")
