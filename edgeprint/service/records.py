"""The service's own records: who asks, what a submission says, what the service returns.

The API and the IPP server map their models to and from these; the service
imports neither them nor the printers' types (``PrinterJobReport`` is what it
needs of a printer's answer, as a protocol the IPP client's record satisfies).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal, Protocol

from edgeprint.copies import JobFacts
from edgeprint.records import JobRecord as JobRecord
from edgeprint.states import JobState
from edgeprint.stock import StockView
from edgeprint.store.copies import Figures


@dataclass(frozen=True)
class Caller:
    """Who asks: the token's name and role, and the request's correlation id; ``source``
    the peer address the request came from (no proxy header), ``kind`` what ``name`` is
    (``token``, ``ipp-user``, ``owner``, ``system``: the audit trail's actor_kind)."""

    name: str
    role: str
    correlation_id: str | None = None
    source: str | None = None
    kind: str = "token"


class JobRequest(Protocol):
    """What a submission asks for (validated by the front door that received it)."""

    @property
    def owner(self) -> str: ...
    @property
    def printer(self) -> str | None: ...
    @property
    def pool(self) -> str | None: ...
    @property
    def priority(self) -> int: ...
    @property
    def hold(self) -> bool: ...
    @property
    def copies(self) -> int: ...
    @property
    def release_pin(self) -> str | None: ...
    @property
    def title(self) -> str | None: ...


#: The fields of a submission its Idempotency-Key digest covers (all but the PIN; and the
#: title, when one is given).
DIGEST_FIELDS = ("printer", "pool", "owner", "priority", "hold", "copies")


def request_digest(request: JobRequest, document_sha256: str) -> str:
    """SHA-256 of the canonical request JSON (defaults applied) and the document digest.

    Two submissions are "the same payload" for Idempotency-Key purposes
    exactly when these digests are equal. Stored: the JSON must never change.
    """
    # The release PIN is left out: this digest is stored, and a 4–12 digit PIN behind a
    # fast hash could be recovered from it. A replay's PIN is checked against the slow hash.
    fields = {name: getattr(request, name) for name in DIGEST_FIELDS}
    if request.title is not None:  # issue 24: absent from older digests, so only when given
        fields["title"] = request.title
    canonical = json.dumps(fields, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(f"{canonical}\n{document_sha256}".encode()).hexdigest()


@dataclass(frozen=True)
class SubmitResult:
    """The job, and whether this request created it (False: idempotent replay)."""

    job: JobRecord
    created: bool


@dataclass(frozen=True)
class JobStats:
    """What :meth:`Views.stats` read: counts, and queues keyed by (printer, pool)."""

    jobs_by_state: dict[JobState, int]
    dead_by_reason: dict[str, int]
    waiting: dict[tuple[str | None, str | None], int]
    oldest_waiting: dict[tuple[str | None, str | None], float]
    at: float


@dataclass(frozen=True)
class Identified:
    """What a printer was asked to do to show itself, and the test page's job-id if any."""

    action: Literal["identify-printer", "test-page"]
    printer_job_id: int | None


#: ``identify(printer, how, by)``: the dispatcher's way to make a printer show itself.
Identify = Callable[[str, str, str], Awaitable[Identified]]


@dataclass(frozen=True)
class TlsCheck:
    """An ipps printer's certificate against its pin, as a check found it (issue 23).

    ``mode`` is ``[[printers]] tls``; ``pinned`` the fingerprint in force (the config's
    ``tls_fingerprint`` or the one stored at first contact; None: none yet),
    ``presented`` the one the printer shows now (None: no TLS session, ``error`` says
    why), ``matches`` whether they agree (None when either is missing or ``verify``)."""

    mode: Literal["pin", "verify"]
    pinned: str | None
    presented: str | None
    matches: bool | None
    error: str | None = None


@dataclass(frozen=True)
class PrinterCheck:
    """One Get-Printer-Attributes made now, and timed (issue 23: preflight).

    ``round_trip_s`` is the request's wall time (None when it failed); the state is
    RFC 8011's (``idle``, ``processing``, ``stopped``); ``media_ready`` as
    ``GET /v1/printers`` shows ready media; ``error`` the failure in words."""

    reachable: bool
    round_trip_s: float | None
    printer_state: str | None
    printer_state_reasons: tuple[str, ...]
    printer_state_message: str
    accepting_jobs: bool | None
    media_ready: tuple[str, ...]
    error: str | None
    tls: TlsCheck | None
    #: the ready stock as the routing reads it (None: the printer did not answer)
    stock: StockView | None = None


#: ``check(printer)``: the dispatcher's way to ask a printer now (it owns the IPP clients).
CheckPrinter = Callable[[str], Awaitable[PrinterCheck]]


#: What a printer said of one of its jobs (``printers.ipp.PrinterJob`` is one): the store's
#: protocol, which it reads the figures from.
PrinterJobReport = Figures


class PrinterJobMade(Protocol):
    """What a Create-Job or Print-Job answered (``printers.ipp.PrinterJobRef`` is one)."""

    @property
    def job_id(self) -> int: ...
    @property
    def uuid(self) -> str | None: ...


def job_facts(job: JobRecord) -> JobFacts:
    """What the copy rules need of a job record."""
    return JobFacts(
        id=job.id,
        claim=job.claims,
        attempts=job.attempts,
        failure_sig=job.failure_sig,
        failure_printer=job.failure_printer,
    )
