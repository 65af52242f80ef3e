"""What a technician (and the dispatcher) does to a printer: pause, resume, drain, trust,
identify, media loaded, check; fail-over of waiting jobs; printer health to the webhook outbox.
"""

from __future__ import annotations

import logging
import uuid

from edgeprint import errors
from edgeprint.config import PrinterConfig
from edgeprint.logs import log_event
from edgeprint.runway import Roll
from edgeprint.service.records import Caller, CheckPrinter, Identified, Identify, PrinterCheck
from edgeprint.service.shared import Shared
from edgeprint.store.outbox import FailedDelivery, Outbox

#: One logger for every part of the service: the name log readers filter on (issue 28 split it).
log = logging.getLogger("edgeprint.service.jobs")


class PrinterControls:
    """What a technician (and the dispatcher) does to a printer."""

    def __init__(self, shared: Shared) -> None:
        self._s = shared

    async def retire(self, printer: PrinterConfig) -> list[str]:
        """A reload removed ``printer`` (already gone from this service's config): its
        waiting jobs go to its old pool; the ids moved. Without a pool they stay RELEASED,
        with a ``last_error`` saying why they wait (nothing prints them)."""
        if printer.pool is None:
            waiting = await self._s.jobs.note_waiting(
                printer.name,
                f"{printer.name} was removed from the config and has no pool: this job waits "
                "until the printer is configured again (or cancel it)",
                now=self._s.clock(),
            )
            log_event(
                log,
                "printer_removed",
                message="printer removed; its waiting jobs wait for it",
                level=logging.WARNING,
                printer=printer.name,
                moved=0,
                waiting=len(waiting),
            )
            return []
        moved = await self._s.jobs.retarget_waiting(
            printer.name,
            printer.pool,
            now=self._s.clock(),
            actor="reload",
            reason=f"{printer.name} was removed from the config",
        )
        self._s.admission.forget_depths()
        log_event(
            log,
            "printer_removed",
            message="printer removed; its waiting jobs moved to its pool",
            printer=printer.name,
            pool=printer.pool,
            moved=len(moved),
        )
        if moved:
            self._s.board.wake(None, printer.pool)
        return moved

    async def fail_over_waiting(self, printer: str, reason: str) -> list[str]:
        """Move ``printer``'s waiting jobs to its pool, where healthy peers take them.

        Returns the ids moved (none when the printer has no pool).
        """
        cfg = self._s.config.printer(printer)
        if cfg is None or cfg.pool is None:
            return []
        moved = await self._s.jobs.retarget_waiting(
            printer,
            cfg.pool,
            now=self._s.clock(),
            actor=f"printer:{printer}",
            reason=f"failed over from {printer}: {reason}",
        )
        if moved:
            self._s.admission.forget_depths()  # many jobs changed queue
        for job_id in moved:
            log_event(
                log, "job_failed_over", job_id=job_id, printer=printer, pool=cfg.pool, why=reason
            )
        if moved:
            self._s.metrics.failovers.labels(printer=printer).inc(len(moved))
            self._s.board.wake(None, cfg.pool)
        return moved

    async def set_paused(self, name: str, paused: bool, caller: Caller) -> None:
        """Pause (no new work; the job in hand finishes) or resume a printer; persisted."""
        self._s.printer_config(name)
        await self._s.printer_rows.set_paused(name, paused, now=self._s.clock(), actor=caller.name)
        if paused:
            self._s.admission.paused.add(name)
        else:
            self._s.admission.paused.discard(name)
        log_event(
            log,
            "printer_paused" if paused else "printer_resumed",
            message="printer paused" if paused else "printer resumed",
            printer=name,
            actor=caller.name,
            correlation_id=caller.correlation_id,
        )
        if paused:
            self._s.board.control(name)
        else:
            self._s.board.resumed(name)
        cfg = self._s.config.printer(name)
        self._s.board.wake(name, cfg.pool if cfg else None)

    async def drain(self, name: str, caller: Caller) -> list[str]:
        """Pause the printer and move its waiting jobs to its pool's peers; the ids moved."""
        await self.set_paused(name, True, caller)
        return await self.fail_over_waiting(name, f"drained by {caller.name}")

    async def printer_pin(self, name: str) -> str | None:
        """The certificate an ipps printer must present: configured, else pinned on first use."""
        cfg = self._s.printer_config(name)
        return cfg.tls_fingerprint or await self._s.printer_rows.pin(name)

    async def pin_printer(self, name: str, fingerprint: str) -> bool:
        """Record the certificate of a printer's first contact (trust on first use)."""
        stored = await self._s.printer_rows.set_pin(
            name, fingerprint, now=self._s.clock(), actor=f"printer:{name}"
        )
        if stored:
            log_event(
                log,
                "printer_pinned",
                message="printer certificate pinned",
                printer=name,
                fingerprint=fingerprint,
            )
        return stored

    async def trust_printer(self, name: str, caller: Caller) -> PrinterConfig:
        """A technician trusts the certificate an ipps printer presents now (after a reset).

        The pin is forgotten: the next contact pins the certificate anew. A
        pin written in the config cannot be replaced this way (errors.InvalidRequest).
        """
        cfg = self._s.printer_config(name)
        if not cfg.secure:
            raise errors.InvalidRequest(f"printer {name} is not reached over ipps://")
        if cfg.tls_fingerprint is not None:
            raise errors.InvalidRequest(
                f"printer {name} has tls_fingerprint in the config: change it there"
            )
        await self._s.printer_rows.forget_pin(name)
        log_event(
            log,
            "printer_retrusted",
            message="printer certificate re-trusted",
            level=logging.WARNING,
            printer=name,
            actor=caller.name,
            correlation_id=caller.correlation_id,
        )
        self._s.board.resumed(name)
        return cfg

    async def media_loaded(self, name: str, caller: Caller) -> None:
        """A technician loaded a new roll in ``name`` (issue 23): its runway counts from a full
        roll. The worker hears it first (the board), then the count is stored reset, so a save
        of the old count already under way cannot outlast it. Raises errors.PrinterNotFound."""
        self._s.printer_config(name)
        self._s.board.media_loaded(name)
        kept = await self._s.printer_memory.roll(name) or Roll()
        now = self._s.clock()
        await self._s.printer_memory.save_roll(name, Roll(0, now, kept.media, False), now=now)
        log_event(
            log,
            "printer_media_loaded",
            printer=name,
            actor=caller.name,
            correlation_id=caller.correlation_id,
        )

    async def notified(
        self, kind: str, printer: str | None, pool: str | None, paused: bool | None
    ) -> None:
        """Another appliance changed the shared store (PostgreSQL's notifications): ``ready``
        (a job became claimable for ``printer``/``pool``), ``control`` (a copy on ``printer``
        is being cancelled), ``flags`` (``printer`` paused or resumed), ``all`` (unknown: the
        listener was not connected). The same rings the local change rings."""
        if kind == "ready":
            self._s.board.wake(printer, pool)
        elif kind == "control":
            self._s.board.control(printer)
        elif kind == "flags" and printer is not None:
            cfg = self._s.config.printer(printer)
            if paused:
                self._s.admission.paused.add(printer)
                self._s.board.control(printer)
            else:
                self._s.admission.paused.discard(printer)
                self._s.board.resumed(printer)
                self._s.board.wake(printer, cfg.pool if cfg else None)
        elif kind == "all":
            await self.load_paused()
            for cfg in self._s.config.printers:
                self._s.board.control(cfg.name)
                self._s.board.wake(cfg.name, cfg.pool)

    async def load_paused(self) -> None:
        """Read the persisted paused flags (at start-up)."""
        self._s.admission.paused = await self._s.printer_rows.paused_printers()

    async def identify(self, name: str, how: str, caller: Caller, identify: Identify) -> Identified:
        """Make a printer show itself (``how``: auto, identify, test-page) through
        ``identify`` (the dispatcher's: it owns the printers' IPP clients); what was done.

        Raises errors.PrinterNotFound, errors.IdentifyUnsupported, errors.PrinterError.
        """
        self._s.printer_config(name)
        done = await identify(name, how, caller.name)
        log_event(
            log,
            "printer_identified",
            printer=name,
            how=how,
            action=done.action,
            printer_job_id=done.printer_job_id,
            actor=caller.name,
            correlation_id=caller.correlation_id,
        )
        return done

    async def check_printer(self, name: str, caller: Caller, check: CheckPrinter) -> PrinterCheck:
        """Ask a configured printer now, timed, through ``check`` (the dispatcher's; issue 23).
        Raises errors.PrinterNotFound."""
        self._s.printer_config(name)
        out = await check(name)
        log_event(
            log,
            "printer_checked",
            printer=name,
            reachable=out.reachable,
            round_trip_s=out.round_trip_s,
            actor=caller.name,
            correlation_id=caller.correlation_id,
        )
        return out

    async def printer_health_changed(self, printer: str, healthy: bool, why: str | None) -> None:
        """Put ``printer.healthy`` / ``printer.unhealthy`` in the webhook outbox (if wanted)."""
        now = self._s.clock()
        type_ = "printer.healthy" if healthy else "printer.unhealthy"
        await Outbox(self._s.jobs.store).add_printer_event(
            f"msg_{uuid.uuid4().hex}",
            type_,
            printer,
            now,
            {
                "printer": printer,
                "healthy": healthy,
                "reason": why,
                "pool": self._printer_pool(printer),
            },
        )

    def _printer_pool(self, printer: str) -> str | None:
        cfg = self._s.config.printer(printer)
        return cfg.pool if cfg is not None else None

    async def failed_webhook_deliveries(
        self, *, after_seq: int = 0, limit: int = 100
    ) -> list[FailedDelivery]:
        """Webhook deliveries parked as failed, oldest first."""
        return await Outbox(self._s.jobs.store).failures(after_seq=after_seq, limit=limit)
