"""The operations whose target is one job (the job object of RFC 8011 §4.3): Send-Document,
Close-Job, Cancel-Job and Get-Job-Attributes.

A job is named by its job-uri, or the queue's printer-uri and a job-id; it is a
Create-Job still waiting for its document (:mod:`.pending`) or a stored job
(:meth:`ServerState.find`).
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from dataclasses import replace

from edgeprint import errors
from edgeprint.ipp.codec import IppMessage
from edgeprint.ipp.names import GroupTag, Operation, Status, Tag
from edgeprint.ipp.values import AttributeGroup, attr
from edgeprint.ipp_server import attributes as A
from edgeprint.ipp_server import request, template
from edgeprint.ipp_server.pending import created_key
from edgeprint.ipp_server.request import Context, one, refuse
from edgeprint.ipp_server.state import SHORT_JOB, Handler, ServerState
from edgeprint.ipp_server.submit import UUID_KEY, store_document
from edgeprint.service.audit import Note
from edgeprint.states import JobState


async def send_document(
    state: ServerState, message: IppMessage, ctx: Context, response: IppMessage
) -> None:
    """Send-Document (RFC 8011 §4.3.1): a pending Create-Job's one document; it becomes a
    stored job that keeps the Create-Job's id."""
    request.check_target(message, ctx)
    ipp_id = request.job_id(message)
    pending = state.pending.get(ipp_id, ctx.queue.name)
    if pending is None:
        if state.named(ipp_id):
            await state.find(ipp_id, ctx)
            raise refuse(
                Status.CLIENT_ERROR_NOT_POSSIBLE,
                f"job {ipp_id} already has its document (one document per job)",
            )
        raise refuse(
            Status.CLIENT_ERROR_NOT_FOUND, f"no job {ipp_id} waits for a document", "job-id"
        )
    request.may_touch(pending.owner, message, ctx)
    fmt = template.document_format(message)
    last = one(message, GroupTag.OPERATION, "last-document", [Tag.BOOLEAN])
    if last is None:
        raise refuse(Status.CLIENT_ERROR_BAD_REQUEST, "last-document is required")
    if last is not True:
        raise refuse(
            Status.SERVER_ERROR_MULTIPLE_DOCUMENT_JOBS_NOT_SUPPORTED,
            "one document per job: send it with last-document true",
            "last-document",
        )
    meta = template.submission(ctx, pending.owner, pending.hold, pending.copies, pending.name)
    # Without a job-uuid, the Create-Job id is the key: it finds the job after a restart.
    key = f"{UUID_KEY}{pending.job_uuid}" if pending.job_uuid else created_key(ipp_id)
    job = await store_document(
        state.service, ctx, meta, message.data, key, fmt, pending.page_ranges
    )
    state.pending.close(ipp_id)
    state.remember(job, ipp_id, pending.name)
    state.job_group(ctx, job, response, SHORT_JOB, ipp_id)


async def close_job(
    state: ServerState, message: IppMessage, ctx: Context, response: IppMessage
) -> None:
    """Close-Job (PWG 5100.11): a pending Create-Job closed without a document is dropped
    (nothing to print); a stored job is already closed."""
    request.check_target(message, ctx)
    ipp_id = request.job_id(message)
    pending = state.pending.get(ipp_id, ctx.queue.name)
    if pending is not None:
        request.may_touch(pending.owner, message, ctx)
        state.pending.close(ipp_id)
        return
    await state.find(ipp_id, ctx)


async def cancel_job(
    state: ServerState, message: IppMessage, ctx: Context, response: IppMessage
) -> None:
    """Cancel-Job (RFC 8011 §4.3.3), by the job's owner or a technician."""
    request.check_target(message, ctx)
    ipp_id = request.job_id(message)
    pending = state.pending.get(ipp_id, ctx.queue.name)
    if pending is not None:
        request.may_touch(pending.owner, message, ctx)
        state.pending.close(ipp_id)
        return
    job = await state.find(ipp_id, ctx)
    async with audited_cancel(state, message, ctx, job.id):
        request.may_touch(job.owner, message, ctx)
        if job.state not in A.NOT_COMPLETED and job.state is not JobState.DEAD:
            raise refuse(
                Status.CLIENT_ERROR_NOT_POSSIBLE,
                f"job {ipp_id} is {job.state.value} and cannot be canceled",
            )
        await state.service.front.cancel(job.id, ctx.caller)


def audited_cancel(
    state: ServerState, message: IppMessage, ctx: Context, job_id: str
) -> AbstractAsyncContextManager[Note]:
    """The audit row of a cancel (issue 26): who is the Basic user, else the
    requesting-user-name (actor_kind ``ipp-user``), from the client's address."""
    who = replace(ctx.caller, name=request.owner(message, ctx))
    return state.service.audit.action(who, "cancel", "job", job_id)


async def get_job_attributes(
    state: ServerState, message: IppMessage, ctx: Context, response: IppMessage
) -> None:
    """Get-Job-Attributes (RFC 8011 §4.3.4) of a pending, stored or lost job."""
    request.check_target(message, ctx)
    ipp_id = request.job_id(message)
    requested = request.requested(message)
    pending = state.pending.get(ipp_id, ctx.queue.name)
    if pending is not None:
        attrs = A.pending_job_attributes(
            ctx.queue, ipp_id, pending.name, pending.owner, pending.created_at
        )
        response.groups.append(AttributeGroup(GroupTag.JOB, A.select(attrs, requested)))
        return
    try:
        job = await state.find(ipp_id, ctx)
    except errors.IppRefused:
        if not state.pending.lost(ipp_id):
            raise
        # A Create-Job of an earlier process life whose document was never stored.
        resend = state.pending.resend_window_open()
        attrs = A.lost_job_attributes(ctx.queue, ipp_id, resend)
        response.groups.append(AttributeGroup(GroupTag.JOB, A.select(attrs, requested)))
        if resend:
            response.status_code = Status.SERVER_ERROR_SERVICE_UNAVAILABLE
            ops = response.groups[0].attributes
            ops.append(attr("status-message", Tag.TEXT, A.LOST_MESSAGE))
        return
    state.job_group(ctx, job, response, requested)


#: The operations whose target is one job.
HANDLERS: dict[Operation, Handler] = {
    Operation.SEND_DOCUMENT: send_document,
    Operation.CLOSE_JOB: close_job,
    Operation.CANCEL_JOB: cancel_job,
    Operation.GET_JOB_ATTRIBUTES: get_job_attributes,
}
