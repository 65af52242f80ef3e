"""What a caller asked that cannot be done: jobs, requests, documents, releases, printers
by name."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from edgeprint.errors.base import EdgeprintError


class JobNotFound(EdgeprintError):
    """No job has this id."""

    def __init__(self, job_id: str) -> None:
        self.job_id = job_id
        super().__init__(f"no job with id {job_id!r}")


class StateConflict(EdgeprintError):
    """The job is not in a state that allows ``action`` (someone else won, or it is done).

    ``state`` is the job's current state, reported to the client with the 409.
    """

    def __init__(self, job_id: str, action: str, state: str) -> None:
        self.job_id = job_id
        self.action = action
        self.state = state
        super().__init__(f"cannot {action} job {job_id}: it is {state}")


class CannotPrintRest(StateConflict):
    """ "The rest" is for a one-copy job DEAD outcome_unknown whose copy stopped after some of
    its pages came out (HTTP 409)."""

    def __init__(
        self,
        job_id: str,
        state: str,
        pages_out: int | None,
        pages: int | None,
        copies: int,
        *,
        why: str | None = None,
    ) -> None:
        super().__init__(job_id, "resolve", state)
        if why is None and copies != 1:
            why = f"it has {copies} copies (the rest of which?)"
        elif why is None and not pages_out:
            why = "no count of pages that came out is known"
        elif why is None:
            why = f"{pages_out} of {pages} pages came out: nothing is left"
        self.args = (f"cannot print the rest of job {job_id}: {why}",)


class OutcomeNotUnknown(StateConflict):
    """Only a DEAD job whose outcome is unknown can be resolved (HTTP 409).

    ``dead_reason`` is the job's current one (None unless it is DEAD).
    """

    def __init__(self, job_id: str, state: str, dead_reason: str | None) -> None:
        super().__init__(job_id, "resolve", state)
        self.dead_reason = dead_reason
        why = f"it is {state}" + (f" ({dead_reason})" if dead_reason else "")
        self.args = (
            f"cannot resolve job {job_id}: only a DEAD job whose outcome is unknown "
            f"(outcome_unknown) can be resolved; {why}",
        )


class ReprintLimit(StateConflict):
    """The job was reprinted ``[release] max_reprints`` times already (HTTP 409, issue 24)."""

    def __init__(self, job_id: str, original_id: str, count: int, limit: int) -> None:
        super().__init__(job_id, "reprint", "DONE")
        self.original_id = original_id
        self.count = count
        self.limit = limit
        of = "it" if original_id == job_id else f"its original {original_id}"
        self.args = (
            f"cannot reprint job {job_id}: {of} was reprinted {count} time(s) and "
            f"release.max_reprints allows {limit}",
        )


@dataclass(frozen=True)
class FieldProblem:
    """One invalid field of a request: where (``loc``, dotted) and why."""

    loc: str
    message: str


class InvalidRequest(EdgeprintError):
    """The request is well-formed but its content is invalid (HTTP 422)."""

    slug = "invalid-request"

    def __init__(self, detail: str, errors: Sequence[FieldProblem] = ()) -> None:
        self.detail = detail
        self.errors = list(errors)
        super().__init__(detail)


class UnknownTarget(InvalidRequest):
    """The request names a printer or pool that is not configured."""

    slug = "unknown-target"


class StickerBaseLoopback(InvalidRequest):
    """No base URL a phone can reach was found for a sticker (HTTP 422): a QR code of
    127.0.0.1 scans fine and leads nowhere, so no sticker is made."""

    slug = "sticker-base-loopback"

    def __init__(self) -> None:
        super().__init__(
            "the sticker would point at 127.0.0.1, which phones cannot reach: "
            "set [release] public_url or pass base"
        )


class MissingTarget(InvalidRequest):
    """The job would become printable without a printer or pool to print on."""

    slug = "missing-target"


class IdempotencyKeyReused(InvalidRequest):
    """The Idempotency-Key was already used for a different request payload."""

    slug = "idempotency-key-reused"

    def __init__(self, key: str, job_id: str) -> None:
        self.key = key
        self.job_id = job_id
        super().__init__(
            f"Idempotency-Key {key!r} was already used for job {job_id} with a different "
            "document or metadata; use a new key for a new job"
        )


class MalformedRequest(EdgeprintError):
    """The request cannot be parsed at all (HTTP 400): bad JSON, broken multipart."""

    def __init__(self, detail: str, slug: str = "malformed-request") -> None:
        self.detail = detail
        self.slug = slug
        super().__init__(detail)


class PayloadTooLarge(EdgeprintError):
    """A document or metadata part exceeds its configured limit (HTTP 413)."""

    def __init__(self, what: str, limit_bytes: int) -> None:
        self.what = what
        self.limit_bytes = limit_bytes
        super().__init__(f"{what} exceeds the limit of {limit_bytes} bytes")


class UnsupportedDocument(EdgeprintError):
    """The document is not a PDF (HTTP 415)."""

    def __init__(self, detail: str) -> None:
        self.detail = detail
        super().__init__(detail)


class DocumentGone(EdgeprintError):
    """The job's document was deleted (retention) or is nowhere to be found (HTTP 410)."""

    def __init__(self, job_id: str, detail: str | None = None) -> None:
        self.job_id = job_id
        self.detail = detail or (
            f"the document of job {job_id} was deleted (retention.document_retention_s): "
            "submit it anew"
        )
        super().__init__(self.detail)


class NoPageSelected(EdgeprintError):
    """Page ranges (IPP ``page-ranges``) that select no page of the document."""

    def __init__(self, total: int) -> None:
        super().__init__(f"page-ranges select no page of this {total}-page document")
        self.total = total


class DocumentRejected(EdgeprintError):
    """A PDF that cannot be printed as sent (HTTP 422).

    ``slug`` is one of ``document-encrypted``, ``document-unreadable`` (broken
    structure, no pages) or ``too-many-pages``.
    """

    def __init__(self, slug: str, detail: str) -> None:
        self.slug = slug
        self.detail = detail
        super().__init__(detail)


class BodyTimeout(EdgeprintError):
    """The request body did not arrive within ``server.body_timeout_s`` (HTTP 408)."""

    def __init__(self, timeout_s: float) -> None:
        self.timeout_s = timeout_s
        super().__init__(
            f"the request body did not arrive within {timeout_s:g} s; nothing was stored"
        )


class RateLimited(EdgeprintError):
    """This token sent more requests than ``server.rate_limit`` allows (HTTP 429)."""

    def __init__(self, limit: str, retry_after_s: int) -> None:
        self.limit = limit
        self.retry_after_s = retry_after_s
        super().__init__(
            f"too many requests for this token (limit {limit}); retry in {retry_after_s} s"
        )


class PinRequired(EdgeprintError):
    """The job was submitted with a release PIN and the release did not give one (403)."""

    def __init__(self, job_id: str) -> None:
        self.job_id = job_id
        super().__init__(f'job {job_id} needs its release PIN: send {{"pin": "…"}}')


class PinMismatch(EdgeprintError):
    """The release PIN does not match (HTTP 403). ``failures_left`` before the lock."""

    def __init__(self, job_id: str, failures_left: int, locked_for_s: int | None) -> None:
        self.job_id = job_id
        self.failures_left = failures_left
        self.locked_for_s = locked_for_s
        if locked_for_s is not None:
            tail = f"its release is now locked for {locked_for_s} s"
        else:
            tail = f"{failures_left} more wrong PIN(s) lock its release"
        super().__init__(f"wrong release PIN for job {job_id}; {tail}")


class ReleaseLocked(EdgeprintError):
    """Too many wrong PINs: the job's release is locked for a while (HTTP 423)."""

    def __init__(self, job_id: str, retry_after_s: int) -> None:
        self.job_id = job_id
        self.retry_after_s = retry_after_s
        super().__init__(
            f"release of job {job_id} is locked after too many wrong PINs; retry in "
            f"{retry_after_s} s"
        )


class Backpressure(EdgeprintError):
    """The printer's (and its peers') or the pool's queue is full: nothing stored (HTTP 503)."""

    def __init__(self, target: str, retry_after_s: int) -> None:
        self.target = target
        self.retry_after_s = retry_after_s
        super().__init__(
            f"the queue of {target} is full; nothing was stored, retry with the same "
            f"Idempotency-Key in {retry_after_s} s"
        )


class PrinterNotFound(EdgeprintError):
    """No configured printer has this name (HTTP 404)."""

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(f"no printer named {name!r}")


class IdentifyUnsupported(EdgeprintError):
    """The printer does not list Identify-Printer in operations-supported (HTTP 409)."""

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(
            f"printer {name!r} does not support Identify-Printer; ask for a test page instead"
        )


class EventModeConflict(EdgeprintError):
    """The event is not in the mode this change starts from (HTTP 409): going live when not
    in rehearsal (``not-in-rehearsal``), or starting a rehearsal during one
    (``already-in-rehearsal``). ``mode`` is the mode it is in, ``since`` since when."""

    def __init__(self, slug: str, mode: str, since: float | None, detail: str) -> None:
        self.slug = slug
        self.mode = mode
        self.since = since
        super().__init__(detail)
