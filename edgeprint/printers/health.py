"""Printer health: a pure model fed with probe results, transport errors and job outcomes.

A printer is *healthy* (takes new work) unless one of these holds (DESIGN §4):

- ``failure_threshold`` consecutive transport failures (refused, time-out, hung);
- ``printer-state`` stopped for longer than ``stopped_grace_s``;
- an error-severity ``printer-state-reasons`` value: ``…-error``, or a keyword with no
  suffix, which RFC 8011 §5.4.12 says to read as an error (LPrint reports a Zebra's
  open head as a bare ``other``) — known or not; ``-warning`` and ``-report`` never
  block by themselves. A media reason (media-empty, input-tray-missing) does not
  block while another input tray reports media (``printer-input-tray``,
  PWG 5100.13): an empty by-pass tray beside a full main tray is a warning;
- no input tray with media at all (every tray that reports a level reports 0);
- *stalled*: processing, stopped or holding jobs (``queued-job-count``) while a reason
  of :data:`STALL_REASONS` says, whatever its severity, that the job in hand cannot
  go on (a jam, an open door, missing media with no other tray) — the job in hand is
  then handled as stuck (``[dispatch] blocked_grace_s``);
- ``printer-is-accepting-jobs`` false;
- quarantine: ``quarantine_after`` different jobs failed on it in a row
  (a bad printer, not a bad job), for ``quarantine_s``;
- an answer that cannot be taken at its word (HTTP 426 "use TLS", an HTTP
  error, a reply that is not IPP): at once, until a probe is answered properly;
- it cannot report the state of a job it was given (Get-Job-Attributes and
  Get-Jobs both fail): until a technician resumes it (:meth:`Health.clear`).

A successful probe with none of these re-admits it. Times are unix seconds.

Each of these, and a printer that does not answer at all, is also a *problem* in plain
words (:mod:`edgeprint.printers.problems`): :attr:`Health.ledger` remembers since when
each holds and, for a while, that it ended. ``last_error`` (the text of the last failed
request) is forgotten once the printer answers properly: it never outlives a recovery.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from edgeprint.ipp.names import PrinterState
from edgeprint.printers import problems, reasons
from edgeprint.printers.ipp import PrinterStatus
from edgeprint.printers.levels import MediaLevel, SupplyLevel
from edgeprint.printers.supplies import Supplies
from edgeprint.runway import RunwayView
from edgeprint.stock import StockView

#: Reasons (any severity) that stop the job in hand while the printer is processing.
STALL_REASONS = frozenset(
    {
        "media-jam",
        "media-empty",
        "media-needed",
        "cover-open",
        "door-open",
        "interlock-open",
        "input-tray-missing",
        "output-tray-missing",
        "output-area-full",
        "marker-supply-empty",
        "marker-waste-full",
        "toner-empty",
        "offline",
        "paused",
        "shutdown",
        "spool-area-full",
        "stopped-partly",
        "fuser-over-temp",
    }
)
#: Reasons about paper in one input: another input with media may print instead.
#: (media-needed is not one: it says the job in hand needs media the printer lacks.)
MEDIA_REASONS = frozenset({"media-empty", "input-tray-missing", "media-low"})


#: ``media-jam-warning`` → ``media-jam``; a value's severity (a bare keyword is an error).
reason_keyword = reasons.keyword
severity = reasons.severity


@dataclass(frozen=True)
class Tray:
    """One input of ``printer-input-tray`` (PWG 5100.13 §6.5.2)."""

    name: str
    level: int | None  # sheets (or percent) left; -3 "some" as 1; None: unknown (-2)

    @property
    def has_media(self) -> bool | None:
        return None if self.level is None else self.level > 0


def trays_of(attributes: Mapping[str, Any]) -> tuple[Tray, ...]:
    """The inputs a printer reports in ``printer-input-tray`` (none: it does not say)."""
    raw = attributes.get("printer-input-tray")
    values: Iterable[Any] = raw if isinstance(raw, list) else ([] if raw is None else [raw])
    out = []
    for v in values:
        text = v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)
        fields = dict(part.split("=", 1) for part in text.split(";") if "=" in part)
        name = fields.get("name", "")
        if name in ("", "auto"):
            continue
        try:
            level = int(fields.get("level", "-2"))
        except ValueError:
            level = -2
        out.append(Tray(name, None if level == -2 else (1 if level == -3 else max(level, 0))))
    return tuple(out)


def media_elsewhere(trays: Sequence[Tray]) -> bool | None:
    """True when some input reports media, False when every input that reports a level is
    empty, None when none reports one."""
    known = [t.has_media for t in trays if t.has_media is not None]
    if not known:
        return None
    return any(known)


def blocking_values(status: PrinterStatus, trays: Sequence[Tray]) -> list[tuple[str | None, str]]:
    """What keeps the printer from new work, in plain words (empty: nothing), each with
    the printer-state-reasons value it is about (None: no input tray has media, which no
    one value says).

    Error-severity reasons, known or not (media ones only when no other input has
    media), no input with media at all, and a stalled job in hand (any severity of a
    stall reason while processing or stopped). Each names the value as the printer sent
    it: ``a fault the printer does not name (other)``.
    """
    elsewhere = media_elsewhere(trays)
    out: list[tuple[str | None, str]] = []
    # holding jobs counts as busy whatever printer-state says: a device may stay "idle"
    # with a jammed job it holds (google/cloudprint_logocert#137)
    busy = (
        status.state in (PrinterState.PROCESSING, PrinterState.STOPPED)
        or status.queued_job_count > 0
    )
    empty_said = False
    for r in status.reasons:
        if r == "none":
            continue
        kw = reason_keyword(r)
        if kw in MEDIA_REASONS and elsewhere:
            continue
        if kw in MEDIA_REASONS and elsewhere is False and kw != "media-low":
            out.append((r, f"{reasons.words(r)} ({r}; no input tray has media)"))
            empty_said = True
        elif severity(r) == "error":
            out.append((r, f"{reasons.words(r)} ({r})"))
        elif busy and kw in STALL_REASONS:
            out.append((r, f"{reasons.words(r)} ({r}; the job in hand is stalled)"))
    if elsewhere is False and not empty_said:
        out.append((None, "no input tray has media"))
    return out


def said(message: str) -> str:
    """``printer-state-message`` verbatim, to follow a health reason (empty: nothing)."""
    text = message.strip()
    return f'; the printer says "{text}"' if text else ""


@dataclass(frozen=True)
class HealthSettings:
    """Thresholds of the health model (times in seconds)."""

    failure_threshold: int = 3
    stopped_grace_s: float = 10.0
    quarantine_after: int = 3
    quarantine_s: float = 60.0


@dataclass(frozen=True)
class HealthChange:
    """A transition of a printer's health, to log and count."""

    healthy: bool
    reason: str | None


@dataclass
class Health:
    """The running health of one printer; feed it with the ``on_*`` methods."""

    settings: HealthSettings
    healthy: bool = True
    reason: str | None = None
    since: float = 0.0
    reachable: bool = False
    consecutive_failures: int = 0
    stopped_since: float | None = None
    failing_jobs: list[str] = field(default_factory=list)
    quarantined_until: float | None = None
    last_error: str | None = None
    monitoring_problem: str | None = None  # cleared by a technician (resume)
    #: since when each problem holds, and which ended lately (issue 25)
    ledger: problems.Ledger = field(default_factory=problems.Ledger)
    #: what the printer itself showed at the last contact (its reasons, or no answer)
    _printer_facts: list[problems.Fact] = field(default_factory=list, repr=False)
    #: Reads the clock the stopped grace and the quarantine are measured on (issue 27: the
    #: monotonic clock, which no wall-clock step moves); None: the ``now`` given (tests).
    timer: Callable[[], float] | None = field(default=None, repr=False)
    #: When the printer was first seen stopped, on :attr:`timer` (``stopped_since``: wall).
    _stopped_t: float | None = field(default=None, repr=False)

    def _t(self, now: float) -> float:
        """The duration clock now (``quarantined_until`` is on it)."""
        return now if self.timer is None else self.timer()

    def _stopped_long(self, now: float) -> bool:
        return (
            self._stopped_t is not None
            and self._t(now) - self._stopped_t >= self.settings.stopped_grace_s
        )

    def _set(self, healthy: bool, reason: str | None, now: float) -> HealthChange | None:
        if healthy == self.healthy and reason == self.reason:
            return None
        changed = healthy != self.healthy
        self.healthy, self.reason = healthy, reason
        if changed:
            self.since = now
            return HealthChange(healthy, reason)
        return None

    def on_probe(
        self, status: PrinterStatus, now: float, unusable: str | None = None
    ) -> HealthChange | None:
        """A Get-Printer-Attributes answer; returns the change of health, if any.

        ``unusable`` says why edgeprint cannot use the printer as it answered
        (it takes no format edgeprint can send): unhealthy while it says so.
        """
        self.reachable = True
        self.consecutive_failures = 0
        if status.state == PrinterState.STOPPED:
            self.stopped_since = self.stopped_since if self.stopped_since is not None else now
            self._stopped_t = self._stopped_t if self._stopped_t is not None else self._t(now)
        else:
            self.stopped_since = self._stopped_t = None
        values = blocking_values(status, trays_of(status.attributes))
        blocked = [text for _, text in values]
        self.last_error = self.monitoring_problem  # it answered: a request's error is over
        self._seen(status, values, unusable, now)
        if self.monitoring_problem is not None:
            return self._set(False, self.monitoring_problem, now)
        if unusable is not None:
            return self._set(False, unusable, now)
        if self.quarantined_until is not None and self._t(now) < self.quarantined_until:
            return self._set(False, "quarantined: several different jobs failed here", now)
        self.quarantined_until = None
        if blocked:
            why = f"printer-state-reasons: {'; '.join(blocked)}{said(status.message)}"
            return self._set(False, why, now)
        if self._stopped_long(now):
            return self._set(False, f"printer-state: stopped{said(status.message)}", now)
        if not status.accepting_jobs:
            return self._set(False, "printer-is-accepting-jobs: false", now)
        return self._set(True, None, now)

    def _seen(
        self,
        status: PrinterStatus,
        values: Sequence[tuple[str | None, str]],
        unusable: str | None,
        now: float,
    ) -> None:
        """The problems a probe's answer shows, each with its evidence."""
        facts = [] if unusable is None else [problems.Fact("unusable-format", unusable)]
        facts += [
            problems.reason_fact(value, f"printer-state-reasons: {text}{said(status.message)}")
            for value, text in values
        ]
        stopped = self.stopped_since
        if stopped is not None and self._stopped_long(now):
            message = status.message.strip()
            evidence = f"printer-state: stopped{said(status.message)}"
            quoted = f'"{message}"' if message else ""
            facts.append(problems.Fact("stopped", evidence, said=quoted, began=stopped))
        if not status.accepting_jobs:
            facts.append(problems.Fact("not-accepting-jobs", "printer-is-accepting-jobs: false"))
        self._printer_facts = facts
        self._observe(now)

    def _observe(self, now: float) -> None:
        """Hand the ledger what holds now: what the printer showed, and what stands until a
        person (or time) clears it."""
        standing = []
        if self.monitoring_problem is not None:
            standing.append(problems.Fact("cannot-report-job-state", self.monitoring_problem))
        if self.quarantined_until is not None and self._t(now) < self.quarantined_until:
            standing.append(
                problems.Fact("quarantined", "quarantined: several different jobs failed here")
            )
        self.ledger.update([*standing, *self._printer_facts], now)

    def on_transport_failure(self, error: str, now: float) -> HealthChange | None:
        """A request got no answer (refused, time-out); busy answers are not failures."""
        self.reachable = False
        self.last_error = error
        # what it showed before is no longer known: it does not answer (since its first miss)
        self._printer_facts = [problems.fact_of(f"unreachable: {error}", key="transport")]
        self._observe(now)
        self.consecutive_failures += 1
        if self.consecutive_failures >= self.settings.failure_threshold:
            return self._set(False, f"unreachable: {error}", now)
        return None

    def on_bad_answer(self, problem: str, now: float) -> HealthChange | None:
        """The printer answered, but not in a way edgeprint can use: unhealthy at once."""
        self.reachable = True
        self.last_error = problem
        self._printer_facts = [problems.fact_of(problem, key="answer")]
        self._observe(now)
        return self._set(False, problem, now)

    def on_monitoring_failed(self, problem: str, now: float) -> HealthChange | None:
        """The printer cannot report the state of a job it holds: unhealthy until cleared."""
        self.monitoring_problem = f"cannot report job state: {problem}"
        self.last_error = self.monitoring_problem
        self._observe(now)
        return self._set(False, self.monitoring_problem, now)

    def clear(self, now: float | None = None) -> None:
        """A technician acted (resume): forget the problems only a person can clear."""
        self.monitoring_problem = None
        self.quarantined_until = None
        self.failing_jobs.clear()
        if now is not None:
            self._observe(now)

    def on_job_failed(self, job_id: str, now: float) -> HealthChange | None:
        """A job failed here (aborted, refused): several different ones quarantine the printer."""
        if job_id not in self.failing_jobs:
            self.failing_jobs.append(job_id)
        if len(self.failing_jobs) >= self.settings.quarantine_after:
            self.failing_jobs.clear()
            self.quarantined_until = self._t(now) + self.settings.quarantine_s
            self._observe(now)
            return self._set(False, "quarantined: several different jobs failed here", now)
        return None

    def on_job_printed(self) -> None:
        """A job completed here: the run of failures is broken."""
        self.failing_jobs.clear()


@dataclass(frozen=True)
class PrinterSnapshot:
    """What a technician sees of one printer (``GET /v1/printers``)."""

    name: str
    uri: str
    pool: str | None
    healthy: bool
    health_reason: str | None
    reachable: bool
    paused: bool
    printer_state: str | None  # idle / processing / stopped, None before the first probe
    printer_state_reasons: tuple[str, ...]
    printer_state_message: str
    queued_job_count: int | None
    printing_job: str | None
    last_error: str | None
    capabilities: dict[str, Any] | None = None  # PrinterCapabilities.as_json() of the last probe
    sends: str | None = None  # the format edgeprint sends it
    unreachable_since: float | None = None  # unix seconds; None while it answers
    supplies: Supplies | None = None  # what the last probe said of its supplies
    owner: str | None = None  # the appliance driving it (its lease's owner)
    lease_epoch: int | None = None  # its lease's epoch (None without leases: SQLite)
    epoch: int | None = None  # the printer's own epoch (its lives: edgeprint.epochs)
    epoch_began_at: float | None = None  # unix seconds
    epoch_cause: str | None = None  # why the epoch began, in words
    personality: dict[str, Any] | None = None  # personality.Traits.as_json()
    stock: StockView | None = None  # the stock it has ready (edgeprint.stock)
    stock_from: str | None = None  # "printer" (reported), "config" ([[printers]] media)
    #: each printer-state-reasons value with its severity, words and since when it shows
    reasons: tuple[reasons.Reason, ...] = ()
    # issue 23 (supplies): levels from the last probe, and the label roll's runway
    supply_levels: tuple[SupplyLevel, ...] = ()
    media_levels: tuple[MediaLevel, ...] = ()
    runway: RunwayView | None = None  # None: no labels_per_roll
    #: issue 25: its problems in plain words, current first, then those ended lately
    problems: tuple[problems.Problem, ...] = ()
