"""Who asks, on which queue, about what: the parts of a request every operation reads.

A request's operation attributes name its target (printer-uri, or job-uri / job-id),
its user (requesting-user-name, unless Basic auth named one) and what it wants back
(requested-attributes); each reader here refuses a value of the wrong syntax with the
status RFC 8011 gives it (:func:`refuse`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from edgeprint import errors
from edgeprint.ipp.codec import IppMessage
from edgeprint.ipp.names import GroupTag, Status, Tag, keyword
from edgeprint.ipp.values import StringWithLanguage, strings
from edgeprint.ipp_server import attributes as A
from edgeprint.service import Caller
from edgeprint.spool import StagedDocument


@dataclass(frozen=True)
class Context:
    """Who asks, on which queue. ``user``: the authenticated user (Basic auth), if any;
    ``document``: the request's document, already streamed into the spool's staging area
    (None: the document is the message's data); whoever staged it discards it unless a job
    took it. A request POSTed to a job-uri takes job operations only, on that job
    (DESIGN §11)."""

    queue: A.Queue
    caller: Caller
    user: str | None = None
    document: StagedDocument | None = None
    #: The job-id at the end of the request's HTTP path when it went to a job-uri.
    job_path_id: int | None = None


def refuse(status: int, detail: str, *unsupported: str) -> errors.IppRefused:
    """The refusal of a request: its status, status-message and unsupported attributes."""
    return errors.IppRefused(status, detail, unsupported)


def uri_path(uri: str, name: str) -> str:
    """The path of a URI attribute; refuses one that is no URI."""
    try:
        return urlsplit(uri).path
    except ValueError:
        raise refuse(Status.CLIENT_ERROR_BAD_REQUEST, f"{name} is not a URI", name) from None


def one(message: IppMessage, group: int, name: str, tags: Sequence[int]) -> object:
    """The single value of ``name`` in ``group`` (None when absent); refuses a wrong syntax."""
    a = message.get(group, name)
    if a is None:
        return None
    if len(a.values) != 1 or a.values[0].tag not in tags:
        raise refuse(
            Status.CLIENT_ERROR_BAD_REQUEST,
            f"{name} must be one value of type {' or '.join(keyword(Tag(t)) for t in tags)}",
            name,
        )
    return a.value


def check_target(message: IppMessage, ctx: Context) -> None:
    """printer-uri (or job-uri) must name this queue's path."""
    for name in ("printer-uri", "job-uri"):
        uri = message.value(GroupTag.OPERATION, name)
        if isinstance(uri, str):
            path = uri_path(uri, name).rstrip("/")
            mine = f"/ipp/print/{ctx.queue.name}"
            if name == "job-uri":
                path = path.rsplit("/", 1)[0]
            if path != mine:
                raise refuse(
                    Status.CLIENT_ERROR_NOT_FOUND,
                    f"{name} {uri[:120]!r} does not name this queue ({mine})",
                    name,
                )


def job_id(message: IppMessage) -> int:
    """The IPP job-id a job operation names: the tail of its job-uri, or its job-id."""
    job_uri = message.value(GroupTag.OPERATION, "job-uri")
    if isinstance(job_uri, str):
        tail = uri_path(job_uri, "job-uri").rsplit("/", 1)[-1]
        if tail.isascii() and tail.isdigit():
            return int(tail)
        raise refuse(Status.CLIENT_ERROR_NOT_FOUND, "job-uri names no job", "job-uri")
    value = one(message, GroupTag.OPERATION, "job-id", [Tag.INTEGER])
    if value is None:
        raise refuse(
            Status.CLIENT_ERROR_BAD_REQUEST, "job-id (with printer-uri) or job-uri is required"
        )
    assert isinstance(value, int)
    return value


def owner(message: IppMessage, ctx: Context) -> str:
    """Who asks: the Basic-auth user, else requesting-user-name, else ``anonymous``."""
    if ctx.user is not None:
        return ctx.user
    value = message.value(GroupTag.OPERATION, "requesting-user-name")
    if isinstance(value, StringWithLanguage):
        value = value.text
    if isinstance(value, str) and value.strip():
        return value
    return "anonymous"


def may_touch(job_owner: str, message: IppMessage, ctx: Context) -> None:
    """Only the job's owner (or a tech token) may send its document or cancel it."""
    if ctx.caller.role == "tech" or owner(message, ctx) == job_owner:
        return
    raise refuse(
        Status.CLIENT_ERROR_NOT_AUTHORIZED,
        "this job belongs to another user; requesting-user-name must be its owner",
        "requesting-user-name",
    )


def requested(message: IppMessage) -> set[str] | None:
    """requested-attributes (None: the operation's default set)."""
    a = message.get(GroupTag.OPERATION, "requested-attributes")
    if a is None:
        return None
    if any(v.tag != Tag.KEYWORD for v in a.values):
        raise refuse(
            Status.CLIENT_ERROR_BAD_REQUEST,
            "requested-attributes must be keywords",
            "requested-attributes",
        )
    return set(strings(a))
