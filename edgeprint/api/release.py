"""Release where you stand (issue 24): owners' credentials and a release page's two calls.

``PUT``/``DELETE /v1/owners/{owner}`` (kiosk or tech: the integrator sets them) set and
remove an owner's release code and card. ``POST /release/{name}/lookup`` and
``/print`` take no token (the code is the credential: a phone opened the page from
the printer's sticker) or a ``station`` token, which may only be used at the
printers and pools its ``printers`` names. They are rate limited per client
address (per token for a station), and wrong credentials lock the address out
(:class:`edgeprint.service.release_desk.ReleaseDesk`).
"""

from __future__ import annotations

from typing import TypeVar

from aiohttp import web
from pydantic import TypeAdapter, ValidationError

from edgeprint import errors
from edgeprint.api import audited
from edgeprint.api.app import CALLER, CORRELATION_ID, DEPS, json_response, optional_json
from edgeprint.models import (
    Owner,
    OwnerCredentialsIn,
    OwnerCredentialsOut,
    ReleaseJobOut,
    ReleaseLookupIn,
    ReleaseLookupOut,
    ReleaseOutcomeOut,
    ReleasePreviewIn,
    ReleasePrinterOut,
    ReleasePrintIn,
    ReleasePrintOut,
    iso_time,
)
from edgeprint.service import Caller, JobRecord
from edgeprint.service.release_desk import Place, Presented, ReleaseDesk, summary

#: The app's one release desk (made by edgeprint.api.factory.build_app).
DESK = web.AppKey("release_desk", ReleaseDesk)
_OWNER = TypeAdapter(Owner)


def _owner(request: web.Request) -> str:
    raw = request.match_info["owner"]
    try:
        return _OWNER.validate_python(raw)
    except ValidationError:
        raise errors.InvalidRequest(
            "the owner in the path is not a valid owner name",
            [errors.FieldProblem("path.owner", "1–128 printable characters")],
        ) from None


_M = TypeVar("_M", OwnerCredentialsIn, ReleaseLookupIn, ReleasePrintIn, ReleasePreviewIn)
#: The one format whose pages can be drawn (a ZPL label is sent as it came).
_PDF = "application/pdf"
#: A release page's preview: the first page, as wide as a phone shows it sharp.
PREVIEW_WIDTH = 300


async def _body(request: web.Request, model: type[_M]) -> _M:
    """The JSON body as ``model``; an empty body is a 422 (these calls need one)."""
    try:
        return await optional_json(request, model)
    except ValidationError:  # the empty body: model() with nothing in it
        raise errors.InvalidRequest(
            "a JSON body is required", [errors.FieldProblem("body", "required")]
        ) from None


# --- owners' credentials ------------------------------------------------------------------


async def put_owner(request: web.Request) -> web.Response:
    """PUT /v1/owners/{owner} (kiosk): set a release code and/or card; 409 when taken."""
    owner = _owner(request)
    body = await _body(request, OwnerCredentialsIn)
    values = {"code": body.release_code, "card": body.card}
    kinds = await request.app[DESK].set_credentials(
        owner, {k: v for k, v in values.items() if v is not None}, request[CALLER]
    )
    return json_response(
        OwnerCredentialsOut(owner=owner, release_code="code" in kinds, card="card" in kinds)
    )


async def delete_owner(request: web.Request) -> web.Response:
    """DELETE /v1/owners/{owner} (kiosk): forget the owner's code and card; 404 if none."""
    owner = _owner(request)
    await request.app[DESK].remove_credentials(owner, request[CALLER])
    return web.Response(status=204)


# --- the release page's calls -------------------------------------------------------------


def _address(request: web.Request) -> str:
    return request.remote or "unknown"


async def _at(request: web.Request) -> tuple[Caller, Place]:
    """Who asks at which place: no token, or a token (a station only at its printers);
    counted against the rate limit per address (per token with one)."""
    deps = request.app[DEPS]
    name = request.match_info["name"]
    cid = request.get(CORRELATION_ID)
    authorization = request.headers.get("Authorization")
    if authorization:
        token = deps.auth.authenticate(authorization, "station", request.remote)
        if token.role == "station" and name not in token.printers:
            raise errors.StationForbidden(token.name, name)
        key, caller = token.name, Caller(token.name, token.role, cid, request.remote)
    else:
        key = f"address:{_address(request)}"
        caller = Caller(
            f"release-page:{_address(request)}", "release-page", cid, request.remote, "owner"
        )
    request[CALLER] = caller
    try:
        await deps.rate_limiter.hit(key)
    except errors.RateLimited:
        deps.metrics.rate_limited.inc()
        raise
    return caller, await request.app[DESK].place(name)


def _presented(body: ReleaseLookupIn) -> Presented:
    return Presented(
        value=body.code if body.code is not None else body.card, pin=body.pin, job=body.job
    )


def _job_out(job: JobRecord) -> ReleaseJobOut:
    return ReleaseJobOut(
        id=job.id,
        title=job.title or f"Job {job.id[:6]}",
        pages=job.document_pages,
        copies=job.copies,
        created_at=iso_time(job.created_at),
        has_preview=job.document_format == _PDF and job.document_deleted_at is None,
        pin_required=job.release_pin_hash is not None,
    )


def _place_out(place: Place) -> dict[str, object]:
    return {
        "place": place.name,
        "kind": "pool" if place.pool else "printer",
        "printers": [
            ReleasePrinterOut(name=p.name, waiting=p.waiting, ready=p.ready) for p in place.printers
        ],
        "suggested": place.suggested,
    }


async def release_lookup(request: web.Request) -> web.Response:
    """POST /release/{name}/lookup: the person's HELD jobs (200, maybe none) or 403."""
    caller, place = await _at(request)
    body = await _body(request, ReleaseLookupIn)
    desk = request.app[DESK]
    person = await desk.identify(_presented(body), _address(request), caller)
    jobs = await desk.held(person)
    n = len(jobs)
    message = (
        "Nothing is waiting for you"
        if not jobs
        else f"{n} job{'' if n == 1 else 's'} waiting for you"
    )
    return json_response(
        ReleaseLookupOut(
            owner=person.owner,
            jobs=[_job_out(j) for j in jobs],
            message=message,
            **_place_out(place),  # type: ignore[arg-type]
        )
    )


async def release_print(request: web.Request) -> web.Response:
    """POST /release/{name}/print: release the person's jobs here; per-job outcomes."""
    caller, place = await _at(request)
    body = await _body(request, ReleasePrintIn)
    desk = request.app[DESK]
    person = await desk.identify(_presented(body), _address(request), caller)
    outcomes = await desk.release(
        person, place, None if body.all else body.jobs, caller, printer=body.printer
    )
    found = audited.note(request)  # who: the person whose code, card or PIN it was
    found.actor, found.kind = person.owner, "owner"
    via = f"; station {caller.name}" if caller.kind == "token" else ""
    found.detail = (
        f"{sum(o.outcome == 'released' for o in outcomes)} of {len(outcomes)} released{via}"
    )
    return json_response(
        ReleasePrintOut(
            outcomes=[
                ReleaseOutcomeOut(
                    job=o.job,
                    outcome=o.outcome,  # type: ignore[arg-type]
                    state=o.state,
                    printer=o.printer,
                    pool=o.pool,
                    detail=o.detail,
                )
                for o in outcomes
            ],
            released=sum(o.outcome == "released" for o in outcomes),
            message=summary(outcomes),
        )
    )


async def release_preview(request: web.Request) -> web.Response:
    """POST /release/{name}/preview: the first page of one of the person's HELD jobs (PNG).
    A job that is not theirs, or not HELD, is 404 ``job-not-found`` whoever's it is."""
    caller, _ = await _at(request)
    body = await _body(request, ReleasePreviewIn)
    desk = request.app[DESK]
    person = await desk.identify(_presented(body), _address(request), caller)
    job = next((j for j in await desk.held(person) if j.id == body.job_id), None)
    if job is None:
        raise errors.JobNotFound(body.job_id)
    png = await request.app[DEPS].previews.png(job, 1, PREVIEW_WIDTH)
    return web.Response(
        body=png, content_type="image/png", headers={"Cache-Control": "private, no-store"}
    )
