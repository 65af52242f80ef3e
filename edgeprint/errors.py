"""One error tree for edgeprint.

Every error raised on purpose derives from :class:`EdgeprintError` and carries
its data as attributes. Only the API layer maps these to HTTP statuses (in one
table, ``edgeprint.api.problems``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime


class EdgeprintError(Exception):
    """Root of every error edgeprint raises on purpose."""


class ConfigError(EdgeprintError):
    """The configuration file cannot be used.

    ``problems`` holds ``(key, message)`` pairs, the key in dotted form
    (``printers[0].name``), so that every message names the bad key.
    """

    def __init__(self, path: str, problems: Sequence[tuple[str, str]]) -> None:
        self.path = path
        self.problems = list(problems)
        lines = "\n".join(f"  {key}: {msg}" for key, msg in self.problems)
        super().__init__(f"invalid config {path}:\n{lines}")


# --- store ------------------------------------------------------------------


class StoreError(EdgeprintError):
    """The job store failed (I/O error, disk full, closed)."""


class StoreUnavailable(StoreError):
    """The store cannot take writes right now (closed, I/O error, locked)."""


class StoreTransient(StoreUnavailable):
    """A write failed for a reason that passes by itself (a lost database connection, a disk
    that refuses writes for a while): whoever must record something waits and tries again."""


class StoreReconnecting(StoreTransient):
    """The connection to the database server was lost; the store is reconnecting (PostgreSQL).

    Nothing of the failed call was kept, unless the connection broke during its COMMIT.
    """


class StoreWriteFailed(StoreTransient):
    """The data disk refused a write (read-only: EROFS, SQLITE_READONLY; an I/O error: EIO,
    SQLITE_IOERR): nothing of the failed write was kept; the store probes until the disk
    takes writes again (edgeprint.store.health)."""


class StorageFull(StoreError):
    """The disk holding ``data_dir`` is full; new work cannot be stored."""


# --- jobs and requests ------------------------------------------------------


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


# --- auth -------------------------------------------------------------------


class Unauthorized(EdgeprintError):
    """No bearer token, or one that matches no configured token (HTTP 401)."""


class TokenExpired(Unauthorized):
    """A configured token whose ``expires`` has passed (HTTP 401; IPP not-authorized)."""

    def __init__(self, name: str, at: datetime, *, role: str | None = None) -> None:
        self.name = name
        self.at = at
        self.role = role
        super().__init__(f"token {name!r} expired at {at.isoformat()}")


class Forbidden(EdgeprintError):
    """The token is valid but its role may not do this (HTTP 403).

    ``allowed``: the roles that may (default: ``needed`` itself, a role's name)."""

    def __init__(
        self, role: str, needed: str, allowed: tuple[str, ...] = (), *, token: str | None = None
    ) -> None:
        self.role = role
        self.needed = needed
        #: The refused token's name, when a token was known (for the log; never the secret).
        self.token = token
        names = [repr(r) for r in allowed or (needed,)]
        who = " or ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1 else names)
        only = " (a viewer only reads)" if role == "viewer" else ""
        super().__init__(f"role {role!r} may not do this{only}; it needs role {who}")


class StationForbidden(Forbidden):
    """A station token used at a printer or pool it is not set up for (HTTP 403)."""

    def __init__(self, token: str, name: str) -> None:
        self.role = "station"
        self.needed = "station"
        self.token = token
        EdgeprintError.__init__(self, f"station {token!r} may not release at {name!r}")


# --- release where you stand (issue 24) ------------------------------------------


class CredentialInvalid(EdgeprintError):
    """A release code, card or job PIN that opens nothing (HTTP 403).

    One fixed text, whatever was wrong (no such owner, wrong code, no such job):
    the answer reveals nothing about who exists.
    """

    def __init__(self) -> None:
        super().__init__("that code, card or PIN opens nothing here")


class CredentialTaken(EdgeprintError):
    """Another owner holds this release code or card (HTTP 409); says nothing more."""

    def __init__(self) -> None:
        super().__init__(
            "that release code or card is not available; choose another (codes and cards "
            "are one namespace, unique across owners)"
        )


class OwnerNotFound(EdgeprintError):
    """The owner has no release credentials to remove (HTTP 404)."""

    def __init__(self, owner: str) -> None:
        self.owner = owner
        super().__init__(f"owner {owner!r} has no release code or card")


class AddressLocked(EdgeprintError):
    """Too many wrong credentials from this client address: locked for a while (HTTP 429)."""

    def __init__(self, retry_after_s: int) -> None:
        self.retry_after_s = retry_after_s
        super().__init__(f"too many wrong codes from this address; try again in {retry_after_s} s")


class ReleaseKeyMissing(EdgeprintError):
    """The release credentials' lookup key cannot be had safely (HTTP 503): its file is
    missing while credentials exist, is not a key, or disagrees with the database."""

    def __init__(self, path: str, why: str) -> None:
        self.path = path
        super().__init__(
            f"release codes and cards cannot be checked: the lookup key file {path} {why}; "
            "restore it from the backup taken with the database, or remove the owners' "
            "codes and cards (DELETE /v1/owners/OWNER) and set new ones"
        )


# --- printers (classified once, in edgeprint.printers.ipp) ------------------------


class PrinterError(EdgeprintError):
    """An IPP request failed. ``operation`` is the IPP operation name (RFC 8011 §4)."""

    def __init__(self, operation: str, detail: str, *, status_code: int | None = None) -> None:
        self.operation = operation
        self.detail = detail
        self.status_code = status_code
        code = f" (status 0x{status_code:04x})" if status_code is not None else ""
        super().__init__(f"{operation}: {detail}{code}")


class PrinterTransient(PrinterError):
    """Failed, and the printer did not act on it: safe to try again later."""


class PrinterUnreachable(PrinterTransient):
    """No connection (refused, no route): the request never reached the printer."""


class PrinterTimedOut(PrinterTransient):
    """No answer in time to a request the printer cannot have acted on (a hung printer)."""


class PrinterBusy(PrinterTransient):
    """``server-error-busy`` (0x0507): backpressure, not a failure."""


class PrinterPermanent(PrinterError):
    """The printer refused the job or document itself (bad format, unsupported attributes).

    Sending the same job again would fail the same way: the job is poison.
    """


class PrinterAmbiguous(PrinterError):
    """Time-out or broken connection during a request the printer may have acted on.

    Never settled by sending again: reconcile with the printer's job list
    (DESIGN §3). ``body_sent`` is False when the request body (the document)
    was not handed over whole: any copy the printer made from it is truncated.
    """

    def __init__(self, operation: str, detail: str, *, body_sent: bool = True) -> None:
        self.body_sent = body_sent
        super().__init__(operation, detail)


class PrinterNeedsTls(PrinterTransient):
    """HTTP 426 Upgrade Required: the printer takes IPP only over TLS (``ipps://``)."""


class PrinterAnswerError(PrinterTransient):
    """The printer answered in a way that cannot be taken at its word (HTTP error, bad IPP).

    ``http_status`` is the HTTP status when that was the problem; ``head`` the
    first bytes of an answer that does not parse as IPP (for the log).
    """

    def __init__(
        self,
        operation: str,
        detail: str,
        *,
        status_code: int | None = None,
        http_status: int | None = None,
        head: bytes = b"",
    ) -> None:
        self.http_status = http_status
        self.head = head
        super().__init__(operation, detail, status_code=status_code)


class PrinterProtocolError(PrinterAnswerError):
    """The printer's answer could not be parsed as IPP (``head``: its first bytes)."""


# --- the IPP codec (edgeprint.printers.codec) -------------------------------------


class IppParseError(EdgeprintError):
    """Bytes that are not a valid IPP message: truncated or malformed at ``offset``.

    ``expected`` says what the codec expected to find there; ``truncated`` is True when
    the bytes simply ended there (more of the message would have been needed).
    """

    def __init__(self, offset: int, expected: str, *, truncated: bool = False) -> None:
        self.offset = offset
        self.expected = expected
        self.truncated = truncated
        super().__init__(f"malformed IPP message at byte {offset}: expected {expected}")


class IppEncodeError(EdgeprintError):
    """An IppMessage that cannot be encoded (a value too long, a value of the wrong type)."""


# --- documents for a printer (edgeprint.documents) ---------------------------


class DocumentUnprintable(EdgeprintError):
    """This document cannot be made into something this printer takes (HTTP 422).

    ``slug`` is ``unsupported-document`` (no format edgeprint can produce is
    listed; ``takes`` holds what the printer lists), ``no-media-fits`` (no
    loaded media is as large as a page) or ``document-renders-empty``.
    """

    def __init__(self, slug: str, detail: str, *, takes: Sequence[str] = ()) -> None:
        self.slug = slug
        self.detail = detail
        self.takes = tuple(takes)
        super().__init__(detail)


class RenderFailed(EdgeprintError):
    """Rendering a page to raster failed (PDFium refused the page, or the worker died)."""

    def __init__(self, detail: str) -> None:
        self.detail = detail
        super().__init__(detail)


class IppRefused(EdgeprintError):
    """An IPP request the IPP server answers with an error ``status_code`` (RFC 8011 §B).

    ``unsupported`` names the request attributes to return in the unsupported group.
    """

    def __init__(self, status_code: int, detail: str, unsupported: Sequence[str] = ()) -> None:
        self.status_code = status_code
        self.detail = detail
        self.unsupported = tuple(unsupported)
        super().__init__(detail)


# --- TLS to printers (edgeprint.printers.tls) --------------------------------


class CertificateChanged(EdgeprintError):
    """An ipps printer presents another certificate than the pinned one: nothing is sent to it.

    ``was`` and ``now`` are ``sha256:…`` fingerprints (never key material).
    """

    def __init__(self, was: str, now: str, printer: str | None = None) -> None:
        self.was = was
        self.now = now
        self.printer = printer
        how = (
            f"`edgeprint printers trust {printer}` or POST /v1/printers/{printer}/trust"
            if printer
            else "`edgeprint printers trust NAME`"
        )
        super().__init__(f"certificate changed: was {was}, now {now}; re-trust with {how}")


class TlsHandshakeFailed(EdgeprintError):
    """No TLS session with an ipps printer (it may speak plain HTTP on that port)."""

    def __init__(self, detail: str) -> None:
        self.detail = detail
        super().__init__(detail)
