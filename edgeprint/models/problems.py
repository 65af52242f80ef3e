"""RFC 9457 problem bodies and the health answer."""

from __future__ import annotations

from typing import Literal

from pydantic import (
    BaseModel,
    Field,
)

from edgeprint.states import JobState


class FieldError(BaseModel):
    """One invalid field: ``loc`` is dotted (``metadata.priority``)."""

    loc: str
    message: str


class Problem(BaseModel):
    """An RFC 9457 problem document (``application/problem+json``)."""

    type: str
    title: str
    status: int
    detail: str
    state: JobState | None = Field(default=None, description="current job state (409 only)")
    job_id: str | None = None
    errors: list[FieldError] | None = None
    takes: list[str] | None = Field(
        default=None,
        description="unsupported-document: the document formats the printer lists",
    )
    mode: Literal["live", "rehearsal"] | None = Field(
        default=None, description="not-in-rehearsal / already-in-rehearsal: the event's mode"
    )
    count: int | None = Field(
        default=None, description="reprint-limit: how many times the job was reprinted"
    )
    limit: int | None = Field(
        default=None, description="reprint-limit: release.max_reprints, the most allowed"
    )
    url: str | None = Field(
        default=None, description="upgrade-required: the https:// (ipps://) URL to use instead"
    )


class Health(BaseModel):
    """``/healthz`` and ``/readyz``."""

    status: Literal["ok", "unavailable"]
    detail: str | None = None
