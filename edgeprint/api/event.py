"""The event's handlers (issue 23): rehearsal, go-live, the mode, and a printer checked now.

``POST /v1/event/rehearsal`` and ``POST /v1/event/live`` take an empty body (anything
else is refused: these are switches, not forms). ``POST /v1/printers/{name}/check``
asks the printer now through the dispatcher's ``check`` (``Deps.check``).
"""

from __future__ import annotations

import time

from aiohttp import web

from edgeprint import errors, media_fit
from edgeprint.api.app import CALLER, DEPS, Deps, json_response
from edgeprint.models import EventOut, PrinterCheckOut, ReadyMediaOut, TlsCheckOut
from edgeprint.service import PrinterCheck
from edgeprint.service.event import EventMode
from edgeprint.timefmt import rfc3339_ms


async def _event_out(deps: Deps, mode: EventMode, cancelled: list[str] | None = None) -> EventOut:
    # in a rehearsal, its own test jobs (not an earlier rehearsal's); live, every one
    current = mode.since if mode.mode == "rehearsal" else None
    counts = await deps.service.views.jobs_by_state(rehearsal=True, since=current)
    return EventOut(
        mode=mode.mode,
        since=None if mode.since is None else rfc3339_ms(mode.since),
        actor=mode.actor,
        badge_media=deps.config.event.badge_media,
        rehearsal_jobs_by_state={s.value: n for s, n in counts.items()},
        cancelled=cancelled or [],
    )


async def _empty_body(request: web.Request) -> None:
    """A switch takes no body: one with content is a 422 naming it."""
    if not request.can_read_body:
        return
    raw = await request.content.read(1025)
    if raw.strip():
        raise errors.InvalidRequest(
            "this request takes no body",
            [errors.FieldProblem("body", "must be empty")],
        )


async def get_event(request: web.Request) -> web.Response:
    """GET /v1/event (tech): the mode, since when, and the rehearsal's jobs."""
    deps = request.app[DEPS]
    return json_response(await _event_out(deps, await deps.service.event.current()))


async def start_rehearsal(request: web.Request) -> web.Response:
    """POST /v1/event/rehearsal (tech): live → rehearsal; 409 ``already-in-rehearsal``."""
    deps = request.app[DEPS]
    await _empty_body(request)
    mode = await deps.service.event.start_rehearsal(request[CALLER])
    return json_response(await _event_out(deps, mode))


async def go_live(request: web.Request) -> web.Response:
    """POST /v1/event/live (tech): rehearsal → live, its waiting jobs cancelled; 409
    ``not-in-rehearsal``."""
    deps = request.app[DEPS]
    await _empty_body(request)
    went = await deps.service.event.go_live(request[CALLER])
    return json_response(await _event_out(deps, went.mode, went.cancelled))


def check_out(
    name: str, found: PrinterCheck, badge_media: str | None, at: float
) -> PrinterCheckOut:
    """The API's view of a check, with the badge's stock held against the ready media."""
    fit: media_fit.Fit | None = None
    badge = media_fit.from_media_name(badge_media) if badge_media else None
    if badge is not None and found.stock is not None and found.stock.known:
        fit = media_fit.judge_view(badge, found.stock)
    tls = found.tls
    return PrinterCheckOut(
        printer=name,
        checked_at=rfc3339_ms(at),
        reachable=found.reachable,
        round_trip_s=found.round_trip_s,
        printer_state=found.printer_state,
        printer_state_reasons=list(found.printer_state_reasons),
        printer_state_message=found.printer_state_message,
        accepting_jobs=found.accepting_jobs,
        media_ready=list(found.media_ready),
        badge_media=badge_media,
        stock_fit=fit,
        error=found.error,
        stock=ReadyMediaOut.of(found.stock) if found.stock is not None else None,
        tls=None
        if tls is None
        else TlsCheckOut(
            mode=tls.mode,
            pinned=tls.pinned,
            presented=tls.presented,
            matches=tls.matches,
            error=tls.error,
        ),
    )


async def check_printer(request: web.Request) -> web.Response:
    """POST /v1/printers/{name}/check (tech): Get-Printer-Attributes now, timed."""
    deps = request.app[DEPS]
    name = request.match_info["name"]
    await _empty_body(request)
    found = await deps.service.printers.check_printer(name, request[CALLER], deps.check)
    return json_response(check_out(name, found, deps.config.event.badge_media, time.time()))
