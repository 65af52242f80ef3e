"""The OpenAPI document's shared components: response headers and parameters, by key.

Rows of the route table name them (``headers=``, ``query=``); :mod:`edgeprint.api.openapi`
puts them under ``components`` and refers to them.
"""

from __future__ import annotations

from typing import Any

from edgeprint.config import NAME_PATTERN
from edgeprint.models import IDEMPOTENCY_KEY_PATTERN, JOB_ID_PATTERN

HEADERS: dict[str, dict[str, Any]] = {
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

LIMIT = {"type": "integer", "minimum": 1, "maximum": 500}
PARAMETERS: dict[str, dict[str, Any]] = {
    "job_id": {
        "name": "job_id",
        "in": "path",
        "required": True,
        "description": "a job id (32 lowercase hex characters)",
        "schema": {"type": "string", "pattern": JOB_ID_PATTERN},
    },
    "printer_name": {
        "name": "name",
        "in": "path",
        "required": True,
        "description": "a configured printer's name",
        "schema": {"type": "string", "pattern": NAME_PATTERN},
    },
    "owner_path": {
        "name": "owner",
        "in": "path",
        "required": True,
        "description": "an owner, as jobs name it (1–128 printable characters)",
        "schema": {"type": "string", "minLength": 1, "maxLength": 128},
    },
    "ipp_job_id": {
        "name": "job",
        "in": "path",
        "required": True,
        "description": "an IPP job-id (the last segment of the job-uri a queue answered)",
        "schema": {"type": "string", "pattern": "^[0-9]{1,10}$"},
    },
    "Idempotency-Key": {
        "name": "Idempotency-Key",
        "in": "header",
        "required": True,
        "description": "8–80 printable ASCII characters, no spaces; one key is one job, forever "
        "(within the retention window), whichever token sent it",
        "schema": {"type": "string", "pattern": IDEMPOTENCY_KEY_PATTERN},
    },
    "X-Correlation-ID": {
        "name": "X-Correlation-ID",
        "in": "header",
        "required": False,
        "description": "echoed in the response and the logs when 1–128 printable ASCII "
        "characters; otherwise the appliance makes one",
        "schema": {"type": "string", "pattern": r"^[\x21-\x7e]{1,128}$"},
    },
    "state": {
        "name": "state",
        "in": "query",
        "required": False,
        "description": "only jobs in this state",
        "schema": {"$ref": "#/components/schemas/JobState"},
    },
    "owner": {
        "name": "owner",
        "in": "query",
        "required": False,
        "description": "only this owner's jobs",
        "schema": {"type": "string"},
    },
    "printer": {
        "name": "printer",
        "in": "query",
        "required": False,
        "description": "only jobs for this printer (requested or assigned)",
        "schema": {"type": "string"},
    },
    "idempotency_key": {
        "name": "idempotency_key",
        "in": "query",
        "required": False,
        "description": "only the job made with this Idempotency-Key (exact)",
        "schema": {"type": "string", "pattern": IDEMPOTENCY_KEY_PATTERN},
    },
    "id_prefix": {
        "name": "id_prefix",
        "in": "query",
        "required": False,
        "description": "only jobs whose id starts with these 4–32 lowercase hex characters",
        "schema": {"type": "string", "pattern": r"^[0-9a-f]{4,32}$"},
    },
    "owner_contains": {
        "name": "owner_contains",
        "in": "query",
        "required": False,
        "description": "only jobs whose owner contains this text, case-insensitive (`%` and "
        "`_` match themselves)",
        "schema": {
            "type": "string",
            "minLength": 1,
            "maxLength": 255,
            "pattern": r"^[^\x00-\x1f\x7f-\x9f]+$",
        },
    },
    "limit": {
        "name": "limit",
        "in": "query",
        "required": False,
        "description": "page size, 1–500 (default 50; 100 for the dead-letter queue)",
        "schema": LIMIT,
    },
    "page": {
        "name": "page",
        "in": "query",
        "required": False,
        "description": "the page to draw, from 1 (default 1)",
        "schema": {"type": "integer", "minimum": 1},
    },
    "width": {
        "name": "width",
        "in": "query",
        "required": False,
        "description": "pixels, 50–1200 (default 300)",
        "schema": {"type": "integer", "minimum": 50, "maximum": 1200},
    },
    "base": {
        "name": "base",
        "in": "query",
        "required": False,
        "description": "the release pages' base URL, e.g. `http://print.example.org:8631`",
        "schema": {"type": "string", "maxLength": 200},
    },
    "delivery_state": {
        "name": "state",
        "in": "query",
        "required": False,
        "description": "only `failed` (the default): deliveries given up",
        "schema": {"type": "string", "enum": ["failed"]},
    },
    "since": {
        "name": "since",
        "in": "query",
        "required": False,
        "description": "only rows at or after this time: RFC 3339 with an offset, or unix seconds",
        "schema": {"type": "string", "maxLength": 40},
    },
    "audit_limit": {
        "name": "limit",
        "in": "query",
        "required": False,
        "description": "rows, 1–1000 (default 100)",
        "schema": {"type": "integer", "minimum": 1, "maximum": 1000},
    },
    **{
        f"audit_{name}": {
            "name": name,
            "in": "query",
            "required": False,
            "description": f"only this {name}",
            "schema": {
                "type": "string",
                "minLength": 1,
                "maxLength": 255,
                "pattern": r"^[^\x00-\x1f\x7f-\x9f]+$",
            },
        }
        for name in ("actor", "action", "target")
    },
    "cursor": {
        "name": "cursor",
        "in": "query",
        "required": False,
        "description": "`next_cursor` of the previous page",
        "schema": {"type": "string", "pattern": r"^[0-9]{1,18}$"},
    },
}
