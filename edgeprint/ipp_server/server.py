"""The IPP entry of an edgeprint queue: request bytes in, response bytes out.

A request is parsed, checked as RFC 8011 §4.1 asks of every request (version, request-id,
the operation attributes first, a target), then routed by its target first (PAPPL's
way): a queue's operations are :mod:`.printer_ops`, a job's :mod:`.job_ops`. Every job
goes through :class:`edgeprint.service.JobService` exactly as a ``POST /v1/jobs`` does.
Transport concerns (HTTP, addresses, authentication) stay in ``edgeprint.api.ipp``;
this package knows IPP and the service, nothing else.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from edgeprint import errors
from edgeprint.ipp import codec
from edgeprint.ipp.codec import IppMessage
from edgeprint.ipp.names import GroupTag, Operation, Status, Tag, operation_name
from edgeprint.ipp.values import Attribute, AttributeGroup, Value
from edgeprint.ipp_server import attributes as A
from edgeprint.ipp_server import job_ops, limits, printer_ops, request
from edgeprint.ipp_server.request import Context, one, refuse
from edgeprint.ipp_server.state import ServerState
from edgeprint.ipp_server.statuses import status_for
from edgeprint.printers.health import PrinterSnapshot
from edgeprint.service import JobService

_CHARSETS = {"utf-8", "us-ascii"}
#: Operation attributes each operation reads; any other operation attribute is ignored
#: (RFC 8011 §4.1.7 allows that) except these, which change what a job is.
_UNSUPPORTED_OPERATION_ATTRS = {"compression": {"none"}}


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
        self.state = ServerState(service, printers, clock=clock, timer=timer)

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
            response = _error(Status.CLIENT_ERROR_BAD_REQUEST, str(exc), version, request_id)
        except errors.EdgeprintError as exc:
            status, detail = status_for(exc)
            response = _error(status, detail, version, request_id)
            if isinstance(exc, errors.IppRefused) and exc.unsupported and len(raw) >= 8:
                _add_unsupported(response, raw, exc.unsupported)
        return limits.fit_message(response).encode()

    async def _answer(self, message: IppMessage, ctx: Context) -> IppMessage:
        if message.version not in A.VERSIONS:
            major, minor = message.version
            raise refuse(
                Status.SERVER_ERROR_VERSION_NOT_SUPPORTED,
                f"IPP/{major}.{minor} is not supported; use IPP/1.1 or IPP/2.0",
            )
        if message.request_id <= 0:
            raise refuse(Status.CLIENT_ERROR_BAD_REQUEST, "request-id must be 1 or more")
        _check_operation_attributes(message)
        op = message.operation_id
        if op not in printer_ops.HANDLERS and op not in job_ops.HANDLERS:
            raise refuse(
                Status.SERVER_ERROR_OPERATION_NOT_SUPPORTED,
                f"operation 0x{op:04x} is not supported by this queue",
            )
        if too_long := limits.too_long(message):  # why refused, not cut: see limits
            raise refuse(
                Status.CLIENT_ERROR_REQUEST_VALUE_TOO_LONG,
                f"{', '.join(too_long)[:200]}: longer than its syntax allows (RFC 8011 §5.1, in "
                "UTF-8 octets: names and keywords 255, text and URIs 1023)",
                *too_long,
            )
        if ctx.job_path_id is not None:
            _check_job_path(message, ctx.job_path_id)
        handler = job_ops.HANDLERS.get(Operation(op)) or printer_ops.HANDLERS[Operation(op)]
        response = codec.response(Status.SUCCESSFUL_OK, message.request_id, version=message.version)
        await handler(self.state, message, ctx, response)
        return response

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
            name=name,
            kind=kind,
            members=members,
            hold_by_default=name in config.ipp.hold_queues,
            base_uri=base_uri,
            status_uri=status_uri,
            auth=config.ipp.auth,
            max_document_bytes=config.server.max_document_bytes,
        )


def _error(status: int, detail: str, version: tuple[int, int], request_id: int) -> IppMessage:
    if version not in A.VERSIONS:  # answered at the nearest version spoken here
        version = A.VERSIONS[0] if version[0] <= 1 else A.VERSIONS[-1]
    return codec.response(status, request_id, version=version, status_message=detail)


def _add_unsupported(response: IppMessage, raw: bytes, names: Sequence[str]) -> None:
    try:
        asked = codec.parse(raw)
    except errors.IppParseError:
        return
    group = AttributeGroup(GroupTag.UNSUPPORTED)
    for name in names:
        for g in asked.groups:
            a = g.get(name)
            if a is not None:
                group.attributes.append(a)
                break
        else:
            group.attributes.append(Attribute(name, [Value.out_of_band(Tag.UNSUPPORTED)]))
    response.groups.append(group)


def _check_operation_attributes(message: IppMessage) -> None:
    """RFC 8011 §4.1.4–4.1.5: charset and natural language first, a target URI."""
    if not message.groups or message.groups[0].tag != GroupTag.OPERATION:
        raise refuse(
            Status.CLIENT_ERROR_BAD_REQUEST, "the operation attributes group must come first"
        )
    ops = message.groups[0].attributes
    if (
        len(ops) < 2
        or ops[0].name != "attributes-charset"
        or ops[1].name != "attributes-natural-language"
    ):
        raise refuse(
            Status.CLIENT_ERROR_BAD_REQUEST,
            "attributes-charset and attributes-natural-language must be the first two "
            "operation attributes",
        )
    if len(message.groups_of(GroupTag.OPERATION)) > 1:
        raise refuse(Status.CLIENT_ERROR_BAD_REQUEST, "more than one operation attributes group")
    charset = one(message, GroupTag.OPERATION, "attributes-charset", [Tag.CHARSET])
    one(message, GroupTag.OPERATION, "attributes-natural-language", [Tag.NATURAL_LANGUAGE])
    if not isinstance(charset, str) or charset.lower() not in _CHARSETS:
        raise refuse(
            Status.CLIENT_ERROR_CHARSET_NOT_SUPPORTED,
            f"attributes-charset {charset!r} is not supported; use utf-8",
            "attributes-charset",
        )
    names = [a.name for a in ops]
    if len(set(names)) != len(names):
        raise refuse(Status.CLIENT_ERROR_BAD_REQUEST, "an operation attribute is given twice")
    printer_uri = one(message, GroupTag.OPERATION, "printer-uri", [Tag.URI])
    job_uri = one(message, GroupTag.OPERATION, "job-uri", [Tag.URI])
    if message.operation_id in job_ops.HANDLERS:
        if job_uri is None and printer_uri is None:
            raise refuse(
                Status.CLIENT_ERROR_BAD_REQUEST,
                "job-uri or printer-uri and job-id are required",
            )
    elif printer_uri is None:
        raise refuse(Status.CLIENT_ERROR_BAD_REQUEST, "printer-uri is required")
    one(message, GroupTag.OPERATION, "requesting-user-name", [Tag.NAME, Tag.NAME_WITH_LANGUAGE])
    for name, allowed in _UNSUPPORTED_OPERATION_ATTRS.items():
        value = one(message, GroupTag.OPERATION, name, [Tag.KEYWORD])
        if value is not None and value not in allowed:
            raise refuse(
                Status.CLIENT_ERROR_COMPRESSION_NOT_SUPPORTED,
                f"{name} {value!r} is not supported; send the document uncompressed",
                name,
            )


def _check_job_path(message: IppMessage, path_id: int) -> None:
    """A request POSTed to a job-uri: a job operation naming that job."""
    op = Operation(message.operation_id)
    if op not in job_ops.HANDLERS:
        raise refuse(
            Status.CLIENT_ERROR_BAD_REQUEST,
            f"{operation_name(op)} is a printer operation: send it to the printer-uri",
        )
    named = request.job_id(message)
    if named != path_id:
        raise refuse(
            Status.CLIENT_ERROR_BAD_REQUEST,
            f"the request names job {named} but went to the URI of job {path_id}",
        )
