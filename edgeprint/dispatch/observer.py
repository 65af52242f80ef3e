"""Asking one printer about a copy, and reading the answer through the evidence model.

:meth:`Observer.look` asks Get-Job-Attributes (unless the printer is known to
answer it badly), then Get-Jobs when the answer was not the copy, and turns
what was said into an :class:`~edgeprint.evidence.Observation`;
:meth:`Observer.record` stores it (a settled copy with the evidence that settled
it, or a live copy's figures) and teaches the monitor what the answer showed of
the printer. Cancel-Job and the search for an orphan live here too: everything
that asks the printer about a job.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from edgeprint import errors, evidence
from edgeprint.backoff import Backoff
from edgeprint.config import DispatchConfig
from edgeprint.copies import WAITING_FOR_DATA, Copy, CopyState
from edgeprint.dispatch.monitor import Monitor
from edgeprint.evidence import Evidence, Listing, Observation, PrinterJob, Sighting
from edgeprint.logs import log_event
from edgeprint.personality import Echo, JobAnswer
from edgeprint.printers.health import MEDIA_REASONS, media_elsewhere, reason_keyword, trays_of
from edgeprint.printers.ipp import IppClient
from edgeprint.service import JobRecord, JobService

log = logging.getLogger(__name__)


class Unsettled(Exception):
    """A copy's outcome cannot be learnt now (the printer is unreachable): keep the job
    PRINTING and reconcile before anything new is sent."""


class MonitoringFailed(Exception):
    """Neither Get-Job-Attributes nor Get-Jobs gave a usable answer about a copy."""


class Observer:
    """What one printer says about its copies."""

    def __init__(
        self,
        client: IppClient,
        service: JobService,
        monitor: Monitor,
        settings: DispatchConfig,
        stop: asyncio.Event,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.client = client
        self.service = service
        self.monitor = monitor
        self.settings = settings
        self.stop = stop
        self._clock = clock

    def context(self) -> evidence.Context:
        """What an answer is read with; the printer's reasons without those about one empty
        input while another has media (an empty by-pass tray stops nothing)."""
        m = self.monitor
        reasons = m.printer_reasons
        status = m.status
        if status is not None and media_elsewhere(trays_of(status.attributes)):
            reasons = tuple(r for r in reasons if reason_keyword(r) not in MEDIA_REASONS)
        life = m.life
        return evidence.Context(
            epoch=life.epoch_number or 0, traits=life.traits, printer_reasons=reasons
        )

    async def _get_jobs(self) -> tuple[list[PrinterJob], Listing]:
        try:
            listed, listing = await self.client.get_jobs("all")
        except errors.PrinterUnreachable as exc:
            raise Unsettled from exc
        if listing is Listing.LIVE and not self.monitor.life.traits.lists_live_only:
            await self.monitor.life.learn_trait(lists_live_only=True)
        return listed, listing

    async def look(self, copy: Copy) -> Observation:
        """The printer's word on a copy whose job-id is known (see :func:`evidence.observe`).

        Raises Unsettled (unreachable) or MonitoringFailed (neither answered usably).
        """
        assert copy.printer_job_id is not None
        ctx = self.context()
        other_epoch = copy.epoch is not None and copy.epoch != ctx.epoch
        if other_epoch and not (copy.job_uuid or copy.created_dt):
            # the printer restarted since, and nothing of this copy survives a restart
            return evidence.observe(copy, Sighting(listed=(), listing=Listing.ALL), ctx)
        direct: PrinterJob | None = None
        asked = False
        first: errors.PrinterError | None = None
        if not other_epoch and not ctx.traits.gja_unreliable:
            try:
                direct = await self.client.get_job_attributes(copy.printer_job_id)
                asked = True
            except errors.PrinterUnreachable as exc:
                raise Unsettled from exc
            except errors.PrinterTimedOut as exc:
                first = exc
                await self.monitor.on_unreachable(exc)  # shown not answering at once
            except errors.PrinterTransient as exc:
                first = exc
            if asked:
                obs = evidence.observe(copy, Sighting(direct, asked), ctx)
                if obs.pj is not None:
                    return obs
        try:
            listed, listing = await self._get_jobs()
        except errors.PrinterTransient as second:
            # each error names its operation already ("Get-Jobs: no answer in time")
            raise MonitoringFailed(
                f"{first or 'Get-Job-Attributes: not found'}; {second}"
            ) from second
        obs = evidence.observe(copy, Sighting(direct, asked, tuple(listed), listing), ctx)
        if asked and direct is None and obs.pj is not None and not ctx.traits.gja_unreliable:
            log_event(
                log,
                "printer_gja_unreliable",
                message="Get-Job-Attributes not found, Get-Jobs lists it",
                level=logging.WARNING,
                printer=copy.printer,
                printer_job_id=copy.printer_job_id,
            )
            await self.monitor.life.learn_trait(gja_unreliable=True)
        if obs.evidence is Evidence.FORGOTTEN_AFTER_ACKNOWLEDGED:
            await self.monitor.life.learn_forgotten()
        return obs

    async def learn_from(self, copy: Copy, pj: PrinterJob | None, job: JobRecord | None) -> None:
        """What an answer about a copy of this epoch (its identity certain) shows of the
        printer: how it echoes names, which figures it keeps (the monitor's traits)."""
        if pj is None or copy.epoch != self.monitor.life.epoch_number:
            return
        await self.monitor.life.learn(
            JobAnswer(
                name=pj.name,
                user=pj.user,
                uuid=pj.uuid,
                k_octets=pj.k_octets,
                impressions_completed=pj.impressions_completed,
                created_s=pj.created_s,
                terminal=pj.terminal,
                has_document=copy.acknowledged_at is not None,
            ),
            sent_name=evidence.printer_job_name(copy.job_id),
            sent_user=job.owner if job is not None else None,
        )

    async def record(
        self, copy: Copy, obs: Observation, job: JobRecord | None = None
    ) -> Copy | None:
        """Store what was observed: a settled copy, or a live copy's new figures."""
        pj = obs.pj
        await self.learn_from(copy, pj, job)
        if obs.settled is not None:
            return await self.service.outcomes.settle_copy(
                copy, obs.settled, obs.outcome or "", pj, evidence=obs.evidence.value
            )
        if pj is None:
            return copy
        changed = (
            (copy.created_s is None and pj.created_s is not None)
            or (copy.job_uuid is None and pj.uuid is not None)
            or copy.job_state != pj.state
            or copy.job_state_reasons != ",".join(pj.reasons)
            or copy.k_octets != pj.k_octets
            or copy.impressions_completed != pj.impressions_completed
            or copy.sheets_completed != pj.sheets_completed
        )
        if not changed:
            return copy
        return await self.service.worker.copy_reported(copy, pj)

    async def send_cancel(self, copy: Copy, *, tries: int = 1) -> bool:
        """Cancel-Job for a copy already recorded ``cancelling``; True when the printer took
        the cancel of a job it still had. False when it refused, or answered that the job
        is already finished or unknown there (client-error-not-possible, -not-found): that
        says nothing of what came out — only looking at the job does. No-op without a
        job-id. ``tries``: a cancel the printer did not act on (busy, service-unavailable)
        is asked again, up to this many times in all, backing off — for an empty printer
        job nobody else will ever cancel (its document was refused, and a printer that
        rewrites job names hides it from :meth:`cancel_strays`)."""
        if copy.printer_job_id is None:
            return False
        delay = self.settings.poll_interval_min_s
        for attempt in range(1, tries + 1):
            try:
                took = await self.client.cancel_job(copy.printer_job_id)
            except errors.PrinterUnreachable as exc:
                raise Unsettled from exc
            except errors.PrinterError as exc:
                log_event(
                    log,
                    "cancel_failed",
                    level=logging.WARNING,
                    printer=copy.printer,
                    printer_job_id=copy.printer_job_id,
                    error=str(exc),
                    attempt=attempt,
                )
                if attempt < tries and isinstance(exc, errors.PrinterTransient):
                    await asyncio.sleep(delay)  # the printer did not act on it: ask again
                    delay *= 4
                    continue
                return False
            await self.service.worker.copy_cancel_sent(copy)
            return took
        return False

    async def await_cancel(self, copy: Copy, *, within_s: float | None = None) -> Copy | None:
        """Cancel-Job (once), then wait (bounded: ``within_s``, else three request
        time-outs) until the printer settles the copy; the copy as it stands then (None:
        gone from the store)."""
        if copy.cancel_sent_at is None:
            await self.send_cancel(copy)
        if copy.printer_job_id is None:
            return await self.service.worker.copy(copy.id)
        polls = Backoff(self.settings.poll_interval_min_s, self.settings.poll_interval_max_s)
        bound = self.settings.request_timeout_s * 3 if within_s is None else within_s
        deadline = self._clock() + bound
        while not self.stop.is_set():
            try:
                obs = await self.look(copy)
            except MonitoringFailed:
                break
            if obs.settled is not None or obs.evidence is Evidence.NOT_CONFIRMED:
                if obs.settled is not None:
                    await self.record(copy, obs)
                break
            copy = await self.record(copy, obs) or copy
            if self._clock() >= deadline:
                break
            await asyncio.sleep(polls.failed())  # the printer is stopping the job: poll, bounded
        return await self.service.worker.copy(copy.id)

    async def _list_patiently(self, tries: int = 3) -> list[PrinterJob] | None:
        """Get-Jobs, a few times over a failing answer; None when it cannot be had now."""
        delay = self.settings.poll_interval_min_s
        for attempt in range(tries):
            try:
                listed, _ = await self._get_jobs()
                return listed
            except Unsettled:
                return None
            except errors.PrinterTransient:
                if attempt + 1 < tries:
                    await asyncio.sleep(delay)  # the printer failed this answer: ask again
                    delay *= 4
        return None

    async def cancel_strays(self, live: set[int]) -> int:
        """Cancel printer jobs that are edgeprint's by name, wait for a document that will never
        come (a Create-Job whose copy was given up) and are no live copy's: an empty job blocks
        a printer that takes one job at a time. Returns how many were cancelled."""
        traits = self.monitor.life.traits
        if traits.job_name not in (Echo.UNKNOWN, Echo.WHOLE, Echo.CONTAINS):
            return 0  # it does not echo names: nothing on it can be told to be ours
        listed = await self._list_patiently(tries=1)
        cancelled = 0
        for j in listed or ():
            if j.terminal or j.job_id in live or "edgeprint-" not in j.name:
                continue
            if not (WAITING_FOR_DATA & set(j.reasons)) or j.k_octets not in (None, 0):
                continue
            log_event(
                log,
                "stray_job_cancelled",
                message="stray empty printer job cancelled",
                level=logging.WARNING,
                printer=self.monitor.name,
                printer_job_id=j.job_id,
                job_name=j.name,
            )
            try:
                await self.client.cancel_job(j.job_id)
                cancelled += 1
            except errors.PrinterUnreachable as exc:
                raise Unsettled from exc
            except errors.PrinterError:
                continue
        return cancelled

    async def find(self, copy: Copy, job: JobRecord | None) -> bool:
        """Find the printer job of a copy whose job-id was never stored (crash after Create-Job).

        One candidate: its job-id is recorded (and an empty one is cancelled on
        the next round). None: the printer has no such job (``vanished``).
        Several: edgeprint cannot tell which (``lost``; for a copy that never
        got a document the job is simply sent again). False when unreachable.
        """
        ctx = self.context()
        if copy.epoch is not None and copy.epoch != ctx.epoch:
            await self.service.outcomes.settle_copy(
                copy,
                CopyState.VANISHED,
                f"the printer restarted since (epoch {copy.epoch} → {ctx.epoch}): a job it "
                "made before is gone",
                evidence=Evidence.VANISHED_NEW_EPOCH.value,
            )
            return True
        listed = await self._list_patiently()
        if listed is None:
            return False  # not now: the copy stays as it is, the sweep tries again later
        known = await self.service.worker.known_printer_jobs(copy.printer, ctx.epoch)
        owner = job.owner if job is not None else ""
        found = evidence.find_orphans(copy, owner, listed, known, ctx.traits)
        if len(found) == 1:
            pj = found[0]
            log_event(
                log,
                "copy_found",
                message="orphan printer job found",
                job_id=copy.job_id,
                printer=copy.printer,
                printer_job_id=pj.job_id,
            )
            await self.service.worker.copy_found(copy, pj)
            return True
        if not found:
            await self.service.outcomes.settle_copy(
                copy,
                CopyState.VANISHED,
                "no printer job matches it: never created, or purged",
                evidence=Evidence.ORPHAN_ABSENT.value,
            )
            return True
        ids = ", ".join(str(j.job_id) for j in found)
        log_event(
            log,
            "copy_ambiguous",
            message="orphan printer job ambiguous",
            level=logging.WARNING,
            job_id=copy.job_id,
            printer=copy.printer,
            candidates=ids,
        )
        await self.service.outcomes.settle_copy(
            copy,
            CopyState.LOST,
            f"printer jobs {ids} could each be it: cancel the stray one",
            evidence=Evidence.ORPHAN_AMBIGUOUS.value,
        )
        return True
