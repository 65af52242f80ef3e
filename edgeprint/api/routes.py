"""The route table: every route's path, method, handler, role and OpenAPI description, once.

:data:`ROUTES` drives the three things that used to be written twice: the routes
:func:`edgeprint.api.factory.build_app` registers, the role each one checks before its
handler runs (``None``: no token), and the OpenAPI document (:mod:`edgeprint.api.openapi`
reads the same rows). The rows live with their subject (:mod:`~edgeprint.api.routes_jobs`,
:mod:`~edgeprint.api.routes_release`, :mod:`~edgeprint.api.routes_printers`); this module
holds the operations' and the other doors' rows (health, metrics, pages, IPP) and the order
of the whole table, which is the order of the document's paths.
"""

from __future__ import annotations

from collections.abc import Callable

from edgeprint.api import (
    health,
    ipp,
    route_table,
    routes_jobs,
    routes_printers,
    routes_release,
    status_page,
    upload_page,
)
from edgeprint.api.route_table import PATH, RATE_LIMITED, Answer, Handler, Operation, problem
from edgeprint.ipp_server.attributes import ICON_SIZES
from edgeprint.models import Health


def _icon(size: int) -> Callable[[ipp.IppEndpoint], Handler]:
    """``bind`` of the icon route of ``size``."""
    return lambda endpoint: endpoint.icon(size)


#: Health, metrics, this document, the pages and the IPP doors.
# fmt: off
DOORS: tuple[Operation, ...] = (
    Operation(
        health.healthz,
        "get", "/healthz", "healthz", "Liveness", "operations", None,
        answers={200: Answer("the process and its event loop answer", Health)},
    ),
    Operation(
        health.readyz,
        "get", "/readyz", "readyz", "Readiness", "operations", None,
        answers={
            200: Answer("the store takes a write", Health),
            503: Answer("the store cannot take a write (`status` is `unavailable`)", Health),
        },
    ),
    Operation(
        health.metrics,
        "get", "/metrics", "metrics", "Prometheus metrics", "operations", None,
        description=(
            "No token, unless `[metrics] token_required = true`: then a kiosk, viewer or tech "
            "bearer token."
        ),
        answers={
            200: Answer("Prometheus text format 0.0.4", media="text/plain"),
            503: problem("`store-unavailable`", "Retry-After"),
            401: problem("`unauthorized`: `[metrics] token_required` and no, an unknown or an "
                          "expired token", "WWW-Authenticate"),
            403: problem("`forbidden`: `[metrics] token_required` and a station token"),
            429: RATE_LIMITED,
        },
    ),
    Operation(
        route_table.openapi_json,
        "get", PATH, "openapi", "This document (no token: it describes the API)", "operations",
        None, answers={200: Answer("the OpenAPI 3.1 document", media="application/json")},
    ),
    Operation(
        status_page.status_page,
        "get", "/", "statusPage", "The technicians' live status page", "operations", None,
        description=(
            "HTML only; the page asks for a tech token (or a viewer's: then it only reads) and "
            "reads the API with it."
        ),
        answers={200: Answer("the page", media="text/html")},
    ),
    Operation(
        upload_page.upload_form,
        "get", "/upload", "uploadPage",
        "Print from any browser: the upload form (`[release] web_upload`)", "jobs", None,
        description="HTML: a name, a printer or pool, a PDF; from `[ipp] allowed_networks`.",
        answers={
            200: Answer("the form, with a one-time form key", media="text/html"),
            403: Answer("the client's address is outside `[ipp] allowed_networks`",
                        media="text/html"),
            404: problem("`not-found`: `[release] web_upload` is false"),
        },
    ),
    Operation(
        upload_page.upload_submit,
        "post", "/upload", "uploadJob",
        "Print from any browser: upload a PDF as a HELD job with a one-time PIN", "jobs", None,
        body="upload",
        description=(
            "The form of GET /upload. The same document checks and limits as POST /v1/jobs; "
            "the job is HELD under `owner` with a PIN the server makes, shown once in the "
            "answer page. The same `form_key` again (a double tap) answers the same job and "
            "PIN. Every answer is an HTML page; a refusal says why in words, with the form."
        ),
        answers={
            201: Answer("the PIN page: a new HELD job", media="text/html"),
            200: Answer("the PIN page of the job this form key already made", media="text/html"),
            400: Answer("a malformed body, or a form key that is not the form's",
                        media="text/html"),
            403: Answer("the client's address is outside `[ipp] allowed_networks`",
                        media="text/html"),
            404: problem("`not-found`: `[release] web_upload` is false"),
            408: Answer("the file did not arrive within the time limit", media="text/html"),
            413: Answer("the file (or a field) is too large", media="text/html"),
            415: Answer("not a PDF, or not a form", media="text/html"),
            422: Answer("a bad name or printer, a PDF that cannot be printed, or a form used "
                        "for another file", media="text/html"),
            429: Answer("`[release] upload_rate_limit` reached for this address",
                        media="text/html", headers=("Retry-After",)),
            503: Answer("the store cannot take it now", media="text/html",
                        headers=("Retry-After",)),
            507: Answer("the appliance's disk is full", media="text/html"),
        },
    ),
    Operation(
        None,
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
            403: Answer("the client's address is outside `[ipp] allowed_networks`, or (`basic`) "
                        "a token past its `expires` or whose role may not print (viewer, "
                        "station): an IPP response, client-error-not-authorized",
                        media="application/ipp"),
            404: problem("`not-found`: `[ipp] enabled = false`"),
            415: problem("`unsupported-document`: the body is not `application/ipp`, or it is "
                          "compressed (Content-Encoding)"),
        },
        bind=lambda endpoint: endpoint.handle,
    ),
    Operation(
        None,
        "post", ipp.JOB_PATH, "ippJob",
        "IPP job-uri of a job on a queue (job operations on that job)", "ipp", None,
        description="Send-Document, Close-Job, Cancel-Job and Get-Job-Attributes addressed to "
        "the job-uri a queue answered; the operation attributes must name the same job "
        "(job-uri, or printer-uri and job-id). Otherwise as the queue's path.",
        answers={
            200: Answer("an IPP response (client-error-bad-request for a printer operation "
                        "or another job; client-error-not-found when `job` is no job-id)",
                        media="application/ipp"),
            401: Answer("as the queue's path", media="application/ipp",
                        headers=("WWW-Authenticate",)),
            403: Answer("as the queue's path", media="application/ipp"),
            404: problem("`not-found`: `[ipp] enabled = false`"),
            415: problem("`unsupported-document`: as the queue's path"),
        },
        bind=lambda endpoint: endpoint.handle,
    ),
    *(
        Operation(
            None,
            "get", f"/ipp/icons/{size}.png", f"ippIcon{size}",
            f"The IPP queues' icon, {size}x{size} (printer-icons)", "ipp", None,
            answers={
                200: Answer("a PNG", media="image/png"),
                403: problem("`http-error`: the client's address is outside "
                              "`[ipp] allowed_networks`"),
                404: problem("`not-found`: `[ipp] enabled = false`"),
            },
            bind=_icon(size),
        )
        for size in ICON_SIZES
    ),
)
# fmt: on

#: Every route, in the document's order.
ROUTES: tuple[Operation, ...] = (
    *routes_jobs.SINGLE,
    *routes_release.ROUTES,
    *routes_jobs.MANY,
    *routes_printers.ROUTES,
    *DOORS,
)
