"""What a Print-Job, Validate-Job or Create-Job asks of its job: the job-template and job
description attributes of the request (RFC 8011 §5.2, PWG 5100.6), read and checked.

Each reader takes the request (and its context) and returns a plain value, or refuses
the request (:func:`edgeprint.ipp_server.request.refuse`) naming the attribute.
"""

from __future__ import annotations

import uuid

from pydantic import ValidationError

from edgeprint.documents import formats
from edgeprint.ipp.codec import IppMessage
from edgeprint.ipp.names import GroupTag, Status, Tag
from edgeprint.ipp.values import Range, StringWithLanguage
from edgeprint.ipp_server import attributes as A
from edgeprint.ipp_server import limits
from edgeprint.ipp_server.request import Context, one, refuse
from edgeprint.models import SubmitMetadata
from edgeprint.titles import clean_title

#: A job's page-ranges: 1-based inclusive (lower, upper) pairs, ascending, not overlapping.
PageRanges = tuple[tuple[int, int], ...]


def hold(message: IppMessage, ctx: Context) -> bool:
    """job-hold-until (job or operation group): anything but ``no-hold`` holds; absent, the
    queue's default."""
    value = one(message, GroupTag.JOB, "job-hold-until", [Tag.KEYWORD, Tag.NAME])
    if value is None:
        value = one(message, GroupTag.OPERATION, "job-hold-until", [Tag.KEYWORD, Tag.NAME])
    if value is None:
        return ctx.queue.hold_by_default
    return value != "no-hold"


def copies(message: IppMessage) -> int:
    """copies (1 when absent), 1 to A.MAX_COPIES."""
    value = one(message, GroupTag.JOB, "copies", [Tag.INTEGER])
    if value is None:
        return 1
    assert isinstance(value, int)
    if not 1 <= value <= A.MAX_COPIES:
        raise refuse(
            Status.CLIENT_ERROR_ATTRIBUTES_OR_VALUES_NOT_SUPPORTED,
            f"copies must be 1 to {A.MAX_COPIES}",
            "copies",
        )
    return value


def document_format(message: IppMessage) -> str:
    """document-format, lower-cased (``application/octet-stream`` when absent: sniffed)."""
    value = one(message, GroupTag.OPERATION, "document-format", [Tag.MIME_MEDIA_TYPE])
    fmt = formats.OCTET_STREAM if value is None else str(value).lower()
    if fmt not in formats.DOCUMENT_FORMATS:
        raise refuse(
            Status.CLIENT_ERROR_DOCUMENT_FORMAT_NOT_SUPPORTED,
            f"document-format {fmt[:80]!r} is not supported; this queue takes "
            f"{', '.join(formats.DOCUMENT_FORMATS)}",
            "document-format",
        )
    return fmt


def job_uuid(message: IppMessage) -> str | None:
    """job-uuid (operation or job group) as a bare UUID, or None."""
    value = one(message, GroupTag.OPERATION, "job-uuid", [Tag.URI])
    if value is None:
        value = one(message, GroupTag.JOB, "job-uuid", [Tag.URI])
    if value is None:
        return None
    assert isinstance(value, str)
    try:
        return str(uuid.UUID(value.removeprefix("urn:uuid:")))
    except ValueError:
        raise refuse(
            Status.CLIENT_ERROR_ATTRIBUTES_OR_VALUES_NOT_SUPPORTED,
            "job-uuid must be a urn:uuid: URI",
            "job-uuid",
        ) from None


def job_name(message: IppMessage) -> str | None:
    """job-name, cut to a name's length (cut, not refused: see limits), or None."""
    value = message.value(GroupTag.OPERATION, "job-name")
    if isinstance(value, StringWithLanguage):
        value = value.text
    if not isinstance(value, str) or not value:
        return None
    return limits.fit(value, limits.MAX_OCTETS[Tag.NAME])


def page_ranges(message: IppMessage) -> PageRanges | None:
    """page-ranges (RFC 8011 §5.2.7): ascending, not overlapping, from page 1 up."""
    a = message.get(GroupTag.JOB, "page-ranges")
    if a is None:
        return None
    values = [v.value for v in a.values]
    if not values or not all(isinstance(v, Range) for v in values):
        raise refuse(
            Status.CLIENT_ERROR_BAD_REQUEST,
            "page-ranges must be rangeOfInteger values",
            "page-ranges",
        )
    ranges = tuple((v.lower, v.upper) for v in values if isinstance(v, Range))
    last = 0
    for lower, upper in ranges:
        if not last < lower <= upper:
            raise refuse(
                Status.CLIENT_ERROR_ATTRIBUTES_OR_VALUES_NOT_SUPPORTED,
                "page-ranges must start at page 1 or later, ascend and not overlap",
                "page-ranges",
            )
        last = upper
    return ranges


def check_overrides(message: IppMessage) -> None:
    """overrides (PWG 5100.6) may only select pages or the document: edgeprint changes
    no attribute per page, so a collection that asks for a change is refused."""
    a = message.get(GroupTag.JOB, "overrides")
    if a is None:
        return
    for v in a.values:
        members = v.value if v.tag == Tag.BEG_COLLECTION else None
        if not isinstance(members, list):
            raise refuse(
                Status.CLIENT_ERROR_BAD_REQUEST, "overrides must be collections", "overrides"
            )
        extra = sorted({m.name for m in members} - set(A.OVERRIDES_SUPPORTED))
        if extra:
            raise refuse(
                Status.CLIENT_ERROR_ATTRIBUTES_OR_VALUES_NOT_SUPPORTED,
                f"overrides of {', '.join(extra)[:80]} are not supported: this queue prints "
                "every page of a job with the same attributes (overrides-supported)",
                "overrides",
            )


def submission(
    ctx: Context, owner: str, hold: bool, copies: int, job_name: str | None = None
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
        raise refuse(
            Status.CLIENT_ERROR_ATTRIBUTES_OR_VALUES_NOT_SUPPORTED,
            f"requesting-user-name cannot be a job owner: {exc.errors()[0]['msg']}",
            "requesting-user-name",
        ) from None
