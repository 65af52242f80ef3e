"""Whether the data disk takes writes now, and the probe that sees it come back (issue 27 §4).

A disk that refuses writes — the data folder read-only (``EROFS``, ``SQLITE_READONLY``),
I/O errors (``EIO``, ``SQLITE_IOERR_*``, also from fsync), no space (``ENOSPC``,
``SQLITE_FULL``) — is a state the appliance waits out, not one it dies of: the store and
the spool report every such failure here (:meth:`WriteHealth.failed`); new work is
refused (503 ``store-unavailable``, 507 ``storage-full``), workers hold off and retry the
write they could not record (``errors.StoreTransient``), and ``/readyz`` says why. While
writes fail, :func:`probe_until_writable` writes a small file in the spool (fsync'ed) and
one row of ``store_probe`` every few seconds; the first round where both are durable
ends the failure, with no restart. One log line when writes start failing, one when they
recover; ``edgeprint_store_writable`` (0/1) and ``edgeprint_store_write_errors_total{kind}``.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import sqlite3
import time
from collections.abc import Awaitable, Callable
from typing import Final

from edgeprint import errors, timefmt
from edgeprint.logs import log_event

log = logging.getLogger(__name__)

READ_ONLY: Final = "read-only"
IO: Final = "io"
FULL: Final = "full"

_SQLITE_KINDS: Final = {8: READ_ONLY, 10: IO, 13: FULL, 14: IO}  # READONLY, IOERR, FULL, CANTOPEN
_ERRNO_KINDS: Final = {
    errno.EROFS: READ_ONLY,
    errno.EIO: IO,
    errno.ENOTCONN: IO,  # a FUSE or network mount whose server went away
    errno.ESTALE: IO,  # a network filesystem's handle gone stale
    errno.ENOSPC: FULL,
    errno.EDQUOT: FULL,
}
_WORDS: Final = {
    READ_ONLY: "the data folder is read-only",
    IO: "the data disk gives I/O errors",
    FULL: "the data disk is full",
}


def classify(exc: BaseException) -> str | None:
    """The kind of disk failure ``exc`` is (``read-only``, ``io``, ``full``), or None when it
    is not one (a constraint, a closed connection, a bug)."""
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int):
        return _SQLITE_KINDS.get(code & 0xFF)
    if isinstance(exc, OSError):
        return _ERRNO_KINDS.get(exc.errno or 0)
    if isinstance(exc, sqlite3.Error):  # no code (an old Python): its message
        text = str(exc).lower()
        for words, kind in (("readonly", READ_ONLY), ("disk i/o", IO), ("disk is full", FULL)):
            if words in text:
                return kind
    return None


class WriteHealth:
    """Whether the store takes writes: writable until a disk failure, again after a probe.

    ``on_change(writable)`` and ``on_error(kind)`` feed the metrics.
    """

    def __init__(
        self,
        *,
        clock: Callable[[], float] = time.time,
        on_change: Callable[[bool], object] | None = None,
        on_error: Callable[[str], object] | None = None,
    ) -> None:
        self._clock = clock
        self.on_change = on_change
        self.on_error = on_error
        self.failing_since: float | None = None
        self._since_mono = 0.0
        self.kind = ""
        self.reason = ""
        self._failing = asyncio.Event()

    @property
    def writable(self) -> bool:
        return self.failing_since is None

    def failed(self, kind: str, reason: str) -> None:
        """A write failed for ``kind`` (the first failure is logged, the rest counted)."""
        if self.on_error is not None:
            self.on_error(kind)
        if self.failing_since is not None:
            if kind == READ_ONLY != self.kind:  # SQLite says "I/O error" on a read-only disk
                self.kind, self.reason = kind, reason
            return
        self.kind, self.reason = kind, reason
        self.failing_since, self._since_mono = self._clock(), time.monotonic()
        self._failing.set()
        log_event(
            log,
            "store_writes_failing",
            message=f"store writes failing since {timefmt.rfc3339_ms(self.failing_since)}: "
            f"{_WORDS.get(kind, kind)} ({reason}); new work is refused and printing waits "
            "until the disk takes writes again (checked every few seconds, no restart needed)",
            level=logging.ERROR,
            kind=kind,
            error=reason,
        )
        if self.on_change is not None:
            self.on_change(False)

    def recovered(self) -> None:
        """A probe's writes were durable: the store takes writes again (logged once)."""
        if self.failing_since is None:
            return
        lasted = time.monotonic() - self._since_mono
        self.failing_since = None
        self._failing.clear()
        log_event(
            log,
            "store_writes_recovered",
            message=f"store takes writes again at {timefmt.rfc3339_ms(self._clock())} after "
            f"{lasted:.1f} s of failing writes ({_WORDS.get(self.kind, self.kind)})",
            level=logging.WARNING,
            kind=self.kind,
            seconds=lasted,
        )
        if self.on_change is not None:
            self.on_change(True)

    def problem(self) -> errors.StoreError | None:
        """Why the store takes no writes now (for /readyz), or None."""
        if self.failing_since is None:
            return None
        words = _WORDS.get(self.kind, self.kind)
        what = f"{words} since {timefmt.rfc3339_ms(self.failing_since)} ({self.reason})"
        if self.kind == FULL:
            return errors.StorageFull(f"store writes failing: {what}")
        return errors.StoreWriteFailed(f"store writes failing: {what}")

    async def wait_failing(self) -> None:
        await self._failing.wait()


#: Seconds between probes while writes fail (the first comes at once after a failure).
PROBE_INTERVAL_S: Final = 1.0
#: Failed store probes (with the spool's probe passing) before the SQLite connections are
#: opened again.
REOPEN_AFTER: Final = 2


async def probe_until_writable(
    health: WriteHealth,
    spool_probe: Callable[[], None],
    store_probe: Callable[[], Awaitable[object]],
    reopen: Callable[[], Awaitable[None]] | None = None,
    interval_s: float = PROBE_INTERVAL_S,
) -> None:
    """For ever (until cancelled): while writes fail, probe every ``interval_s``.

    ``spool_probe`` writes and fsyncs a file on the data disk (raises errors.StoreError),
    ``store_probe`` one row in the store. When the disk takes the spool's file but the
    store fails :data:`REOPEN_AFTER` times, ``reopen`` opens its connections again (SQLite
    may keep an error state after an I/O error).
    """
    store_failures = 0
    while True:
        await health.wait_failing()
        await asyncio.sleep(interval_s)  # the probe's pace
        try:
            # a thread: a hung fsync on a failing disk must not stop the event loop
            await asyncio.to_thread(spool_probe)
        except (errors.StoreError, OSError):
            store_failures = 0
            continue  # the spool reported it
        try:
            await store_probe()
        except Exception as exc:  # the probe must outlive any one failure
            if not isinstance(exc, errors.StoreError):
                log_event(
                    log,
                    "store_probe_failed",
                    message="store: the write probe failed unexpectedly; trying again",
                    level=logging.ERROR,
                    exc_info=True,
                )
            store_failures += 1
            if reopen is not None and store_failures >= REOPEN_AFTER:
                store_failures = 0
                log_event(
                    log,
                    "store_reopen",
                    message="store: opening the database connections again after write errors",
                    level=logging.WARNING,
                    error=str(exc),
                )
                with contextlib.suppress(errors.StoreError):
                    await reopen()
            continue
        store_failures = 0
        health.recovered()
