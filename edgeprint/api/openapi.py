"""The OpenAPI 3.1 document of the v1 API, served at ``GET /v1/openapi.json``.

Sources: the JSON schemas come from the pydantic models in
:mod:`edgeprint.models` (``models_json_schema``, request models in validation
mode, answers in serialization mode); paths, operations, parameters and every
status a handler can give are written once, in :data:`OPERATIONS` below, next
to the handlers' own behaviour in :mod:`edgeprint.api.app` and the error table
in :mod:`edgeprint.api.problems`. ``tests/test_contract.py`` runs schemathesis
against a live appliance with this document, so a drift fails CI.

The document is served **without a token**: it describes the API and holds no
data. It is built once (at app start, by :func:`add_routes`) and cached.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from typing import Any, Literal

from aiohttp import web
from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from edgeprint import __version__
from edgeprint.config import NAME_PATTERN
from edgeprint.ipp_server.attributes import ICON_SIZES
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
    PrinterOut,
    PrintersOut,
    Problem,
    ReleaseRequest,
    ResolveRequest,
    StatsOut,
    SubmitMetadata,
    WebhookDeliveriesOut,
)

__all__ = ["OPERATIONS", "PATH", "Operation", "add_routes", "document", "document_bytes"]

#: Where the document is served.
PATH = "/v1/openapi.json"
_REF = "#/components/schemas/{model}"
_PROBLEM_TYPE = "application/problem+json"

_REQUEST_MODELS: tuple[type[BaseModel], ...] = (
    SubmitMetadata, ReleaseRequest, CancelRequest, ResolveRequest, IdentifyRequest,
)  # fmt: skip
_RESPONSE_MODELS: tuple[type[BaseModel], ...] = (
    JobOut, JobListOut, PrinterOut, PrintersOut, DrainOut, DeadLetterOut, Health, Problem,
    StatsOut, WebhookDeliveriesOut, IdentifyOut,
)  # fmt: skip

Body = Literal["multipart", "release", "cancel", "resolve", "identify"]
Role = Literal["kiosk", "tech"]


@dataclass(frozen=True)
class Answer:
    """One documented response: a model (JSON), ``Problem`` (problem+json) or raw text."""

    description: str
    model: type[BaseModel] | None = None
    #: Media type for a non-model body (``text/plain`` metrics, ``text/html`` page).
    media: str | None = None
    #: Response headers beyond X-Correlation-ID (always there): name → components key.
    headers: tuple[str, ...] = ()


@dataclass(frozen=True)
class Operation:
    """One route: method, path, who may call it, parameters, body and answers."""

    method: str
    path: str
    operation_id: str
    summary: str
    tag: str
    #: None: no token needed; else the least role that may call it.
    role: Role | None
    answers: dict[int, Answer]
    query: tuple[str, ...] = ()
    headers: tuple[str, ...] = ()
    body: Body | None = None
    description: str = ""
    links: dict[int, tuple[str, ...]] = field(default_factory=dict)


# --- answers shared by many operations --------------------------------------------------


def _problem(description: str, *headers: str) -> Answer:
    return Answer(description, Problem, headers=headers)


_401 = _problem("`unauthorized`: no, malformed or unknown bearer token", "WWW-Authenticate")
_403_TECH = _problem("`forbidden`: the token's role is not `tech`")
_404_JOB = _problem("`job-not-found` (also for an id that is not 32 lowercase hex characters)")
_404_PRINTER = _problem("`printer-not-found`")
_409 = _problem("`state-conflict`: the action does not apply to the job's state; `state` names it")
_429 = _problem("`rate-limited`: too many requests for this token", "Retry-After")
_503_STORE = _problem("`store-unavailable`: the job store cannot work now", "Retry-After")
_503_WRITE = _problem(
    "`queue-full` (the printer's and its pool's queues are at their high-water mark; nothing "
    "stored) or `store-unavailable`",
    "Retry-After",
)
_507 = _problem("`storage-full`: the appliance's disk is full; nothing was stored")
_AUTH = {401: _401, 429: _429}
_TECH = {**_AUTH, 403: _403_TECH}


def _job(description: str) -> Answer:
    return Answer(description, JobOut)


# --- the table: every route of build_app, every status its handler can give ----------------

# fmt: off
OPERATIONS: tuple[Operation, ...] = (
    Operation(
        "post", "/v1/jobs", "submitJob", "Submit a job (PDF + metadata)", "jobs", "kiosk",
        headers=("Idempotency-Key",), body="multipart",
        description=(
            "multipart/form-data with exactly two parts: `metadata` (JSON, SubmitMetadata) and "
            "`document` (a PDF). The same Idempotency-Key with the same metadata and document "
            "answers the earlier job (200, `Idempotent-Replayed: true`); with other content, "
            "422 `idempotency-key-reused`. A 4xx or 5xx stores nothing."
        ),
        answers={
            201: Answer("a new job, HELD (or RELEASED when `hold` is false)", JobOut,
                        headers=("Location",)),
            200: Answer("the job this Idempotency-Key already made (same payload)", JobOut,
                        headers=("Location", "Idempotent-Replayed")),
            400: _problem(
                "`idempotency-key-missing`, `idempotency-key-invalid`, `malformed-request` "
                "(broken or truncated multipart, duplicate part), `malformed-json` (metadata)"
            ),
            408: _problem("`request-timeout`: the body did not arrive within the time limit"),
            413: _problem("`payload-too-large`: the document, the metadata or the whole body"),
            415: _problem(
                "`unsupported-media-type`: not multipart/form-data, a document part that is "
                "not application/pdf, or a document without a `%PDF-` header"
            ),
            422: _problem(
                "`invalid-request` (metadata invalid, parts missing or unknown; `errors` lists "
                "the fields), `unknown-target` (printer or pool not configured), "
                "`idempotency-key-reused`, `document-encrypted`, `document-unreadable`, "
                "`too-many-pages`"
            ),
            503: _503_WRITE, 507: _507, **_AUTH,
        },
        links={201: ("getJob", "releaseJob", "cancelJob", "replayJob")},
    ),
    Operation(
        "get", "/v1/jobs", "listJobs", "List jobs, newest first", "jobs", "kiosk",
        query=("state", "owner", "printer", "limit", "cursor"),
        answers={
            200: Answer("a page of jobs; pass `next_cursor` as `cursor` for the next", JobListOut),
            422: _problem("`invalid-request`: a bad or unknown query parameter (`errors`)"),
            503: _503_STORE, **_AUTH,
        },
    ),
    Operation(
        "get", "/v1/jobs/{job_id}", "getJob", "A job", "jobs", "kiosk",
        answers={200: _job("the job"), 404: _404_JOB, 503: _503_STORE, **_AUTH},
    ),
    Operation(
        "post", "/v1/jobs/{job_id}/release", "releaseJob", "Release a HELD job", "jobs", "kiosk",
        body="release",
        description=(
            "HELD → RELEASED, optionally to another printer or pool (required when the job was "
            "submitted without one); `pin` when the job was submitted with a `release_pin`. Of "
            "concurrent releases exactly one wins; the others get 409."
        ),
        answers={
            200: _job("the job, RELEASED"),
            400: _problem("`malformed-json`: the body is not JSON"),
            403: _problem("`pin-required` or `pin-mismatch` (the job's release PIN)"),
            404: _404_JOB,
            408: _problem("`request-timeout`: the body did not arrive within the time limit"),
            409: _409,
            413: _problem("`payload-too-large`: the body is over 64 KiB"),
            415: _problem("`unsupported-media-type`: a body that is not application/json"),
            422: _problem(
                "`invalid-request` (bad body; `errors`), `unknown-target` (printer or pool not "
                "configured), `missing-target` (the job names no printer or pool)"
            ),
            423: _problem("`release-locked`: too many wrong PINs; retry later", "Retry-After"),
            503: _503_WRITE, 507: _507, **_AUTH,
        },
    ),
    Operation(
        "post", "/v1/jobs/{job_id}/cancel", "cancelJob", "Cancel a job", "jobs", "kiosk",
        body="cancel",
        description=(
            "HELD, RELEASED or DEAD → CANCELLED; a PRINTING job is cancelled at the printer "
            "(202). A kiosk cancelling a HELD job that has a release PIN gives `pin` (wrong PINs "
            "count towards the same lock as releases); a technician's token needs none."
        ),
        answers={
            200: _job("the job, CANCELLED"),
            202: _job("the job, still PRINTING with `cancel_requested`; the printer cancels it"),
            400: _problem("`malformed-json`: the body is not JSON"),
            403: _problem("`pin-required` or `pin-mismatch` (a HELD job's release PIN)"),
            404: _404_JOB, 409: _409,
            408: _problem("`request-timeout`: the body did not arrive within the time limit"),
            413: _problem("`payload-too-large`: the body is over 64 KiB"),
            415: _problem("`unsupported-media-type`: a body that is not application/json"),
            422: _problem("`invalid-request` (bad body; `errors`)"),
            423: _problem("`release-locked`: too many wrong PINs; retry later", "Retry-After"),
            503: _503_STORE, 507: _507, **_AUTH,
        },
    ),
    Operation(
        "post", "/v1/jobs/{job_id}/replay", "replayJob", "Replay a DEAD job (tech)", "jobs", "tech",
        answers={
            200: _job("the job, RELEASED again (exactly once)"),
            404: _404_JOB, 409: _409, 503: _503_STORE, 507: _507, **_TECH,
        },
    ),
    Operation(
        "post", "/v1/jobs/{job_id}/resolve", "resolveJob",
        "Settle a DEAD job whose outcome is unknown (tech)", "jobs", "tech", body="resolve",
        description=(
            "For a job parked DEAD `outcome_unknown` (the printer may have printed it and forgot "
            'it): `{"printed": true}` → DONE; `{"printed": false}` → RELEASED, printed once '
            "more. Of concurrent resolutions exactly one wins; the job's events record who "
            "decided and what."
        ),
        answers={
            200: _job("the job, DONE (printed) or RELEASED (not printed)"),
            400: _problem("`malformed-json`: the body is not JSON"),
            404: _404_JOB,
            408: _problem("`request-timeout`: the body did not arrive within the time limit"),
            409: _problem(
                "`outcome-not-unknown`: the job is not DEAD `outcome_unknown` (any more); "
                "`state` names its state"
            ),
            413: _problem("`payload-too-large`: the body is over 64 KiB"),
            415: _problem("`unsupported-media-type`: a body that is not application/json"),
            422: _problem("`invalid-request`: `printed` missing or not a boolean (`errors`)"),
            503: _503_STORE, 507: _507, **_TECH,
        },
    ),
    Operation(
        "get", "/v1/printers", "listPrinters", "Printers and pools (tech)", "printers", "tech",
        answers={200: Answer("every printer and pool", PrintersOut), 503: _503_STORE, **_TECH},
    ),
    *(
        Operation(
            "post", f"/v1/printers/{{name}}/{verb}", f"{verb}Printer", summary, "printers", "tech",
            answers={
                200: Answer("the printer", PrinterOut), 404: _404_PRINTER,
                503: _503_STORE, 507: _507, **_TECH,
            },
        )
        for verb, summary in (
            ("pause", "Pause a printer: no new work; the job in hand finishes (tech)"),
            ("resume", "Resume a paused printer (tech)"),
        )
    ),
    Operation(
        "post", "/v1/printers/{name}/trust", "trustPrinter",
        "Trust the certificate an ipps printer presents now (tech)", "printers", "tech",
        description=(
            "Forgets the pinned certificate fingerprint: the next contact pins the one the "
            "printer presents (after a factory reset made it a new self-signed certificate)."
        ),
        answers={
            200: Answer("the printer", PrinterOut), 404: _404_PRINTER,
            422: _problem("`invalid-request`: not an ipps printer, or pinned in the config"),
            503: _503_STORE, 507: _507, **_TECH,
        },
    ),
    Operation(
        "post", "/v1/printers/{name}/drain", "drainPrinter",
        "Pause a printer and move its waiting jobs to its pool (tech)", "printers", "tech",
        answers={
            200: Answer("the printer (paused) and the ids of the jobs moved", DrainOut),
            404: _404_PRINTER, 503: _503_STORE, 507: _507, **_TECH,
        },
    ),
    Operation(
        "post", "/v1/printers/{name}/identify", "identifyPrinter",
        "Make a printer show itself: Identify-Printer or a test page (tech)", "printers", "tech",
        body="identify",
        description=(
            "`how`: `auto` (IPP Identify-Printer when the printer lists it in "
            "operations-supported, else a one-page test print), `identify` or `test-page`. "
            "The test page is printed directly, not as a job."
        ),
        answers={
            200: Answer("what the printer was asked to do", IdentifyOut),
            400: _problem("`malformed-json`: the body is not JSON"),
            404: _404_PRINTER,
            408: _problem("`request-timeout`: the body did not arrive within the time limit"),
            409: _problem("`identify-unsupported`: the printer has no Identify-Printer"),
            413: _problem("`payload-too-large`: the body is over 64 KiB"),
            415: _problem("`unsupported-media-type`: a body that is not application/json"),
            422: _problem("`invalid-request`: a bad `how` (`errors`)"),
            502: _problem("`printer-error`: the printer failed or did not answer"),
            **_TECH,
        },
    ),
    Operation(
        "get", "/v1/dead-letter", "deadLetter", "DEAD jobs, oldest first (tech)", "jobs", "tech",
        query=("limit", "cursor"),
        answers={
            200: Answer("a page of DEAD jobs with their `dead_reason`", DeadLetterOut),
            422: _problem("`invalid-request`: a bad or unknown query parameter (`errors`)"),
            503: _503_STORE, **_TECH,
        },
    ),
    Operation(
        "get", "/v1/stats", "getStats",
        "Jobs by state, dead letters by reason, printers in short (tech)", "operations", "tech",
        description="What the status page and `edgeprint stats` show; read at the request.",
        answers={200: Answer("the numbers", StatsOut), 503: _503_STORE, **_TECH},
    ),
    Operation(
        "get", "/v1/webhooks/deliveries", "webhookDeliveries",
        "Webhook deliveries parked as failed, oldest first (tech)", "operations", "tech",
        query=("delivery_state", "limit", "cursor"),
        description=(
            "Events a receiver did not take (2xx) within its `max_delivery_s`; they are not "
            "retried. Delivered events are not listed."
        ),
        answers={
            200: Answer("a page of failed deliveries", WebhookDeliveriesOut),
            422: _problem("`invalid-request`: a bad or unknown query parameter (`errors`)"),
            503: _503_STORE, **_TECH,
        },
    ),
    Operation(
        "get", "/healthz", "healthz", "Liveness", "operations", None,
        answers={200: Answer("the process and its event loop answer", Health)},
    ),
    Operation(
        "get", "/readyz", "readyz", "Readiness", "operations", None,
        answers={
            200: Answer("the store takes a write", Health),
            503: Answer("the store cannot take a write (`status` is `unavailable`)", Health),
        },
    ),
    Operation(
        "get", "/metrics", "metrics", "Prometheus metrics", "operations", None,
        answers={
            200: Answer("Prometheus text format 0.0.4", media="text/plain"),
            503: _problem("`store-unavailable`", "Retry-After"),
        },
    ),
    Operation(
        "get", PATH, "openapi", "This document (no token: it describes the API)", "operations",
        None, answers={200: Answer("the OpenAPI 3.1 document", media="application/json")},
    ),
    Operation(
        "get", "/", "statusPage", "The technicians' live status page", "operations", None,
        description="HTML only; the page asks for a tech token and reads the API with it.",
        answers={200: Answer("the page", media="text/html")},
    ),
    Operation(
        "post", "/ipp/print/{name}", "ippQueue",
        "IPP queue of a printer or pool (edgeprint as an IPP Everywhere printer)", "ipp", None,
        description="An IPP/1.1–2.0 request (RFC 8010) as `application/ipp`; the answer is an "
        "IPP response whose status-code says how it went (README, 'Print from any device'). "
        "`[ipp] auth = \"basic\"`: HTTP Basic with the token's name and the token.",
        answers={
            200: Answer("an IPP response", media="application/ipp"),
            401: Answer("`[ipp] auth = \"basic\"` and no or wrong credentials: an IPP "
                        "response, client-error-not-authenticated", media="application/ipp",
                        headers=("WWW-Authenticate",)),
            403: Answer("the client's address is outside `[ipp] allowed_networks`: an IPP "
                        "response, client-error-not-authorized", media="application/ipp"),
            404: _problem("`not-found`: `[ipp] enabled = false`"),
            415: _problem("`unsupported-document`: the body is not `application/ipp`, or it is "
                          "compressed (Content-Encoding)"),
        },
    ),
    *(
        Operation(
            "get", f"/ipp/icons/{size}.png", f"ippIcon{size}",
            f"The IPP queues' icon, {size}x{size} (printer-icons)", "ipp", None,
            answers={
                200: Answer("a PNG", media="image/png"),
                403: _problem("`http-error`: the client's address is outside "
                              "`[ipp] allowed_networks`"),
                404: _problem("`not-found`: `[ipp] enabled = false`"),
            },
        )
        for size in ICON_SIZES
    ),
)
# fmt: on


# --- building the document ----------------------------------------------------------------


def _component_schemas() -> tuple[dict[str, Any], dict[type[BaseModel], dict[str, Any]]]:
    """Every model's JSON schema under components/schemas, and each model's ``$ref``."""
    pairs = [(m, "validation") for m in _REQUEST_MODELS]
    pairs += [(m, "serialization") for m in _RESPONSE_MODELS]
    keys, top = models_json_schema(pairs, ref_template=_REF)  # type: ignore[arg-type]
    refs: dict[type[BaseModel], dict[str, Any]] = {
        model: ref for (model, _mode), ref in keys.items() if issubclass(model, BaseModel)
    }
    return dict(top.get("$defs", {})), refs


_HEADER_DEFS: dict[str, dict[str, Any]] = {
    "X-Correlation-ID": {
        "description": "the request's X-Correlation-ID (1–128 printable ASCII characters) or "
        "one the appliance made; in its logs too",
        "required": True,
        "schema": {"type": "string", "minLength": 1, "maxLength": 128},
    },
    "Retry-After": {
        "description": "seconds to wait before retrying",
        "required": True,
        "schema": {"type": "integer", "minimum": 0},
    },
    "WWW-Authenticate": {
        "required": True,
        "schema": {"type": "string", "const": 'Bearer realm="edgeprint"'},
    },
    "Location": {
        "description": "the job's URL, `/v1/jobs/{id}`",
        "required": True,
        "schema": {"type": "string", "pattern": r"^/v1/jobs/[0-9a-f]{32}$"},
    },
    "Idempotent-Replayed": {
        "description": "the answer is the job an earlier request with this key made",
        "required": True,
        "schema": {"type": "string", "const": "true"},
    },
}

_LIMIT = {"type": "integer", "minimum": 1, "maximum": 500}
_PARAMETER_DEFS: dict[str, dict[str, Any]] = {
    "job_id": {
        "name": "job_id", "in": "path", "required": True,
        "description": "a job id (32 lowercase hex characters)",
        "schema": {"type": "string", "pattern": JOB_ID_PATTERN},
    },
    "printer_name": {
        "name": "name", "in": "path", "required": True,
        "description": "a configured printer's name",
        "schema": {"type": "string", "pattern": NAME_PATTERN},
    },
    "Idempotency-Key": {
        "name": "Idempotency-Key", "in": "header", "required": True,
        "description": "8–80 printable ASCII characters, no spaces; one key is one job, forever "
        "(within the retention window), whichever token sent it",
        "schema": {"type": "string", "pattern": IDEMPOTENCY_KEY_PATTERN},
    },
    "X-Correlation-ID": {
        "name": "X-Correlation-ID", "in": "header", "required": False,
        "description": "echoed in the response and the logs when 1–128 printable ASCII "
        "characters; otherwise the appliance makes one",
        "schema": {"type": "string", "pattern": r"^[\x21-\x7e]{1,128}$"},
    },
    "state": {
        "name": "state", "in": "query", "required": False, "description": "only jobs in this state",
        "schema": {"$ref": "#/components/schemas/JobState"},
    },
    "owner": {
        "name": "owner", "in": "query", "required": False, "description": "only this owner's jobs",
        "schema": {"type": "string"},
    },
    "printer": {
        "name": "printer", "in": "query", "required": False,
        "description": "only jobs for this printer (requested or assigned)",
        "schema": {"type": "string"},
    },
    "limit": {
        "name": "limit", "in": "query", "required": False,
        "description": "page size, 1–500 (default 50; 100 for the dead-letter queue)",
        "schema": _LIMIT,
    },
    "delivery_state": {
        "name": "state", "in": "query", "required": False,
        "description": "only `failed` (the default): deliveries given up",
        "schema": {"type": "string", "enum": ["failed"]},
    },
    "cursor": {
        "name": "cursor", "in": "query", "required": False,
        "description": "`next_cursor` of the previous page",
        "schema": {"type": "string", "pattern": r"^[0-9]{1,18}$"},
    },
}  # fmt: skip


def _param_ref(key: str) -> dict[str, str]:
    return {"$ref": f"#/components/parameters/{key}"}


def _response(ans: Answer, refs: dict[type[BaseModel], dict[str, Any]]) -> dict[str, Any]:
    headers = {h: {"$ref": f"#/components/headers/{h}"} for h in ("X-Correlation-ID", *ans.headers)}
    out: dict[str, Any] = {"description": ans.description, "headers": headers}
    if ans.model is Problem:
        out["content"] = {_PROBLEM_TYPE: {"schema": refs[Problem]}}
    elif ans.model is not None:
        out["content"] = {"application/json": {"schema": refs[ans.model]}}
    elif ans.media is not None:
        schema: dict[str, Any] = (
            {"type": "object"} if ans.media.endswith("json") else {"type": "string"}
        )
        out["content"] = {ans.media: {"schema": schema}}
    return out


def _request_body(body: Body, refs: dict[type[BaseModel], dict[str, Any]]) -> dict[str, Any]:
    if body == "multipart":
        return {
            "required": True,
            "content": {
                "multipart/form-data": {
                    "schema": {
                        "type": "object",
                        "required": ["metadata", "document"],
                        "additionalProperties": False,
                        "properties": {
                            "metadata": refs[SubmitMetadata],
                            "document": {
                                "type": "string",
                                "format": "binary",
                                "contentMediaType": "application/pdf",
                                "description": "the PDF to print (starts with `%PDF-`)",
                            },
                        },
                    },
                    "encoding": {
                        "metadata": {"contentType": "application/json"},
                        "document": {"contentType": "application/pdf"},
                    },
                }
            },
        }
    if body == "identify":
        return {
            "required": False,
            "description": 'optional; `{"how": "auto"}` is the default',
            "content": {"application/json": {"schema": refs[IdentifyRequest]}},
        }
    if body == "resolve":
        return {
            "required": True,
            "description": '`{"printed": true}` or `{"printed": false}`',
            "content": {"application/json": {"schema": refs[ResolveRequest]}},
        }
    if body == "cancel":
        return {
            "required": False,
            "description": "optional; `pin` when a kiosk cancels a HELD job that has a PIN",
            "content": {"application/json": {"schema": refs[CancelRequest]}},
        }
    return {
        "required": False,
        "description": "optional; an empty body releases to the job's own printer or pool",
        "content": {"application/json": {"schema": refs[ReleaseRequest]}},
    }


_LINK_TARGETS = {"getJob", "releaseJob", "cancelJob", "replayJob"}


def _operation(op: Operation, refs: dict[type[BaseModel], dict[str, Any]]) -> dict[str, Any]:
    params = []
    if "{job_id}" in op.path:
        params.append(_param_ref("job_id"))
    if "{name}" in op.path:
        params.append(_param_ref("printer_name"))
    params += [_param_ref(h) for h in op.headers]
    params += [_param_ref(q) for q in op.query]
    params.append(_param_ref("X-Correlation-ID"))
    role_note = {
        None: "No token.",
        "kiosk": "Token role: kiosk or tech.",
        "tech": "Token role: tech.",
    }[op.role]
    out: dict[str, Any] = {
        "operationId": op.operation_id,
        "summary": op.summary,
        "description": f"{op.description} {role_note}".strip(),
        "tags": [op.tag],
        "security": [] if op.role is None else [{"bearer": []}],
        "parameters": params,
        "responses": {},
    }
    if op.role is not None:
        out["x-edgeprint-role"] = op.role
    if op.body is not None:
        out["requestBody"] = _request_body(op.body, refs)
    for status in sorted(op.answers):
        resp = _response(op.answers[status], refs)
        targets = op.links.get(status, ())
        if targets:
            resp["links"] = {
                t: {"operationId": t, "parameters": {"job_id": "$response.body#/id"}}
                for t in targets
                if t in _LINK_TARGETS
            }
        out["responses"][str(status)] = resp
    return out


@functools.cache
def document() -> dict[str, Any]:
    """The OpenAPI 3.1 document as a dict (built once; do not mutate)."""
    schemas, refs = _component_schemas()
    paths: dict[str, dict[str, Any]] = {}
    for op in OPERATIONS:
        paths.setdefault(op.path, {})[op.method] = _operation(op, refs)
    return {
        "openapi": "3.1.0",
        "jsonSchemaDialect": "https://spec.openapis.org/oas/3.1/dialect/base",
        "info": {
            "title": "edgeprint",
            "version": __version__,
            "summary": "Print-job appliance: kiosks submit PDFs, printers print them exactly once",
            "description": (
                "JSON in and out; errors are application/problem+json (RFC 9457) with a stable "
                "`type` `urn:edgeprint:problem:<slug>`, a human `detail` and, for 409, the "
                "job's current `state`. Every response carries X-Correlation-ID. Any request "
                "may also be refused before it reaches an operation: 400 problem+json when "
                "its head is malformed or too large; at `max_connections` a new connection "
                "waits until one is free. This document is served without a token: it describes "
                "the API and holds no data."
            ),
        },
        "tags": [
            {"name": "jobs", "description": "submit, follow, release, cancel, replay"},
            {"name": "printers", "description": "technicians: health, pause, resume, drain"},
            {"name": "operations", "description": "health, readiness, metrics, this document"},
            {
                "name": "ipp",
                "description": "edgeprint as a printer: one IPP queue per printer and pool",
            },
        ],
        "paths": paths,
        "components": {
            "schemas": schemas,
            "parameters": _PARAMETER_DEFS,
            "headers": _HEADER_DEFS,
            "securitySchemes": {
                "bearer": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "a token from the config's [[tokens]]; role kiosk (submit, "
                    "release, cancel, read jobs) or tech (everything)",
                }
            },
        },
        "security": [{"bearer": []}],
    }


@functools.cache
def document_bytes() -> bytes:
    """The document as the JSON bytes that are served (built once)."""
    return json.dumps(document(), ensure_ascii=False, separators=(",", ":")).encode()


async def openapi_json(request: web.Request) -> web.Response:
    """GET /v1/openapi.json: the contract; no token (it describes the API, holds no data)."""
    return web.Response(body=document_bytes(), content_type="application/json")


def add_routes(app: web.Application) -> None:
    """Build the document now (not on the first request) and register ``GET`` :data:`PATH`."""
    document_bytes()
    app.router.add_get(PATH, openapi_json)
