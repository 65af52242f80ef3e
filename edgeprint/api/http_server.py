"""The HTTP/1.1 server under the API: bounded connections, head time-out, problem+json errors.

Slow or hostile clients (issue 6, "slowloris") are bounded like this:

- **Request head.** ``server.idle_timeout_s`` is aiohttp's ``keepalive_timeout``.
  aiohttp arms that timer in ``connection_made`` and again after every response; when
  it fires while the connection is still waiting for a *complete* request head, the
  connection is closed. So one timer bounds a connection that sends nothing, an idle
  keep-alive connection and a client dripping its request line or headers byte by byte
  (all three measured in tests/test_slow_clients.py).
- **Head size.** ``max_header_bytes`` is the parser's ``max_line_size`` (request target)
  and ``max_field_size`` (one header, name and value); ``max_headers`` its
  ``max_headers``. Beyond them: 400 problem+json ``header-too-large``.
- **Body.** Handlers that read a body do so under ``asyncio.timeout(body_timeout_s)``
  (408 ``request-timeout``, edgeprint.api.app). A handler that answers without reading
  the body (401, 413…) leaves aiohttp "lingering": it reads and drops the rest for at
  most its ``lingering_time`` (10 s), then closes.
- **Connections.** :class:`ConnectionGate` runs the accept loop: at most
  ``max_connections`` open HTTP connections. At the cap it closes the *oldest idle* one
  (waiting for a request head, and past its first response or connected at least
  ``min(EVICT_GRACE_S, idle_timeout_s / 4)`` ago) to accept the next; when none is idle
  it accepts nothing until one is, and the kernel's listen backlog holds the newcomers.
  So a flood of idle sockets holds at most ``max_connections`` descriptors, a real
  request still gets in during it (after the flood ahead of it in the backlog, at
  ``max_connections`` per grace period), and a burst of real clients above the cap is
  served in turn instead of refused. A response the client leaves unread for
  ``idle_timeout_s`` ends its connection too (writing stalled).
- **File descriptors.** :func:`raise_open_file_limit` lifts RLIMIT_NOFILE's soft limit to
  the hard one at start-up, and lowers the cap (with a warning) when cap + listen backlog
  + FD_RESERVE would not fit. ``accept()`` failing with EMFILE is logged as one
  throttled line (asyncio's own accept loop, not used, logs it with a traceback many
  times a second: 227,000 lines in 25 s under a 19,000-socket flood).

aiohttp parser errors (bad request line or method, header too long, bad chunked
framing…) are answered by :class:`ProblemRequestHandler` as problem+json instead of
aiohttp's text/plain, and logged as one line without any request bytes.

aiohttp private API used here, to re-check on an aiohttp upgrade (tested with 3.14):
``RequestHandler._waiter`` (pending while waiting for a request head; aiohttp's own
keep-alive timer uses the same test), ``BaseProtocol._loop``, and overriding
``RequestHandler.handle_error`` and ``finish_response``. The handler is built with
RequestHandler's keyword arguments directly (not via ``web.Server.__call__``), its
manager being ``runner.server``.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import functools
import itertools
import logging
import resource
import secrets
import socket
import ssl
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from aiohttp import http_exceptions, web
from aiohttp.web_request import BaseRequest

from edgeprint.api import problems, tls_listener
from edgeprint.config import ServerConfig

log = logging.getLogger(__name__)

#: File descriptors kept for everything but client connections (SQLite and its WAL,
#: spool files, printer connections, logs): when ``max_connections`` does not leave this
#: many under the open-file limit, the cap is lowered (and a warning says so).
FD_RESERVE = 64
#: At the cap, this many of the oldest connections are looked at for an idle one to close.
EVICT_SCAN = 64
#: A new connection is not closed to make room before it had this long to send its
#: request (at most a quarter of idle_timeout_s).
EVICT_GRACE_S = 0.1
#: At the cap with no connection to close: look again this often (or when one closes).
ADMIT_POLL_S = 0.02
#: accept() failed for want of descriptors or memory: try again after this (seconds).
ACCEPT_RETRY_S = 0.1
#: Listen backlog, and so the most connections asyncio accepts in one go.
MAX_BACKLOG = 1024
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
        log.log(level, msg, extra={"event": kind, "suppressed": held, **extra})


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
            logging.INFO, "http_write_stalled",
            f"a client read nothing of its response for {self._write_stall_s:g} s: "
            "connection closed",
        )  # fmt: skip
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
            logging.INFO, "http_bad_request",
            f"bad HTTP request rejected ({type(exc).__name__}): {detail}",
            status=status, problem=slug, peer=request.remote, correlation_id=cid,
        )  # fmt: skip
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

    @property
    def open_connections(self) -> int:
        return len(self._open)

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
            logging.WARNING, "connection_evicted",
            f"connection limit {self.max_connections} reached: the oldest idle connection "
            "was closed to admit a new one",
            max_connections=self.max_connections, evicted_total=self.evicted,
        )  # fmt: skip
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
                        logging.WARNING, "accept_failed",
                        f"cannot accept connections: {errno.errorcode.get(exc.errno or 0, '?')} "
                        f"({exc.strerror}); retrying",
                        errno=exc.errno,
                    )  # fmt: skip
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


# --- file descriptors and accept() errors -------------------------------------------------


def _nr_open() -> int:
    try:
        return int(Path("/proc/sys/fs/nr_open").read_text())
    except (OSError, ValueError):
        return 1024 * 1024


def raise_open_file_limit(max_connections: int) -> tuple[int, int]:
    """Raise RLIMIT_NOFILE's soft limit to its hard limit and log both.

    Returns the connection cap and the listen backlog to use. asyncio accepts up to
    ``backlog`` connections in one go (a descriptor each) before the cap can close any,
    so cap + backlog + FD_RESERVE must fit under the limit, or accept() fails with EMFILE
    and nobody, not even a real client, gets in. The backlog is 1024, less under a small
    limit; the cap is ``max_connections``, lowered (with a warning) when it does not fit.
    """
    before, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = _nr_open() if hard == resource.RLIM_INFINITY else hard
    soft = before
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError) as exc:
            log.warning(
                "cannot raise the open-file limit: %s", exc,
                extra={"event": "fd_limit", "soft": soft, "hard": hard},
            )  # fmt: skip
    log.info(
        "open-file limit: soft %d (was %d), hard %d", soft, before, hard,
        extra={"event": "fd_limit", "soft": soft, "soft_before": before, "hard": hard,
               "max_connections": max_connections},
    )  # fmt: skip
    if soft == resource.RLIM_INFINITY:
        return max_connections, MAX_BACKLOG
    backlog = max(16, min(MAX_BACKLOG, soft // 4))
    room = soft - FD_RESERVE - backlog
    if max_connections <= room:
        return max_connections, backlog
    cap = max(4, room)
    log.warning(
        "server.max_connections %d does not fit the open-file limit %d (%d are kept for "
        "the store, spool and printers, %d for connections being accepted): at most %d "
        "connections; raise LimitNOFILE",
        max_connections, soft, FD_RESERVE, backlog, cap,
        extra={"event": "fd_limit_low", "soft": soft, "max_connections": max_connections,
               "connection_cap": cap},
    )  # fmt: skip
    return cap, backlog


# --- serving -------------------------------------------------------------------------


def _listen(host: str, port: int, backlog: int) -> socket.socket:
    """A listening socket on the first address ``host`` resolves to (what asyncio's
    create_server would make, but accepted from by :class:`ConnectionGate`)."""
    family, type_, proto, _, address = socket.getaddrinfo(
        host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )[0]
    sock = socket.socket(family, type_, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        sock.bind(address)
        sock.listen(backlog)
        sock.setblocking(False)
    except BaseException:
        sock.close()
        raise
    return sock


@contextlib.asynccontextmanager
async def serve(
    app: web.Application,
    server: ServerConfig,
    tls: Callable[[], ssl.SSLContext] | None = None,
) -> AsyncIterator[tuple[str, int]]:
    """Serve ``app`` on ``server.host:server.port`` with the limits above; yields the address.

    With ``tls``, every connection that starts a TLS handshake is served over TLS with the
    context ``tls()`` returns then, and the others as plain HTTP (edgeprint.api.tls_listener).

    On exit: stop accepting, then aiohttp's graceful shutdown (``shutdown_grace_s``).
    Raises OSError when the port cannot be bound.
    """
    loop = asyncio.get_running_loop()
    max_connections, backlog = raise_open_file_limit(server.max_connections)
    runner = web.AppRunner(app, handle_signals=False, shutdown_timeout=server.shutdown_grace_s)
    await runner.setup()
    try:
        assert runner.server is not None
        gate = ConnectionGate(
            runner.server,
            server,
            max_connections=max_connections,
            grace_s=min(EVICT_GRACE_S, server.idle_timeout_s / 4),
            tls=tls,
            loop=loop,
            keepalive_timeout=server.idle_timeout_s,
            max_line_size=server.max_header_bytes,
            max_field_size=server.max_header_bytes,
            max_headers=server.max_headers,
            access_log=None,
            # Compressed request bodies are refused (app middleware, 415), never inflated: a
            # 2 MB gzip body that unpacks to 2 GiB stalled the loop for seconds, no token needed.
            auto_decompress=False,
        )
        listener = _listen(server.host, server.port, backlog)
        accepting = asyncio.create_task(gate.accept_forever(listener), name="http-accept")
        try:
            host, port = listener.getsockname()[:2]
            yield str(host), int(port)
        finally:
            # Stop accepting; runner.cleanup() then closes or drains the connections.
            accepting.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await accepting
            listener.close()
    finally:
        await runner.cleanup()
