"""The route table's row types and the answers many rows share.

A row (:class:`Operation`) says a route's handler, method, path, role, parameters, body and
every answer it can give; :data:`edgeprint.api.routes.ROUTES` holds the rows,
:func:`edgeprint.api.factory.build_app` registers them and checks their roles, and
:mod:`edgeprint.api.openapi` reads them to write the document. This module imports
neither, so the table and the document builder do not import each other.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from aiohttp import web
from pydantic import BaseModel

from edgeprint.models import JobOut, Problem

#: Where the OpenAPI document is served.
PATH = "/v1/openapi.json"
#: What makes the document's bytes, cached after the first GET (building it is ~20 ms of
#: pydantic's JSON schema work that start-up need not pay): edgeprint.api.openapi.document_bytes.
DOCUMENT: web.AppKey[Callable[[], bytes]] = web.AppKey("openapi_document")

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


# --- answers shared by many operations --------------------------------------------------


def problem(description: str, *headers: str) -> Answer:
    return Answer(description, Problem, headers=headers)


UNAUTHORIZED = problem(
    "`unauthorized`: no, malformed or unknown bearer token, or one past its `expires`",
    "WWW-Authenticate",
)
FORBIDDEN_TECH = problem("`forbidden`: the token's role is not `tech`")
FORBIDDEN_ACT = problem("`forbidden`: the token's role may not act (a viewer or a station token)")
JOB_NOT_FOUND = problem("`job-not-found` (also for an id that is not 32 lowercase hex characters)")
PRINTER_NOT_FOUND = problem("`printer-not-found`")
STATE_CONFLICT = problem(
    "`state-conflict`: the action does not apply to the job's state; `state` names it"
)
RATE_LIMITED = problem("`rate-limited`: too many requests for this token", "Retry-After")
STORE_UNAVAILABLE = problem("`store-unavailable`: the job store cannot work now", "Retry-After")
WRITE_UNAVAILABLE = problem(
    "`queue-full` (the printer's and its pool's queues are at their high-water mark; nothing "
    "stored) or `store-unavailable`",
    "Retry-After",
)
STORAGE_FULL = problem("`storage-full`: the appliance's disk is full; nothing was stored")
AUTH = {401: UNAUTHORIZED, 429: RATE_LIMITED}
JSON_BODY = {
    400: problem("`malformed-json`: the body is not JSON"),
    408: problem("`request-timeout`: the body did not arrive within the time limit"),
    413: problem("`payload-too-large`: the body is over 64 KiB"),
    415: problem("`unsupported-media-type`: a body that is not application/json"),
}
#: The release page's calls: no token, or a station's (only at its printers).
AT_PLACE = {
    **JSON_BODY,
    401: problem(
        "`unauthorized`: a bearer token was sent and it is unknown or malformed", "WWW-Authenticate"
    ),
    403: problem(
        "`credential-invalid`: the code, card or PIN opens nothing (the same answer whether "
        "or not such an owner or job exists); `forbidden`: a station token used at a printer "
        "or pool it is not set up for, or a viewer token (it only reads)"
    ),
    404: PRINTER_NOT_FOUND,
    423: problem("`release-locked`: the job's release is locked after wrong PINs", "Retry-After"),
    429: problem(
        "`release-locked`: too many wrong credentials from this address; `rate-limited`: too "
        "many requests from this address (or station token)",
        "Retry-After",
    ),
    503: STORE_UNAVAILABLE,
    507: STORAGE_FULL,
}
AT_PLACE_NOTE = (
    " No token is needed (the code is the credential); a `station` token may be sent and "
    "then only works at the printers and pools of its `printers`. Rate limited per client "
    "address; wrong credentials count per address (`[release] max_pin_failures`, "
    "`pin_lockout_s`) before they are checked: a right one takes back only its own try, "
    "and the count ages out `pin_lockout_s` after the last wrong one."
)
TECH = {**AUTH, 403: FORBIDDEN_TECH}
#: A kiosk's action (a viewer reads, a station releases at its printers: both refused).
KIOSK = {**AUTH, 403: FORBIDDEN_ACT}
#: Reading jobs: kiosk, viewer and tech tokens.
READ = {**AUTH, 403: problem("`forbidden`: a station token")}
#: What the status page shows a technician (printers, stats, …): viewer and tech tokens.
VIEW = {**AUTH, 403: problem("`forbidden`: the token's role is neither `viewer` nor `tech`")}


def job_answer(description: str) -> Answer:
    return Answer(description, JobOut)


async def openapi_json(request: web.Request) -> web.Response:
    """GET /v1/openapi.json: the contract; no token (it describes the API, holds no data)."""
    return web.Response(body=request.app[DOCUMENT](), content_type="application/json")
