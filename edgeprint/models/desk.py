"""Reprints and a job's story (issue 24)."""

from __future__ import annotations

from typing import Literal

from pydantic import (
    BaseModel,
    Field,
    StrictStr,
)

from edgeprint.models.base import PATTERN_HINTS, StrictModel
from edgeprint.models.jobs import JobOut
from edgeprint.states import JobState

# --- issue 24: reprints and a job's story -------------------------------------------------

#: A reprint's reason: 1–200 characters, no control characters, not only spaces.
REASON_PATTERN = r"^[^\x00-\x1f\x7f-\x9f]*[^\s\x00-\x1f\x7f-\x9f][^\x00-\x1f\x7f-\x9f]*$"
PATTERN_HINTS[REASON_PATTERN] = "must be 1–200 characters, no control characters, not blank"


class ReprintRequest(StrictModel):
    """JSON body of ``POST /v1/jobs/{id}/reprint``."""

    reason: StrictStr = Field(
        min_length=1,
        max_length=200,
        pattern=REASON_PATTERN,
        description="why it is printed again (lost, damaged, misspelt then fixed upstream): "
        "recorded in both jobs' events",
    )


class StoryEntryOut(BaseModel):
    """One line of a job's story, in time order."""

    at: str = Field(description="when (RFC 3339 UTC)")
    kind: Literal["state", "note", "copy-made", "copy-settled"] = Field(
        description="state: a state change (job_events); note: an event that changed no state "
        "(a reprint made from this job); copy-made: a copy handed to a printer; copy-settled: "
        "what the printer's answers settled that copy as"
    )
    words: str = Field(description="the entry in words, for a person")
    actor: str | None = Field(description="who acted (a token's name, a printer worker, …)")
    reason: str | None = Field(description="why, as recorded")
    from_state: JobState | None = None
    to_state: JobState | None = None
    printer: str | None = Field(default=None, description="copies: the printer")
    printer_job_id: int | None = Field(default=None, description="copies: its IPP job-id")
    copy_id: int | None = None
    copy_state: str | None = Field(default=None, description="copies: the copy's state")
    outcome: str | None = Field(default=None, description="copy-settled: why, in words")
    settled_by: str | None = Field(
        default=None, description="copy-settled: the printer's answer that settled it (evidence)"
    )
    job_state_reasons: list[str] = Field(
        default=[], description="copy-settled: the printer's job-state-reasons, last reported"
    )


class JobStoryOut(BaseModel):
    """``GET /v1/jobs/{id}/events``: the job and everything that happened to it, oldest first."""

    job: JobOut
    entries: list[StoryEntryOut]
