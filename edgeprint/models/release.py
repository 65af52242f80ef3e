"""Release where you stand (issue 24): owners' codes and cards, the release page's calls."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    Field,
    StrictBool,
    StrictStr,
    model_validator,
)

from edgeprint.models.base import JOB_ID_PATTERN, PATTERN_HINTS, StrictModel, TargetName

# --- release where you stand (issue 24) ----------------------------------------------------

#: A release code: 6–12 ASCII digits.
RELEASE_CODE_PATTERN = r"^[0-9]{6,12}$"
#: A card number as a reader types it: 4–64 printable ASCII characters, no spaces.
CARD_PATTERN = r"^[\x21-\x7e]{4,64}$"
PATTERN_HINTS[RELEASE_CODE_PATTERN] = "must be 6–12 digits (0-9), sent as a JSON string"
PATTERN_HINTS[CARD_PATTERN] = "must be 4–64 printable ASCII characters, no spaces"
_Typed = Annotated[StrictStr, Field(min_length=1, max_length=64)]


class OwnerCredentialsIn(StrictModel):
    """``PUT /v1/owners/{owner}``: a release code and/or a card (a value not given is kept)."""

    release_code: StrictStr | None = Field(
        default=None, pattern=RELEASE_CODE_PATTERN, description="6–12 digits, as a string"
    )
    card: StrictStr | None = Field(
        default=None,
        pattern=CARD_PATTERN,
        description="the card number as the reader types it (4–64 printable ASCII)",
    )

    @model_validator(mode="after")
    def _something(self) -> OwnerCredentialsIn:
        if self.release_code is None and self.card is None:
            raise ValueError("give release_code, card or both")
        if self.release_code is not None and self.release_code == self.card:
            raise ValueError("release_code and card must differ (they are one namespace)")
        return self


class OwnerCredentialsOut(BaseModel):
    """An owner's release credentials: which ones are set (never their values)."""

    owner: str
    release_code: bool = Field(description="a release code is set")
    card: bool = Field(description="a card is set")


class ReleaseLookupIn(StrictModel):
    """``POST /release/{name}/lookup``: ``{"code"}``, ``{"card"}`` (the same thing: one
    namespace) or ``{"pin", "job"}``."""

    code: _Typed | None = None
    card: _Typed | None = None
    pin: _Typed | None = None
    job: _Typed | None = Field(
        default=None,
        description="the job a PIN opens: its id, or its first 6+ hex characters (one HELD job)",
    )

    @model_validator(mode="after")
    def _one_credential(self) -> ReleaseLookupIn:
        given = sum(x is not None for x in (self.code, self.card, self.pin))
        if given != 1:
            raise ValueError('give one of {"code"}, {"card"} or {"pin", "job"}')
        if (self.pin is None) != (self.job is None):
            raise ValueError('a PIN comes with its job: {"pin", "job"}')
        return self


class ReleasePrintIn(ReleaseLookupIn):
    """``POST /release/{name}/print``: the credential, and ``jobs`` or ``all``."""

    jobs: list[Annotated[StrictStr, Field(pattern=JOB_ID_PATTERN)]] | None = Field(
        default=None, min_length=1, max_length=100, description="job ids, 32 lowercase hex"
    )
    all: StrictBool = Field(default=False, description="every HELD job of the person")
    printer: TargetName | None = Field(
        default=None, description="a pool's page: the printer of the pool to print on"
    )

    @model_validator(mode="after")
    def _which_jobs(self) -> ReleasePrintIn:
        if (self.jobs is None) == (not self.all):
            raise ValueError('give either {"jobs": [ids]} or {"all": true}')
        return self


class ReleasePreviewIn(ReleaseLookupIn):
    """``POST /release/{name}/preview``: the credential, and one of the person's HELD jobs."""

    job_id: StrictStr = Field(pattern=JOB_ID_PATTERN, description="a job the credential opens")


class ReleaseJobOut(BaseModel):
    """One HELD job as a release page shows it."""

    id: str
    title: str = Field(description="the job's title, else words that name it (Job and its id)")
    pages: int | None
    copies: int
    created_at: str
    has_preview: bool
    pin_required: bool = Field(description="the job has its own PIN: a code alone cannot print it")


class ReleasePrinterOut(BaseModel):
    name: str
    waiting: int = Field(description="released jobs waiting for this printer")
    ready: bool = Field(description="not paused and not known to be unhealthy")


class ReleaseLookupOut(BaseModel):
    """A person's HELD jobs at a printer or pool (an empty list: nothing is waiting)."""

    owner: str
    place: str
    kind: Literal["printer", "pool"]
    printers: list[ReleasePrinterOut]
    suggested: str | None = Field(description="the least loaded ready printer of the place")
    jobs: list[ReleaseJobOut]
    message: str


class ReleaseOutcomeOut(BaseModel):
    job: str
    outcome: Literal[
        "released", "conflict", "not-found", "pin-required", "locked", "queue-full", "refused"
    ]
    state: str | None = Field(default=None, description="the job's state (conflict, released)")
    printer: str | None = Field(
        default=None, description="released: the printer it went to (a pool's: once chosen)"
    )
    pool: str | None = Field(default=None, description="released to a pool: which")
    detail: str | None = None


class ReleasePrintOut(BaseModel):
    """Per-job outcomes of a release at a printer or pool, and the page's sentence."""

    outcomes: list[ReleaseOutcomeOut]
    released: int
    message: str
