"""What operators read: statistics, webhook deliveries, the event's mode, the audit
trail, the appliance's TLS and the tokens (issue 26)."""

from __future__ import annotations

from typing import Literal

from pydantic import (
    BaseModel,
    Field,
)

from edgeprint.models.printers import PoolOut


class PrinterSummaryOut(BaseModel):
    """One printer in ``GET /v1/stats``: can it work, and what waits for it."""

    name: str
    pool: str | None
    healthy: bool = Field(description="takes new work")
    health_reason: str | None = Field(description="why not healthy")
    reachable: bool
    paused: bool
    waiting: int = Field(description="RELEASED jobs waiting for this printer by name")
    oldest_waiting_s: float | None = Field(description="age of the oldest of them, seconds")
    printing_job: str | None = Field(description="id of the job the printer has in hand")


class StatsOut(BaseModel):
    """``GET /v1/stats``: the numbers a technician's screen shows."""

    jobs_by_state: dict[str, int] = Field(
        description="live jobs by state, every state, zero included (never a rehearsal job: "
        "those are in GET /v1/event)"
    )
    dead_letters: int = Field(description="DEAD jobs in all (rehearsal ones too)")
    dead_letters_by_reason: dict[str, int] = Field(
        description="DEAD jobs by dead_reason (outcome_unknown, poison, attempts_exhausted, …)"
    )
    printers: list[PrinterSummaryOut]
    pools: list[PoolOut]


class WebhookDeliveryOut(BaseModel):
    """A webhook delivery given up after ``max_delivery_s`` (parked as failed)."""

    state: Literal["failed"]
    url: str = Field(description="the receiver ([[webhooks]].url, without user info or query)")
    webhook_id: str = Field(description="the webhook-id header it was sent with")
    type: str = Field(description="job.done, job.dead, …, printer.unhealthy, printer.healthy")
    job_id: str | None
    printer: str | None
    attempts: int
    first_attempt_at: str
    failed_at: str
    last_error: str = Field(description="what the last attempt got: HTTP status, time-out, …")


class WebhookDeliveriesOut(BaseModel):
    """``GET /v1/webhooks/deliveries?state=failed``: oldest first."""

    deliveries: list[WebhookDeliveryOut]
    next_cursor: str | None


# --- issue 23 (preflight): the event's mode and a printer checked now ----------------------


class AuditEntryOut(BaseModel):
    """One row of ``GET /v1/audit`` (issue 26): who did what, from where, to what, how."""

    id: int
    at: str = Field(description="when (RFC 3339 UTC)")
    actor: str = Field(
        description="who: a token's name, an IPP user, an owner (release page, upload) or "
        "`signal`; never a secret"
    )
    actor_kind: Literal["token", "ipp-user", "owner", "system"]
    source: str | None = Field(description="the client's address as the appliance saw it")
    action: str = Field(description="release, cancel, replay, resolve, reprint, pause, …")
    target_kind: str = Field(description="job, jobs (bulk), printer, place, owner, event, config")
    target: str
    outcome: Literal["done", "conflict", "refused"]
    detail: str


class AuditOut(BaseModel):
    """``GET /v1/audit``: the rows asked for, newest first."""

    entries: list[AuditEntryOut]


class EventOut(BaseModel):
    """``GET /v1/event``: rehearsal or live, since when, and the rehearsal's jobs."""

    mode: Literal["live", "rehearsal"]
    since: str | None = Field(
        description="when this mode began (RFC 3339 UTC); null: live since the store began"
    )
    actor: str = Field(description="who set it: a token's name, `config`, or `install`")
    badge_media: str | None = Field(
        description="[event] badge_media: the badge's stock, a PWG media name (null: not set)"
    )
    rehearsal_jobs_by_state: dict[str, int] = Field(
        description="rehearsal jobs by state, every state (the live figures of GET /v1/stats "
        "never count them)"
    )
    cancelled: list[str] = Field(
        default_factory=list,
        description="POST /v1/event/live: the ids of the rehearsal jobs it cancelled (HELD, "
        "RELEASED or DEAD then); empty otherwise",
    )


class ApplianceTlsOut(BaseModel):
    """``GET /v1/tls`` (issue 26): how the appliance serves TLS and what its clients pin."""

    tls: Literal["self-signed", "files", "off"] | None = Field(
        description='[server] tls: "self-signed", "files", "off", or null (absent: plain HTTP '
        "as before TLS)"
    )
    fingerprint: str | None = Field(
        description="SHA-256 of the certificate (DER), upper-case hex with colons, as "
        "`openssl x509 -noout -fingerprint -sha256` prints it; null without TLS"
    )
    pin: str | None = Field(
        description="`sha256//` and the base64 SHA-256 of the public key, as curl's "
        "`--pinnedpubkey` takes it; null without TLS"
    )
    names: list[str] | None = Field(
        description="the certificate's subject alternative names (DNS names and addresses)"
    )
    not_before: str | None = Field(description="start of validity (RFC 3339 UTC)")
    not_after: str | None = Field(description="end of validity (RFC 3339 UTC)")
    expires_soon: bool | None = Field(
        description="true within 30 days of not_after (renew, then reload)"
    )


# --- tokens (issue 26) ----------------------------------------------------------------------


class TokenOut(BaseModel):
    """One configured token as ``GET /v1/tokens`` lists it: never its secret or digest."""

    name: str
    role: Literal["kiosk", "tech", "station", "viewer"]
    printers: list[str] = Field(description="a station's printers and pools; empty otherwise")
    expires: str | None = Field(description="RFC 3339 UTC; null: it does not expire")
    expired: bool = Field(description="`expires` has passed: the token is refused")
    last_used: str | None = Field(
        description="this appliance's last authenticated request with it (RFC 3339 UTC); "
        "null: none since `since`"
    )
    last_used_from: str | None = Field(description="that request's client address")


class TokensOut(BaseModel):
    """``GET /v1/tokens``: every configured token, in config order."""

    since: str = Field(
        description="when this appliance began counting uses (its start; RFC 3339 UTC): "
        "last uses are kept in memory, per appliance"
    )
    tokens: list[TokenOut]
