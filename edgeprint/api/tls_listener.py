"""TLS and plain HTTP on the one port (issue 26): each accepted connection is looked at first.

With ``[server] tls`` serving, :class:`edgeprint.api.connections.ConnectionGate` hands every
accepted socket to :func:`open_connection`, in a task of its own (the accept loop never waits
on one client). It peeks at the first byte the client sends (``MSG_PEEK``: nothing is
consumed), waiting at most ``idle_timeout_s`` like the request-head timer does for plain
HTTP. 0x16 — a TLS record of type handshake, i.e. a ClientHello — gets the TLS handshake
(bounded by ``ssl_handshake_timeout``, the same ``idle_timeout_s``) with the context the
appliance serves *now* (a reload swaps it for new connections only). Anything else is plain
HTTP and goes to the same application, whose middleware answers it only with /healthz, a
redirect or a 426 (edgeprint.api.plain_http). A client that sends nothing, or closes, is
closed. A connection evicted at the connection cap while it is being looked at or is
shaking hands is closed at once (its task is cancelled). A handshake refused by TLS
itself (a TLS 1.0/1.1 client, no shared cipher) is one log line ``tls_handshake_failed``
with the peer and OpenSSL's reason, at most one every :data:`LOG_EVERY_S` seconds (saying
how many it held back), so an old kiosk is visible on the box and a flood is not.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import ssl
import time
from collections.abc import Callable

from edgeprint.logs import log_event

log = logging.getLogger(__name__)

#: The first byte of a TLS record carrying a handshake message (RFC 8446 §5.1).
TLS_HANDSHAKE = 0x16
#: At most one ``tls_handshake_failed`` line this often.
LOG_EVERY_S = 10.0
_logged = {"at": float("-inf"), "held": 0}


def _handshake_failed(peer: str | None, exc: ssl.SSLError) -> None:
    """One throttled log line for a handshake TLS refused: the peer and the reason."""
    now = time.monotonic()
    if now - _logged["at"] < LOG_EVERY_S:
        _logged["held"] += 1
        return
    held = int(_logged["held"])
    _logged.update(at=now, held=0)
    reason = exc.reason or type(exc).__name__
    more = f" (and {held} more held back)" if held else ""
    log_event(
        log,
        "tls_handshake_failed",
        message=f"TLS handshake failed from {peer}: {reason}{more}",
        level=logging.WARNING,
        peer=peer,
        reason=reason,
        suppressed=held,
    )


async def peek_first_byte(sock: socket.socket, timeout_s: float) -> int | None:
    """The first byte ``sock`` will deliver, left unread; None when the client closed or sent
    nothing within ``timeout_s``."""
    loop = asyncio.get_running_loop()
    fd = sock.fileno()

    def ready(future: asyncio.Future[None]) -> None:
        if not future.done():
            future.set_result(None)

    async with asyncio.timeout(timeout_s):
        while True:
            readable: asyncio.Future[None] = loop.create_future()
            loop.add_reader(fd, ready, readable)
            try:
                await readable
            finally:
                loop.remove_reader(fd)
            try:
                data = sock.recv(1, socket.MSG_PEEK)
            except (BlockingIOError, InterruptedError):
                continue
            return data[0] if data else None


async def open_connection(
    conn: socket.socket,
    protocol: asyncio.Protocol,
    context: Callable[[], ssl.SSLContext],
    timeout_s: float,
    on_failed: Callable[[], None],
) -> None:
    """Connect ``protocol`` to the accepted ``conn``, over TLS when the client starts a TLS
    handshake; ``on_failed`` is called when it never gets connected (the socket is closed)."""
    loop = asyncio.get_running_loop()
    connected = False
    peer: str | None = None
    try:
        try:
            first = await peek_first_byte(conn, timeout_s)
        except (TimeoutError, OSError):
            first = None
        if first is None:
            return
        tls = context() if first == TLS_HANDSHAKE else None
        with contextlib.suppress(OSError):
            peer = conn.getpeername()[0]
        await loop.connect_accepted_socket(
            lambda: protocol,
            conn,
            ssl=tls,
            ssl_handshake_timeout=timeout_s if tls is not None else None,
            ssl_shutdown_timeout=timeout_s if tls is not None else None,
        )
        connected = True
    except ssl.SSLError as exc:  # refused by TLS itself (old protocol version, no cipher)
        _handshake_failed(peer, exc)
    except (OSError, TimeoutError, ConnectionError):
        pass  # a failed handshake (old protocol versions, not TLS after all, timed out)
    finally:
        if not connected:
            with contextlib.suppress(OSError):
                conn.close()
            on_failed()
