"""Errors as ``application/problem+json`` (RFC 9457), mapped in one table.

``type`` is a stable URN ``urn:edgeprint:problem:<slug>``; kiosks may switch
on it. A 409 carries the job's current ``state``.
"""

from __future__ import annotations

from aiohttp import web

from edgeprint import errors
from edgeprint.models import FieldError, Problem

CONTENT_TYPE = "application/problem+json"
TYPE_PREFIX = "urn:edgeprint:problem:"

_TITLES = {
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    408: "Request Timeout",
    409: "Conflict",
    410: "Gone",
    413: "Content Too Large",
    415: "Unsupported Media Type",
    422: "Unprocessable Content",
    423: "Locked",
    426: "Upgrade Required",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    507: "Insufficient Storage",
}


def problem(
    status: int,
    slug: str,
    detail: str,
    *,
    headers: dict[str, str] | None = None,
    **extra: object,
) -> web.Response:
    """A problem response with the given status, stable ``slug`` and human ``detail``."""
    body = Problem(
        type=TYPE_PREFIX + slug,
        title=_TITLES.get(status, "Error"),
        status=status,
        detail=detail,
        **extra,  # type: ignore[arg-type]
    )
    return web.Response(
        status=status,
        body=body.model_dump_json(exclude_none=True).encode(),
        content_type=CONTENT_TYPE,
        headers=headers,
    )


def _field_errors(exc: errors.InvalidRequest) -> list[FieldError] | None:
    if not exc.errors:
        return None
    return [FieldError(loc=e.loc, message=e.message) for e in exc.errors]


def from_error(exc: errors.EdgeprintError) -> web.Response:
    """Map one of our errors to its HTTP problem response (the only such table)."""
    match exc:
        case errors.Unauthorized():
            return problem(
                401,
                "unauthorized",
                str(exc),
                headers={"WWW-Authenticate": 'Bearer realm="edgeprint"'},
            )
        case errors.Forbidden():
            return problem(403, "forbidden", str(exc))
        case errors.JobNotFound():
            return problem(404, "job-not-found", str(exc), job_id=exc.job_id)
        case errors.CannotPrintRest():
            return problem(409, "cannot-print-rest", str(exc), state=exc.state, job_id=exc.job_id)
        case errors.OutcomeNotUnknown():
            return problem(409, "outcome-not-unknown", str(exc), state=exc.state, job_id=exc.job_id)
        case errors.ReprintLimit():
            return problem(
                409,
                "reprint-limit",
                str(exc),
                state=exc.state,
                job_id=exc.job_id,
                count=exc.count,
                limit=exc.limit,
            )
        case errors.StateConflict():
            return problem(409, "state-conflict", str(exc), state=exc.state, job_id=exc.job_id)
        case errors.IdempotencyKeyReused():
            return problem(422, exc.slug, exc.detail, job_id=exc.job_id)
        case errors.InvalidRequest():
            return problem(422, exc.slug, exc.detail, errors=_field_errors(exc))
        case errors.MalformedRequest():
            return problem(400, exc.slug, exc.detail)
        case errors.PayloadTooLarge():
            return problem(413, "payload-too-large", str(exc))
        case errors.UnsupportedDocument():
            return problem(415, "unsupported-media-type", exc.detail)
        case errors.DocumentRejected():
            return problem(422, exc.slug, exc.detail)
        case errors.DocumentUnprintable():
            return problem(422, exc.slug, exc.detail, takes=list(exc.takes))
        case errors.BodyTimeout():
            resp = problem(408, "request-timeout", str(exc))
            resp.force_close()  # do not read the rest of a slow body: drop the connection
            return resp
        case errors.RateLimited():
            return problem(
                429, "rate-limited", str(exc), headers={"Retry-After": str(exc.retry_after_s)}
            )
        case errors.PinRequired():
            return problem(403, "pin-required", str(exc), job_id=exc.job_id)
        case errors.PinMismatch():
            return problem(403, "pin-mismatch", str(exc), job_id=exc.job_id)
        case errors.ReleaseLocked():
            return problem(
                423,
                "release-locked",
                str(exc),
                job_id=exc.job_id,
                headers={"Retry-After": str(exc.retry_after_s)},
            )
        case errors.CredentialInvalid():
            return problem(403, "credential-invalid", str(exc))
        case errors.CredentialTaken():
            return problem(409, "credential-taken", str(exc))
        case errors.OwnerNotFound():
            return problem(404, "owner-not-found", str(exc))
        case errors.AddressLocked():
            return problem(
                429, "release-locked", str(exc), headers={"Retry-After": str(exc.retry_after_s)}
            )
        case errors.DocumentGone():
            return problem(410, "document-gone", exc.detail, job_id=exc.job_id)
        case errors.RenderFailed():
            return problem(
                503,
                "render-failed",
                f"the page could not be drawn now: {exc.detail}",
                headers={"Retry-After": "5"},
            )
        case errors.PrinterNotFound():
            return problem(404, "printer-not-found", str(exc))
        case errors.IdentifyUnsupported():
            return problem(409, "identify-unsupported", str(exc))
        case errors.EventModeConflict():
            return problem(409, exc.slug, str(exc), mode=exc.mode)
        case errors.PrinterError():
            return problem(502, "printer-error", f"the printer did not do it: {exc}")
        case errors.Backpressure():
            return problem(
                503, "queue-full", str(exc), headers={"Retry-After": str(exc.retry_after_s)}
            )
        case errors.StorageFull():
            return problem(507, "storage-full", str(exc))
        case errors.ReleaseKeyMissing():
            return problem(503, "release-key-missing", str(exc))
        case errors.StoreError():
            return problem(
                503,
                "store-unavailable",
                "the job store cannot take work right now; retry later",
                headers={"Retry-After": "5"},
            )
        case _:
            return problem(500, "internal-error", "unexpected error; see the appliance log")
