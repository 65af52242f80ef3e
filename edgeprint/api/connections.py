"""One HTTP connection's handler and the connection cap under the API server.

- **Connections.** :class:`ConnectionGate` runs the accept loop: at most
  ``max_connections`` open HTTP connections. At the cap it closes the *oldest idle* one
  (waiting for a request head, and past its first response or connected at least
  ``min(EVICT_GRACE_S, idle_timeout_s / 4)`` ago) to accept the next; when none is idle
  it accepts nothing until one is, and the kernel's listen backlog holds the newcomers.
  ``accept()`` failing with EMFILE is logged as one throttled line.
- **Parser errors.** aiohttp parser errors (bad request line or method, header too long,
  bad chunked framing…) are answered by :class:`ProblemRequestHandler` as problem+json
  instead of aiohttp's text/plain, and logged as one line without any request bytes.

:mod:`edgeprint.api.http_server` says why, and which aiohttp private API this relies on.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import functools
import itertools
import logging
import secrets
import socket
import ssl
import time
from collections.abc import Callable
from typing import Any

from aiohttp import http_exceptions, web
from aiohttp.web_request import BaseRequest

from edgeprint.api import problems, tls_listener
from edgeprint.config import ServerConfig
from edgeprint.logs import log_event

# The lines keep the logger name they had before this module was split from http_server.
log = logging.getLogger("edgeprint.api.http_server")

#: At the cap, this many of the oldest connections are looked at for an idle one to close.
EVICT_SCAN = 64
#: A new connection is not closed to make room before it had this long to send its
#: request (at most a quarter of idle_timeout_s).
EVICT_GRACE_S = 0.1
#: At the cap with no connection to close: look again this often (or when one closes).
ADMIT_POLL_S = 0.02
#: accept() failed for want of descriptors or memory: try again after this (seconds).
ACCEPT_RETRY_S = 0.1
#: Throttled log lines: at most one per kind this often (seconds); the rest are counted.
LOG_EVERY_S = 10.0

_ACCEPT_ERRNOS = {errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM}
# Correlation ids for answers made below the application (its middleware never runs).
_CID_PREFIX = "h" + secrets.token_hex(5)
_cid_counter = itertools.count(1)


def _correlation_id() -> str:
    return f"{_CID_PREFIX}{next(_cid_counter):08x}"


class _Throttle:
    """At most one log line per kind every ``every_s`` seconds; says how many it held back."""

    def __init__(self, every_s: float = LOG_EVERY_S) -> None:
        self.every_s = every_s
        self._last: dict[str, float] = {}
        self._held: dict[str, int] = {}

    def log(self, level: int, kind: str, msg: str, **extra: object) -> None:
        now = time.monotonic()
        last = self._last.get(kind)
        if last is not None and now - last < self.every_s:
            self._held[kind] = self._held.get(kind, 0) + 1
            return
        self._last[kind] = now
        held = self._held.pop(kind, 0)
        if held:
            msg = f"{msg} (and {held} more in the last {now - (last or now):.0f} s)"
        fields: dict[str, Any] = {"suppressed": held, **extra}  # log_event's keywords are typed
        log_event(log, kind, message=msg, level=level, **fields)


# --- parser errors as problem+json ---------------------------------------------------


def _first_line(exc: http_exceptions.HttpProcessingError) -> str:
    """llhttp's fixed reason ("Invalid character in chunk size"), without the quoted bytes."""
    line = str(exc.message).split("\n", 1)[0].strip().rstrip(":").strip()
    return "".join(c for c in line if c.isprintable())[:120] or "malformed request"


def classify(exc: BaseException | None, limits: ServerConfig) -> tuple[str, str]:
    """The problem slug and a detail for a parser error; never quotes the request's bytes."""
    if isinstance(exc, http_exceptions.LineTooLong):
        return "header-too-large", (
            f"the request target or a header field is longer than {limits.max_header_bytes} bytes"
        )
    if isinstance(exc, http_exceptions.BadHttpMethod):
        return "malformed-request", "the request method is not a valid HTTP method token"
    if isinstance(exc, http_exceptions.BadStatusLine):
        return "malformed-request", "the request line is not 'METHOD target HTTP/1.x'"
    if isinstance(exc, http_exceptions.InvalidURLError):
        return "malformed-request", "the request target is not a valid URL path"
    if isinstance(exc, http_exceptions.InvalidHeader):
        return "malformed-request", "a header field name or value holds invalid characters"
    if isinstance(exc, http_exceptions.HttpProcessingError):
        reason = _first_line(exc)
        if reason.lower().startswith("too many headers"):
            return "header-too-large", f"more than {limits.max_headers} header fields"
        return "malformed-request", f"malformed HTTP request: {reason}"
    return "malformed-request", "malformed HTTP request"


class ProblemRequestHandler(web.RequestHandler):
    """aiohttp's connection handler, answering its own parser errors as problem+json."""

    def __init__(
        self,
        manager: web.Server,
        *,
        gate: ConnectionGate,
        write_stall_s: float,
        loop: asyncio.AbstractEventLoop,
        **kwargs: Any,
    ) -> None:
        super().__init__(manager, loop=loop, **kwargs)
        self._gate = gate
        self._got_data = False
        self._evicted = False
        #: When it was accepted (time.monotonic()), and whether a response was sent on it.
        self.accepted_at = time.monotonic()
        self.served = False
        self._write_stall_s = write_stall_s
        self._stalled: asyncio.TimerHandle | None = None
        # aiohttp's force_close() forgets the transport after close(), which waits for the
        # write buffer to drain: a client that reads nothing would keep it open for ever.
        self._conn: asyncio.Transport | None = None
        #: With TLS served: the task looking at the connection and shaking hands (tls_listener).
        self.opening: asyncio.Task[None] | None = None

    def idle(self) -> bool:
        """No request in progress: nothing received yet, waiting for a request head, or
        answered and only draining a body nobody will read (aiohttp's lingering close,
        up to 10 s: a token-less POST announcing a large body got its 401 at once and
        then held the connection — 2,048 of them filled the cap)."""
        if not self._got_data:
            return True
        waiter = self._waiter  # aiohttp private: pending while waiting for a request head
        if waiter is not None and not waiter.done():
            return True
        return self.served and not self._request_in_progress  # aiohttp private

    def abort(self) -> None:
        """Close the connection now, discarding whatever the client has not read."""
        self.force_close()
        if self._conn is not None:
            self._conn.abort()

    def evict(self) -> None:
        """Close this (idle) connection now, or as soon as it is connected."""
        self._evicted = True
        self.abort()  # not connected yet: connection_made closes it
        if self.opening is not None:
            self.opening.cancel()  # still peeking or shaking hands: closed now

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._conn = transport
        super().connection_made(transport)
        if self._evicted:
            self.abort()

    def data_received(self, data: bytes) -> None:
        self._got_data = True
        super().data_received(data)

    async def finish_response(
        self, request: BaseRequest, resp: web.StreamResponse, start_time: float | None
    ) -> tuple[web.StreamResponse, bool]:
        result = await super().finish_response(request, resp, start_time)
        self.served = True
        return result

    # A client that stops reading its responses (pipelined requests, nothing read) would
    # block the handler in drain() for ever: writing may stay paused write_stall_s at most.
    def pause_writing(self) -> None:
        super().pause_writing()
        if self._stalled is None:
            self._stalled = self._loop.call_later(self._write_stall_s, self._write_stalled)

    def resume_writing(self) -> None:
        if self._stalled is not None:
            self._stalled.cancel()
            self._stalled = None
        super().resume_writing()

    def _write_stalled(self) -> None:
        self._stalled = None
        self._gate.throttle.log(
            logging.INFO,
            "http_write_stalled",
            f"a client read nothing of its response for {self._write_stall_s:g} s: "
            "connection closed",
        )
        self.abort()

    def connection_lost(self, exc: BaseException | None) -> None:
        self._gate.release(self)
        self._conn = None
        if self._stalled is not None:
            self._stalled.cancel()
            self._stalled = None
        super().connection_lost(exc)

    def handle_error(
        self,
        request: BaseRequest,
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> web.StreamResponse:
        """Parser errors (status < 500) → problem+json; 5xx stay aiohttp's (logged, closed)."""
        if status >= 500:
            return super().handle_error(request, status, exc, message)
        slug, detail = classify(exc, self._gate.limits)
        cid = _correlation_id()
        # One line, no request bytes (they may hold an Authorization header).
        self._gate.throttle.log(
            logging.INFO,
            "http_bad_request",
            f"bad HTTP request rejected ({type(exc).__name__}): {detail}",
            status=status,
            problem=slug,
            peer=request.remote,
            correlation_id=cid,
        )
        if request.writer.output_size > 0:
            # Part of a response went out already: nothing sensible can follow it.
            raise ConnectionError("response already started; closing the connection")
        resp = problems.problem(status, slug, detail, headers={"X-Correlation-ID": cid})
        resp.force_close()
        return resp


# --- the connection cap ----------------------------------------------------------------


class ConnectionGate:
    """Accepts connections itself, at most ``max_connections`` open at once.

    At the cap it closes the oldest *idle* connection (waiting for a request head, and
    either done with a request already or connected ``grace_s`` ago: a client that just
    connected gets that long to send its request) and accepts the next one; when none is
    idle it accepts nothing until one is: the kernel's listen backlog holds the rest, at
    no file-descriptor cost here. A burst of real clients above the cap is thus served
    in turn rather than refused, and a flood of idle sockets keeps at most
    ``max_connections`` descriptors, each for ``grace_s`` once the cap is reached.
    """

    def __init__(
        self,
        manager: web.Server,
        limits: ServerConfig,
        *,
        max_connections: int,
        grace_s: float,
        tls: Callable[[], ssl.SSLContext] | None = None,
        **handler_kwargs: Any,
    ) -> None:
        self.limits = limits
        #: The context new TLS connections get (None: plain HTTP only, edgeprint.api.tls_listener).
        self.tls = tls
        self.max_connections = max_connections
        self.grace_s = grace_s
        self.throttle = _Throttle()
        self.evicted = 0
        self._manager = manager
        self._kwargs = handler_kwargs
        # Insertion order is age order (busy ones seen at the cap are moved to the back).
        self._open: dict[ProblemRequestHandler, None] = {}
        self._changed = asyncio.Event()

    def release(self, handler: ProblemRequestHandler) -> None:
        if self._open.pop(handler, 0) is None:
            self._changed.set()

    def _make_room(self) -> float:
        """Close the oldest evictable connection (→ 0), or say how long to wait (seconds).

        Looks at EVICT_SCAN connections at most; the busy ones looked at go to the back,
        so the next look starts with others.
        """
        now = time.monotonic()
        wait = ADMIT_POLL_S  # a busy connection may become idle at any time
        busy: list[ProblemRequestHandler] = []
        victim = None
        for handler in self._open:
            if handler.idle():
                young = handler.accepted_at + self.grace_s - now
                if handler.served or young <= 0:
                    victim = handler
                    break
                wait = min(wait, young)
            else:
                busy.append(handler)
            if len(busy) >= EVICT_SCAN:
                break
        for handler in busy:
            del self._open[handler]
            self._open[handler] = None
        if victim is None:
            return wait
        self.release(victim)
        victim.evict()
        self.evicted += 1
        self.throttle.log(
            logging.WARNING,
            "connection_evicted",
            f"connection limit {self.max_connections} reached: the oldest idle connection "
            "was closed to admit a new one",
            max_connections=self.max_connections,
            evicted_total=self.evicted,
        )
        return 0.0

    async def _admit(self) -> None:
        while len(self._open) >= self.max_connections:
            wait = self._make_room()
            if wait <= 0:
                continue
            self._changed.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(wait):
                    await self._changed.wait()

    async def accept_forever(self, listener: socket.socket) -> None:
        """Accept and serve connections on ``listener`` until cancelled."""
        try:
            await self._accept_forever(listener)
        finally:
            for handler in list(self._open):
                if handler.opening is not None:
                    handler.opening.cancel()

    async def _accept_forever(self, listener: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await self._admit()
            try:
                conn, _ = await loop.sock_accept(listener)
            except OSError as exc:
                if exc.errno in _ACCEPT_ERRNOS:
                    # asyncio's own accept loop logs this with a traceback, many times a second.
                    self.throttle.log(
                        logging.WARNING,
                        "accept_failed",
                        f"cannot accept connections: {errno.errorcode.get(exc.errno or 0, '?')} "
                        f"({exc.strerror}); retrying",
                        errno=exc.errno,
                    )
                    await asyncio.sleep(ACCEPT_RETRY_S)
                    continue
                if exc.errno in (errno.ECONNABORTED, errno.EPROTO):
                    continue  # the client gave up while queued
                raise
            handler = ProblemRequestHandler(
                self._manager, gate=self, write_stall_s=self.limits.idle_timeout_s, **self._kwargs
            )
            self._open[handler] = None
            if self.tls is not None:
                handler.opening = asyncio.create_task(
                    tls_listener.open_connection(
                        conn,
                        handler,
                        self.tls,
                        self.limits.idle_timeout_s,
                        functools.partial(self.release, handler),
                    ),
                    name="http-open",
                )
                continue
            try:
                await loop.connect_accepted_socket(lambda h=handler: h, conn)  # type: ignore[misc]
            except OSError:
                conn.close()
                self.release(handler)
