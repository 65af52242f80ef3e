"""One printer's monitor: trust, probe, describe, health, publish.

The monitor is what a worker knows of its printer between jobs: the last
answer, the capabilities and the format it is sent, its health, and (its
``life``, :mod:`edgeprint.dispatch.life`) which life of the printer this is and
what it is known to keep and echo. It asks the printer nothing but
Get-Printer-Attributes (and checks an ipps printer's certificate); what the
printer says of a copy is :mod:`edgeprint.dispatch.observer`'s.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from yarl import URL

from edgeprint import errors
from edgeprint.backoff import Backoff
from edgeprint.board import PrinterBoard, Usability
from edgeprint.config import DispatchConfig, PrinterConfig
from edgeprint.dispatch import formats
from edgeprint.dispatch.leases import Ownership
from edgeprint.dispatch.life import PrinterLife
from edgeprint.dispatch.ready import ready_stock
from edgeprint.dispatch.rolls import RollCounter
from edgeprint.documents.capabilities import (
    REQUESTED_ATTRIBUTES,
    PrinterCapabilities,
    parse_capabilities,
)
from edgeprint.epochs import Clock
from edgeprint.ipp import names
from edgeprint.logs import log_event
from edgeprint.metrics import Metrics
from edgeprint.printers import levels, problems, reasons, supplies, tls
from edgeprint.printers.health import Health, HealthChange, HealthSettings, PrinterSnapshot
from edgeprint.printers.ipp import IppClient, PrinterStatus
from edgeprint.service import JobService
from edgeprint.stock import StockView

log = logging.getLogger(__name__)

#: Longest back-off between probes of a printer that answers but cannot be used (seconds).
BAD_ANSWER_BACKOFF_MAX_S = 60.0
#: The first bytes of an answer that is not IPP are logged at most this often (seconds).
HEX_LOG_INTERVAL_S = 3600.0
#: A printer that reports printer-config-change-time is described (capabilities,
#: supplies) when that time moves, when it restarted or was unreachable, and at least this
#: often (seconds); the probes between ask for its state only.
DESCRIBE_EVERY_S = 60.0
#: A printer-up-time this far behind the time since the printer was described means it
#: restarted (seconds; printer-up-time counts whole seconds).
RESTART_SLACK_S = 2.0


class Monitor:
    """What one worker knows of its printer; fed by :meth:`probe` and the ``on_*`` calls."""

    def __init__(
        self,
        printer: PrinterConfig,
        client: IppClient,
        service: JobService,
        settings: DispatchConfig,
        metrics: Metrics,
        board: PrinterBoard,
        ownership: Ownership,
        *,
        raster: bool,
        clock: Callable[[], float] = time.time,
        clocks: Callable[[], Clock] = Clock.now,
        timer: Callable[[], float] | None = None,
    ) -> None:
        self.name = printer.name
        self.config = printer
        self.client = client
        self.service = service
        self.settings = settings
        self.metrics = metrics
        self.board = board
        self.ownership = ownership
        self._raster = raster
        self._clock = clock
        self._clocks = clocks
        #: The clock durations are judged on (the worker's monotonic timer; default ``clock``)
        self._timer = timer or clock
        self.capabilities: PrinterCapabilities | None = None
        #: The stock it has ready, from every probe (None: not probed yet)
        self.stock: StockView | None = None
        #: Where ``stock`` came from: "printer" (it reported it), "config" ([[printers]]
        #: media, for one that reports none), None (unknown)
        self.stock_from: str | None = None
        self._caps_from: dict[str, Any] | None = None
        self._described: PrinterStatus | None = None
        self._described_at = 0.0
        #: The format a (PDF) job is sent to this printer in; None: none edgeprint can make.
        self.sends: str | None = formats.PDF
        self.status: PrinterStatus | None = None
        #: since when each printer-state-reasons value now shown has shown (unix seconds)
        self.reasons_since: dict[str, float] = {}
        #: the same on the timer: how long a stall has lasted (issue 27: no wall-clock step
        #: makes a stall look longer or shorter)
        self.reasons_seen_at: dict[str, float] = {}
        self.reachable = False
        self.unreachable_since: float | None = None
        self._trusted = False
        self._hex_logged_at: float | None = None
        #: the wait after each answer that is not usable (at least the unreachable cap)
        self._bad_answer = Backoff(
            min(settings.unreachable_retry_max_s, BAD_ANSWER_BACKOFF_MAX_S),
            BAD_ANSWER_BACKOFF_MAX_S,
        )
        #: A reload removed this printer: it is withdrawn from the board.
        self.retired = False
        self.health = Health(
            HealthSettings(
                failure_threshold=settings.failure_threshold,
                stopped_grace_s=settings.stopped_grace_s,
                quarantine_after=settings.quarantine_after,
                quarantine_s=settings.quarantine_s,
            ),
            timer=time.monotonic,  # its grace and quarantine are durations (issue 27)
        )
        #: Which life of the printer this is, and what it is known to keep and echo.
        self.life = PrinterLife(self.name, service, metrics, clocks)
        #: The label roll's runway (issue 23; nothing without labels_per_roll).
        self.rolls = RollCounter(printer, service, metrics, clock)

    # --- what the rest of the worker reads ------------------------------------------

    @property
    def printer_reasons(self) -> tuple[str, ...]:
        return self.status.reasons if self.status is not None and self.reachable else ()

    def publish(self) -> None:
        """Put what admission needs of this printer on the board (after every change of view)."""
        if self.retired or not self.ownership.may_send(self.name):
            return
        caps = self.capabilities
        self.board.publish(
            self.name,
            Usability(
                healthy=self.health.healthy,
                sends=self.sends,
                takes=caps.formats if caps is not None else (),
                probed=caps is not None,
                stock=self.stock,
                labels_left=self.rolls.labels_left,
            ),
        )

    def resumed(self) -> None:
        """A technician resumed (or re-trusted) the printer: forget what only a person clears."""
        self.health.clear(self._clock())
        self._trusted = False
        self.publish()

    # --- probing -----------------------------------------------------------------------

    def _describe_due(self, now: float) -> bool:
        last = self._described
        return (
            last is None
            or last.config_change_time is None  # it cannot say when it changed: always ask
            or now - self._described_at >= DESCRIBE_EVERY_S
        )

    def _described_since(self, status: PrinterStatus, now: float) -> bool:
        """True when a state-only answer shows the printer as last described: the same
        printer-config-change-time, and its printer-up-time as far on as the time since
        (give or take ``RESTART_SLACK_S``), so it has not restarted meanwhile."""
        last = self._described
        if last is None or status.config_change_time != last.config_change_time:
            return False
        if status.up_time_s is None or last.up_time_s is None:
            return False
        expected = last.up_time_s + (now - self._described_at)
        return status.up_time_s >= expected - RESTART_SLACK_S

    async def probe(self) -> tuple[PrinterStatus, bool]:
        """Get-Printer-Attributes: the printer's state (described when due), and whether a
        new epoch began with it. Raises errors.PrinterError and kin."""
        asked = self._clocks()
        status = await self.client.get_printer_attributes(
            describe=self._describe_due(self._clock())
        )
        if not status.described and not self._described_since(status, self._clock()):
            asked = self._clocks()
            status = await self.client.get_printer_attributes(describe=True)
        lived = self.life.epoch.number if self.life.epoch is not None else None
        try:
            new_epoch = await self.life.observe(status, asked)
        finally:  # another life (even one the store failed to keep): describe it again
            if (self.life.epoch.number if self.life.epoch is not None else None) != lived:
                self._described = None
        if new_epoch and not status.described:
            status = await self.client.get_printer_attributes(describe=True)
        now = self._clock()
        if status.described:
            self._described, self._described_at = status, now
        if not self.reachable:
            log_event(log, "printer_up", message="printer reachable", printer=self.name)
        self.reachable = True
        self.unreachable_since = None
        self._bad_answer.reset()
        self.metrics.printer_up.labels(printer=self.name).set(1)
        described = self._described
        assert described is not None
        said = {k: described.attributes.get(k) for k in REQUESTED_ATTRIBUTES}
        if said != self._caps_from:  # what the printer says it takes changed: read it again
            self._caps_from = said
            self.capabilities = parse_capabilities(described.attributes)
            self.sends = formats.generic(self.capabilities, raster=self._raster)
        unusable = None
        if self.sends is None and self.capabilities is not None:
            unusable = formats.unusable(self.capabilities)
        self.status = status
        self._read_stock(status)
        self.reasons_since = reasons.first_seen(self.reasons_since, status.reasons, now)
        self.reasons_seen_at = reasons.first_seen(
            self.reasons_seen_at, status.reasons, self._timer()
        )
        await self.rolls.on_probe(status)
        self._note_paused(now)
        await self.health_changed(self.health.on_probe(status, now, unusable))
        self.publish()
        self.metrics.printer_healthy.labels(printer=self.name).set(int(self.health.healthy))
        return status, new_epoch

    def _read_stock(self, status: PrinterStatus) -> None:
        """The stock it has ready, from this answer (media-col-ready, media-ready), else
        from the config's ``media``; a change is logged (a roll change, the wrong stock)."""
        view, source = ready_stock(status.attributes, self.config)
        found = view.stocks
        if self.stock is not None and view != self.stock:
            log_event(
                log,
                "printer_stock_changed",
                printer=self.name,
                was=[s.describe() for s in self.stock.stocks],
                now=[s.describe() for s in found],
            )
        self.stock, self.stock_from = view, source

    async def on_unreachable(self, exc: errors.PrinterError) -> float:
        """No answer: count it; returns for how long the printer has been unreachable (s)."""
        now = self._clock()
        self._described = None  # it may come back another printer: describe it again
        self.reasons_since = {}  # what it shows when back is seen anew
        self.reasons_seen_at = {}
        if isinstance(exc, errors.PrinterUnreachable | errors.PrinterTimedOut):
            self.life.after_outage = True  # it may have been off (a reset of one request is not)
        if self.reachable or self.unreachable_since is None:
            log_event(
                log,
                "printer_down",
                message="printer unreachable",
                printer=self.name,
                error=str(exc),
            )
            self.unreachable_since = now
        self.reachable = False
        self.metrics.printer_up.labels(printer=self.name).set(0)
        await self.health_changed(self.health.on_transport_failure(str(exc), now))
        self.metrics.printer_healthy.labels(printer=self.name).set(int(self.health.healthy))
        if not self.health.healthy:  # jobs named for it keep arriving (or come back): move them
            await self.service.printers.fail_over_waiting(
                self.name, self.health.reason or "unreachable"
            )
        return now - self.unreachable_since

    async def ensure_trust(self) -> None:
        """ipps://: check the printer's certificate before anything is sent to it.

        ``tls = "pin"``: trust on first use — the fingerprint seen first is
        stored, and every later contact must present the same certificate.
        ``tls = "verify"``: the system CA store. Raises errors.CertificateChanged,
        errors.TlsHandshakeFailed, errors.PrinterUnreachable.
        """
        if self._trusted or not self.config.secure:
            return
        if self.config.tls == "verify":
            self.client.ssl = tls.verify_context()
            self._trusted = True
            return
        url = URL(self.config.uri)
        pinned = await self.service.printers.printer_pin(self.name)
        got = await tls.trust(
            url.host or "",
            url.port or 631,
            pinned,
            printer=self.name,
            timeout_s=self.settings.request_timeout_s,
        )
        if got.first_contact:
            await self.service.printers.pin_printer(self.name, got.fingerprint)
        self.client.ssl = got.ssl
        self._trusted = True

    async def on_bad_answer(self, exc: errors.EdgeprintError) -> float:
        """The printer answered in a way edgeprint cannot use: unhealthy, probed slowly.

        HTTP 426 says "use ipps://"; an HTTP error or a reply that is not IPP is
        named as such. Jobs are untouched; the first bytes of a reply that is
        not IPP are logged (hex) at most once an hour. Returns the back-off (s).
        """
        now = self._clock()
        if isinstance(exc, errors.PrinterNeedsTls):
            problem = "printer requires TLS: use ipps://"
        elif isinstance(exc, errors.CertificateChanged):
            problem = str(errors.CertificateChanged(exc.was, exc.now, self.name))
            self._trusted = False  # nothing is sent until it presents the pinned one again
            self.metrics.certificate_changes.labels(printer=self.name).inc()
        elif isinstance(exc, errors.TlsHandshakeFailed):
            problem = f"no TLS session: {exc.detail}"
        else:
            problem = f"printer answer unusable: {exc}"
        self.reachable = True
        self.metrics.printer_up.labels(printer=self.name).set(1)
        await self.health_changed(self.health.on_bad_answer(problem, now))
        self.metrics.printer_healthy.labels(printer=self.name).set(0)
        head = exc.head if isinstance(exc, errors.PrinterAnswerError) else b""
        if head and (
            self._hex_logged_at is None or now - self._hex_logged_at >= HEX_LOG_INTERVAL_S
        ):
            self._hex_logged_at = now
            log_event(
                log,
                "printer_bad_answer",
                message="printer answer is not IPP",
                level=logging.WARNING,
                printer=self.name,
                error=str(exc),
                head_hex=head.hex(),
            )
        await self.service.printers.fail_over_waiting(self.name, problem)
        return self._bad_answer.failed()

    async def health_changed(self, change: HealthChange | None) -> None:
        if change is None:
            return
        self.publish()
        self.metrics.printer_healthy.labels(printer=self.name).set(1 if change.healthy else 0)
        self.metrics.health_changes.labels(
            printer=self.name, healthy=str(change.healthy).lower()
        ).inc()
        await self.service.printers.printer_health_changed(self.name, change.healthy, change.reason)
        if change.healthy:
            log_event(log, "printer_healthy", printer=self.name)
            self.service.board.wake(self.name, self.config.pool)
            return
        log_event(
            log, "printer_unhealthy", level=logging.WARNING, printer=self.name, why=change.reason
        )
        await self.service.printers.fail_over_waiting(self.name, change.reason or "unhealthy")

    def _note_paused(self, now: float) -> bool:
        """A technician's pause is a problem too (no new work), from when it was first seen."""
        paused = self.name in self.service.admission.paused
        fact = problems.Fact("paused", f"paused: no new work until resumed ({self.name})")
        self.health.ledger.update([fact] if paused else [], now, group="paused")
        return paused

    def snapshot(self, printing_job: str | None) -> PrinterSnapshot:
        """The technician's view of this printer right now (no stale state when it is down)."""
        now = self._clock()
        paused = self._note_paused(now)
        entries = self.health.ledger.entries(now)
        st = self.status if self.reachable else None
        owner, lease_epoch = self.ownership.owner(self.name)
        e = self.life.epoch
        said = self._described.attributes if self._described is not None else None
        return PrinterSnapshot(
            name=self.name,
            uri=self.config.uri,
            pool=self.config.pool,
            healthy=self.health.healthy,
            health_reason=self.health.reason,
            reachable=self.reachable,
            paused=paused,
            printer_state=names.state_keyword(st.state) if st else None,
            printer_state_reasons=st.reasons if st else (),
            printer_state_message=st.message if st else "",
            queued_job_count=st.queued_job_count if st else None,
            printing_job=printing_job,
            last_error=self.health.last_error,
            capabilities=self.capabilities.as_json() if self.capabilities else None,
            sends=self.sends if self.capabilities else None,
            unreachable_since=self.unreachable_since,
            supplies=(
                supplies.from_attributes(self._described.attributes)
                if st and self._described
                else None
            ),
            owner=owner,
            lease_epoch=lease_epoch,
            epoch=e.number if e is not None else None,
            epoch_began_at=e.began_at if e is not None else None,
            epoch_cause=e.cause if e is not None else None,
            personality=self.life.traits.as_json(),
            stock=self.stock,
            stock_from=self.stock_from,
            reasons=reasons.describe(st.reasons, self.reasons_since) if st else (),
            supply_levels=levels.supply_levels(said) if st and said else (),
            media_levels=levels.media_levels({**(said or {}), **st.attributes}) if st else (),
            runway=self.rolls.view(),
            problems=problems.sentences(entries, uri=self.config.uri, name=self.name, now=now),
        )
