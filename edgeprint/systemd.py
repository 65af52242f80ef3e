"""systemd integration (``Type=notify``): readiness, status, stopping and watchdog pings.

Uses the sdnotify library (the sd_notify(3) datagram protocol on ``NOTIFY_SOCKET``).
Without ``NOTIFY_SOCKET`` (not under systemd) every call does nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import AsyncIterator

from sdnotify import SystemdNotifier

from edgeprint import background


class Systemd:
    """Talks to the service manager named by ``NOTIFY_SOCKET`` / ``WATCHDOG_USEC``."""

    def __init__(self, env: dict[str, str] | None = None) -> None:
        env = dict(os.environ) if env is None else env
        self.enabled = bool(env.get("NOTIFY_SOCKET"))
        self._notifier = SystemdNotifier() if self.enabled else None
        usec = env.get("WATCHDOG_USEC", "")
        pid = env.get("WATCHDOG_PID", "")
        mine = not pid or pid == str(os.getpid())
        #: Seconds between watchdog pings (half the watchdog timeout), or None.
        self.watchdog_interval_s = int(usec) / 2e6 if usec.isdigit() and mine else None

    def _send(self, message: str) -> None:
        if self._notifier is not None:
            self._notifier.notify(message)

    def ready(self, status: str) -> None:
        """READY=1: the store is open and the API listens."""
        self._send(f"READY=1\nSTATUS={status}")

    def status(self, status: str) -> None:
        """STATUS=…: a one-line state shown by ``systemctl status``."""
        self._send(f"STATUS={status}")

    def reloading(self) -> None:
        """RELOADING=1 (with MONOTONIC_USEC, as systemd 253+ wants): a reload has begun; READY=1
        (:meth:`ready`) says it is over, applied or refused."""
        usec = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
        self._send(f"RELOADING=1\nMONOTONIC_USEC={usec}\nSTATUS=reloading the config")

    def stopping(self) -> None:
        """STOPPING=1: shutdown has begun."""
        self._send("STOPPING=1\nSTATUS=stopping")

    async def watchdog(self) -> None:
        """Ping WATCHDOG=1 from the event loop until cancelled: a blocked loop stops the pings."""
        if self.watchdog_interval_s is None:
            return
        while True:
            self._send("WATCHDOG=1")
            await asyncio.sleep(self.watchdog_interval_s)

    @contextlib.asynccontextmanager
    async def watching(self) -> AsyncIterator[None]:
        """Run :meth:`watchdog` for the duration of the block."""
        async with background.running(self.watchdog(), "systemd:watchdog"):
            yield
