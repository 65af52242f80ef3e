"""Signed delivery of outbox events, at least once, in order, per receiver.

One task per ``[[webhooks]]`` entry reads the outbox after its cursor and POSTs
each event it subscribed to until the receiver answers 2xx, retrying with capped,
jittered exponential back-off; after ``max_delivery_s`` from the first attempt the
event is parked as failed (``GET /v1/webhooks/deliveries?state=failed``) and the
receiver moves on. The cursor is stored after each event, so a restart resumes
there (an event delivered just before a crash is delivered again, with the same
``webhook-id``: receivers de-duplicate on it). One receiver's events go out one at
a time, so their order — and so each job's order — is kept.

Nothing here writes to ``jobs``: a slow, failing or hanging receiver only holds
its own task, on its own HTTP session, with a time-out on every attempt.
Redirects are not followed (a 3xx is a failed attempt).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import random
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

import aiohttp

from edgeprint import __version__, errors
from edgeprint.backoff import Backoff
from edgeprint.clock import wall_cutoff
from edgeprint.config import WebhookConfig
from edgeprint.logs import log_event
from edgeprint.metrics import Metrics
from edgeprint.store.outbox import Outbox, OutboxEvent
from edgeprint.webhooks import signing

log = logging.getLogger(__name__)

Clock = Callable[[], float]
#: Events read from the outbox per query.
BATCH = 100
#: How often delivered outbox rows older than the retention are deleted (seconds).
PRUNE_INTERVAL_S = 300.0


def body(event: OutboxEvent) -> bytes:
    """The JSON body: ``{"type", "timestamp", "data"}`` (Standard Webhooks payload shape)."""
    stamp = datetime.fromtimestamp(event.at, UTC).isoformat(timespec="milliseconds")
    payload = {
        "type": event.type,
        "timestamp": stamp.replace("+00:00", "Z"),
        "data": json.loads(event.data),
    }
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode()


class Receiver:
    """Delivers one receiver's events in order."""

    def __init__(
        self,
        cfg: WebhookConfig,
        outbox: Outbox,
        session: aiohttp.ClientSession,
        metrics: Metrics,
        *,
        clock: Clock = time.time,
        rng: Callable[[], float] = random.random,
        timer: Clock = time.monotonic,
    ) -> None:
        self.cfg = cfg
        #: the wait after a failed attempt (by its number, with equal jitter)
        self.backoff = Backoff(cfg.retry_base_s, cfg.retry_max_s)
        self.outbox = outbox
        self.session = session
        self.metrics = metrics
        self.clock = clock
        #: ``max_delivery_s`` is a duration: no wall-clock step moves it (issue 27).
        self.timer = timer
        self.rng = rng
        self.types = tuple(cfg.events)

    async def run(self) -> None:
        """Deliver for ever (until cancelled); a store error pauses it, never ends it.

        (The dispatcher is the part that stops the appliance on a broken store.)
        """
        while True:
            try:
                await self._run()
            except errors.StoreError as exc:
                log_event(
                    log,
                    "webhook_store_error",
                    message="webhook outbox unavailable",
                    level=logging.ERROR,
                    error=str(exc),
                )
                await asyncio.sleep(max(1.0, self.cfg.poll_interval_s))

    async def _run(self) -> None:
        cursor = await self.outbox.start_cursor(self.cfg.url, now=self.clock())
        while True:
            events = await self.outbox.after(cursor, self.types, BATCH)
            if not events:
                await asyncio.sleep(self.cfg.poll_interval_s)
                continue
            for event in events:
                await self.deliver(event)
                await self.outbox.advance(self.cfg.url, event.seq, now=self.clock())
                cursor = event.seq

    async def deliver(self, event: OutboxEvent) -> bool:
        """Attempt ``event`` until delivered (True) or parked after ``max_delivery_s`` (False)."""
        first, started = self.clock(), self.timer()
        attempts = 0
        while True:
            attempts += 1
            error = await self.attempt(event)
            if error is None:
                self.metrics.webhook_deliveries.labels(outcome="delivered").inc()
                if attempts > 1:
                    log_event(
                        log,
                        "webhook_delivered",
                        webhook_id=event.id,
                        type=event.type,
                        job_id=event.job_id,
                        attempts=attempts,
                    )
                return True
            elapsed = self.timer() - started
            if elapsed >= self.cfg.max_delivery_s:
                await self.outbox.park(
                    self.cfg.url,
                    event,
                    attempts=attempts,
                    first_attempt_at=first,
                    now=self.clock(),
                    error=error,
                )
                self.metrics.webhook_deliveries.labels(outcome="failed").inc()
                log_event(
                    log,
                    "webhook_failed",
                    message="webhook delivery failed",
                    level=logging.WARNING,
                    webhook_id=event.id,
                    type=event.type,
                    job_id=event.job_id,
                    attempts=attempts,
                    error=error,
                )
                return False
            self.metrics.webhook_deliveries.labels(outcome="retried").inc()
            delay = min(
                self.backoff.for_attempt(attempts, self.rng), self.cfg.max_delivery_s - elapsed
            )
            log_event(
                log,
                "webhook_retry",
                message="webhook attempt failed",
                webhook_id=event.id,
                type=event.type,
                job_id=event.job_id,
                attempts=attempts,
                error=error,
                retry_in_s=round(delay, 3),
            )
            await asyncio.sleep(delay)

    async def attempt(self, event: OutboxEvent) -> str | None:
        """One signed POST; None when the receiver answered 2xx, else what went wrong."""
        data = body(event)
        headers = {
            "Content-Type": "application/json",
            "User-Agent": f"edgeprint/{__version__}",
            **signing.headers(self.cfg.key, event.id, int(self.clock()), data),
        }
        timeout = aiohttp.ClientTimeout(total=self.cfg.timeout_s)
        try:
            async with self.session.post(
                self.cfg.url, data=data, headers=headers, allow_redirects=False, timeout=timeout
            ) as resp:
                if 200 <= resp.status < 300:
                    return None
                if 300 <= resp.status < 400:
                    where = resp.headers.get("Location", "")[:200]
                    return f"HTTP {resp.status}: redirect to {where!r} not followed"
                return f"HTTP {resp.status}"
        except TimeoutError:
            return f"no answer within {self.cfg.timeout_s:g} s"
        except aiohttp.ClientError as exc:
            return f"{type(exc).__name__}: {exc}"[:300]


class Deliveries:
    """Every receiver's task, on one HTTP session of its own, and the outbox's pruning."""

    def __init__(
        self,
        configs: Sequence[WebhookConfig],
        outbox: Outbox,
        metrics: Metrics,
        *,
        retention_s: float,
        run: Clock | None = None,
    ) -> None:
        self.configs = list(configs)
        self.outbox = outbox
        self.metrics = metrics
        self.retention_s = retention_s
        #: The run clock (edgeprint.clock): with it no wall-clock step forward prunes early.
        self.run_clock = run

    @property
    def events(self) -> set[str]:
        """Every event type some receiver subscribed to."""
        return {e for cfg in self.configs for e in cfg.events}

    async def prepare(self, now: float) -> None:
        """Before any job can change state: the subscribed events, and each receiver's cursor.

        A new receiver's cursor is placed now (after the events already stored), so
        nothing that happens from here on can fall before it.
        """
        await self.outbox.subscribe(self.events)
        for cfg in self.configs:
            await self.outbox.start_cursor(cfg.url, now=now)

    async def run(self) -> None:
        """Deliver until cancelled. Raises errors.StoreError when the store fails."""
        connector = aiohttp.TCPConnector(limit_per_host=2)
        async with (
            aiohttp.ClientSession(
                connector=connector, cookie_jar=aiohttp.DummyCookieJar(), raise_for_status=False
            ) as session,
            asyncio.TaskGroup() as tg,
        ):
            for i, cfg in enumerate(self.configs):
                receiver = Receiver(cfg, self.outbox, session, self.metrics)
                tg.create_task(receiver.run(), name=f"webhook:{i}")
            tg.create_task(self._prune(), name="webhook:prune")

    async def _prune(self) -> None:
        urls = [cfg.url for cfg in self.configs]
        while True:
            with contextlib.suppress(errors.StoreError):  # the next round tries again
                wall = time.time()
                run = wall if self.run_clock is None else self.run_clock()
                removed = await self.outbox.prune(wall_cutoff(wall, run, self.retention_s), urls)
                if removed:
                    log_event(log, "webhook_pruned", message="webhook outbox pruned", count=removed)
            await asyncio.sleep(PRUNE_INTERVAL_S)
