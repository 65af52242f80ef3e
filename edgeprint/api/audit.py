"""``GET /v1/audit`` (tech, issue 26): who did what, newest first.

Query: ``since`` (RFC 3339 with an offset, or unix seconds), ``limit`` (1–1000, default
100), and exact ``actor``, ``action``, ``target``. Any bad or unknown parameter is 422
with the field named (``query.<name>``), and nothing is read or written.
"""

from __future__ import annotations

import math
import re
from datetime import datetime

from aiohttp import web

from edgeprint import errors
from edgeprint.api.app import deps_of, json_response, query_params
from edgeprint.api.uploads import invalid
from edgeprint.models import AuditEntryOut, AuditOut
from edgeprint.timefmt import rfc3339_ms

DEFAULT_LIMIT = 100
MAX_LIMIT = 1000
_KNOWN = {"since", "limit", "actor", "action", "target"}
_LIMIT_RE = re.compile(r"^[0-9]{1,4}$")
_UNIX_RE = re.compile(r"^[0-9]{1,12}(\.[0-9]{1,9})?$")
_RFC3339_RE = re.compile(
    r"^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?"
    r"([Zz]|[+-][0-9]{2}:[0-9]{2})$"
)
_PRINTABLE_RE = re.compile(r"^[^\x00-\x1f\x7f-\x9f]{1,255}$")


def parse_since(text: str) -> float | None:
    """``text`` as unix seconds: RFC 3339 with an offset, or unix seconds; None: neither."""
    if _UNIX_RE.match(text):
        return float(text)
    if not _RFC3339_RE.match(text):
        return None
    try:
        when = datetime.fromisoformat(text.replace("z", "Z").replace("t", "T"))
    except ValueError:  # a day or hour that does not exist
        return None
    at = when.timestamp()
    return at if math.isfinite(at) else None


async def audit_trail(request: web.Request) -> web.Response:
    """GET /v1/audit?since=&limit=&actor=&action=&target= (tech): the rows, newest first."""
    problems_: list[errors.FieldProblem] = []
    q = query_params(request, _KNOWN, problems_)
    since: float | None = None
    if "since" in q:
        since = parse_since(q["since"])
        if since is None:
            problems_.append(
                errors.FieldProblem(
                    "query.since", "an RFC 3339 date-time with an offset, or unix seconds"
                )
            )
    limit = DEFAULT_LIMIT
    if "limit" in q:
        text = q["limit"]
        if not _LIMIT_RE.match(text) or not 1 <= int(text) <= MAX_LIMIT:
            problems_.append(errors.FieldProblem("query.limit", f"an integer 1–{MAX_LIMIT}"))
        else:
            limit = int(text)
    for name in ("actor", "action", "target"):
        if name in q and not _PRINTABLE_RE.match(q[name]):
            problems_.append(
                errors.FieldProblem(f"query.{name}", "1–255 characters, no control characters")
            )
    if problems_:
        raise invalid("invalid query parameters", problems_, "query")
    rows = await deps_of(request).service.audit.since(
        since, limit=limit, actor=q.get("actor"), action=q.get("action"), target=q.get("target")
    )
    return json_response(
        AuditOut(
            entries=[
                AuditEntryOut.model_construct(
                    id=r.id,
                    at=rfc3339_ms(r.at),
                    actor=r.actor,
                    actor_kind=r.actor_kind,
                    source=r.source,
                    action=r.action,
                    target_kind=r.target_kind,
                    target=r.target,
                    outcome=r.outcome,
                    detail=r.detail,
                )
                for r in rows
            ]
        )
    )
