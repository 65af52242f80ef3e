"""One copy's run, from the request that makes it to the printer's last word on it.

:meth:`CopyRun.send` makes the printer job (Create-Job + Send-Document, or
Print-Job), recording the copy before each request that may make or fill it, and
then follows it; :meth:`CopyRun.follow` polls the printer until it settles the
copy. Both return an :class:`Outcome` and never settle the job: what an outcome
means for the job is :mod:`edgeprint.dispatch.settle`'s.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from edgeprint import errors
from edgeprint.backoff import Backoff
from edgeprint.config import DispatchConfig
from edgeprint.copies import Copy, CopyState
from edgeprint.dispatch import formats
from edgeprint.dispatch.leases import Ownership
from edgeprint.dispatch.monitor import Monitor
from edgeprint.dispatch.observer import MonitoringFailed, Observer, Unsettled
from edgeprint.dispatch.stall import stall_reasons, stalled_since
from edgeprint.evidence import Evidence, Observation, printer_job_name
from edgeprint.faults import crash_point
from edgeprint.metrics import Metrics
from edgeprint.printers.health import trays_of
from edgeprint.printers.ipp import IppClient, PrinterStatus
from edgeprint.service import JobRecord, JobService

log = logging.getLogger(__name__)


class Ended(StrEnum):
    """How a copy's run ended."""

    PRINTED = "printed"  # the printer said it completed whole: settle it and the job as one
    SETTLED = "settled"  # the printer settled it otherwise (stored): judge the job
    REFUSED = "refused"  # the printer refused the request (``error``): the refusal decides
    UNSETTLED = "unsettled"  # no word (unreachable, an ambiguous answer): reconcile later
    STUCK = "stuck"  # the printer cannot go on with it (blocked past blocked_grace_s)
    LOST = "lost"  # the printer could not say what became of it for in_hand_timeout_s
    CHANGED = "changed"  # someone acted on it meanwhile (a cancel): judge the job
    STOPPED = "stopped"  # the appliance is stopping: the job stays PRINTING


@dataclass(frozen=True)
class Outcome:
    """The end of a copy's run: how, the copy as last stored, and what showed it."""

    ended: Ended
    copy: Copy
    observation: Observation | None = None
    error: errors.PrinterError | None = None
    why: str = ""


class CopyRun:
    """Runs copies on one printer (one at a time)."""

    def __init__(
        self,
        client: IppClient,
        service: JobService,
        monitor: Monitor,
        observer: Observer,
        settings: DispatchConfig,
        metrics: Metrics,
        ownership: Ownership,
        stop: asyncio.Event,
        cancel: asyncio.Event,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.name = monitor.name
        self.client = client
        self.service = service
        self.monitor = monitor
        self.observer = observer
        self.settings = settings
        self.metrics = metrics
        self.ownership = ownership
        self.stop = stop
        self.cancel = cancel
        self._clock = clock
        #: How long this printer's jobs take, acknowledged → seen settled (moving average):
        #: the follow polls finely around then instead of on its back-off (docs/decisions/0049).
        self._typical_s: float | None = None

    def _check_lease(self) -> None:
        """Right before a request that may print: stop when the lease may be near its end."""
        if not self.ownership.may_send(self.name):
            raise Unsettled

    async def send(
        self, job: JobRecord, copy: Copy, document: bytes, status: PrinterStatus
    ) -> Outcome:
        """Make one copy: Create-Job + Send-Document (or Print-Job), then follow it.

        The copy is recorded before each request that may make or fill a printer
        job, so a crash at any point leaves a record that reconciliation settles;
        nothing is ever sent blindly twice.
        """
        name = printer_job_name(job.id)
        copies = job.copies if job.copies > 1 and status.copies_supported else None
        if formats.is_raw(copy.document_format):
            copies = None  # a raw document carries its copies as its bytes repeated
        if copy.operation == "Create-Job":
            self._check_lease()
            try:
                made = await self.client.create_job(name, job.owner, copies=copies)
            except errors.PrinterAmbiguous:
                return Outcome(Ended.UNSETTLED, copy)  # an empty job may exist: it is found
            except errors.PrinterError as exc:
                return Outcome(Ended.REFUSED, copy, error=exc)
            crash_point("after_create_job")
            sending = await self.service.worker.copy_created(copy, made, sending=True)
            if sending is None or sending.state is not CopyState.SENDING:
                return Outcome(Ended.CHANGED, sending or copy)  # cancelled meanwhile
            self._check_lease()
            try:
                await self.client.send_document(
                    made.job_id, job.owner, document, copy.document_format
                )
            except errors.PrinterAmbiguous as exc:  # all, part or none of it arrived
                if exc.body_sent:
                    sending = await self.service.worker.copy_written(sending) or sending
                return Outcome(Ended.UNSETTLED, sending)
            except errors.PrinterUnreachable:
                await self.service.worker.copy_unsent(sending)  # not one byte left
                return Outcome(Ended.UNSETTLED, sending)
            except errors.PrinterError as exc:
                return Outcome(Ended.REFUSED, sending, error=exc)
            crash_point("after_send_document")
            acked = await self.service.worker.copy_acknowledged(sending)
        else:
            self._check_lease()
            try:
                made = await self.client.print_job(
                    name, job.owner, document, copy.document_format, copies=copies
                )
            except errors.PrinterAmbiguous as exc:
                if exc.body_sent:
                    copy = await self.service.worker.copy_written(copy) or copy
                return Outcome(Ended.UNSETTLED, copy)
            except errors.PrinterError as exc:
                return Outcome(Ended.REFUSED, copy, error=exc)
            crash_point("after_send_document")
            acked = await self.service.worker.copy_acknowledged(copy, made)
        if acked is None or acked.state is not CopyState.ACKNOWLEDGED:
            return Outcome(Ended.CHANGED, acked or copy)  # cancelled meanwhile
        return await self.follow(job, acked)

    def _movable(self, copy: Copy) -> bool:
        """No impression of it can have come out: the printer counts them and says none, or
        it has one impression only (which would have completed it)."""
        out = copy.pages_out
        if out:
            return False
        if out == 0 and self.monitor.life.traits.impressions:
            return True
        expected = copy.impressions_expected
        return expected is not None and expected <= 1

    async def follow(self, job: JobRecord, copy: Copy) -> Outcome:
        """Follow a copy that has (or may have) the whole document until the printer settles it.

        Get-Job-Attributes fast first, then every ``follow_interval_max_s``
        (Get-Jobs where that answer is not the copy); the printer is probed on the
        way (its health may change while it holds the job; a probe it does not answer
        shows it as not answering, and the copy is followed on). A copy the printer
        holds (its last answer listed it live: a job gone from its answers is not held
        there) that cannot go on for ``blocked_grace_s``, none of it out, ends the run
        STUCK: it stalled (:mod:`~edgeprint.dispatch.stall`: a jam, an open door, no
        media, at any severity, its figures not moving), or the printer, answering,
        is unhealthy. One that cannot report its state for ``in_hand_timeout_s`` ends
        it LOST. Raises Unsettled when the printer stops answering.
        """
        polls = Backoff(self.settings.poll_interval_min_s, self.settings.follow_interval_max_s)
        acked_at = self._clock()
        next_probe = acked_at + self.settings.poll_interval_max_s
        failing_since: float | None = None
        noted = False
        held = False  # the printer's last answer listed the copy live
        #: since when the printer has answered every probe unhealthy (None: it is healthy,
        #: or its last probe went unanswered: time it did not answer is not time blocked)
        blocked_from: float | None = None
        progressed_at = acked_at  # when the copy's figures last moved
        figures = _figures(copy)
        while not self.stop.is_set():
            if self.cancel.is_set():
                self.cancel.clear()
                current = await self.service.worker.copy(copy.id)
                if current is None or not current.live:
                    return Outcome(Ended.CHANGED, current or copy)
                copy = current
                if copy.state is CopyState.CANCELLING and copy.cancel_sent_at is None:
                    await self.observer.send_cancel(copy)
            if self._clock() >= next_probe:
                next_probe = self._clock() + self.settings.poll_interval_max_s
                if self.ownership.shared:  # a cancel made on another appliance rings no bell
                    self.cancel.set()
                try:
                    await self.monitor.probe()
                except errors.PrinterUnreachable as exc:
                    raise Unsettled from exc
                except errors.PrinterTimedOut as exc:
                    # shown as not answering at once; the copy is judged by what the
                    # printer says of it (in_hand_timeout_s), never by this alone
                    await self.monitor.on_unreachable(exc)
                except errors.PrinterTransient:
                    pass
                m = self.monitor
                if not m.reachable or m.health.healthy:
                    blocked_from = None
                elif blocked_from is None:
                    blocked_from = self._clock()
                why = self._cannot_go_on(held, max(progressed_at, blocked_from or 0.0))
                if why is not None:
                    if self._movable(copy):
                        return Outcome(Ended.STUCK, copy, why=why)
                    if not noted:
                        noted = True
                        out = f" after {copy.pages_out} impression(s)" if copy.pages_out else ""
                        await self.service.worker.note(
                            job,
                            self.name,
                            f"{self.name} cannot go on ({why}){out}: waiting for a "
                            "person to clear it (part of it may have come out)",
                        )
            look_from = self._clock()
            # a look that goes on failing is cut at in_hand_timeout_s from the first failing
            # one's start: a hung printer's job is given up after that, not after the
            # requests' own bounds add up past it
            since = look_from if failing_since is None else failing_since
            budget: float | None = max(0.0, since + self.settings.in_hand_timeout_s - look_from)
            if failing_since is None and not budget:
                budget = None  # in_hand_timeout_s = 0: give up at the first failure, not before
            try:
                async with asyncio.timeout(budget):
                    obs = await self.observer.look(copy)
            except (MonitoringFailed, TimeoutError) as exc:
                if isinstance(exc, MonitoringFailed):
                    self.metrics.monitoring_failures.labels(printer=self.name).inc()
                    why = str(exc)
                else:
                    why = f"no usable answer about it for {self.settings.in_hand_timeout_s:g} s"
                now = self._clock()
                failing_since = look_from if failing_since is None else failing_since
                if now - failing_since >= self.settings.in_hand_timeout_s:
                    return Outcome(Ended.LOST, copy, why=why)
            else:
                failing_since = None
                held = obs.evidence is Evidence.LISTED_LIVE
                if obs.settled is CopyState.PRINTED and obs.pj is not None:
                    crash_point("after_printer_completed")
                    self._learn(self._clock() - acked_at)
                    await self.observer.learn_from(copy, obs.pj, job)
                    return Outcome(Ended.PRINTED, copy, obs)
                stored = await self.observer.record(copy, obs, job)
                if obs.settled is not None:
                    return Outcome(Ended.SETTLED, stored or copy, obs)
                copy = stored or copy
                if _figures(copy) != figures:
                    figures, progressed_at = _figures(copy), self._clock()
            await wait_any((self.stop, self.cancel), self._next_poll(polls.failed(), acked_at))
        return Outcome(Ended.STOPPED, copy)

    def _cannot_go_on(self, held: bool, progressed_at: float) -> str | None:
        """Why the copy the printer holds cannot go on, once that has lasted
        ``blocked_grace_s`` (None: it may). Only a printer that answered its last probe
        is judged: one that does not answer is not shown stalled, it is not answering.
        ``progressed_at``: when its figures last moved, or the printer last came back."""
        m = self.monitor
        if not held or not m.reachable or m.status is None:
            return None
        grace = self.settings.blocked_grace_s
        now = self._clock()
        shown = stall_reasons(m.status.reasons, trays_of(m.status.attributes))
        since = stalled_since(shown, m.reasons_seen_at, progressed_at)  # both on the timer
        if since is not None and now - since >= grace:
            return f"printer-state-reasons: {', '.join(shown)}; the job in hand is stalled"
        health = m.health
        if not health.healthy and now - progressed_at >= grace:
            return health.reason or "unhealthy"
        return None

    def _next_poll(self, delay: float, acked_at: float) -> float:
        """The wait before the next Get-Job-Attributes: the back-off ``delay``, except that
        polls come finely (a quarter of the window, at least ``poll_interval_min_s``) from a
        little before to a little after the time this printer's jobs usually take (a
        window of at most ``follow_interval_max_s`` either side): a finished job is seen
        within a few ms for at most ~8 extra polls a job."""
        if self._typical_s is None:
            return delay
        window = min(0.25 * self._typical_s, self.settings.follow_interval_max_s)
        fine = max(self.settings.poll_interval_min_s, window / 4)
        elapsed = self._clock() - acked_at
        if elapsed < self._typical_s - window:  # not yet: back off, but not past the window
            return max(fine, min(delay, self._typical_s - window - elapsed))
        if elapsed < self._typical_s + window:
            return fine
        return delay

    def _learn(self, took_s: float) -> None:
        """Fold one job's acknowledged → seen-settled time into the printer's typical time."""
        if self._typical_s is None:
            self._typical_s = took_s
        else:
            self._typical_s += 0.25 * (took_s - self._typical_s)


def _figures(copy: Copy) -> tuple[int | None, ...]:
    """What the printer last said of how far the copy got (its progress)."""
    return (copy.impressions_completed, copy.sheets_completed, copy.k_octets)


async def wait_any(events: tuple[asyncio.Event, ...], seconds: float) -> None:
    """Return after ``seconds`` or as soon as any of ``events`` is set."""
    waits = [asyncio.ensure_future(e.wait()) for e in events]
    try:
        await asyncio.wait(waits, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for w in waits:
            w.cancel()
