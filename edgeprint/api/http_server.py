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
- **Connections.** :class:`~edgeprint.api.connections.ConnectionGate` runs the accept loop: at most
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
framing…) are answered by :class:`~edgeprint.api.connections.ProblemRequestHandler` as
problem+json instead of aiohttp's text/plain, and logged as one line without any request
bytes.

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
import logging
import resource
import socket
import ssl
from collections.abc import AsyncIterator, Callable
from pathlib import Path

from aiohttp import web

from edgeprint.api.connections import EVICT_GRACE_S, ConnectionGate
from edgeprint.config import ServerConfig
from edgeprint.logs import log_event

log = logging.getLogger(__name__)

#: File descriptors kept for everything but client connections (SQLite and its WAL,
#: spool files, printer connections, logs): when ``max_connections`` does not leave this
#: many under the open-file limit, the cap is lowered (and a warning says so).
FD_RESERVE = 64
#: Listen backlog, and so the most connections asyncio accepts in one go.
MAX_BACKLOG = 1024


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
            log_event(
                log,
                "fd_limit",
                message=f"cannot raise the open-file limit: {exc}",
                level=logging.WARNING,
                soft=soft,
                hard=hard,
            )
    log_event(
        log,
        "fd_limit",
        message=f"open-file limit: soft {soft} (was {before}), hard {hard}",
        soft=soft,
        soft_before=before,
        hard=hard,
        max_connections=max_connections,
    )
    if soft == resource.RLIM_INFINITY:
        return max_connections, MAX_BACKLOG
    backlog = max(16, min(MAX_BACKLOG, soft // 4))
    room = soft - FD_RESERVE - backlog
    if max_connections <= room:
        return max_connections, backlog
    cap = max(4, room)
    log_event(
        log,
        "fd_limit_low",
        message=f"server.max_connections {max_connections} does not fit the open-file limit "
        f"{soft} ({FD_RESERVE} are kept for the store, spool and printers, {backlog} for "
        f"connections being accepted): at most {cap} connections; raise LimitNOFILE",
        level=logging.WARNING,
        soft=soft,
        max_connections=max_connections,
        connection_cap=cap,
    )
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
