"""The OpenAPI 3.1 document of the v1 API, served at ``GET /v1/openapi.json``.

Sources: the JSON schemas come from the pydantic models in
:mod:`edgeprint.models` (``models_json_schema``, request models in validation
mode, answers in serialization mode); paths, operations, roles, parameters and
every status a handler can give are written once, in the route table
:data:`edgeprint.api.routes.ROUTES`, which also registers the routes and checks
their roles. ``tests/test_contract.py`` runs schemathesis
against a live appliance with this document, so a drift fails CI.

The document is served **without a token**: it describes the API and holds no
data. It is built once (at app start, by ``routes.build_app``) and cached.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from aiohttp import web
from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from edgeprint import __version__
from edgeprint.config import NAME_PATTERN
from edgeprint.models import (
    IDEMPOTENCY_KEY_PATTERN,
    JOB_ID_PATTERN,
    ApplianceTlsOut,
    AuditOut,
    BulkCancelRequest,
    BulkOut,
    BulkReleaseRequest,
    BulkReplayRequest,
    BulkResolveRequest,
    CancelRequest,
    DeadLetterOut,
    DrainOut,
    EventOut,
    Health,
    IdentifyOut,
    IdentifyRequest,
    JobListOut,
    JobOut,
    JobStoryOut,
    MediaLoadedOut,
    OwnerCredentialsIn,
    OwnerCredentialsOut,
    PrinterCheckOut,
    PrinterOut,
    PrintersOut,
    Problem,
    ReleaseLookupIn,
    ReleaseLookupOut,
    ReleasePreviewIn,
    ReleasePrintIn,
    ReleasePrintOut,
    ReleaseRequest,
    ReprintRequest,
    ResolveRequest,
    StatsOut,
    SubmitMetadata,
    TokenOut,
    TokensOut,
    WebhookDeliveriesOut,
)

__all__ = ["PATH", "Answer", "Operation", "document", "document_bytes", "openapi_json"]

#: Where the document is served.
PATH = "/v1/openapi.json"
_REF = "#/components/schemas/{model}"
_PROBLEM_TYPE = "application/problem+json"

_REQUEST_MODELS: tuple[type[BaseModel], ...] = (
    SubmitMetadata, ReleaseRequest, CancelRequest, ResolveRequest, IdentifyRequest,
    OwnerCredentialsIn, ReleaseLookupIn, ReleasePrintIn, ReleasePreviewIn,  # issue 24
    BulkReleaseRequest, BulkCancelRequest, BulkReplayRequest, BulkResolveRequest,  # issue 24
    ReprintRequest,  # issue 24
)  # fmt: skip
_RESPONSE_MODELS: tuple[type[BaseModel], ...] = (
    JobOut, JobListOut, PrinterOut, PrintersOut, DrainOut, DeadLetterOut, Health, Problem,
    StatsOut, WebhookDeliveriesOut, IdentifyOut, EventOut, PrinterCheckOut,
    MediaLoadedOut,  # issue 23 (supplies)
    OwnerCredentialsOut, ReleaseLookupOut, ReleasePrintOut,  # issue 24 (release)
    BulkOut,  # issue 24 (many jobs at once)
    JobStoryOut,  # issue 24
    TokenOut, TokensOut,  # issue 26
    AuditOut,  # issue 26 (who did what)
    ApplianceTlsOut,  # issue 26
)  # fmt: skip

Body = Literal[
    "multipart",
    "release",
    "cancel",
    "resolve",
    "identify",
    "bulk-release",
    "bulk-cancel",
    "bulk-replay",
    "bulk-resolve",
    "reprint",
    "upload",
    "owner-credentials",
    "release-lookup",
    "release-print",
    "release-preview",
]
#: The bulk calls' bodies (issue 24): required JSON, `limit` always.
_BULK_BODIES: dict[str, type[BaseModel]] = {
    "bulk-release": BulkReleaseRequest,
    "bulk-cancel": BulkCancelRequest,
    "bulk-replay": BulkReplayRequest,
    "bulk-resolve": BulkResolveRequest,
}
#: What a route needs (edgeprint.api.auth.Needed without "station", which no route needs).
Role = Literal["kiosk", "tech", "read", "view"]
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


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
    """One route: its handler, method, path, who may call it, parameters, body and answers.

    The rows are :data:`edgeprint.api.routes.ROUTES`: they register the routes,
    decide the role each needs and make this document.
    """

    #: The aiohttp handler (None: ``bind`` makes it from the app's IPP endpoint).
    handler: Handler | None
    method: str
    path: str
    operation_id: str
    summary: str
    tag: str
    #: None: no token needed; else what the token's role must grant (edgeprint.api.auth).
    role: Role | None
    answers: dict[int, Answer]
    query: tuple[str, ...] = ()
    headers: tuple[str, ...] = ()
    body: Body | None = None
    description: str = ""
    links: dict[int, tuple[str, ...]] = field(default_factory=dict)
    #: Makes the handler from the app's one :class:`edgeprint.api.ipp.IppEndpoint` (built
    #: with the app, so every IPP route shares its state).
    bind: Callable[[Any], Handler] | None = None


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
    "ETag": {
        "description": "names the document, page and width: the same tag, the same bytes",
        "required": True,
        "schema": {"type": "string"},
    },
    "Cache-Control": {
        "description": "private (it shows someone's document), kept for an hour",
        "required": True,
        "schema": {"type": "string"},
    },
    "Content-Disposition": {
        "description": "`attachment` with a file name",
        "required": True,
        "schema": {"type": "string"},
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
    "owner_path": {
        "name": "owner", "in": "path", "required": True,
        "description": "an owner, as jobs name it (1–128 printable characters)",
        "schema": {"type": "string", "minLength": 1, "maxLength": 128},
    },
    "ipp_job_id": {
        "name": "job", "in": "path", "required": True,
        "description": "an IPP job-id (the last segment of the job-uri a queue answered)",
        "schema": {"type": "string", "pattern": "^[0-9]{1,10}$"},
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
    "idempotency_key": {
        "name": "idempotency_key", "in": "query", "required": False,
        "description": "only the job made with this Idempotency-Key (exact)",
        "schema": {"type": "string", "pattern": IDEMPOTENCY_KEY_PATTERN},
    },
    "id_prefix": {
        "name": "id_prefix", "in": "query", "required": False,
        "description": "only jobs whose id starts with these 4–32 lowercase hex characters",
        "schema": {"type": "string", "pattern": r"^[0-9a-f]{4,32}$"},
    },
    "owner_contains": {
        "name": "owner_contains", "in": "query", "required": False,
        "description": "only jobs whose owner contains this text, case-insensitive (`%` and "
        "`_` match themselves)",
        "schema": {"type": "string", "minLength": 1, "maxLength": 255,
                   "pattern": r"^[^\x00-\x1f\x7f-\x9f]+$"},
    },
    "limit": {
        "name": "limit", "in": "query", "required": False,
        "description": "page size, 1–500 (default 50; 100 for the dead-letter queue)",
        "schema": _LIMIT,
    },
    "page": {
        "name": "page", "in": "query", "required": False,
        "description": "the page to draw, from 1 (default 1)",
        "schema": {"type": "integer", "minimum": 1},
    },
    "width": {
        "name": "width", "in": "query", "required": False,
        "description": "pixels, 50–1200 (default 300)",
        "schema": {"type": "integer", "minimum": 50, "maximum": 1200},
    },
    "base": {
        "name": "base", "in": "query", "required": False,
        "description": "the release pages' base URL, e.g. `http://print.example.org:8631`",
        "schema": {"type": "string", "maxLength": 200},
    },
    "delivery_state": {
        "name": "state", "in": "query", "required": False,
        "description": "only `failed` (the default): deliveries given up",
        "schema": {"type": "string", "enum": ["failed"]},
    },
    "since": {
        "name": "since", "in": "query", "required": False,
        "description": "only rows at or after this time: RFC 3339 with an offset, or unix seconds",
        "schema": {"type": "string", "maxLength": 40},
    },
    "audit_limit": {
        "name": "limit", "in": "query", "required": False,
        "description": "rows, 1–1000 (default 100)",
        "schema": {"type": "integer", "minimum": 1, "maximum": 1000},
    },
    **{
        f"audit_{name}": {
            "name": name, "in": "query", "required": False, "description": f"only this {name}",
            "schema": {"type": "string", "minLength": 1, "maxLength": 255,
                       "pattern": r"^[^\x00-\x1f\x7f-\x9f]+$"},
        }
        for name in ("actor", "action", "target")
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


_JSON_BODIES: dict[str, tuple[type[BaseModel], str]] = {
    "owner-credentials": (OwnerCredentialsIn, "`release_code`, `card` or both"),
    "release-lookup": (ReleaseLookupIn, '`{"code"}`, `{"card"}` or `{"pin", "job"}`'),
    "release-preview": (ReleasePreviewIn, "the credential and `job_id`, one of its HELD jobs"),
    "release-print": (ReleasePrintIn, 'the credential and `{"jobs": [ids]}` or `{"all": true}`'),
}


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
                                "description": "the PDF to print (starts with `%PDF-`), or a "
                                "label in ZPL sent as Content-Type application/vnd.zebra-zpl",
                            },
                        },
                    },
                    "encoding": {
                        "metadata": {"contentType": "application/json"},
                        "document": {"contentType": "application/pdf, application/vnd.zebra-zpl"},
                    },
                }
            },
        }
    if body in _JSON_BODIES:
        model, description = _JSON_BODIES[body]
        return {
            "required": True,
            "description": description,
            "content": {"application/json": {"schema": refs[model]}},
        }
    if body in _BULK_BODIES:
        return {
            "required": True,
            "description": '`{"ids": [...], "limit": N}` or `{"filter": {...}, "limit": N}`',
            "content": {"application/json": {"schema": refs[_BULK_BODIES[body]]}},
        }
    if body == "upload":
        return {
            "required": True,
            "content": {
                "multipart/form-data": {
                    "schema": {
                        "type": "object",
                        "required": ["owner", "target", "form_key", "document"],
                        "properties": {
                            "owner": {"type": "string", "description": "the person's name"},
                            "target": {
                                "type": "string",
                                "description": "`printer:NAME` or `pool:NAME`",
                            },
                            "form_key": {
                                "type": "string",
                                "description": "the one-time key of the form GET /upload gave",
                            },
                            "document": {
                                "type": "string",
                                "format": "binary",
                                "contentMediaType": "application/pdf",
                            },
                        },
                    }
                }
            },
        }
    if body == "identify":
        return {
            "required": False,
            "description": 'optional; `{"how": "auto"}` is the default',
            "content": {"application/json": {"schema": refs[IdentifyRequest]}},
        }
    if body == "reprint":
        return {
            "required": True,
            "description": '`{"reason": "badge lost"}`: why it is printed again',
            "content": {"application/json": {"schema": refs[ReprintRequest]}},
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
    if "{owner}" in op.path:
        params.append(_param_ref("owner_path"))
    if "{job}" in op.path:
        params.append(_param_ref("ipp_job_id"))
    params += [_param_ref(h) for h in op.headers]
    params += [_param_ref(q) for q in op.query]
    params.append(_param_ref("X-Correlation-ID"))
    role_note = {
        None: "No token.",
        "kiosk": "Token role: kiosk or tech.",
        "tech": "Token role: tech.",
        "read": "Token role: kiosk, viewer or tech.",
        "view": "Token role: viewer or tech.",
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
    # The table names this module's handler: read it at the first build, not at import.
    from edgeprint.api.routes import ROUTES

    for op in ROUTES:
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
                "name": "release",
                "description": "release where you stand: owners' codes and cards, the "
                "release page of each printer and pool and its two calls",
            },
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
                    "release, cancel, read jobs), tech (everything), viewer (read jobs, "
                    "printers, stats, the dead-letter queue and metrics; no action) or station "
                    "(only the release pages of its printers). A token past its `expires` is "
                    "refused (401).",
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
