"""GET /v1/jobs/{id}/preview.png: a page of a job's document as a PNG (issue 24).

The page is drawn by :class:`edgeprint.service.previews.Previews` (render pool,
rendition cache); this module reads the query and answers with cache headers:
a preview of a given document, page and width never changes, so its ETag is
made of them and a browser keeps it (privately: it shows someone's document).
"""

from __future__ import annotations

import re

from aiohttp import web

from edgeprint import errors
from edgeprint.api.app import deps_of, job_id_of, query_params
from edgeprint.api.uploads import invalid

#: How long a browser may keep a preview without asking again (seconds).
MAX_AGE_S = 3600
DEFAULT_WIDTH = 300
_NUMBER = re.compile(r"^[0-9]{1,4}$")


def _number(q: dict[str, str], name: str, default: int, problems: list[errors.FieldProblem]) -> int:
    if name not in q:
        return default
    if not _NUMBER.match(q[name]):
        problems.append(errors.FieldProblem(f"query.{name}", "a whole number"))
        return default
    return int(q[name])


def etag(document_sha256: str, page: int, width: int) -> str:
    """The preview's entity tag: the same bytes for the same document, page and width."""
    return f'"{document_sha256[:32]}-p{page}-w{width}"'


async def job_preview(request: web.Request) -> web.Response:
    """GET /v1/jobs/{id}/preview.png?page=1&width=300 (kiosk)."""
    deps = deps_of(request)
    job_id = job_id_of(request)
    problems: list[errors.FieldProblem] = []
    q = query_params(request, {"page", "width"}, problems)
    page = _number(q, "page", 1, problems)
    width = _number(q, "width", DEFAULT_WIDTH, problems)
    if problems:
        raise invalid("invalid query parameters", problems, "query")
    job = await deps.service.get(job_id)
    png = await deps.previews.png(job, page, width)
    tag = etag(job.document_sha256, page, width)
    headers = {"ETag": tag, "Cache-Control": f"private, max-age={MAX_AGE_S}"}
    if tag in (t.strip() for t in request.headers.get("If-None-Match", "").split(",")):
        return web.Response(status=304, headers=headers)
    return web.Response(body=png, content_type="image/png", headers=headers)
