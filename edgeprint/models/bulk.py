"""Many jobs at once (issue 24 part 7): selection by ids or filter, one outcome per job."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime
from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
    WithJsonSchema,
    model_validator,
)

from edgeprint.models.base import JOB_ID_PATTERN, Owner, StrictModel, TargetModel, TargetName
from edgeprint.states import JobState

# --- many jobs at once (issue 24 part 7) -------------------------------------------------

#: The most jobs one bulk call may act on (its required ``limit`` is 1..MAX_BULK).
MAX_BULK = 500
#: A dead letter's reason as the store keeps it (``attempts_exhausted``, ``poison``, …).
DEAD_REASON_PATTERN = r"^[a-z0-9_]{1,64}$"
JobId = Annotated[StrictStr, Field(pattern=JOB_ID_PATTERN, description="32 lowercase hex")]


#: What a bulk filter's ``created_before``/``created_after`` accepts, in the refusal's words.
WHEN_ACCEPTED = (
    "a date (2030-01-01, midnight UTC) or an RFC 3339 date-time with an offset "
    "(2030-01-01T08:30:00+02:00 or 2030-01-01T06:30:00Z)"
)
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_RFC3339 = re.compile(
    r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:[Zz]|[+-]\d{2}:\d{2})$"
)


def _when(value: object) -> datetime:
    """A filter's time: a date is its midnight UTC; a date-time must carry its offset (a
    naive one could mean any of 24 hours); numbers are refused (seconds or milliseconds?)."""
    if isinstance(value, datetime) and value.tzinfo is not None:
        return value  # built in Python, not parsed from JSON
    if isinstance(value, str):
        text = value.strip()
        try:
            if _DATE.match(text):
                return datetime.combine(date.fromisoformat(text), datetime.min.time(), UTC)
            if _RFC3339.match(text):
                return datetime.fromisoformat(text.replace("z", "Z").replace("t", "T"))
        except ValueError:
            pass  # e.g. 2030-02-30: said below
    raise ValueError(f"expected {WHEN_ACCEPTED}")


#: created_before/created_after: a date or an RFC 3339 date-time with an offset.
FilterTime = Annotated[
    datetime,
    BeforeValidator(_when),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "string", "format": "date"},
                {"type": "string", "format": "date-time"},
            ],
            "description": WHEN_ACCEPTED,
        }
    ),
]


class BulkFilter(StrictModel):
    """Which jobs a bulk call selects: every given field must match (AND), oldest first.

    ``state`` defaults to the states the action applies to; a state it does not apply to is
    refused (422) rather than silently matching nothing. An empty filter (every job) and a
    pool or printer that is not configured (a typo that would match nothing) are refused too.
    """

    owner: Owner | None = Field(default=None, description="the job's owner, exactly")
    pool: TargetName | None = Field(default=None, description="the job's pool")
    printer: TargetName | None = Field(
        default=None, description="the job's printer (requested, assigned or printed on)"
    )
    state: JobState | None = Field(default=None, description="one state the action applies to")
    dead_reason: Annotated[StrictStr, Field(pattern=DEAD_REASON_PATTERN)] | None = Field(
        default=None, description="a DEAD job's reason, e.g. attempts_exhausted"
    )
    created_after: FilterTime | None = Field(
        default=None, description=f"accepted at or after this time: {WHEN_ACCEPTED}"
    )
    created_before: FilterTime | None = Field(
        default=None, description=f"accepted before this time: {WHEN_ACCEPTED}"
    )


class _BulkRequest(StrictModel):
    ids: list[JobId] | None = Field(
        default=None, min_length=1, description="the jobs, by id (at most `limit`)"
    )
    filter: BulkFilter | None = Field(default=None, description="the jobs, by what they are")
    limit: StrictInt = Field(
        ge=1,
        le=MAX_BULK,
        description=f"required: the most jobs to act on (1–{MAX_BULK}); a filter takes the "
        "oldest first",
    )

    dry_run: StrictBool = Field(
        default=False,
        description="true: act on nothing; the answer lists the jobs the call would take "
        "(outcome `selected`), e.g. to show the count in a confirmation first",
    )

    @model_validator(mode="after")
    def _ids_or_filter(self) -> _BulkRequest:
        if (self.ids is None) == (self.filter is None):
            raise ValueError("give either ids or filter (exactly one)")
        if self.ids is not None and len(self.ids) > self.limit:
            raise ValueError(f"{len(self.ids)} ids is more than limit ({self.limit})")
        return self


class BulkReleaseRequest(_BulkRequest, TargetModel):
    """``POST /v1/jobs/release``: release each selected HELD job (to ``printer`` or ``pool``
    when given, else to its own). Jobs with a release PIN answer ``pin-required``."""


class BulkCancelRequest(_BulkRequest):
    """``POST /v1/jobs/cancel``: cancel each selected job (a kiosk's token: jobs with a
    release PIN answer ``pin-required``)."""


class BulkReplayRequest(_BulkRequest):
    """``POST /v1/jobs/replay`` (tech): replay each selected DEAD job."""


class BulkResolveRequest(_BulkRequest):
    """``POST /v1/jobs/resolve`` (tech): settle each selected DEAD ``outcome_unknown`` job."""

    printed: StrictBool = Field(
        description="true: they printed (→ DONE); false: they did not (→ RELEASED, once more)"
    )


BulkOutcome = Literal[
    "released",
    "cancelled",
    "cancel-requested",
    "replayed",
    "resolved",
    "conflict",
    "not-found",
    "pin-required",
    "queue-full",
    "unsupported-document",
    "missing-target",
    "storage-full",
    "store-unavailable",
    "error",
    "selected",
]


class BulkResultOut(BaseModel):
    """What happened to one job of a bulk call."""

    id: str
    outcome: BulkOutcome = Field(
        description="the action's word when it was done to this job (released, cancelled, "
        "cancel-requested: PRINTING, the printer cancels it; replayed; resolved), else why not"
    )
    state: JobState | None = Field(description="the job's state now (null: no such job)")
    detail: str | None = Field(default=None, description="why not, in words")


class BulkOut(BaseModel):
    """The answer of a bulk call: one result per selected job, in the order selected."""

    matched: int = Field(description="jobs selected (ids given, or the filter's up to limit)")
    more: bool = Field(description="the filter matches more jobs than limit (call again)")
    results: list[BulkResultOut]
