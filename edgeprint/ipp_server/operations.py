"""The IPP operations of an edgeprint queue: request bytes in, response bytes out.

Every job goes through :class:`edgeprint.service.JobService` exactly as a
``POST /v1/jobs`` does (same checks, durability, limits, states and events).
Transport concerns (HTTP, addresses, authentication) stay in ``edgeprint.api.ipp``;
this module knows IPP and the service, nothing else.

IPP job ids: a stored job's ``job-id`` is its acceptance sequence number
(``seq``). A Create-Job has no stored job until its Send-Document, so it gets
an id from a range far above any ``seq`` (``PENDING_BASE`` + n); once its
document is stored, that id stays the job's id for this process's life (DESIGN §11).
"""

from __future__ import annotations

import contextlib
import logging
import time
import uuid
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field, replace
from urllib.parse import urlsplit

from pydantic import ValidationError

from edgeprint import errors
from edgeprint.faults import crash_point
from edgeprint.ipp import codec
from edgeprint.ipp.codec import IppMessage
from edgeprint.ipp.names import GroupTag, Operation, Status, Tag
from edgeprint.ipp.values import (
    Attribute,
    AttributeGroup,
    Range,
    StringWithLanguage,
    Value,
    attr,
    strings,
)
from edgeprint.ipp_server import attributes as A
from edgeprint.ipp_server import limits
from edgeprint.models import SubmitMetadata
from edgeprint.printers.health import PrinterSnapshot
from edgeprint.records import JobRecord
from edgeprint.service import Caller, JobService
from edgeprint.service.audit import Note
from edgeprint.spool import StagedDocument
from edgeprint.states import JobState
from edgeprint.titles import clean_title

log = logging.getLogger(__name__)

#: Create-Job ids start here; job sequence numbers never get near it.
PENDING_BASE = 1 << 30
#: Create-Jobs waiting for their document at most; more → server-error-busy.
MAX_PENDING = 1000
#: For this long after a start, Get-Job-Attributes of a Create-Job that an earlier life
#: gave out and whose document never reached the store answers
#: server-error-service-unavailable with job-state pending-held (job-incoming): CUPS's
#: ``ipp`` backend, which took the lost Send-Document for a success, then exits "retry
#: the job now" and sends it again (DESIGN §11). Any other answer (not-found, aborted,
#: canceled, completed) makes it mark its job done. After the window: aborted.
LOST_RESEND_WINDOW_S = 600.0
#: Get-Jobs looks at this many of the newest jobs at most.
GET_JOBS_SCAN = 500
_CHARSETS = {"utf-8", "us-ascii"}
#: The Idempotency-Key of a job submitted with a job-uuid is this and the uuid.
_UUID_KEY = "ipp-job-uuid:"
#: The job attributes of a Print-Job or Send-Document answer.
_SHORT_JOB = {
    "job-id",
    "job-uri",
    "job-uuid",
    "job-state",
    "job-state-reasons",
    "job-state-message",
}
_PRINTER_OPS = {
    Operation.PRINT_JOB, Operation.VALIDATE_JOB, Operation.CREATE_JOB,
    Operation.GET_JOBS, Operation.GET_PRINTER_ATTRIBUTES, Operation.IDENTIFY_PRINTER,
    Operation.CANCEL_MY_JOBS,
}  # fmt: skip
_JOB_OPS = {
    Operation.SEND_DOCUMENT, Operation.CLOSE_JOB, Operation.CANCEL_JOB,
    Operation.GET_JOB_ATTRIBUTES,
}  # fmt: skip
#: Operation attributes each operation reads; any other operation attribute is ignored
#: (RFC 8011 §4.1.7 allows that) except these, which change what a job is.
_UNSUPPORTED_OPERATION_ATTRS = {"compression": {"none"}}


#: A job's page-ranges: 1-based inclusive (lower, upper) pairs, ascending, not overlapping.
PageRanges = tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class Context:
    """Who asks, on which queue. ``user``: the authenticated user (Basic auth), if any;
    ``document``: the request's document, already streamed into the spool's staging area
    (None: the document is the message's data). Discarded unless a job took it. A request
    POSTed to a job-uri takes job operations only, on that job (DESIGN §11)."""

    queue: A.Queue
    caller: Caller
    user: str | None = None
    document: StagedDocument | None = None
    #: The job-id at the end of the request's HTTP path when it went to a job-uri.
    job_path_id: int | None = None


@dataclass
class _Pending:
    """A Create-Job waiting for its Send-Document."""

    queue: str
    owner: str
    name: str | None
    hold: bool
    copies: int
    job_uuid: str | None
    created_at: float
    page_ranges: PageRanges | None = None
    #: When it was made on the monotonic timer: its time-out is a duration (issue 27).
    opened: float = 0.0


@dataclass
class _Names:
    """What this process knows beyond the store: Create-Job ids and job-names."""

    ipp_ids: dict[str, int] = field(default_factory=dict)  # edgeprint id → Create-Job id
    by_ipp_id: dict[int, str] = field(default_factory=dict)
    job_names: dict[str, str] = field(default_factory=dict)


def _refuse(status: int, detail: str, *unsupported: str) -> errors.IppRefused:
    return errors.IppRefused(status, detail, unsupported)


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
            return 0x0418, detail  # client-error-document-password-error (PWG 5100.13)
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
        case errors.IdempotencyKeyReused() if exc.key.startswith(_UUID_KEY):
            return (
                f"job-uuid urn:uuid:{exc.key.removeprefix(_UUID_KEY)} was already used for "
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


def _strings(message: IppMessage, name: str) -> list[str]:
    return list(strings(message.get(GroupTag.OPERATION, name)))


def _uri_path(uri: str, name: str) -> str:
    """The path of a URI attribute; refuses one that is no URI."""
    try:
        return urlsplit(uri).path
    except ValueError:
        raise _refuse(Status.CLIENT_ERROR_BAD_REQUEST, f"{name} is not a URI", name) from None


def _created_key(ipp_id: int) -> str:
    """The Idempotency-Key of the job a Create-Job (without job-uuid) got ``ipp_id`` for."""
    return f"ipp-create-job:{ipp_id}"


def _tag_names(tags: Sequence[int]) -> list[str]:
    return [Tag(t).name.lower().replace("_", "-") for t in tags]


def _one(message: IppMessage, group: int, name: str, tags: Sequence[int]) -> object:
    """The single value of ``name`` in ``group`` (None when absent); refuses a wrong syntax."""
    a = message.get(group, name)
    if a is None:
        return None
    if len(a.values) != 1 or a.values[0].tag not in tags:
        raise _refuse(
            Status.CLIENT_ERROR_BAD_REQUEST,
            f"{name} must be one value of type {' or '.join(_tag_names(tags))}",
            name,
        )
    return a.value


class IppServer:
    """The queues' IPP operations over one JobService."""

    def __init__(
        self,
        service: JobService,
        printers: Callable[[], list[PrinterSnapshot]],
        *,
        clock: Callable[[], float] = time.time,
        timer: Callable[[], float] = time.monotonic,
    ) -> None:
        self.service = service
        self.printers = printers
        self.clock = clock
        #: For durations (a pending Create-Job's time-out): no wall-clock step moves it.
        self.timer = timer
        self.up_since = clock()
        self._up_timer = timer()
        self._pending: dict[int, _Pending] = {}
        # Create-Job ids of this process life start at a clock-derived offset, so that an id
        # a client still holds from before a restart names no job of this life.
        self._first_id = PENDING_BASE + int(self.up_since * 1000) % (1 << 29)
        self._next_id = self._first_id
        self._names = _Names()

    # --- the entry point -------------------------------------------------------

    async def handle(self, raw: bytes, ctx: Context) -> bytes:
        """The response to the request ``raw`` (always a valid IPP response)."""
        version, request_id = (2, 0), 0
        try:
            if len(raw) >= 8:
                version = (raw[0], raw[1])
                request_id = int.from_bytes(raw[4:8], "big", signed=True)
            message = codec.parse(raw)
            response = await self._answer(message, ctx)
        except errors.IppParseError as exc:
            response = self._error(Status.CLIENT_ERROR_BAD_REQUEST, str(exc), version, request_id)
        except errors.EdgeprintError as exc:
            status, detail = status_for(exc)
            response = self._error(status, detail, version, request_id)
            if isinstance(exc, errors.IppRefused) and exc.unsupported and len(raw) >= 8:
                self._add_unsupported(response, raw, exc.unsupported)
        finally:
            if ctx.document is not None:
                ctx.document.discard()  # a no-op once a job took it
        return limits.fit_message(response).encode()

    def _error(
        self, status: int, detail: str, version: tuple[int, int], request_id: int
    ) -> IppMessage:
        if version not in A.VERSIONS:  # answered at the nearest version spoken here
            version = A.VERSIONS[0] if version[0] <= 1 else A.VERSIONS[-1]
        return codec.response(status, request_id, version=version, status_message=detail)

    def _add_unsupported(self, response: IppMessage, raw: bytes, names: Sequence[str]) -> None:
        try:
            request = codec.parse(raw)
        except errors.IppParseError:
            return
        group = AttributeGroup(GroupTag.UNSUPPORTED)
        for name in names:
            for g in request.groups:
                a = g.get(name)
                if a is not None:
                    group.attributes.append(a)
                    break
            else:
                group.attributes.append(Attribute(name, [Value.out_of_band(Tag.UNSUPPORTED)]))
        response.groups.append(group)

    async def _answer(self, message: IppMessage, ctx: Context) -> IppMessage:
        if message.version not in A.VERSIONS:
            major, minor = message.version
            raise _refuse(
                Status.SERVER_ERROR_VERSION_NOT_SUPPORTED,
                f"IPP/{major}.{minor} is not supported; use IPP/1.1 or IPP/2.0",
            )
        if message.request_id <= 0:
            raise _refuse(Status.CLIENT_ERROR_BAD_REQUEST, "request-id must be 1 or more")
        self._check_operation_attributes(message)
        op = message.operation_id
        if op not in _PRINTER_OPS and op not in _JOB_OPS:
            raise _refuse(
                Status.SERVER_ERROR_OPERATION_NOT_SUPPORTED,
                f"operation 0x{op:04x} is not supported by this queue",
            )
        if too_long := limits.too_long(message):  # why refused, not cut: see limits
            raise _refuse(
                Status.CLIENT_ERROR_REQUEST_VALUE_TOO_LONG,
                f"{', '.join(too_long)[:200]}: longer than its syntax allows (RFC 8011 §5.1, in "
                "UTF-8 octets: names and keywords 255, text and URIs 1023)",
                *too_long,
            )
        if ctx.job_path_id is not None:
            self._check_job_path(message, ctx.job_path_id)
        handler = {
            Operation.PRINT_JOB: self._print_job,
            Operation.VALIDATE_JOB: self._validate_job,
            Operation.CREATE_JOB: self._create_job,
            Operation.SEND_DOCUMENT: self._send_document,
            Operation.CLOSE_JOB: self._close_job,
            Operation.CANCEL_JOB: self._cancel_job,
            Operation.CANCEL_MY_JOBS: self._cancel_my_jobs,
            Operation.GET_JOB_ATTRIBUTES: self._get_job_attributes,
            Operation.GET_JOBS: self._get_jobs,
            Operation.GET_PRINTER_ATTRIBUTES: self._get_printer_attributes,
            Operation.IDENTIFY_PRINTER: self._identify_printer,
        }[Operation(op)]
        response = codec.response(Status.SUCCESSFUL_OK, message.request_id, version=message.version)
        await handler(message, ctx, response)
        return response

    def _check_operation_attributes(self, message: IppMessage) -> None:
        """RFC 8011 §4.1.4–4.1.5: charset and natural language first, a target URI."""
        if not message.groups or message.groups[0].tag != GroupTag.OPERATION:
            raise _refuse(
                Status.CLIENT_ERROR_BAD_REQUEST, "the operation attributes group must come first"
            )
        ops = message.groups[0].attributes
        if (
            len(ops) < 2
            or ops[0].name != "attributes-charset"
            or ops[1].name != "attributes-natural-language"
        ):
            raise _refuse(
                Status.CLIENT_ERROR_BAD_REQUEST,
                "attributes-charset and attributes-natural-language must be the first two "
                "operation attributes",
            )
        if len(message.groups_of(GroupTag.OPERATION)) > 1:
            raise _refuse(
                Status.CLIENT_ERROR_BAD_REQUEST, "more than one operation attributes group"
            )
        charset = _one(message, GroupTag.OPERATION, "attributes-charset", [Tag.CHARSET])
        _one(message, GroupTag.OPERATION, "attributes-natural-language", [Tag.NATURAL_LANGUAGE])
        if not isinstance(charset, str) or charset.lower() not in _CHARSETS:
            raise _refuse(
                Status.CLIENT_ERROR_CHARSET_NOT_SUPPORTED,
                f"attributes-charset {charset!r} is not supported; use utf-8",
                "attributes-charset",
            )
        names = [a.name for a in ops]
        if len(set(names)) != len(names):
            raise _refuse(Status.CLIENT_ERROR_BAD_REQUEST, "an operation attribute is given twice")
        printer_uri = _one(message, GroupTag.OPERATION, "printer-uri", [Tag.URI])
        job_uri = _one(message, GroupTag.OPERATION, "job-uri", [Tag.URI])
        if message.operation_id in _JOB_OPS:
            if job_uri is None and printer_uri is None:
                raise _refuse(
                    Status.CLIENT_ERROR_BAD_REQUEST,
                    "job-uri or printer-uri and job-id are required",
                )
        elif printer_uri is None:
            raise _refuse(Status.CLIENT_ERROR_BAD_REQUEST, "printer-uri is required")
        _one(
            message, GroupTag.OPERATION, "requesting-user-name", [Tag.NAME, Tag.NAME_WITH_LANGUAGE]
        )
        for name, allowed in _UNSUPPORTED_OPERATION_ATTRS.items():
            value = _one(message, GroupTag.OPERATION, name, [Tag.KEYWORD])
            if value is not None and value not in allowed:
                raise _refuse(
                    Status.CLIENT_ERROR_COMPRESSION_NOT_SUPPORTED,
                    f"{name} {value!r} is not supported; send the document uncompressed",
                    name,
                )

    def _check_job_path(self, message: IppMessage, path_id: int) -> None:
        """A request POSTed to a job-uri: a job operation naming that job."""
        op = Operation(message.operation_id)
        if op not in _JOB_OPS:
            name = "-".join(w.capitalize() for w in op.name.split("_"))
            raise _refuse(
                Status.CLIENT_ERROR_BAD_REQUEST,
                f"{name} is a printer operation: send it to the printer-uri",
            )
        named = self._job_id(message)
        if named != path_id:
            raise _refuse(
                Status.CLIENT_ERROR_BAD_REQUEST,
                f"the request names job {named} but went to the URI of job {path_id}",
            )

    def _check_target(self, message: IppMessage, ctx: Context) -> None:
        """printer-uri (or job-uri) must name this queue's path."""
        for name in ("printer-uri", "job-uri"):
            uri = message.value(GroupTag.OPERATION, name)
            if isinstance(uri, str):
                path = _uri_path(uri, name).rstrip("/")
                mine = f"/ipp/print/{ctx.queue.name}"
                if name == "job-uri":
                    path = path.rsplit("/", 1)[0]
                if path != mine:
                    raise _refuse(
                        Status.CLIENT_ERROR_NOT_FOUND,
                        f"{name} {uri[:120]!r} does not name this queue ({mine})",
                        name,
                    )

    # --- who asks and for what --------------------------------------------------

    def _owner(self, message: IppMessage, ctx: Context) -> str:
        if ctx.user is not None:
            return ctx.user
        value = message.value(GroupTag.OPERATION, "requesting-user-name")
        if isinstance(value, StringWithLanguage):
            value = value.text
        if isinstance(value, str) and value.strip():
            return value
        return "anonymous"

    def _may_touch(self, owner: str, message: IppMessage, ctx: Context) -> None:
        """Only the job's owner (or a tech token) may send its document or cancel it."""
        if ctx.caller.role == "tech" or self._owner(message, ctx) == owner:
            return
        raise _refuse(
            Status.CLIENT_ERROR_NOT_AUTHORIZED,
            "this job belongs to another user; requesting-user-name must be its owner",
            "requesting-user-name",
        )

    def _hold(self, message: IppMessage, ctx: Context) -> bool:
        value = _one(message, GroupTag.JOB, "job-hold-until", [Tag.KEYWORD, Tag.NAME])
        if value is None:
            value = _one(message, GroupTag.OPERATION, "job-hold-until", [Tag.KEYWORD, Tag.NAME])
        if value is None:
            return ctx.queue.hold_by_default
        return value != "no-hold"

    def _copies(self, message: IppMessage) -> int:
        value = _one(message, GroupTag.JOB, "copies", [Tag.INTEGER])
        if value is None:
            return 1
        assert isinstance(value, int)
        if not 1 <= value <= A.MAX_COPIES:
            raise _refuse(
                Status.CLIENT_ERROR_ATTRIBUTES_OR_VALUES_NOT_SUPPORTED,
                f"copies must be 1 to {A.MAX_COPIES}",
                "copies",
            )
        return value

    def _format(self, message: IppMessage) -> str:
        value = _one(message, GroupTag.OPERATION, "document-format", [Tag.MIME_MEDIA_TYPE])
        fmt = "application/octet-stream" if value is None else str(value).lower()
        if fmt not in A.DOCUMENT_FORMATS:
            raise _refuse(
                Status.CLIENT_ERROR_DOCUMENT_FORMAT_NOT_SUPPORTED,
                f"document-format {fmt[:80]!r} is not supported; this queue takes "
                f"{', '.join(A.DOCUMENT_FORMATS)}",
                "document-format",
            )
        return fmt

    def _job_uuid(self, message: IppMessage) -> str | None:
        value = _one(message, GroupTag.OPERATION, "job-uuid", [Tag.URI])
        if value is None:
            value = _one(message, GroupTag.JOB, "job-uuid", [Tag.URI])
        if value is None:
            return None
        assert isinstance(value, str)
        try:
            return str(uuid.UUID(value.removeprefix("urn:uuid:")))
        except ValueError:
            raise _refuse(
                Status.CLIENT_ERROR_ATTRIBUTES_OR_VALUES_NOT_SUPPORTED,
                "job-uuid must be a urn:uuid: URI",
                "job-uuid",
            ) from None

    def _job_name(self, message: IppMessage) -> str | None:
        value = message.value(GroupTag.OPERATION, "job-name")
        if isinstance(value, StringWithLanguage):
            value = value.text
        if not isinstance(value, str) or not value:
            return None
        return limits.fit(value, limits.MAX_OCTETS[Tag.NAME])  # cut, not refused: see limits

    def _page_ranges(self, message: IppMessage) -> PageRanges | None:
        """page-ranges (RFC 8011 §5.2.7): ascending, not overlapping, from page 1 up."""
        a = message.get(GroupTag.JOB, "page-ranges")
        if a is None:
            return None
        values = [v.value for v in a.values]
        if not values or not all(isinstance(v, Range) for v in values):
            raise _refuse(
                Status.CLIENT_ERROR_BAD_REQUEST,
                "page-ranges must be rangeOfInteger values",
                "page-ranges",
            )
        ranges = tuple((v.lower, v.upper) for v in values if isinstance(v, Range))
        last = 0
        for lower, upper in ranges:
            if not last < lower <= upper:
                raise _refuse(
                    Status.CLIENT_ERROR_ATTRIBUTES_OR_VALUES_NOT_SUPPORTED,
                    "page-ranges must start at page 1 or later, ascend and not overlap",
                    "page-ranges",
                )
            last = upper
        return ranges

    def _check_overrides(self, message: IppMessage) -> None:
        """overrides (PWG 5100.6) may only select pages or the document: edgeprint changes
        no attribute per page, so a collection that asks for a change is refused."""
        a = message.get(GroupTag.JOB, "overrides")
        if a is None:
            return
        for v in a.values:
            members = v.value if v.tag == Tag.BEG_COLLECTION else None
            if not isinstance(members, list):
                raise _refuse(
                    Status.CLIENT_ERROR_BAD_REQUEST, "overrides must be collections", "overrides"
                )
            extra = sorted({m.name for m in members} - set(A.OVERRIDES_SUPPORTED))
            if extra:
                raise _refuse(
                    Status.CLIENT_ERROR_ATTRIBUTES_OR_VALUES_NOT_SUPPORTED,
                    f"overrides of {', '.join(extra)[:80]} are not supported: this queue prints "
                    "every page of a job with the same attributes (overrides-supported)",
                    "overrides",
                )

    def _meta(
        self, ctx: Context, owner: str, hold: bool, copies: int, job_name: str | None = None
    ) -> SubmitMetadata:
        """The submission; the job-name, cleaned, is its title (a name too long or with
        control characters is cut or spaced, never a refusal)."""
        queue = ctx.queue
        target = {"printer": queue.name} if queue.kind == "printer" else {"pool": queue.name}
        title = clean_title(job_name)
        try:
            return SubmitMetadata.model_validate(
                {"owner": owner, "hold": hold, "copies": copies, "title": title, **target}
            )
        except ValidationError as exc:
            raise _refuse(
                Status.CLIENT_ERROR_ATTRIBUTES_OR_VALUES_NOT_SUPPORTED,
                f"requesting-user-name cannot be a job owner: {exc.errors()[0]['msg']}",
                "requesting-user-name",
            ) from None

    # --- jobs ------------------------------------------------------------------------

    async def _submit(
        self,
        ctx: Context,
        meta: SubmitMetadata,
        data: bytes,
        key: str,
        fmt: str,
        page_ranges: PageRanges | None = None,
    ) -> JobRecord:
        """Submit the request's document (``ctx.document``, or ``data`` staged here).

        A raster or JPEG (AirPrint, Mopria, IPP Everywhere clients) is kept as a
        PDF of its pages, so it is an ordinary job that reaches any printer in a
        format that printer takes.
        """
        staged = ctx.document
        if staged is None:
            limit = self.service.config.server.max_document_bytes
            if len(data) > limit:
                raise errors.PayloadTooLarge("the document", limit)
            staged = self.service.stage_document()
            try:
                staged.write(data)
            except BaseException:
                staged.discard()
                raise
        if staged.size > 0 and (fmt in A.CONVERTED_FORMATS or fmt == "application/octet-stream"):
            staged = await self._as_pdf(staged, fmt)
        raw = fmt in A.RAW_FORMATS
        if raw and page_ranges is not None:
            staged.discard()
            raise _refuse(
                Status.CLIENT_ERROR_ATTRIBUTES_OR_VALUES_NOT_SUPPORTED,
                f"page-ranges select pages of a PDF; a {fmt} document is sent whole",
                "page-ranges",
            )
        if staged.size > 0 and page_ranges is not None:
            staged = await self._cut(staged, page_ranges)
        if staged.size == 0:
            staged.discard()
            raise _refuse(Status.CLIENT_ERROR_BAD_REQUEST, "the request carries no document")
        result = await self.service.submit(
            meta, staged, key, ctx.caller, document_format=fmt if raw else "application/pdf"
        )
        crash_point("ipp_after_store")
        return result.job

    async def _cut(self, staged: StagedDocument, page_ranges: PageRanges) -> StagedDocument:
        """A staged PDF replaced by one of the pages ``page_ranges`` select (what is
        stored, and so printed, is only those pages)."""
        try:
            return await self.service.select_pages(staged, page_ranges)
        except errors.NoPageSelected as exc:
            raise _refuse(
                Status.CLIENT_ERROR_ATTRIBUTES_OR_VALUES_NOT_SUPPORTED, str(exc), "page-ranges"
            ) from None

    async def _as_pdf(self, staged: StagedDocument, fmt: str) -> StagedDocument:
        """A staged raster or JPEG replaced by a staged PDF of its pages (a PDF stays as it is).

        Raises errors.UnsupportedDocument when it is not what its format says.
        """
        try:
            raw = staged.contents().read()
        except BaseException:
            staged.discard()
            raise
        kind = _sniff(fmt, raw)
        if kind not in A.CONVERTED_FORMATS:
            return staged  # a PDF (or something the PDF check will refuse)
        staged.discard()
        pdf = await self.service.document_as_pdf(raw, kind)
        out = self.service.stage_document()
        try:
            out.write(pdf)
        except BaseException:
            out.discard()
            raise
        return out

    def _job_group(
        self,
        ctx: Context,
        job: JobRecord,
        response: IppMessage,
        requested: set[str] | None,
        ipp_id: int | None = None,
    ) -> None:
        """The job's attributes; ``ipp_id``: the id the client knows it by, if not the usual."""
        if ipp_id is None:
            ipp_id = self._names.ipp_ids.get(job.id, job.seq)
        name = self._names.job_names.get(job.id) or job.title
        attrs = A.job_attributes(ctx.queue, job, ipp_id, name)
        response.groups.append(AttributeGroup(GroupTag.JOB, A.select(attrs, requested)))

    def _short_job_group(
        self, ctx: Context, job: JobRecord, response: IppMessage, ipp_id: int | None = None
    ) -> None:
        self._job_group(ctx, job, response, _SHORT_JOB, ipp_id)

    async def _print_job(self, message: IppMessage, ctx: Context, response: IppMessage) -> None:
        self._check_target(message, ctx)
        fmt = self._format(message)
        meta = self._meta(
            ctx,
            self._owner(message, ctx),
            self._hold(message, ctx),
            self._copies(message),
            self._job_name(message),
        )
        ranges = self._page_ranges(message)
        self._check_overrides(message)
        job_uuid = self._job_uuid(message)
        key = f"{_UUID_KEY}{job_uuid}" if job_uuid else f"ipp:{uuid.uuid4().hex}"
        job = await self._submit(ctx, meta, message.data, key, fmt, ranges)
        if (name := self._job_name(message)) is not None:
            self._names.job_names[job.id] = name
        self._short_job_group(ctx, job, response)

    async def _validate_job(self, message: IppMessage, ctx: Context, response: IppMessage) -> None:
        self._check_target(message, ctx)
        fmt = self._format(message)
        if fmt in A.RAW_FORMATS:
            queue = ctx.queue
            on_printer = queue.kind == "printer"
            self.service.check_format(
                queue.name if on_printer else None, None if on_printer else queue.name, fmt
            )
        self._meta(ctx, self._owner(message, ctx), self._hold(message, ctx), self._copies(message))
        self._page_ranges(message)
        self._check_overrides(message)
        self._job_uuid(message)

    async def _create_job(self, message: IppMessage, ctx: Context, response: IppMessage) -> None:
        self._check_target(message, ctx)
        owner = self._owner(message, ctx)
        self._meta(ctx, owner, self._hold(message, ctx), self._copies(message))
        ranges = self._page_ranges(message)
        self._check_overrides(message)
        self._expire_pending()
        if len(self._pending) >= MAX_PENDING:
            raise _refuse(Status.SERVER_ERROR_BUSY, "too many jobs wait for their document; retry")
        ipp_id = self._next_id
        self._next_id += 1
        pending = _Pending(
            ctx.queue.name, owner, self._job_name(message), self._hold(message, ctx),
            self._copies(message), self._job_uuid(message), self.clock(), ranges,
            self.timer(),
        )  # fmt: skip
        self._pending[ipp_id] = pending
        crash_point("ipp_create_job")
        attrs = A.pending_job_attributes(ctx.queue, ipp_id, pending.name, owner, pending.created_at)
        keep = {"job-id", "job-uri", "job-state", "job-state-reasons", "job-state-message"}
        response.groups.append(AttributeGroup(GroupTag.JOB, A.select(attrs, keep)))

    def _expire_pending(self) -> None:
        """Create-Jobs whose document did not come within multiple-operation-time-out."""
        cutoff = self.timer() - A.MULTIPLE_OPERATION_TIME_OUT_S
        for ipp_id in [i for i, p in self._pending.items() if p.opened < cutoff]:
            del self._pending[ipp_id]

    def _job_id(self, message: IppMessage) -> int:
        job_uri = message.value(GroupTag.OPERATION, "job-uri")
        if isinstance(job_uri, str):
            tail = _uri_path(job_uri, "job-uri").rsplit("/", 1)[-1]
            if tail.isascii() and tail.isdigit():
                return int(tail)
            raise _refuse(Status.CLIENT_ERROR_NOT_FOUND, "job-uri names no job", "job-uri")
        value = _one(message, GroupTag.OPERATION, "job-id", [Tag.INTEGER])
        if value is None:
            raise _refuse(
                Status.CLIENT_ERROR_BAD_REQUEST, "job-id (with printer-uri) or job-uri is required"
            )
        assert isinstance(value, int)
        return value

    async def _find(self, ipp_id: int, ctx: Context) -> JobRecord:
        """The stored job with this IPP job-id on this queue; IppRefused not-found otherwise."""
        job_id = self._names.by_ipp_id.get(ipp_id)
        job: JobRecord | None
        if job_id is not None:
            job = await self.service.get(job_id)
        elif 0 < ipp_id < PENDING_BASE:
            job = await self.service.job_by_seq(ipp_id)
        else:
            job = await self.service.job_by_idempotency_key(_created_key(ipp_id))
            if job is not None:
                self._names.ipp_ids.setdefault(job.id, ipp_id)
                self._names.by_ipp_id[ipp_id] = job.id
        if job is None or not self._on_queue(job, ctx.queue):
            raise _refuse(Status.CLIENT_ERROR_NOT_FOUND, f"no job {ipp_id} on this queue", "job-id")
        return job

    @staticmethod
    def _on_queue(job: JobRecord, queue: A.Queue) -> bool:
        if queue.kind == "pool":
            return job.pool == queue.name or (job.pool is None and job.printer in queue.members)
        return job.printer == queue.name or job.printed_on == queue.name

    async def _send_document(self, message: IppMessage, ctx: Context, response: IppMessage) -> None:
        self._check_target(message, ctx)
        ipp_id = self._job_id(message)
        pending = self._pending.get(ipp_id)
        if pending is None or pending.queue != ctx.queue.name:
            if ipp_id in self._names.by_ipp_id or 0 < ipp_id < PENDING_BASE:
                await self._find(ipp_id, ctx)
                raise _refuse(
                    Status.CLIENT_ERROR_NOT_POSSIBLE,
                    f"job {ipp_id} already has its document (one document per job)",
                )
            raise _refuse(
                Status.CLIENT_ERROR_NOT_FOUND, f"no job {ipp_id} waits for a document", "job-id"
            )
        self._may_touch(pending.owner, message, ctx)
        fmt = self._format(message)
        last = _one(message, GroupTag.OPERATION, "last-document", [Tag.BOOLEAN])
        if last is None:
            raise _refuse(Status.CLIENT_ERROR_BAD_REQUEST, "last-document is required")
        if last is not True:
            raise _refuse(
                Status.SERVER_ERROR_MULTIPLE_DOCUMENT_JOBS_NOT_SUPPORTED,
                "one document per job: send it with last-document true",
                "last-document",
            )
        meta = self._meta(ctx, pending.owner, pending.hold, pending.copies, pending.name)
        # Without a job-uuid, the Create-Job id is the key: it finds the job after a restart.
        key = f"{_UUID_KEY}{pending.job_uuid}" if pending.job_uuid else _created_key(ipp_id)
        job = await self._submit(ctx, meta, message.data, key, fmt, pending.page_ranges)
        self._pending.pop(ipp_id, None)
        # A retried job-uuid is the same job: its listings keep the first Create-Job's id,
        # and this client's id names it too.
        self._names.ipp_ids.setdefault(job.id, ipp_id)
        self._names.by_ipp_id[ipp_id] = job.id
        if pending.name is not None:
            self._names.job_names.setdefault(job.id, pending.name)
        self._short_job_group(ctx, job, response, ipp_id)

    async def _close_job(self, message: IppMessage, ctx: Context, response: IppMessage) -> None:
        self._check_target(message, ctx)
        ipp_id = self._job_id(message)
        pending = self._pending.get(ipp_id)
        if pending is not None and pending.queue == ctx.queue.name:
            self._may_touch(pending.owner, message, ctx)
            del self._pending[ipp_id]  # closed without a document: nothing to print
            return
        await self._find(ipp_id, ctx)

    async def _cancel_job(self, message: IppMessage, ctx: Context, response: IppMessage) -> None:
        self._check_target(message, ctx)
        ipp_id = self._job_id(message)
        pending = self._pending.get(ipp_id)
        if pending is not None and pending.queue == ctx.queue.name:
            self._may_touch(pending.owner, message, ctx)
            del self._pending[ipp_id]
            return
        job = await self._find(ipp_id, ctx)
        async with self._audit(message, ctx, job.id):
            self._may_touch(job.owner, message, ctx)
            if job.state not in A.NOT_COMPLETED and job.state is not JobState.DEAD:
                raise _refuse(
                    Status.CLIENT_ERROR_NOT_POSSIBLE,
                    f"job {ipp_id} is {job.state.value} and cannot be canceled",
                )
            await self.service.cancel(job.id, ctx.caller)

    def _audit(
        self, message: IppMessage, ctx: Context, job_id: str
    ) -> AbstractAsyncContextManager[Note]:
        """The audit row of a cancel (issue 26): who is the Basic user, else the
        requesting-user-name (actor_kind ``ipp-user``), from the client's address."""
        who = replace(ctx.caller, name=self._owner(message, ctx))
        return self.service.audit.action(who, "cancel", "job", job_id)

    async def _cancel_my_jobs(
        self, message: IppMessage, ctx: Context, response: IppMessage
    ) -> None:
        self._check_target(message, ctx)
        owner = self._owner(message, ctx)
        for ipp_id, p in list(self._pending.items()):
            if p.owner == owner and p.queue == ctx.queue.name:
                del self._pending[ipp_id]
        for job in await self._queue_jobs(ctx.queue, owner=owner):
            if job.state in A.NOT_COMPLETED:
                with contextlib.suppress(errors.StateConflict):  # it finished meanwhile
                    async with self._audit(message, ctx, job.id):
                        await self.service.cancel(job.id, ctx.caller)

    async def _queue_jobs(self, queue: A.Queue, owner: str | None = None) -> list[JobRecord]:
        printer = queue.name if queue.kind == "printer" else None
        jobs = await self.service.recent_jobs(printer=printer, owner=owner, limit=GET_JOBS_SCAN)
        return [j for j in jobs if self._on_queue(j, queue)]

    async def _get_job_attributes(
        self, message: IppMessage, ctx: Context, response: IppMessage
    ) -> None:
        self._check_target(message, ctx)
        ipp_id = self._job_id(message)
        requested = self._requested(message)
        pending = self._pending.get(ipp_id)
        if pending is not None and pending.queue == ctx.queue.name:
            attrs = A.pending_job_attributes(
                ctx.queue, ipp_id, pending.name, pending.owner, pending.created_at
            )
            response.groups.append(AttributeGroup(GroupTag.JOB, A.select(attrs, requested)))
            return
        try:
            job = await self._find(ipp_id, ctx)
        except errors.IppRefused:
            if not self._lost(ipp_id):
                raise
            # A Create-Job of an earlier process life whose document was never stored.
            resend = self.timer() - self._up_timer < LOST_RESEND_WINDOW_S
            attrs = A.lost_job_attributes(ctx.queue, ipp_id, resend)
            response.groups.append(AttributeGroup(GroupTag.JOB, A.select(attrs, requested)))
            if resend:
                response.status_code = Status.SERVER_ERROR_SERVICE_UNAVAILABLE
                ops = response.groups[0].attributes
                ops.append(attr("status-message", Tag.TEXT, A.LOST_MESSAGE))
            return
        self._job_group(ctx, job, response, requested)

    def _lost(self, ipp_id: int) -> bool:
        """A Create-Job id that an earlier life of this process gave out."""
        return ipp_id >= PENDING_BASE and not self._first_id <= ipp_id < self._next_id

    def _requested(self, message: IppMessage) -> set[str] | None:
        a = message.get(GroupTag.OPERATION, "requested-attributes")
        if a is None:
            return None
        if any(v.tag != Tag.KEYWORD for v in a.values):
            raise _refuse(
                Status.CLIENT_ERROR_BAD_REQUEST,
                "requested-attributes must be keywords",
                "requested-attributes",
            )
        return set(strings(a))

    async def _get_jobs(self, message: IppMessage, ctx: Context, response: IppMessage) -> None:
        self._check_target(message, ctx)
        which = _one(message, GroupTag.OPERATION, "which-jobs", [Tag.KEYWORD]) or "not-completed"
        if which not in ("not-completed", "completed", "all"):
            raise _refuse(
                Status.CLIENT_ERROR_ATTRIBUTES_OR_VALUES_NOT_SUPPORTED,
                f"which-jobs {str(which)[:40]!r} is not supported",
                "which-jobs",
            )
        limit = _one(message, GroupTag.OPERATION, "limit", [Tag.INTEGER])
        if limit is not None and (not isinstance(limit, int) or limit < 1):
            raise _refuse(
                Status.CLIENT_ERROR_ATTRIBUTES_OR_VALUES_NOT_SUPPORTED,
                "limit must be 1 or more",
                "limit",
            )
        my_jobs = _one(message, GroupTag.OPERATION, "my-jobs", [Tag.BOOLEAN])
        owner = self._owner(message, ctx) if my_jobs is True else None
        requested = self._requested(message) or {"job-id", "job-uri"}
        jobs = await self._queue_jobs(ctx.queue, owner=owner)
        if which == "not-completed":
            jobs = [j for j in jobs if j.state in A.NOT_COMPLETED]
        elif which == "completed":
            jobs = [j for j in jobs if j.state not in A.NOT_COMPLETED]
        for job in jobs[: limit if isinstance(limit, int) else None]:
            self._job_group(ctx, job, response, requested)

    async def _get_printer_attributes(
        self, message: IppMessage, ctx: Context, response: IppMessage
    ) -> None:
        self._check_target(message, ctx)
        fmt = _one(message, GroupTag.OPERATION, "document-format", [Tag.MIME_MEDIA_TYPE])
        if fmt is not None and str(fmt).lower() not in A.DOCUMENT_FORMATS:
            raise _refuse(
                Status.CLIENT_ERROR_ATTRIBUTES_OR_VALUES_NOT_SUPPORTED,
                f"document-format {str(fmt)[:80]!r} is not supported",
                "document-format",
            )
        queued = sum(1 for j in await self._queue_jobs(ctx.queue) if j.state in A.NOT_COMPLETED)
        attrs = A.printer_attributes(
            ctx.queue, self.printers(), queued, self.up_since, self.clock()
        )
        response.groups.append(
            AttributeGroup(GroupTag.PRINTER, A.select(attrs, self._requested(message)))
        )

    async def _identify_printer(
        self, message: IppMessage, ctx: Context, response: IppMessage
    ) -> None:
        self._check_target(message, ctx)
        log.info(
            "identify printer",
            extra={"event": "ipp_identify_printer", "queue": ctx.queue.name,
                   "correlation_id": ctx.caller.correlation_id},
        )  # fmt: skip

    # --- queues ------------------------------------------------------------------------

    def queue(self, name: str, base_uri: str, status_uri: str) -> A.Queue | None:
        """The queue called ``name`` (a configured printer or pool), or None."""
        config = self.service.config
        members: tuple[str, ...]
        if config.printer(name) is not None:
            kind, members = "printer", (name,)
        elif name in config.pools:
            kind, members = "pool", config.pools[name]
        else:
            return None
        return A.Queue(
            name=name, kind=kind, members=members,
            hold_by_default=name in config.ipp.hold_queues,
            base_uri=base_uri, status_uri=status_uri, auth=config.ipp.auth,
            max_document_bytes=config.server.max_document_bytes,
        )  # fmt: skip


def _sniff(fmt: str, data: bytes) -> str:
    """The format of a document: as declared, or (octet-stream) by its first bytes."""
    if fmt != "application/octet-stream":
        return fmt
    if data.startswith(b"RaS2"):
        return "image/pwg-raster"
    if data.startswith(b"UNIRAST"):
        return "image/urf"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    return fmt  # not one edgeprint knows: the PDF check refuses it
