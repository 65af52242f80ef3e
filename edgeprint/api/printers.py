"""The technicians' handlers: printers and pools (pause, resume, trust, media loaded, drain,
identify), the dead-letter queue, statistics and webhook deliveries."""

from __future__ import annotations

import urllib.parse
from dataclasses import asdict
from datetime import UTC, datetime

from aiohttp import web

from edgeprint import errors, printable
from edgeprint.api.app import (
    CALLER,
    Deps,
    Handler,
    deps_of,
    json_response,
    optional_json,
    paging,
    query_params,
)
from edgeprint.api.uploads import (
    invalid,
)
from edgeprint.models import (
    DeadLetterOut,
    DrainOut,
    IdentifyOut,
    IdentifyRequest,
    JobOut,
    MediaLevelOut,
    MediaLoadedOut,
    PoolOut,
    PrinterCapabilitiesOut,
    PrinterOut,
    PrinterProblemOut,
    PrinterReasonOut,
    PrintersOut,
    PrinterSummaryOut,
    ReadyMediaOut,
    RunwayOut,
    StatsOut,
    StockWaitOut,
    SupplyOut,
    WebhookDeliveriesOut,
    WebhookDeliveryOut,
    iso_time,
)
from edgeprint.printers import reasons
from edgeprint.printers.health import PrinterSnapshot
from edgeprint.states import JobState
from edgeprint.timefmt import rfc3339_ms


def _printer_out(
    snap: PrinterSnapshot,
    depths: dict[tuple[str | None, str | None], int],
    oldest: dict[tuple[str | None, str | None], float],
    now: float,
) -> PrinterOut:
    key = (snap.name, None)
    return PrinterOut(
        name=snap.name,
        uri=snap.uri,
        pool=snap.pool,
        healthy=snap.healthy,
        health_reason=_shown(snap.health_reason),
        reachable=snap.reachable,
        paused=snap.paused,
        printer_state=snap.printer_state,
        printer_state_reasons=list(snap.printer_state_reasons),
        printer_state_message=snap.printer_state_message,
        reasons=[_reason_out(r) for r in snap.reasons],
        queued_job_count=snap.queued_job_count,
        waiting=depths.get(key, 0),
        oldest_waiting_s=_age(oldest.get(key), now),
        printing_job=snap.printing_job,
        last_error=_shown(snap.last_error),
        problems=[
            PrinterProblemOut(
                kind=p.kind,
                text=p.text,
                since=rfc3339_ms(p.since),
                until=None if p.until is None else rfc3339_ms(p.until),
                evidence=p.evidence,
            )
            for p in snap.problems
        ],
        problem=next((p.text for p in snap.problems if p.until is None), None),
        capabilities=(
            PrinterCapabilitiesOut(**snap.capabilities) if snap.capabilities is not None else None
        ),
        sends=snap.sends,
        owner=snap.owner,
        lease_epoch=snap.lease_epoch,
        epoch=snap.epoch,
        epoch_began_at=(
            datetime.fromtimestamp(snap.epoch_began_at, UTC)
            if snap.epoch_began_at is not None
            else None
        ),
        epoch_cause=snap.epoch_cause,
        personality=snap.personality,
        media_ready=ReadyMediaOut.of(snap.stock) if snap.stock is not None else None,
        media_from="config"
        if snap.stock_from == "config"
        else ("printer" if snap.stock_from == "printer" else None),
        supplies=[SupplyOut(**asdict(x)) for x in snap.supply_levels],
        media_levels=[MediaLevelOut(**asdict(x)) for x in snap.media_levels],
        runway=RunwayOut(**asdict(snap.runway)) if snap.runway is not None else None,
        unreachable_since=(
            datetime.fromtimestamp(snap.unreachable_since, UTC)
            if snap.unreachable_since is not None
            else None
        ),
    )


#: health_reason and last_error hold a printer's own text: escaped and cut to this many chars
#: (longer than a problem's evidence: a certificate change names two fingerprints and how).
SHOWN_CHARS = 1000


def _shown(text: str | None) -> str | None:
    """A printer's text (its message inside a health reason, an error) escaped and cut."""
    return None if text is None else printable.escape(text, SHOWN_CHARS)


def _reason_out(r: reasons.Reason) -> PrinterReasonOut:
    since = datetime.fromtimestamp(r.since, UTC) if r.since is not None else None
    return PrinterReasonOut(
        value=r.value,
        keyword=r.keyword,
        severity=r.severity,
        known=r.known,
        words=r.words,
        since=since,
    )


def _age(since: float | None, now: float) -> float | None:
    return None if since is None else round(max(0.0, now - since), 3)


async def _printers_out(deps: Deps, names: set[str] | None = None) -> PrintersOut:
    queues = await deps.service.views.queues()
    depths, oldest, now = queues.waiting, queues.oldest_waiting, queues.at
    printers = sorted(
        (
            _printer_out(s, depths, oldest, now)
            for s in deps.printers()
            if names is None or s.name in names
        ),
        key=lambda p: (p.problem is None, p.name),
    )  # problem printers first (issue 25)
    pools = [
        PoolOut(
            name=pool,
            printers=list(members),
            waiting=depths.get((None, pool), 0),
            oldest_waiting_s=_age(oldest.get((None, pool)), now),
        )
        for pool, members in deps.config.pools.items()
    ]
    waits = [
        StockWaitOut(
            printer=w.printer,
            pool=w.pool,
            size=w.sizes.describe(),
            jobs=w.jobs,
            reason=w.reason or "",
        )
        for w in deps.service.stock.waits
        if names is None or w.printer in names
    ]
    return PrintersOut(printers=printers, pools=pools, waiting_for_stock=waits)


async def list_printers(request: web.Request) -> web.Response:
    """GET /v1/printers (tech): health, IPP state, queue depths."""
    return json_response(await _printers_out(deps_of(request)))


async def _one_printer(deps: Deps, name: str) -> PrinterOut:
    out = await _printers_out(deps, {name})
    if not out.printers:
        raise errors.PrinterNotFound(name)
    return out.printers[0]


def _pause_handler(paused: bool) -> Handler:
    async def handler(request: web.Request) -> web.Response:
        caller = request[CALLER]
        name = request.match_info["name"]
        deps = deps_of(request)
        await deps.service.printers.set_paused(name, paused, caller)
        return json_response(await _one_printer(deps, name))

    return handler


#: POST /v1/printers/{name}/pause (tech): no new work; the job in hand finishes.
pause_printer = _pause_handler(True)
#: POST /v1/printers/{name}/resume (tech).
resume_printer = _pause_handler(False)


async def trust_printer(request: web.Request) -> web.Response:
    """POST /v1/printers/{name}/trust (tech): pin the certificate it presents from now on."""
    caller = request[CALLER]
    name = request.match_info["name"]
    deps = deps_of(request)
    await deps.service.printers.trust_printer(name, caller)
    return json_response(await _one_printer(deps, name))


async def media_loaded(request: web.Request) -> web.Response:
    """POST /v1/printers/{name}/media-loaded (tech): a new roll is in; its runway from full."""
    caller = request[CALLER]
    name = request.match_info["name"]
    deps = deps_of(request)
    await deps.service.printers.media_loaded(name, caller)
    printer = await _one_printer(deps, name)
    return json_response(MediaLoadedOut(printer=name, runway=printer.runway))


async def drain_printer(request: web.Request) -> web.Response:
    """POST /v1/printers/{name}/drain (tech): pause it and move its waiting jobs to its pool."""
    caller = request[CALLER]
    name = request.match_info["name"]
    deps = deps_of(request)
    moved = await deps.service.printers.drain(name, caller)
    return json_response(DrainOut(printer=await _one_printer(deps, name), moved=moved))


async def identify_printer(request: web.Request) -> web.Response:
    """POST /v1/printers/{name}/identify (tech), optional {"how": …}: the printer shows itself."""
    caller = request[CALLER]
    name = request.match_info["name"]
    body = await optional_json(request, IdentifyRequest)
    deps = deps_of(request)
    done = await deps.service.printers.identify(name, body.how, caller, deps.identify)
    return json_response(
        IdentifyOut(printer=name, action=done.action, printer_job_id=done.printer_job_id)
    )


async def dead_letter(request: web.Request) -> web.Response:
    """GET /v1/dead-letter?limit=&cursor= (tech): DEAD jobs, oldest first."""
    problems_: list[errors.FieldProblem] = []
    q = query_params(request, {"limit", "cursor"}, problems_)
    limit, cursor = paging(q, 100, problems_)
    after = cursor or 0
    if problems_:
        raise invalid("invalid query parameters", problems_, "query")
    service = deps_of(request).service
    dead = await service.views.dead_letters(after_seq=after, limit=limit)
    counts = await service.views.jobs_by_state()
    rehearsal = await service.views.jobs_by_state(rehearsal=True)  # a person acts on those too
    return json_response(
        DeadLetterOut(
            jobs=[JobOut.from_record(j) for j in dead],
            count=counts[JobState.DEAD] + rehearsal[JobState.DEAD],
            next_cursor=str(dead[-1].seq) if len(dead) == limit else None,
        )
    )


async def stats(request: web.Request) -> web.Response:
    """GET /v1/stats (tech): jobs by state, dead letters by reason, printers in short."""
    deps = deps_of(request)
    st = await deps.service.views.stats()
    printers = [
        PrinterSummaryOut(
            name=snap.name,
            pool=snap.pool,
            healthy=snap.healthy,
            health_reason=snap.health_reason,
            reachable=snap.reachable,
            paused=snap.paused,
            waiting=st.waiting.get((snap.name, None), 0),
            oldest_waiting_s=_age(st.oldest_waiting.get((snap.name, None)), st.at),
            printing_job=snap.printing_job,
        )
        for snap in deps.printers()
    ]
    pools = [
        PoolOut(
            name=pool,
            printers=list(members),
            waiting=st.waiting.get((None, pool), 0),
            oldest_waiting_s=_age(st.oldest_waiting.get((None, pool)), st.at),
        )
        for pool, members in deps.config.pools.items()
    ]
    return json_response(
        StatsOut(
            jobs_by_state={s.value: n for s, n in st.jobs_by_state.items()},
            dead_letters=st.jobs_by_state.get(JobState.DEAD, 0)
            + (await deps.service.views.jobs_by_state(rehearsal=True))[JobState.DEAD],
            dead_letters_by_reason=st.dead_by_reason,
            printers=printers,
            pools=pools,
        )
    )


def _shown_url(url: str) -> str:
    """A receiver URL without user info or query (either may hold a credential)."""
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = host + (f":{parts.port}" if parts.port is not None else "")
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, "", ""))


async def webhook_deliveries(request: web.Request) -> web.Response:
    """GET /v1/webhooks/deliveries?state=failed&limit=&cursor= (tech): parked deliveries."""
    problems_: list[errors.FieldProblem] = []
    q = query_params(request, {"state", "limit", "cursor"}, problems_)
    if q.get("state", "failed") != "failed":
        problems_.append(errors.FieldProblem("query.state", "only 'failed' deliveries are kept"))
    limit, cursor = paging(q, 100, problems_)
    if problems_:
        raise invalid("invalid query parameters", problems_, "query")
    failed = await deps_of(request).service.printers.failed_webhook_deliveries(
        after_seq=cursor or 0, limit=limit
    )
    out = [
        WebhookDeliveryOut(
            state="failed",
            url=_shown_url(f.url),
            webhook_id=f.event_id,
            type=f.type,
            job_id=f.job_id,
            printer=f.printer,
            attempts=f.attempts,
            first_attempt_at=iso_time(f.first_attempt_at),
            failed_at=iso_time(f.failed_at),
            last_error=f.last_error,
        )
        for f in failed
    ]
    next_cursor = str(failed[-1].seq) if len(failed) == limit else None
    return json_response(WebhookDeliveriesOut(deliveries=out, next_cursor=next_cursor))
