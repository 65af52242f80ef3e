"""The HTTP side of one IPP request to a printer: the request budget every request waits
for (a token bucket, issue 22) and a request body that knows whether all of it was handed
to the connection (DESIGN §3.7)."""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Callable

import aiohttp.abc
from aiohttp.payload import BytesPayload

from edgeprint.faults import crash_point

#: The most requests edgeprint sends one printer, whatever it answers or fails to answer
#: (issue 22, I6): a sustained rate (per second) and the burst above it. Each request
#: opens at most one connection, so the same bound holds for connections.
MAX_REQUESTS_PER_S = 40.0
MAX_REQUEST_BURST = 20.0


class TrackedBody(BytesPayload):
    """A request body that knows whether all of it was handed to the connection.

    With the ``during_send_document`` crash point armed (tests only), half a
    document is handed over, then the process is killed.
    """

    written = False
    split_at: int | None = None

    def __init__(self, value: bytes) -> None:
        # aiohttp warns (ResourceWarning) about any body over 1 MiB given as bytes; the
        # document is already in memory, and one write of it is what this class does.
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", "Sending a large body", ResourceWarning)
            super().__init__(value)

    async def write(self, writer: aiohttp.abc.AbstractStreamWriter) -> None:
        await self.write_with_length(writer, None)

    async def write_with_length(
        self, writer: aiohttp.abc.AbstractStreamWriter, content_length: int | None
    ) -> None:
        if self.split_at is not None:
            await writer.write(self._value[: self.split_at])
            await writer.drain()
            crash_point("during_send_document")
            await writer.write(self._value[self.split_at :])
        else:
            await super().write_with_length(writer, content_length)
        self.written = True


class RequestBudget:
    """A token bucket: at most ``burst`` requests at once, then ``rate`` a second.

    The bound holds by construction, whatever loop above asks: a request that would
    exceed it waits for its turn (the clock is the event loop's).
    """

    def __init__(
        self,
        rate: float = MAX_REQUESTS_PER_S,
        burst: float = MAX_REQUEST_BURST,
        *,
        on_held: Callable[[], None] | None = None,
    ) -> None:
        self.rate = rate
        self.burst = burst
        self._tokens = burst
        self._at: float | None = None
        #: Called once for each request that had to wait for its turn (a storm held back).
        self._on_held = on_held

    async def take(self) -> None:
        loop = asyncio.get_running_loop()
        held = False
        while True:
            now = loop.time()
            if self._at is not None:
                self._tokens = min(self.burst, self._tokens + (now - self._at) * self.rate)
            self._at = now
            if self._tokens >= 1.0:
                self._tokens -= 1.0
                return
            if not held and self._on_held is not None:
                self._on_held()
            held = True
            await asyncio.sleep((1.0 - self._tokens) / self.rate)  # the bucket's own pace
