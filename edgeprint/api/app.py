"""What every handler shares: the app's dependencies and keys, the role check, the
middleware (problems, correlation id, timing), JSON answers, query parameters and bodies.

The handlers live by subject (:mod:`edgeprint.api.jobs`, :mod:`edgeprint.api.printers`,
:mod:`edgeprint.api.health`, …); which route runs which handler, with which role, is the
table in :mod:`edgeprint.api.routes`.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import re
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar, cast

from aiohttp import web
from pydantic import BaseModel, ValidationError

from edgeprint import errors
from edgeprint.api import problems, refusals
from edgeprint.api.auth import Needed, TokenAuth
from edgeprint.api.ratelimit import TokenRateLimiter
from edgeprint.api.uploads import (
    duplicate_key,
    duplicate_key_problem,
    invalid,
    validation_problems,
)
from edgeprint.config import Config, ServerConfig
from edgeprint.logs import log_event
from edgeprint.metrics import Metrics
from edgeprint.models import (
    IDEMPOTENCY_KEY_PATTERN,
    JOB_ID_PATTERN,
    CancelRequest,
    IdentifyRequest,
    OwnerCredentialsIn,
    ReleaseLookupIn,
    ReleasePreviewIn,
    ReleasePrintIn,
    ReleaseRequest,
    ResolveRequest,
    job_json,
)
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

log = logging.getLogger(__name__)

#: The optional JSON body of a release or a cancel.
_Body = TypeVar(
    "_Body",
    ReleaseRequest,
    CancelRequest,
    ResolveRequest,
    IdentifyRequest,
    OwnerCredentialsIn,
    ReleaseLookupIn,
    ReleasePrintIn,
    ReleasePreviewIn,  # issue 24
)
#: A JSON body that must be there.
_Model = TypeVar("_Model", bound=BaseModel)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

IDEMPOTENCY_KEY_RE = re.compile(IDEMPOTENCY_KEY_PATTERN)
_JOB_ID_RE = re.compile(JOB_ID_PATTERN)
_CORRELATION_RE = re.compile(r"^[\x21-\x7e]{1,128}$")
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
#: Who asks, set by the route's role check (edgeprint.api.factory) before the handler runs.
CALLER = web.RequestKey("caller", Caller)


def deps_of(request: web.Request) -> Deps:
    return request.app[DEPS]


async def authorize(request: web.Request, needed: Needed) -> Caller:
    """Who asks, with a role that grants ``needed``; raises errors.Unauthorized,
    errors.Forbidden, errors.RateLimited."""
    deps = deps_of(request)
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


def json_response(model: BaseModel, status: int = 200, **headers: str) -> web.Response:
    return web.Response(
        status=status,
        body=model.model_dump_json().encode(),
        content_type="application/json",
        headers=headers or None,
    )


def job_response(job: JobRecord, status: int = 200, **headers: str) -> web.Response:
    """The job as :class:`JobOut` JSON (serialised without building the model: the hot path)."""
    return web.Response(
        status=status,
        body=job_json(job),
        content_type="application/json",
        headers=headers or None,
    )


def job_id_of(request: web.Request) -> str:
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
    if not IDEMPOTENCY_KEY_RE.match(key):
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
        log_event(
            log,
            "internal_error",
            message="unhandled error",
            level=logging.ERROR,
            exc_info=True,
            path=request.path,
            correlation_id=cid,
        )
        resp = problems.problem(500, "internal-error", "unexpected error; see the appliance log")
    resp.headers["X-Correlation-ID"] = cid
    resource = request.match_info.route.resource
    route = resource.canonical if resource is not None else "unmatched"
    deps_of(request).metrics.observe_http(route, resp.status, time.perf_counter() - started)
    return resp


def query_params(
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


def paging(
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


async def optional_json(request: web.Request, model: type[_Body]) -> _Body:
    raw = await _json_body(request)
    return _empty(model) if raw is None else _parse_body(raw, model)


async def _json_body(request: web.Request) -> bytearray | None:
    """The body's bytes (None: no body, or only whitespace), read within body_timeout_s."""
    if not request.can_read_body:  # no body at all (Content-Length: 0): nothing to wait for
        return None
    if request.content_length is not None and request.content_length > MAX_JSON_BODY:
        raise errors.PayloadTooLarge("the request body", MAX_JSON_BODY)
    timeout_s = deps_of(request).config.server.body_timeout_s
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
