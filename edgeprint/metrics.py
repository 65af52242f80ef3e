"""Prometheus metrics on an own registry (no globals), DESIGN §7.

One :class:`Metrics` is made by the composition root and passed to whoever
observes something. Labels are bounded (state, outcome, printer); never a job id.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from edgeprint.states import JobState

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

_LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)


class _Declare:
    """Metrics declared on one registry."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry

    def counter(self, name: str, doc: str, *labels: str) -> Counter:
        return Counter(name, doc, labels, registry=self.registry)

    def gauge(self, name: str, doc: str, *labels: str) -> Gauge:
        return Gauge(name, doc, labels, registry=self.registry)

    def histogram(self, name: str, doc: str, *labels: str, buckets: tuple[float, ...]) -> Histogram:
        return Histogram(name, doc, labels, buckets=buckets, registry=self.registry)


class Metrics:
    """Every edgeprint_* metric, registered on :attr:`registry`."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry(auto_describe=True)
        new = _Declare(self.registry)
        self.store_writable = new.gauge(
            "edgeprint_store_writable",
            "1 while the data disk takes writes, 0 while it refuses them (always 1 on PostgreSQL, "
            "whose outages answer store-unavailable and show on /readyz)",
        )
        self.store_write_errors = new.counter(
            "edgeprint_store_write_errors_total",
            "Writes the data disk refused, by kind (read-only, io, full); while it refuses them "
            "the once-a-second write probe counts too",
            "kind",
        )
        self.jobs_accepted = new.counter(
            "edgeprint_jobs_accepted_total", "Jobs accepted (201), by initial state", "state"
        )
        self.duplicates_suppressed = new.counter(
            "edgeprint_duplicates_suppressed_total",
            "Submissions answered from an earlier job with the same Idempotency-Key",
        )
        self.transitions = new.counter(
            "edgeprint_job_transitions_total",
            "Job state changes, by action and outcome",
            "action",
            "outcome",
        )
        self.printer_takeovers = new.counter(
            "edgeprint_printer_takeovers_total",
            "Printer leases this appliance took over (from another appliance or an earlier "
            "run of its own), by printer",
            "printer",
        )
        self.printer_epoch = new.gauge(
            "edgeprint_printer_epoch",
            "The printer's epoch: one more each time it restarted or was replaced (DESIGN §3)",
            "printer",
        )
        self.printer_epochs = new.counter(
            "edgeprint_printer_epochs_total",
            "New epochs seen (restarts, replacements), by printer",
            "printer",
        )
        self.ipp_requests_held = new.counter(
            "edgeprint_ipp_requests_held_total",
            "IPP requests that waited for the printer's request budget (a storm held back)",
            "printer",
        )
        self.release_conflicts = new.counter(
            "edgeprint_release_conflicts_total",
            "Releases refused because the job was no longer HELD (409)",
        )
        self.pin_attempts = new.counter(
            "edgeprint_release_pin_attempts_total",
            "Releases of PIN-protected jobs, by outcome (ok, mismatch, locked)",
            "outcome",
        )
        self.release_locks = new.counter(
            "edgeprint_release_locks_total",
            "Jobs whose release was locked after too many wrong PINs",
        )
        self.rate_limited = new.counter(
            "edgeprint_rate_limited_total",
            "Requests refused with 429 because their token exceeded server.rate_limit",
        )
        self.documents_rejected = new.counter(
            "edgeprint_documents_rejected_total",
            "Submissions refused for their PDF, by reason (problem type slug)",
            "reason",
        )
        self.jobs = new.gauge(
            "edgeprint_jobs", "Stored jobs by state (refreshed on scrape)", "state"
        )
        # issue 23 (preflight): the event's mode and the rehearsal's jobs, apart from the live
        self.event_rehearsal = new.gauge(
            "edgeprint_event_rehearsal",
            "1 while the event is in rehearsal (POST /v1/event/rehearsal), 0 when live",
        )
        self.rehearsal_jobs = new.gauge(
            "edgeprint_rehearsal_jobs",
            "Stored rehearsal jobs by state (refreshed on scrape; edgeprint_jobs counts only "
            "live ones)",
            "state",
        )
        self.http_request_duration = new.histogram(
            "edgeprint_http_request_duration_seconds",
            "API request handling time, by route and status class",
            "route",
            "status",
            buckets=_LATENCY_BUCKETS,
        )
        self.store_batch_size = new.histogram(
            "edgeprint_store_commit_statements",
            "Statements per group commit",
            buckets=(1, 2, 4, 8, 16, 32, 64, 128, 256, 512),
        )
        self.jobs_printed = new.counter(
            "edgeprint_jobs_printed_total", "Jobs the printer reported completed", "printer"
        )
        self.retries = new.counter(
            "edgeprint_job_retries_total",
            "Print attempts that failed and were retried",
            "printer",
        )
        self.jobs_dead = new.counter(
            "edgeprint_jobs_dead_total",
            "Jobs parked in the dead-letter queue, by reason",
            "reason",
        )
        self.reconciliations = new.counter(
            "edgeprint_reconciliations_total",
            "PRINTING jobs reconciled with the printer's job list, by verdict",
            "printer",
            "verdict",
        )
        self.copies_settled = new.counter(
            "edgeprint_copies_settled_total",
            "Printer jobs (copies) settled, by printer and how (printed, incomplete, "
            "document_error, aborted, cancelled, cancelled_elsewhere, vanished, lost, refused)",
            "printer",
            "state",
        )
        self.certificate_changes = new.counter(
            "edgeprint_tls_certificate_changes_total",
            "ipps printers found presenting another certificate than the pinned one",
            "printer",
        )
        self.monitoring_failures = new.counter(
            "edgeprint_job_monitoring_failures_total",
            "Get-Job-Attributes/Get-Jobs requests about a copy that got no usable answer",
            "printer",
        )
        self.ipp_request_duration = new.histogram(
            "edgeprint_ipp_request_duration_seconds",
            "IPP request time, by printer, operation and outcome",
            "printer",
            "operation",
            "outcome",
            buckets=_LATENCY_BUCKETS,
        )
        self.release_to_completed = new.histogram(
            "edgeprint_release_to_completed_seconds",
            "From release (or submit with hold=false) to the printer reporting completed",
            buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300),
        )
        self.failovers = new.counter(
            "edgeprint_failovers_total",
            "Jobs moved off a printer (unhealthy, full, drained) to its peers",
            "printer",
        )
        self.backpressure = new.counter(
            "edgeprint_backpressure_total", "Jobs refused with 503 because a queue was full"
        )
        self.printer_healthy = new.gauge(
            "edgeprint_printer_healthy", "1 when the printer takes new work", "printer"
        )
        self.health_changes = new.counter(
            "edgeprint_printer_health_changes_total",
            "Printer health transitions",
            "printer",
            "healthy",
        )
        self.waiting_jobs = new.gauge(
            "edgeprint_waiting_jobs", "RELEASED jobs waiting for this printer by name", "printer"
        )
        self.pool_waiting_jobs = new.gauge(
            "edgeprint_pool_waiting_jobs",
            "RELEASED jobs waiting for any printer of the pool",
            "pool",
        )
        self.jobs_waiting_for_stock = new.gauge(
            "edgeprint_jobs_waiting_for_stock",
            "RELEASED jobs no printer of their target has fitting stock ready for, by target "
            "(a printer or pool name; kind: printer or pool)",
            "target",
            "kind",
        )
        self.oldest_waiting = new.gauge(
            "edgeprint_oldest_waiting_seconds",
            "Age of the oldest job this printer could take (its own or its pool's); 0 if none",
            "printer",
        )
        self.dead_letter = new.gauge(
            "edgeprint_dead_letter_jobs", "Jobs in the dead-letter queue (DEAD)"
        )
        self.printer_state_reason = new.gauge(
            "edgeprint_printer_state_reason",
            "1 for each printer-state-reasons keyword the printer reports (RFC 8011 §5.4.12)",
            "printer",
            "reason",
        )
        self.printer_problem = new.gauge(
            "edgeprint_printer_problem",
            "1 for each problem a printer has now, by its kind (edgeprint.printers.problems: "
            "the words of the page, the CLI and GET /v1/printers)",
            "printer",
            "kind",
        )
        self.queued_job_count = new.gauge(
            "edgeprint_printer_queued_jobs", "The printer's own queued-job-count", "printer"
        )
        self.printer_up = new.gauge(
            "edgeprint_printer_up", "1 when the printer answered its last request", "printer"
        )
        # issue 23 (supplies): levels from the probes, and each label roll's runway
        self.supply_level = new.gauge(
            "edgeprint_printer_supply_level",
            "A supply's level in percent (printer-supply, marker-levels), as last probed",
            "printer",
            "supply",
        )
        self.media_level = new.gauge(
            "edgeprint_printer_media_level",
            "An input tray's media level in percent (printer-input-tray), as last probed",
            "printer",
            "tray",
        )
        self.labels_left = new.gauge(
            "edgeprint_printer_labels_left",
            "Labels left on the roll: labels_per_roll less those printed since it was changed",
            "printer",
        )
        self.runway_seconds = new.gauge(
            "edgeprint_printer_runway_seconds",
            "When the roll runs out at the last 15 minutes' rate (+Inf: nothing printed lately)",
            "printer",
        )
        self.roll_changes = new.counter(
            "edgeprint_printer_roll_changes_total",
            "Label roll changes seen (media-empty → ready, new media-ready) or told "
            "(POST /v1/printers/{name}/media-loaded)",
            "printer",
        )
        self.webhook_deliveries = new.counter(
            "edgeprint_webhook_deliveries_total",
            "Webhook delivery attempts by outcome: delivered (2xx), retried (failed, tried "
            "again later), failed (parked after max_delivery_s)",
            "outcome",
        )
        for outcome in ("delivered", "retried", "failed"):
            self.webhook_deliveries.labels(outcome=outcome)
        self.tls_certificate_expiry = new.gauge(
            "edgeprint_tls_certificate_expiry_timestamp_seconds",
            "When the certificate the API serves ends (notAfter, unix time; 0: no TLS served)",
        )
        self.event_loop_tasks = new.gauge(
            "edgeprint_event_loop_tasks",
            "asyncio tasks alive in the appliance's event loop (a count that only grows is a leak)",
        )
        self.event_loop_tasks.set_function(_tasks_alive)
        self.clock_step = new.gauge(
            "edgeprint_clock_step_seconds",
            "The last wall-clock step seen (signed: forward positive; 0: none since start); "
            "durations (hold TTL, retention, back-offs) run on the run clock, which no step moves",
        )
        self.clock_steps = new.counter(
            "edgeprint_clock_steps_total", "Wall-clock steps seen since start"
        )
        self._reason_labels: dict[str, set[str]] = {}
        self._problem_kinds: dict[str, set[str]] = {}
        self._level_labels: dict[tuple[str, str], set[str]] = {}
        self._http_children: dict[tuple[str, int], Any] = {}
        for s in JobState:
            self.jobs.labels(state=s.value)

    def observe_http(self, route: str, status: int, seconds: float) -> None:
        """One API request: its route template, HTTP status and handling time (seconds)."""
        key = (route, status // 100)
        child = self._http_children.get(key)
        if child is None:
            child = self.http_request_duration.labels(route=route, status=f"{status // 100}xx")
            self._http_children[key] = child
        child.observe(seconds)

    def set_job_counts(self, counts: dict[JobState, int]) -> None:
        """Refresh the jobs-by-state and dead-letter gauges."""
        for state, n in counts.items():
            self.jobs.labels(state=state.value).set(n)
        self.dead_letter.set(counts.get(JobState.DEAD, 0))

    def set_rehearsal_counts(self, counts: dict[JobState, int]) -> None:
        """Refresh the rehearsal jobs gauge (after :meth:`set_job_counts`: the dead-letter
        queue holds rehearsal jobs too)."""
        for state, n in counts.items():
            self.rehearsal_jobs.labels(state=state.value).set(n)
        self.dead_letter.inc(counts.get(JobState.DEAD, 0))

    def set_queues(
        self,
        printers: dict[str, str | None],
        depths: dict[tuple[str | None, str | None], int],
        oldest: dict[tuple[str | None, str | None], float],
        now: float,
    ) -> None:
        """Refresh waiting depths and head ages; ``printers`` maps name → pool (unix seconds)."""
        pools = {p for p in printers.values() if p is not None}
        for name, pool in printers.items():
            self.waiting_jobs.labels(printer=name).set(depths.get((name, None), 0))
            heads = [oldest[k] for k in ((name, None), (None, pool)) if k in oldest]
            self.oldest_waiting.labels(printer=name).set(max(0.0, now - min(heads)) if heads else 0)
        for pool in pools:
            self.pool_waiting_jobs.labels(pool=pool).set(depths.get((None, pool), 0))

    def set_problems(self, name: str, kinds: set[str]) -> None:
        """Refresh a printer's current problems by kind (ended ones are not series)."""
        for kind in self._problem_kinds.get(name, set()) - kinds:
            self.printer_problem.remove(name, kind)
        for kind in kinds:
            self.printer_problem.labels(printer=name, kind=kind).set(1)
        self._problem_kinds[name] = set(kinds)

    def set_printer(self, name: str, reasons: tuple[str, ...], queued: int | None) -> None:
        """Refresh a printer's state-reason and queued-job-count gauges."""
        current = set(reasons)
        for labels in list(self._reason_labels.get(name, set()) - current):
            self.printer_state_reason.remove(name, labels)
        for reason in current:
            self.printer_state_reason.labels(printer=name, reason=reason).set(1)
        self._reason_labels[name] = current
        if queued is not None:
            self.queued_job_count.labels(printer=name).set(queued)

    def _levels(self, gauge: Gauge, kind: str, name: str, levels: dict[str, int | None]) -> None:
        """Set ``name``'s gauges to ``levels`` (unknown ones are left out, gone ones removed)."""
        known = {k: v for k, v in levels.items() if v is not None}
        for label in self._level_labels.get((kind, name), set()) - set(known):
            gauge.remove(name, label)
        for label, value in known.items():
            gauge.labels(name, label).set(value)
        self._level_labels[(kind, name)] = set(known)

    def set_supplies(
        self,
        name: str,
        supplies: dict[str, int | None],
        trays: dict[str, int | None],
        runway: tuple[int, float | None] | None,
    ) -> None:
        """Refresh a printer's supply and tray levels (percent) and its runway
        (labels left, minutes left; None: not counted)."""
        self._levels(self.supply_level, "supply", name, supplies)
        self._levels(self.media_level, "tray", name, trays)
        if runway is None:
            for gauge in (self.labels_left, self.runway_seconds):
                with contextlib.suppress(KeyError):  # not counted before either
                    gauge.remove(name)
            return
        left, minutes = runway
        self.labels_left.labels(printer=name).set(left)
        self.runway_seconds.labels(printer=name).set(
            float("inf") if minutes is None else minutes * 60.0
        )

    def render(self) -> bytes:
        """The Prometheus text exposition of the registry."""
        return generate_latest(self.registry)


def _tasks_alive() -> float:
    """Tasks of the running event loop (the scrape runs in it); NaN outside one."""
    try:
        return float(len(asyncio.all_tasks()))
    except RuntimeError:
        return float("nan")
