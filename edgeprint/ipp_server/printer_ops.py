"""The operations whose target is a queue (the printer object of RFC 8011 §4.2): Print-Job,
Validate-Job, Create-Job, Get-Jobs, Get-Printer-Attributes, Identify-Printer and
Cancel-My-Jobs.

Each takes the server's shared state, the request, its context and the response to fill
(its operation group already made), and refuses a request it cannot do with
:func:`edgeprint.ipp_server.request.refuse`.
"""

from __future__ import annotations

import contextlib
import logging
import uuid

from edgeprint import errors
from edgeprint.documents import formats
from edgeprint.faults import crash_point
from edgeprint.ipp.codec import IppMessage
from edgeprint.ipp.names import GroupTag, Operation, Status, Tag
from edgeprint.ipp.values import AttributeGroup
from edgeprint.ipp_server import attributes as A
from edgeprint.ipp_server import job_ops, request, template
from edgeprint.ipp_server.pending import Pending
from edgeprint.ipp_server.request import Context, one, refuse
from edgeprint.ipp_server.state import SHORT_JOB, Handler, ServerState
from edgeprint.ipp_server.submit import UUID_KEY, store_document
from edgeprint.logs import log_event

#: The logger name its lines have always had (the JSON line's ``logger`` field).
log = logging.getLogger("edgeprint.ipp_server.operations")


async def print_job(
    state: ServerState, message: IppMessage, ctx: Context, response: IppMessage
) -> None:
    """Print-Job (RFC 8011 §4.2.1): the request's document becomes a stored job."""
    request.check_target(message, ctx)
    fmt = template.document_format(message)
    meta = template.submission(
        ctx,
        request.owner(message, ctx),
        template.hold(message, ctx),
        template.copies(message),
        template.job_name(message),
    )
    ranges = template.page_ranges(message)
    template.check_overrides(message)
    job_uuid = template.job_uuid(message)
    key = f"{UUID_KEY}{job_uuid}" if job_uuid else f"ipp:{uuid.uuid4().hex}"
    job = await store_document(state.service, ctx, meta, message.data, key, fmt, ranges)
    if (name := template.job_name(message)) is not None:
        state.name(job, name)
    state.job_group(ctx, job, response, SHORT_JOB)


async def validate_job(
    state: ServerState, message: IppMessage, ctx: Context, response: IppMessage
) -> None:
    """Validate-Job (RFC 8011 §4.2.3): what Print-Job would check, without a document."""
    request.check_target(message, ctx)
    fmt = template.document_format(message)
    if fmt in formats.RAW_FORMATS:
        queue = ctx.queue
        on_printer = queue.kind == "printer"
        state.service.admission.check_format(
            queue.name if on_printer else None, None if on_printer else queue.name, fmt
        )
    template.submission(
        ctx, request.owner(message, ctx), template.hold(message, ctx), template.copies(message)
    )
    template.page_ranges(message)
    template.check_overrides(message)
    template.job_uuid(message)


async def create_job(
    state: ServerState, message: IppMessage, ctx: Context, response: IppMessage
) -> None:
    """Create-Job (RFC 8011 §4.2.4): a job that waits for its Send-Document (pending)."""
    request.check_target(message, ctx)
    owner = request.owner(message, ctx)
    template.submission(ctx, owner, template.hold(message, ctx), template.copies(message))
    ranges = template.page_ranges(message)
    template.check_overrides(message)
    ipp_id, pending = state.pending.open(
        lambda: Pending(
            ctx.queue.name,
            owner,
            template.job_name(message),
            template.hold(message, ctx),
            template.copies(message),
            template.job_uuid(message),
            state.clock(),
            ranges,
        )
    )
    crash_point("ipp_create_job")
    attrs = A.pending_job_attributes(ctx.queue, ipp_id, pending.name, owner, pending.created_at)
    keep = {"job-id", "job-uri", "job-state", "job-state-reasons", "job-state-message"}
    response.groups.append(AttributeGroup(GroupTag.JOB, A.select(attrs, keep)))


async def cancel_my_jobs(
    state: ServerState, message: IppMessage, ctx: Context, response: IppMessage
) -> None:
    """Cancel-My-Jobs (PWG 5100.11): the asker's pending and not-completed jobs."""
    request.check_target(message, ctx)
    owner = request.owner(message, ctx)
    state.pending.close_owned(owner, ctx.queue.name)
    for job in await state.queue_jobs(ctx.queue, owner=owner):
        if job.state in A.NOT_COMPLETED:
            with contextlib.suppress(errors.StateConflict):  # it finished meanwhile
                async with job_ops.audited_cancel(state, message, ctx, job.id):
                    await state.service.front.cancel(job.id, ctx.caller)


async def get_jobs(
    state: ServerState, message: IppMessage, ctx: Context, response: IppMessage
) -> None:
    """Get-Jobs (RFC 8011 §4.2.6): the queue's jobs, newest first."""
    request.check_target(message, ctx)
    which = one(message, GroupTag.OPERATION, "which-jobs", [Tag.KEYWORD]) or "not-completed"
    if which not in ("not-completed", "completed", "all"):
        raise refuse(
            Status.CLIENT_ERROR_ATTRIBUTES_OR_VALUES_NOT_SUPPORTED,
            f"which-jobs {str(which)[:40]!r} is not supported",
            "which-jobs",
        )
    limit = one(message, GroupTag.OPERATION, "limit", [Tag.INTEGER])
    if limit is not None and (not isinstance(limit, int) or limit < 1):
        raise refuse(
            Status.CLIENT_ERROR_ATTRIBUTES_OR_VALUES_NOT_SUPPORTED,
            "limit must be 1 or more",
            "limit",
        )
    my_jobs = one(message, GroupTag.OPERATION, "my-jobs", [Tag.BOOLEAN])
    owner = request.owner(message, ctx) if my_jobs is True else None
    requested = request.requested(message) or {"job-id", "job-uri"}
    jobs = await state.queue_jobs(ctx.queue, owner=owner)
    if which == "not-completed":
        jobs = [j for j in jobs if j.state in A.NOT_COMPLETED]
    elif which == "completed":
        jobs = [j for j in jobs if j.state not in A.NOT_COMPLETED]
    for job in jobs[: limit if isinstance(limit, int) else None]:
        state.job_group(ctx, job, response, requested)


async def get_printer_attributes(
    state: ServerState, message: IppMessage, ctx: Context, response: IppMessage
) -> None:
    """Get-Printer-Attributes (RFC 8011 §4.2.5): the queue as a printer."""
    request.check_target(message, ctx)
    fmt = one(message, GroupTag.OPERATION, "document-format", [Tag.MIME_MEDIA_TYPE])
    if fmt is not None and str(fmt).lower() not in formats.DOCUMENT_FORMATS:
        raise refuse(
            Status.CLIENT_ERROR_ATTRIBUTES_OR_VALUES_NOT_SUPPORTED,
            f"document-format {str(fmt)[:80]!r} is not supported",
            "document-format",
        )
    queued = sum(1 for j in await state.queue_jobs(ctx.queue) if j.state in A.NOT_COMPLETED)
    attrs = A.printer_attributes(ctx.queue, state.printers(), queued, state.up_since, state.clock())
    response.groups.append(
        AttributeGroup(GroupTag.PRINTER, A.select(attrs, request.requested(message)))
    )


async def identify_printer(
    state: ServerState, message: IppMessage, ctx: Context, response: IppMessage
) -> None:
    """Identify-Printer (PWG 5100.13 §6.1.1): logged; a queue has no lamp of its own."""
    request.check_target(message, ctx)
    log_event(
        log,
        "ipp_identify_printer",
        message="identify printer",
        queue=ctx.queue.name,
        correlation_id=ctx.caller.correlation_id,
    )


#: The operations whose target is the queue, in the order RFC 8011 lists them.
HANDLERS: dict[Operation, Handler] = {
    Operation.PRINT_JOB: print_job,
    Operation.VALIDATE_JOB: validate_job,
    Operation.CREATE_JOB: create_job,
    Operation.GET_JOBS: get_jobs,
    Operation.GET_PRINTER_ATTRIBUTES: get_printer_attributes,
    Operation.CANCEL_MY_JOBS: cancel_my_jobs,
    Operation.IDENTIFY_PRINTER: identify_printer,
}
