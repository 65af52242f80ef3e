"""Finding a job the way a person at the desk knows it (issue 24): by the key the kiosk sent,
by the first characters of its id (read off a receipt or a log), or by part of a name."""

from __future__ import annotations

from dataclasses import dataclass

from edgeprint.service.jobs import JobService
from edgeprint.service.records import JobRecord
from edgeprint.states import JobState


@dataclass(frozen=True, slots=True)
class JobSearch:
    """What ``GET /v1/jobs`` filters on (None: not filtered); every filter given must match.

    ``id_prefix`` is 4–32 lowercase hex characters and ``owner_contains`` is matched
    case-insensitively with LIKE wildcards taken literally; the API checks both.
    """

    state: JobState | None = None
    owner: str | None = None
    printer: str | None = None
    idempotency_key: str | None = None
    id_prefix: str | None = None
    owner_contains: str | None = None


async def search_jobs(
    service: JobService, search: JobSearch, *, before_seq: int | None, limit: int
) -> list[JobRecord]:
    """Jobs matching ``search``, newest first; ``before_seq`` pages on from a cursor."""
    return await service.jobs.list_jobs(
        state=search.state,
        owner=search.owner,
        printer=search.printer,
        before_seq=before_seq,
        limit=limit,
        idempotency_key=search.idempotency_key,
        id_prefix=search.id_prefix,
        owner_contains=search.owner_contains,
    )
