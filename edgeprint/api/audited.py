"""Which HTTP routes are actions, and their audit rows (issue 26: who did what).

:func:`wrap` puts a route's handler (behind its role check) inside
:meth:`edgeprint.service.audit.AuditTrail.action`: one row per call, once the handler
decided — ``done`` (2xx), ``conflict`` (409) or ``refused`` (any other 4xx/5xx of ours).
Who: the caller the role check or the handler found (a token's name; a release page's
owner, whom the handler names in the request's :data:`NOTE`); from where: the peer
address (``request.remote``: no proxy header is believed). A request with no caller
(no or an unknown token: 401, a role that may not: 403) or that was rate limited (429)
did nothing and names nobody: it is not recorded (the metrics count them).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from aiohttp import web

from edgeprint import errors
from edgeprint.api import app, problems
from edgeprint.service.audit import Note
from edgeprint.service.records import Caller


@dataclass(frozen=True)
class Spec:
    """An audited route: the action, what kind of thing it acts on, and the path's key
    naming it (None: the target is ``target_kind`` itself, or the handler's note)."""

    action: str
    target_kind: str
    key: str | None


#: operationId → its audit row. Bulk calls: one row with the counts (each job's own event
#: is in its story); the release page: one row for the person's call.
AUDITED: dict[str, Spec] = {
    "releaseJob": Spec("release", "job", "job_id"),
    "cancelJob": Spec("cancel", "job", "job_id"),
    "replayJob": Spec("replay", "job", "job_id"),
    "resolveJob": Spec("resolve", "job", "job_id"),
    "reprintJob": Spec("reprint", "job", "job_id"),
    "releaseJobs": Spec("bulk-release", "jobs", None),
    "cancelJobs": Spec("bulk-cancel", "jobs", None),
    "replayJobs": Spec("bulk-replay", "jobs", None),
    "resolveJobs": Spec("bulk-resolve", "jobs", None),
    "pausePrinter": Spec("pause", "printer", "name"),
    "resumePrinter": Spec("resume", "printer", "name"),
    "drainPrinter": Spec("drain", "printer", "name"),
    "identifyPrinter": Spec("identify", "printer", "name"),
    "trustPrinter": Spec("trust", "printer", "name"),
    "mediaLoaded": Spec("media-loaded", "printer", "name"),
    "putOwnerCredentials": Spec("credentials-set", "owner", "owner"),
    "deleteOwnerCredentials": Spec("credentials-removed", "owner", "owner"),
    "startRehearsal": Spec("event-rehearsal", "event", None),
    "goLive": Spec("event-live", "event", None),
    "releasePrint": Spec("release-page-print", "place", "name"),
    "uploadJob": Spec("web-upload", "job", None),
}

#: What the handler adds to its row (detail, the owner it turned out to be, the job made).
NOTE = web.RequestKey("audit_note", Note)


def note(request: web.Request) -> Note:
    """The request's audit note (a throwaway one on a route that is not audited)."""
    return request.get(NOTE) or Note()


def _outcome(status: int) -> str:
    return "done" if status < 400 else "conflict" if status == 409 else "refused"


def wrap(operation_id: str, role: str | None, handler: app.Handler) -> app.Handler:
    """``handler`` (behind the check of ``role``) recording its audit row, if
    ``operation_id`` is an action."""
    spec = AUDITED.get(operation_id)
    if spec is None:
        return handler

    async def audited(request: web.Request) -> web.StreamResponse:
        request[NOTE] = found = Note()
        try:
            resp = await handler(request)
        except errors.RateLimited:
            raise
        except errors.EdgeprintError as exc:
            found.detail = found.detail or _refusal_detail(exc)
            await _record(request, spec, role, found, _outcome(_status(exc)))
            raise
        if resp.status != 429:
            await _record(request, spec, role, found, _outcome(resp.status))
        return resp

    audited.__doc__ = handler.__doc__
    return audited


def _refusal_detail(exc: errors.EdgeprintError) -> str:
    """What a refused release's row says of the PIN (never the PIN itself)."""
    match exc:
        case errors.PinMismatch(locked_for_s=None):
            return f"pin-mismatch, {exc.failures_left} more lock the release"
        case errors.PinMismatch():
            return f"pin-mismatch, release locked for {exc.locked_for_s} s"
        case errors.PinRequired():
            return "pin-required"
        case errors.ReleaseLocked():
            return f"release-locked, retry in {exc.retry_after_s} s"
    return ""


def _status(exc: errors.EdgeprintError) -> int:
    return problems.from_error(exc).status  # the status the app's middleware will answer


async def _record(
    request: web.Request, spec: Spec, role: str | None, found: Note, outcome: str
) -> None:
    caller = request.get(app.CALLER)
    if caller is None:
        if role is not None or request.headers.get("Authorization"):
            return  # a token that was not let in: it did nothing, and names nobody we know
        caller = Caller("unknown", "", request.get(app.CORRELATION_ID), kind="owner")
    if caller.source is None:
        caller = replace(caller, source=request.remote)
    target = request.match_info.get(spec.key, "") if spec.key else spec.target_kind
    trail = request.app[app.DEPS].service.audit
    await trail.record(
        caller,
        spec.action,
        spec.target_kind,
        found.target or target[:255],
        outcome,
        found.detail,
        actor=found.actor,
        kind=found.kind,
    )
