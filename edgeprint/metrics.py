"""Prometheus metrics on an own registry (no globals), DESIGN §7.

One :class:`Metrics` is made by the composition root and passed to whoever
observes something. Labels are bounded (state, outcome, printer); never a job id.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from edgeprint.states import JobState

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

_LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)


class Metrics:
    """Every edgeprint_* metric, registered on :attr:`registry`."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry(auto_describe=True)
        r = self.registry
        self.jobs_accepted = Counter(
            "edgeprint_jobs_accepted_total", "Jobs accepted (201), by initial state",
            ["state"], registry=r,
        )  # fmt: skip
        self.duplicates_suppressed = Counter(
            "edgeprint_duplicates_suppressed_total",
            "Submissions answered from an earlier job with the same Idempotency-Key",
            registry=r,
        )
        self.transitions = Counter(
            "edgeprint_job_transitions_total", "Job state changes, by action and outcome",
            ["action", "outcome"], registry=r,
        )  # fmt: skip
        self.release_conflicts = Counter(
            "edgeprint_release_conflicts_total",
            "Releases refused because the job was no longer HELD (409)",
            registry=r,
        )
        self.jobs = Gauge(
            "edgeprint_jobs", "Stored jobs by state (refreshed on scrape)", ["state"], registry=r
        )
        self.http_request_duration = Histogram(
            "edgeprint_http_request_duration_seconds",
            "API request handling time, by route and status class",
            ["route", "status"],
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.store_batch_size = Histogram(
            "edgeprint_store_commit_statements",
            "Statements per group commit",
            buckets=(1, 2, 4, 8, 16, 32, 64, 128, 256, 512),
            registry=r,
        )
        self.jobs_printed = Counter(
            "edgeprint_jobs_printed_total", "Jobs the printer reported completed", ["printer"],
            registry=r,
        )  # fmt: skip
        self.retries = Counter(
            "edgeprint_job_retries_total", "Print attempts that failed and were retried",
            ["printer"], registry=r,
        )  # fmt: skip
        self.jobs_dead = Counter(
            "edgeprint_jobs_dead_total", "Jobs parked in the dead-letter queue, by reason",
            ["reason"], registry=r,
        )  # fmt: skip
        self.reconciliations = Counter(
            "edgeprint_reconciliations_total",
            "PRINTING jobs reconciled with the printer's job list, by verdict",
            ["printer", "verdict"], registry=r,
        )  # fmt: skip
        self.truncated_copies = Counter(
            "edgeprint_truncated_copies_total",
            "Copies a printer completed from a truncated upload (the job was sent again)",
            ["printer"], registry=r,
        )  # fmt: skip
        self.ipp_request_duration = Histogram(
            "edgeprint_ipp_request_duration_seconds",
            "IPP request time, by printer, operation and outcome",
            ["printer", "operation", "outcome"], buckets=_LATENCY_BUCKETS, registry=r,
        )  # fmt: skip
        self.release_to_completed = Histogram(
            "edgeprint_release_to_completed_seconds",
            "From release (or submit with hold=false) to the printer reporting completed",
            buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300), registry=r,
        )  # fmt: skip
        self.failovers = Counter(
            "edgeprint_failovers_total",
            "Jobs moved off a printer (unhealthy, full, drained) to its peers", ["printer"],
            registry=r,
        )  # fmt: skip
        self.backpressure = Counter(
            "edgeprint_backpressure_total", "Jobs refused with 503 because a queue was full",
            registry=r,
        )  # fmt: skip
        self.printer_healthy = Gauge(
            "edgeprint_printer_healthy", "1 when the printer takes new work", ["printer"],
            registry=r,
        )  # fmt: skip
        self.health_changes = Counter(
            "edgeprint_printer_health_changes_total", "Printer health transitions",
            ["printer", "healthy"], registry=r,
        )  # fmt: skip
        self.printer_up = Gauge(
            "edgeprint_printer_up", "1 when the printer answered its last request", ["printer"],
            registry=r,
        )  # fmt: skip
        for s in JobState:
            self.jobs.labels(state=s.value)

    def set_job_counts(self, counts: dict[JobState, int]) -> None:
        """Refresh the jobs-by-state gauge."""
        for state, n in counts.items():
            self.jobs.labels(state=state.value).set(n)

    def render(self) -> bytes:
        """The Prometheus text exposition of the registry."""
        return generate_latest(self.registry)
