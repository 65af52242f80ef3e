"""The OpenAPI 3.1 document of the v1 API, served at ``GET /v1/openapi.json``.

Sources: the JSON schemas come from the pydantic models in
:mod:`edgeprint.models` (``models_json_schema``, request models in validation
mode, answers in serialization mode); paths, operations, roles, parameters and
every status a handler can give are written once, in the route table
:data:`edgeprint.api.routes.ROUTES`, whose rows also register the routes and check
their roles; this module only reads it. ``tests/test_contract.py`` runs schemathesis
against a live appliance with this document, so a drift fails CI.

The document is served **without a token**: it describes the API and holds no
data. It is built once (at app start, by ``factory.build_app``) and cached.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from edgeprint import __version__
from edgeprint.api import openapi_components
from edgeprint.api.route_table import Answer, Body, Operation
from edgeprint.api.routes import ROUTES
from edgeprint.models import (
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

_REF = "#/components/schemas/{model}"
_PROBLEM_TYPE = "application/problem+json"

_REQUEST_MODELS: tuple[type[BaseModel], ...] = (
    *(SubmitMetadata, ReleaseRequest, CancelRequest, ResolveRequest, IdentifyRequest),
    *(OwnerCredentialsIn, ReleaseLookupIn, ReleasePrintIn, ReleasePreviewIn),  # issue 24
    *(BulkReleaseRequest, BulkCancelRequest, BulkReplayRequest, BulkResolveRequest),  # issue 24
    ReprintRequest,  # issue 24
)
_RESPONSE_MODELS: tuple[type[BaseModel], ...] = (
    *(JobOut, JobListOut, PrinterOut, PrintersOut, DrainOut, DeadLetterOut, Health, Problem),
    *(StatsOut, WebhookDeliveriesOut, IdentifyOut, EventOut, PrinterCheckOut),
    MediaLoadedOut,  # issue 23 (supplies)
    *(OwnerCredentialsOut, ReleaseLookupOut, ReleasePrintOut),  # issue 24 (release)
    BulkOut,  # issue 24 (many jobs at once)
    JobStoryOut,  # issue 24
    *(TokenOut, TokensOut),  # issue 26
    AuditOut,  # issue 26 (who did what)
    ApplianceTlsOut,  # issue 26
)

#: The bulk calls' bodies (issue 24): required JSON, `limit` always.
_BULK_BODIES: dict[str, type[BaseModel]] = {
    "bulk-release": BulkReleaseRequest,
    "bulk-cancel": BulkCancelRequest,
    "bulk-replay": BulkReplayRequest,
    "bulk-resolve": BulkResolveRequest,
}


def _component_schemas() -> tuple[dict[str, Any], dict[type[BaseModel], dict[str, Any]]]:
    """Every model's JSON schema under components/schemas, and each model's ``$ref``."""
    pairs = [(m, "validation") for m in _REQUEST_MODELS]
    pairs += [(m, "serialization") for m in _RESPONSE_MODELS]
    keys, top = models_json_schema(pairs, ref_template=_REF)  # type: ignore[arg-type]
    refs: dict[type[BaseModel], dict[str, Any]] = {
        model: ref for (model, _mode), ref in keys.items() if issubclass(model, BaseModel)
    }
    return dict(top.get("$defs", {})), refs


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
            "parameters": openapi_components.PARAMETERS,
            "headers": openapi_components.HEADERS,
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
