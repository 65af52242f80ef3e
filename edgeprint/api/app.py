"""The API's handlers and middleware (auth, problems, correlation id, timing).

Which route runs which handler, with which role, is the table in :mod:`edgeprint.api.routes`.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import re
import secrets
import time
import urllib.parse
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import TypeVar, cast

from aiohttp import web
from pydantic import BaseModel, ValidationError

from edgeprint import errors, printable
from edgeprint.api import problems, refusals
from edgeprint.api.auth import Needed, TokenAuth
from edgeprint.api.ratelimit import TokenRateLimiter
from edgeprint.api.uploads import (
    duplicate_key,
    duplicate_key_problem,
    invalid,
    read_upload,
    validation_problems,
)
from edgeprint.config import Config, ServerConfig
from edgeprint.metrics import CONTENT_TYPE as METRICS_CONTENT_TYPE
from edgeprint.metrics import Metrics
from edgeprint.models import (
    IDEMPOTENCY_KEY_PATTERN,
    JOB_ID_PATTERN,
    CancelRequest,
    DeadLetterOut,
    DrainOut,
    Health,
    IdentifyOut,
    IdentifyRequest,
    JobListOut,
    JobOut,
    MediaLevelOut,
    MediaLoadedOut,
    OwnerCredentialsIn,
    PoolOut,
    PrinterCapabilitiesOut,
    PrinterOut,
    PrinterProblemOut,
    PrinterReasonOut,
    PrintersOut,
    PrinterSummaryOut,
    ReadyMediaOut,
    ReleaseLookupIn,
    ReleasePreviewIn,
    ReleasePrintIn,
    ReleaseRequest,
    ResolveRequest,
    RunwayOut,
    StatsOut,
    StockWaitOut,
    SupplyOut,
    WebhookDeliveriesOut,
    WebhookDeliveryOut,
    iso_time,
    job_json,
)
from edgeprint.printers import reasons
from edgeprint.printers.health import PrinterSnapshot
from edgeprint.service import (
    Caller,
    CheckPrinter,
    Identified,
    Identify,
    JobRecord,
    JobService,
    PrinterCheck,
)
from edgeprint.service.previews import Previews
from edgeprint.service.reprints import ReprintService
from edgeprint.service.search import JobSearch, search_jobs
from edgeprint.states import JobState
from edgeprint.timefmt import rfc3339_ms

log = logging.getLogger(__name__)

#: The optional JSON body of a release or a cancel.
_Body = TypeVar(
    "_Body", ReleaseRequest, CancelRequest, ResolveRequest, IdentifyRequest,
    OwnerCredentialsIn, ReleaseLookupIn, ReleasePrintIn, ReleasePreviewIn,  # issue 24
)  # fmt: skip
#: A JSON body that must be there.
_Model = TypeVar("_Model", bound=BaseModel)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

_KEY_RE = re.compile(IDEMPOTENCY_KEY_PATTERN)
_JOB_ID_RE = re.compile(JOB_ID_PATTERN)
_CORRELATION_RE = re.compile(r"^[\x21-\x7e]{1,128}$")
_LIST_PARAMS = {
    "state", "owner", "printer", "limit", "cursor", "idempotency_key", "id_prefix",
    "owner_contains",
}  # fmt: skip
_ID_PREFIX_RE = re.compile(r"^[0-9a-f]{4,32}$")
_PRINTABLE_RE = re.compile(r"^[^\x00-\x1f\x7f-\x9f]+$")
# ASCII digits only: str.isdigit() also accepts "²" or "١", which int() refuses or misreads.
_LIMIT_RE = re.compile(r"^[0-9]{1,3}$")
_CURSOR_RE = re.compile(r"^[0-9]{1,18}$")
MAX_JSON_BODY = 64 * 1024
# Generated correlation ids: a random per-process prefix and a counter (unique, and no
# syscall per request as uuid4 would make).
_CID_PREFIX = secrets.token_hex(6)
_cid_counter = itertools.count(1)


async def _no_identify(printer: str, how: str, by: str) -> Identified:
    raise errors.PrinterNotFound(printer)


async def _no_check(printer: str) -> PrinterCheck:
    raise errors.PrinterNotFound(printer)


#: Deps.previews not given: made from the service (the sentinel is never used as one).
_NO_PREVIEWS = cast(Previews, None)


@dataclass
class Deps:
    """What the handlers use; stored on the app under :data:`DEPS`. ``config`` is replaced
    on a reload (edgeprint.reload says which keys may change)."""

    config: Config
    service: JobService
    metrics: Metrics
    auth: TokenAuth
    ready: Callable[[], Awaitable[None]]
    printers: Callable[[], list[PrinterSnapshot]] = list
    #: The dispatcher's way to make a printer show itself (it owns the IPP clients).
    identify: Identify = _no_identify
    rate_limiter: TokenRateLimiter = field(
        default_factory=lambda: TokenRateLimiter(ServerConfig().rate_limit)
    )
    #: The dispatcher's way to ask a printer now, timed (preflight, issue 23).
    check: CheckPrinter = _no_check
    #: A job's page as a PNG (issue 24); made from ``service`` when not given.
    previews: Previews = _NO_PREVIEWS

    def __post_init__(self) -> None:
        if self.previews is None:
            self.previews = Previews(self.service)


DEPS = web.AppKey("deps", Deps)
CORRELATION_ID = web.RequestKey("correlation_id", str)
#: Who asks, set by the route's role check (edgeprint.api.routes) before the handler runs.
CALLER = web.RequestKey("caller", Caller)


def _deps(request: web.Request) -> Deps:
    return request.app[DEPS]


async def authorize(request: web.Request, needed: Needed) -> Caller:
    """Who asks, with a role that grants ``needed``; raises errors.Unauthorized,
    errors.Forbidden, errors.RateLimited."""
    deps = _deps(request)
    try:
        token = deps.auth.authenticate(request.headers.get("Authorization"), needed, request.remote)
    except (errors.Unauthorized, errors.Forbidden) as exc:
        refusals.note(deps.auth.refusals, request, exc)  # one throttled log line
        raise
    try:
        await deps.rate_limiter.hit(token.name)
    except errors.RateLimited:
        deps.metrics.rate_limited.inc()
        raise
    return Caller(token.name, token.role, request.get(CORRELATION_ID), request.remote)


def _json(model: BaseModel, status: int = 200, **headers: str) -> web.Response:
    return web.Response(
        status=status,
        body=model.model_dump_json().encode(),
        content_type="application/json",
        headers=headers or None,
    )


def _job_json(job: JobRecord, status: int = 200, **headers: str) -> web.Response:
    """The job as :class:`JobOut` JSON (serialised without building the model: the hot path)."""
    return web.Response(
        status=status, body=job_json(job), content_type="application/json",
        headers=headers or None,
    )  # fmt: skip


def _job_id(request: web.Request) -> str:
    job_id = request.match_info["job_id"]
    if not _JOB_ID_RE.match(job_id):
        raise errors.JobNotFound(job_id[:80])
    return job_id


def idempotency_key(request: web.Request) -> str:
    """The request's one Idempotency-Key header; raises errors.MalformedRequest (400)
    ``idempotency-key-missing`` or ``idempotency-key-invalid``."""
    keys = request.headers.getall("Idempotency-Key", [])
    if len(keys) > 1:
        raise errors.MalformedRequest(
            f"send one Idempotency-Key header, not {len(keys)}", slug="idempotency-key-invalid"
        )
    key = keys[0] if keys else None
    if key is None:
        raise errors.MalformedRequest(
            "the Idempotency-Key header is required (8–80 printable ASCII characters)",
            slug="idempotency-key-missing",
        )
    if not _KEY_RE.match(key):
        raise errors.MalformedRequest(
            "the Idempotency-Key header must be 8–80 printable ASCII characters, no spaces",
            slug="idempotency-key-invalid",
        )
    return key


# --- middleware ------------------------------------------------------------------


@web.middleware
async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    cid = request.headers.get("X-Correlation-ID", "")
    if not _CORRELATION_RE.match(cid):
        cid = f"{_CID_PREFIX}{next(_cid_counter):08x}"
    request[CORRELATION_ID] = cid
    started = time.perf_counter()
    resp: web.StreamResponse
    try:
        encoding = request.headers.get("Content-Encoding", "identity").strip().lower()
        if encoding != "identity":
            raise errors.UnsupportedDocument(
                f"Content-Encoding {encoding[:40]!r} is not accepted; send the body uncompressed"
            )
        resp = await handler(request)
    except errors.EdgeprintError as exc:
        resp = problems.from_error(exc)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        slug = {404: "not-found", 405: "method-not-allowed", 413: "payload-too-large"}.get(
            exc.status, "http-error"
        )
        detail = exc.text or exc.reason
        if exc.status == 404:
            detail = f"no such resource: {request.method} {request.path[:200]}"
        elif isinstance(exc, web.HTTPMethodNotAllowed):
            detail = (
                f"method {request.method[:20]} is not allowed on {request.path[:200]}; "
                f"allowed: {', '.join(sorted(exc.allowed_methods))}"
            )
        resp = problems.problem(exc.status, slug, detail)
        if exc.status == 405:
            resp.headers["Allow"] = exc.headers.get("Allow", "")
    except Exception:
        log.exception(
            "unhandled error",
            extra={"event": "internal_error", "path": request.path, "correlation_id": cid},
        )
        resp = problems.problem(500, "internal-error", "unexpected error; see the appliance log")
    resp.headers["X-Correlation-ID"] = cid
    resource = request.match_info.route.resource
    route = resource.canonical if resource is not None else "unmatched"
    _deps(request).metrics.observe_http(route, resp.status, time.perf_counter() - started)
    return resp


# --- jobs ------------------------------------------------------------------------


async def submit_job(request: web.Request) -> web.Response:
    """POST /v1/jobs: multipart metadata + document, Idempotency-Key required."""
    deps = _deps(request)
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
        return _job_json(job, 201, Location=f"/v1/jobs/{job.id}")
    return _job_json(job, 200, **{"Idempotent-Replayed": "true", "Location": f"/v1/jobs/{job.id}"})


async def get_job(request: web.Request) -> web.Response:
    """GET /v1/jobs/{id} (with its reprints: only a DONE job has any)."""
    service = _deps(request).service
    job = await service.get(_job_id(request))
    if job.state is not JobState.DONE:
        return _job_json(job)
    reprints = await ReprintService(service).reprints_of([job.id])
    body = job_json(job, reprints.get(job.id, ()))
    return web.Response(body=body, content_type="application/json")


def _query(
    request: web.Request, known: set[str], problems_: list[errors.FieldProblem]
) -> dict[str, str]:
    """The ``known`` query parameters that were given once; unknown or repeated ones are
    added to ``problems_`` (``?state=DONE&state=HELD`` is refused rather than read as one
    of them: a client filtering on both would silently get only the first)."""
    q = request.query
    unknown = sorted(set(q) - known)
    problems_ += [errors.FieldProblem(f"query.{u}", "unknown parameter") for u in unknown]
    repeated = sorted(name for name in known & set(q) if len(q.getall(name)) > 1)
    problems_ += [errors.FieldProblem(f"query.{r}", "given more than once") for r in repeated]
    return {name: q[name] for name in known & set(q) if name not in repeated}


def _paging(
    q: Mapping[str, str], default_limit: int, problems_: list[errors.FieldProblem]
) -> tuple[int, int | None]:
    """``limit`` (1–500) and ``cursor`` query parameters; bad ones are added to ``problems_``."""
    limit = default_limit
    if "limit" in q:
        if _LIMIT_RE.match(q["limit"]) and 1 <= int(q["limit"]) <= 500:
            limit = int(q["limit"])
        else:
            problems_.append(errors.FieldProblem("query.limit", "an integer from 1 to 500"))
    cursor = None
    if "cursor" in q:
        if _CURSOR_RE.match(q["cursor"]):
            cursor = int(q["cursor"])
        else:
            problems_.append(errors.FieldProblem("query.cursor", "a cursor from next_cursor"))
    return limit, cursor


def _search(q: Mapping[str, str], problems_: list[errors.FieldProblem]) -> dict[str, str]:
    """The search parameters of ``GET /v1/jobs`` (issue 24); bad ones go to ``problems_``."""
    out: dict[str, str] = {}
    if "idempotency_key" in q:
        if _KEY_RE.match(q["idempotency_key"]):
            out["idempotency_key"] = q["idempotency_key"]
        else:
            problems_.append(errors.FieldProblem(
                "query.idempotency_key", "8–80 printable ASCII characters, no spaces"
            ))  # fmt: skip
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
            problems_.append(errors.FieldProblem(
                "query.owner_contains", "1–255 characters, no control characters"
            ))  # fmt: skip
    return out


async def list_jobs(request: web.Request) -> web.Response:
    """GET /v1/jobs?state=&owner=&printer=&idempotency_key=&id_prefix=&owner_contains=
    &limit=&cursor= (newest first; every filter given must match)."""
    problems_: list[errors.FieldProblem] = []
    q = _query(request, _LIST_PARAMS, problems_)
    found = _search(q, problems_)
    state = None
    if "state" in q:
        try:
            state = JobState(q["state"])
        except ValueError:
            problems_.append(
                errors.FieldProblem("query.state", f"one of {', '.join(s.value for s in JobState)}")
            )
    limit, before = _paging(q, 50, problems_)
    if problems_:
        raise invalid("invalid query parameters", problems_, "query")
    service = _deps(request).service
    search = JobSearch(state=state, owner=q.get("owner"), printer=q.get("printer"), **found)
    jobs = await search_jobs(service, search, before_seq=before, limit=limit)
    done = [j.id for j in jobs if j.state is JobState.DONE]
    reprints = await ReprintService(service).reprints_of(done)
    next_cursor = str(jobs[-1].seq) if len(jobs) == limit else None
    return _json(JobListOut(
        jobs=[JobOut.from_record(j, reprints.get(j.id, ())) for j in jobs],
        next_cursor=next_cursor,
    ))  # fmt: skip


#: Each body model with no field given (the models are frozen: one instance serves all).
_EMPTY: dict[type[BaseModel], BaseModel] = {}


def _empty(model: type[_Body]) -> _Body:
    empty = _EMPTY.get(model)
    if empty is None:
        # (a model with required fields raises ValidationError: its callers say "required")
        empty = _EMPTY[model] = model.model_validate({})
    assert isinstance(empty, model)
    return empty


async def required_json(request: web.Request, model: type[_Model], example: str) -> _Model:
    """The request's JSON body as ``model``; no body is 422 ``invalid-request`` saying
    ``example`` (raises as the optional bodies do otherwise)."""
    raw = await _json_body(request)
    if raw is None:
        raise errors.InvalidRequest(
            f"a JSON body is required, e.g. {example}", [errors.FieldProblem("body", "required")]
        )
    return _parse_body(raw, model, example)


async def _optional_json(request: web.Request, model: type[_Body]) -> _Body:
    raw = await _json_body(request)
    return _empty(model) if raw is None else _parse_body(raw, model)


async def _json_body(request: web.Request) -> bytearray | None:
    """The body's bytes (None: no body, or only whitespace), read within body_timeout_s."""
    if not request.can_read_body:  # no body at all (Content-Length: 0): nothing to wait for
        return None
    if request.content_length is not None and request.content_length > MAX_JSON_BODY:
        raise errors.PayloadTooLarge("the request body", MAX_JSON_BODY)
    timeout_s = _deps(request).config.server.body_timeout_s
    raw = bytearray()
    try:
        async with asyncio.timeout(timeout_s):
            # read() returns what has arrived so far: loop until the end of the body.
            while chunk := await request.content.read(MAX_JSON_BODY + 1 - len(raw)):
                raw += chunk
                if len(raw) > MAX_JSON_BODY:
                    raise errors.PayloadTooLarge("the request body", MAX_JSON_BODY)
    except TimeoutError:
        raise errors.BodyTimeout(timeout_s) from None
    if not raw.strip():
        return None
    if request.content_type not in ("application/json", "application/octet-stream"):
        raise errors.UnsupportedDocument("send the body as application/json")
    return raw


def _parse_body(
    raw: bytearray, model: type[_Model], example: str = '{"printer": "printer-01"}'
) -> _Model:
    if (key := duplicate_key(raw)) is not None:
        raise duplicate_key_problem(key, "the body")
    try:
        return model.model_validate_json(raw)
    except ValidationError as exc:
        if any(e["type"] == "json_invalid" for e in exc.errors()):
            raise errors.MalformedRequest("the body is not valid JSON", "malformed-json") from None
        if any(e["type"] == "model_type" and not e["loc"] for e in exc.errors()):
            raise errors.InvalidRequest(
                f"the body must be a JSON object, e.g. {example}",
                [errors.FieldProblem("body", "expected a JSON object")],
            ) from None
        raise invalid("invalid body", validation_problems(exc, "body"), "body") from None


async def release_job(request: web.Request) -> web.Response:
    """POST /v1/jobs/{id}/release with optional {"printer": …} or {"pool": …}."""
    caller = request[CALLER]
    job_id = _job_id(request)
    body = await _optional_json(request, ReleaseRequest)
    job = await _deps(request).service.front.release(
        job_id, caller, printer=body.printer, pool=body.pool, pin=body.pin
    )
    return _job_json(job)


async def cancel_job(request: web.Request) -> web.Response:
    """POST /v1/jobs/{id}/cancel, optional {"pin": …}: 200 CANCELLED, or 202 while the
    printer cancels it. A kiosk cancelling a HELD job that has a release PIN must give it."""
    caller = request[CALLER]
    job_id = _job_id(request)
    body = await _optional_json(request, CancelRequest)
    job = await _deps(request).service.front.cancel(job_id, caller, pin=body.pin)
    return _job_json(job, 202 if job.state is JobState.PRINTING else 200)


async def replay_job(request: web.Request) -> web.Response:
    """POST /v1/jobs/{id}/replay (tech): DEAD → RELEASED once."""
    caller = request[CALLER]
    job = await _deps(request).service.front.replay(_job_id(request), caller)
    return _job_json(job)


async def resolve_job(request: web.Request) -> web.Response:
    """POST /v1/jobs/{id}/resolve (tech) {"printed": true|false}: settle an unknown outcome."""
    caller = request[CALLER]
    job_id = _job_id(request)
    body = await _optional_json(request, ResolveRequest)
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
    job = await _deps(request).service.resolutions.resolve(
        job_id, caller, printed=bool(body.printed), rest=bool(body.rest)
    )
    return _job_json(job)


# --- health and metrics ------------------------------------------------------------


async def healthz(request: web.Request) -> web.Response:
    """GET /healthz: the process and its event loop answer."""
    return _json(Health(status="ok"))


async def readyz(request: web.Request) -> web.Response:
    """GET /readyz: 200 when the store takes a write transaction within 2 s, else 503."""
    try:
        async with asyncio.timeout(2.0):
            await _deps(request).ready()
    except (errors.StoreError, TimeoutError) as exc:
        return _json(Health(status="unavailable", detail=str(exc) or "store timed out"), 503)
    return _json(Health(status="ok"))


async def metrics(request: web.Request) -> web.Response:
    """GET /metrics: Prometheus text format (a token with ``[metrics] token_required``)."""
    deps = _deps(request)
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


# --- technicians: printers and the dead-letter queue ---------------------------------


def _printer_out(
    snap: PrinterSnapshot, depths: dict[tuple[str | None, str | None], int],
    oldest: dict[tuple[str | None, str | None], float], now: float,
) -> PrinterOut:  # fmt: skip
    key = (snap.name, None)
    return PrinterOut(
        name=snap.name, uri=snap.uri, pool=snap.pool, healthy=snap.healthy,
        health_reason=_shown(snap.health_reason), reachable=snap.reachable, paused=snap.paused,
        printer_state=snap.printer_state, printer_state_reasons=list(snap.printer_state_reasons),
        printer_state_message=snap.printer_state_message,
        reasons=[_reason_out(r) for r in snap.reasons],
        queued_job_count=snap.queued_job_count, waiting=depths.get(key, 0),
        oldest_waiting_s=_age(oldest.get(key), now),
        printing_job=snap.printing_job, last_error=_shown(snap.last_error),
        problems=[
            PrinterProblemOut(kind=p.kind, text=p.text, since=rfc3339_ms(p.since),
                              until=None if p.until is None else rfc3339_ms(p.until),
                              evidence=p.evidence)
            for p in snap.problems
        ],
        problem=next((p.text for p in snap.problems if p.until is None), None),
        capabilities=(
            PrinterCapabilitiesOut(**snap.capabilities) if snap.capabilities is not None else None
        ),
        sends=snap.sends, owner=snap.owner, lease_epoch=snap.lease_epoch, epoch=snap.epoch,
        epoch_began_at=(
            datetime.fromtimestamp(snap.epoch_began_at, UTC)
            if snap.epoch_began_at is not None
            else None
        ),
        epoch_cause=snap.epoch_cause, personality=snap.personality,
        media_ready=ReadyMediaOut.of(snap.stock) if snap.stock is not None else None,
        media_from="config" if snap.stock_from == "config" else (
            "printer" if snap.stock_from == "printer" else None
        ),
        supplies=[SupplyOut(**asdict(x)) for x in snap.supply_levels],
        media_levels=[MediaLevelOut(**asdict(x)) for x in snap.media_levels],
        runway=RunwayOut(**asdict(snap.runway)) if snap.runway is not None else None,
        unreachable_since=(
            datetime.fromtimestamp(snap.unreachable_since, UTC)
            if snap.unreachable_since is not None
            else None
        ),
    )  # fmt: skip


#: health_reason and last_error hold a printer's own text: escaped and cut to this many chars
#: (longer than a problem's evidence: a certificate change names two fingerprints and how).
SHOWN_CHARS = 1000


def _shown(text: str | None) -> str | None:
    """A printer's text (its message inside a health reason, an error) escaped and cut."""
    return None if text is None else printable.escape(text, SHOWN_CHARS)


def _reason_out(r: reasons.Reason) -> PrinterReasonOut:
    since = datetime.fromtimestamp(r.since, UTC) if r.since is not None else None
    return PrinterReasonOut(
        value=r.value, keyword=r.keyword, severity=r.severity,
        known=r.known, words=r.words, since=since,
    )  # fmt: skip


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
        StockWaitOut(printer=w.printer, pool=w.pool, size=w.sizes.describe(), jobs=w.jobs,
                     reason=w.reason or "")
        for w in deps.service.stock.waits
        if names is None or w.printer in names
    ]  # fmt: skip
    return PrintersOut(printers=printers, pools=pools, waiting_for_stock=waits)


async def list_printers(request: web.Request) -> web.Response:
    """GET /v1/printers (tech): health, IPP state, queue depths."""
    return _json(await _printers_out(_deps(request)))


async def _one_printer(deps: Deps, name: str) -> PrinterOut:
    out = await _printers_out(deps, {name})
    if not out.printers:
        raise errors.PrinterNotFound(name)
    return out.printers[0]


def _pause_handler(paused: bool) -> Handler:
    async def handler(request: web.Request) -> web.Response:
        caller = request[CALLER]
        name = request.match_info["name"]
        deps = _deps(request)
        await deps.service.printers.set_paused(name, paused, caller)
        return _json(await _one_printer(deps, name))

    return handler


#: POST /v1/printers/{name}/pause (tech): no new work; the job in hand finishes.
pause_printer = _pause_handler(True)
#: POST /v1/printers/{name}/resume (tech).
resume_printer = _pause_handler(False)


async def trust_printer(request: web.Request) -> web.Response:
    """POST /v1/printers/{name}/trust (tech): pin the certificate it presents from now on."""
    caller = request[CALLER]
    name = request.match_info["name"]
    deps = _deps(request)
    await deps.service.printers.trust_printer(name, caller)
    return _json(await _one_printer(deps, name))


async def media_loaded(request: web.Request) -> web.Response:
    """POST /v1/printers/{name}/media-loaded (tech): a new roll is in; its runway from full."""
    caller = request[CALLER]
    name = request.match_info["name"]
    deps = _deps(request)
    await deps.service.printers.media_loaded(name, caller)
    printer = await _one_printer(deps, name)
    return _json(MediaLoadedOut(printer=name, runway=printer.runway))


async def drain_printer(request: web.Request) -> web.Response:
    """POST /v1/printers/{name}/drain (tech): pause it and move its waiting jobs to its pool."""
    caller = request[CALLER]
    name = request.match_info["name"]
    deps = _deps(request)
    moved = await deps.service.printers.drain(name, caller)
    return _json(DrainOut(printer=await _one_printer(deps, name), moved=moved))


async def identify_printer(request: web.Request) -> web.Response:
    """POST /v1/printers/{name}/identify (tech), optional {"how": …}: the printer shows itself."""
    caller = request[CALLER]
    name = request.match_info["name"]
    body = await _optional_json(request, IdentifyRequest)
    deps = _deps(request)
    done = await deps.service.printers.identify(name, body.how, caller, deps.identify)
    return _json(IdentifyOut(printer=name, action=done.action, printer_job_id=done.printer_job_id))


async def dead_letter(request: web.Request) -> web.Response:
    """GET /v1/dead-letter?limit=&cursor= (tech): DEAD jobs, oldest first."""
    problems_: list[errors.FieldProblem] = []
    q = _query(request, {"limit", "cursor"}, problems_)
    limit, cursor = _paging(q, 100, problems_)
    after = cursor or 0
    if problems_:
        raise invalid("invalid query parameters", problems_, "query")
    service = _deps(request).service
    dead = await service.views.dead_letters(after_seq=after, limit=limit)
    counts = await service.views.jobs_by_state()
    rehearsal = await service.views.jobs_by_state(rehearsal=True)  # a person acts on those too
    return _json(
        DeadLetterOut(
            jobs=[JobOut.from_record(j) for j in dead],
            count=counts[JobState.DEAD] + rehearsal[JobState.DEAD],
            next_cursor=str(dead[-1].seq) if len(dead) == limit else None,
        )
    )


async def stats(request: web.Request) -> web.Response:
    """GET /v1/stats (tech): jobs by state, dead letters by reason, printers in short."""
    deps = _deps(request)
    st = await deps.service.views.stats()
    printers = [
        PrinterSummaryOut(
            name=snap.name, pool=snap.pool, healthy=snap.healthy,
            health_reason=snap.health_reason, reachable=snap.reachable, paused=snap.paused,
            waiting=st.waiting.get((snap.name, None), 0),
            oldest_waiting_s=_age(st.oldest_waiting.get((snap.name, None)), st.at),
            printing_job=snap.printing_job,
        )
        for snap in deps.printers()
    ]  # fmt: skip
    pools = [
        PoolOut(
            name=pool, printers=list(members), waiting=st.waiting.get((None, pool), 0),
            oldest_waiting_s=_age(st.oldest_waiting.get((None, pool)), st.at),
        )
        for pool, members in deps.config.pools.items()
    ]  # fmt: skip
    return _json(
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
    q = _query(request, {"state", "limit", "cursor"}, problems_)
    if q.get("state", "failed") != "failed":
        problems_.append(errors.FieldProblem("query.state", "only 'failed' deliveries are kept"))
    limit, cursor = _paging(q, 100, problems_)
    if problems_:
        raise invalid("invalid query parameters", problems_, "query")
    failed = await _deps(request).service.printers.failed_webhook_deliveries(
        after_seq=cursor or 0, limit=limit
    )
    out = [
        WebhookDeliveryOut(
            state="failed", url=_shown_url(f.url), webhook_id=f.event_id, type=f.type,
            job_id=f.job_id, printer=f.printer, attempts=f.attempts,
            first_attempt_at=iso_time(f.first_attempt_at), failed_at=iso_time(f.failed_at),
            last_error=f.last_error,
        )
        for f in failed
    ]  # fmt: skip
    next_cursor = str(failed[-1].seq) if len(failed) == limit else None
    return _json(WebhookDeliveriesOut(deliveries=out, next_cursor=next_cursor))
