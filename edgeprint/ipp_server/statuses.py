"""The IPP status of an edgeprint error: the one table of this mapping (RFC 8011 Appendix B,
PWG 5100.13), and the status-message of errors whose own words speak HTTP or the store's
internals."""

from __future__ import annotations

from edgeprint import errors
from edgeprint.ipp.names import Status
from edgeprint.ipp_server.submit import UUID_KEY


def status_for(exc: errors.EdgeprintError) -> tuple[int, str]:
    """The IPP status of a service error: the one table of this mapping."""
    if isinstance(exc, errors.IppRefused):
        return exc.status_code, exc.detail
    detail = _ipp_wording(exc) or getattr(exc, "detail", None) or str(exc)
    table: list[tuple[type[errors.EdgeprintError], Status]] = [
        (errors.UnsupportedDocument, Status.CLIENT_ERROR_DOCUMENT_FORMAT_ERROR),
        (errors.PayloadTooLarge, Status.CLIENT_ERROR_REQUEST_ENTITY_TOO_LARGE),
        (errors.Backpressure, Status.SERVER_ERROR_BUSY),
        (errors.RateLimited, Status.SERVER_ERROR_BUSY),
        (errors.StoreError, Status.SERVER_ERROR_SERVICE_UNAVAILABLE),
        (errors.JobNotFound, Status.CLIENT_ERROR_NOT_FOUND),
        (errors.StateConflict, Status.CLIENT_ERROR_NOT_POSSIBLE),
        (errors.PinRequired, Status.CLIENT_ERROR_NOT_AUTHORIZED),
        (errors.PinMismatch, Status.CLIENT_ERROR_NOT_AUTHORIZED),
        (errors.ReleaseLocked, Status.CLIENT_ERROR_NOT_AUTHORIZED),
        (errors.IdempotencyKeyReused, Status.CLIENT_ERROR_BAD_REQUEST),
        (errors.InvalidRequest, Status.CLIENT_ERROR_ATTRIBUTES_OR_VALUES_NOT_SUPPORTED),
        (errors.Unauthorized, Status.CLIENT_ERROR_NOT_AUTHENTICATED),
        (errors.Forbidden, Status.CLIENT_ERROR_FORBIDDEN),
        (errors.BodyTimeout, Status.CLIENT_ERROR_TIMEOUT),
    ]
    if isinstance(exc, errors.DocumentUnprintable):  # no printer of the queue takes the format
        return Status.CLIENT_ERROR_DOCUMENT_FORMAT_NOT_SUPPORTED, detail
    if isinstance(exc, errors.DocumentRejected):
        if exc.slug in ("too-many-pages", "too-many-labels"):
            return Status.CLIENT_ERROR_REQUEST_ENTITY_TOO_LARGE, detail
        if exc.slug == "document-encrypted":
            return Status.CLIENT_ERROR_DOCUMENT_PASSWORD_ERROR, detail
        return Status.CLIENT_ERROR_DOCUMENT_FORMAT_ERROR, detail
    for kind, status in table:
        if isinstance(exc, kind):
            return status, detail
    return Status.SERVER_ERROR_INTERNAL_ERROR, detail


def _ipp_wording(exc: errors.EdgeprintError) -> str | None:
    """The status-message of an error whose own message speaks the HTTP API's terms (an
    Idempotency-Key, a token) or the store's internals; None: its message fits IPP."""
    match exc:
        case errors.Backpressure():
            return (
                f"the queue of {exc.target} is full; nothing was stored; retry in "
                f"{exc.retry_after_s} s"
            )
        case errors.RateLimited():
            return (
                f"too many requests from this client (limit {exc.limit}); retry in "
                f"{exc.retry_after_s} s"
            )
        case errors.IdempotencyKeyReused() if exc.key.startswith(UUID_KEY):
            return (
                f"job-uuid urn:uuid:{exc.key.removeprefix(UUID_KEY)} was already used for "
                "another job with a different document or attributes; use a new job-uuid"
            )
        case errors.StorageFull():
            return (
                "the appliance's disk is full; nothing was stored; retry later (a technician "
                "must free space on its data disk)"
            )
        case errors.StoreError():
            return "the job store cannot take work right now; retry later"
    return None
