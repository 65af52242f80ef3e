"""Slow and hostile HTTP clients (issue 6): real sockets on loopback against a real appliance.

Idle connections and clients dripping a request head are closed after
``server.idle_timeout_s``; a body that does not arrive within ``body_timeout_s`` gets
408; at most ``max_connections`` connections stay open (the oldest idle one makes room,
or the newcomer gets 503 when every connection is busy); over-long or malformed heads
get 400 problem+json. Closing is observed by reading EOF (with a deadline), never by
sleeping.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import resource
import socket
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from testbed.pdfs import make_pdf
from tests.conftest import KIOSK_TOKEN, Appliance
from tests.polling import eventually

PROBLEM = "urn:edgeprint:problem:"
BOUNDARY = "slowclientboundary"
AUTH = f"Authorization: Bearer {KIOSK_TOKEN}\r\n"
IDLE_S = 0.5

Conn = tuple[asyncio.StreamReader, asyncio.StreamWriter]


@contextlib.asynccontextmanager
async def connect(app: Appliance, count: int = 1) -> AsyncIterator[list[Conn]]:
    """``count`` raw TCP connections to the appliance, closed on exit."""
    conns: list[Conn] = []
    try:
        for _ in range(count):
            conns.append(await asyncio.open_connection(app.running.host, app.running.port))
        yield conns
    finally:
        for _, writer in conns:
            writer.close()
        for _, writer in conns:
            with contextlib.suppress(OSError):
                await writer.wait_closed()


async def until_eof(reader: asyncio.StreamReader, deadline_s: float = 5.0) -> bytes:
    """Everything the server sends until it closes the connection (fails after the deadline)."""
    data = bytearray()
    async with asyncio.timeout(deadline_s):
        try:
            while chunk := await reader.read(65536):
                data += chunk
        except ConnectionResetError:
            pass
    return bytes(data)


def parse_head(head: bytes) -> tuple[int, dict[str, str]]:
    """Status and headers (lower-case names) of a response head."""
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in filter(None, lines):
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return int(status_line.split()[1]), headers


def parse(raw: bytes) -> tuple[int, dict[str, str], bytes]:
    """Status, headers and body of one complete HTTP response."""
    head, sep, body = raw.partition(b"\r\n\r\n")
    assert sep, f"no complete response head in {raw[:200]!r}"
    status, headers = parse_head(head)
    length = int(headers.get("content-length", "0"))
    assert len(body) >= length, "truncated body"
    return status, headers, body[:length]


async def read_response(
    reader: asyncio.StreamReader, deadline_s: float = 5.0
) -> tuple[int, dict[str, str], bytes]:
    """One response, read by its Content-Length (the connection may stay open)."""
    async with asyncio.timeout(deadline_s):
        status, headers = parse_head(await reader.readuntil(b"\r\n\r\n"))
        body = await reader.readexactly(int(headers.get("content-length", "0")))
    return status, headers, body


def assert_problem(
    status: int, headers: dict[str, str], body: bytes, code: int, slug: str
) -> dict[str, Any]:
    assert status == code, body
    assert headers["content-type"] == "application/problem+json"
    problem = json.loads(body)
    assert problem["type"] == PROBLEM + slug
    assert problem["status"] == code
    return problem


def upload_head(content_length: int, key: str = "slow-key-0001") -> bytes:
    return (
        "POST /v1/jobs HTTP/1.1\r\nHost: edgeprint\r\n" + AUTH + f"Idempotency-Key: {key}\r\n"
        f"Content-Type: multipart/form-data; boundary={BOUNDARY}\r\n"
        f"Content-Length: {content_length}\r\n\r\n"
    ).encode()


def document_part_start() -> bytes:
    """The start of a multipart body: metadata, then the head of the document part."""
    meta = json.dumps({"owner": "ann", "pool": "lobby"})
    return (
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="metadata"\r\n'
        f"Content-Type: application/json\r\n\r\n{meta}\r\n"
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="document"; '
        f'filename="badge.pdf"\r\nContent-Type: application/pdf\r\n\r\n'
    ).encode() + make_pdf()[:64]


async def drip(writer: asyncio.StreamWriter, piece: bytes = b"0000", every_s: float = 0.1) -> None:
    """A slow client: ``piece`` every ``every_s`` seconds, until cancelled."""
    while True:
        writer.write(piece)
        await asyncio.sleep(every_s)


def staging(app: Appliance) -> list[Path]:
    return list((app.data_dir / "spool" / "tmp").iterdir())


# --- the request head: idle connections and drippers -------------------------------------


@pytest.mark.parametrize(
    "sent",
    [
        pytest.param(b"", id="sends-nothing"),
        pytest.param(b"GET /hea", id="partial-request-line"),
        pytest.param(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: 1", id="partial-headers"),
    ],
)
async def test_connection_without_a_complete_head_is_closed_after_idle_timeout(
    make_appliance: Callable[..., Any], sent: bytes
) -> None:
    async with make_appliance(idle_timeout_s=IDLE_S) as app:
        before = app.snapshot()
        async with connect(app) as [(reader, writer)]:
            started = time.monotonic()
            writer.write(sent)
            data = await until_eof(reader)
            elapsed = time.monotonic() - started
        assert data == b""
        assert 0.8 * IDLE_S <= elapsed < 3.0
        assert app.snapshot() == before


async def test_header_dripper_is_closed_after_idle_timeout(
    make_appliance: Callable[..., Any],
) -> None:
    """A byte of request head every 20 ms does not keep the connection: the time-out counts
    from the connection, not from the last byte."""
    async with make_appliance(idle_timeout_s=IDLE_S) as app:
        before = app.snapshot()
        head = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 500
        async with connect(app) as [(reader, writer)]:

            async def drip() -> None:
                for byte in head:
                    writer.write(bytes([byte]))
                    await asyncio.sleep(0.02)

            started = time.monotonic()
            dripper = asyncio.create_task(drip())
            try:
                data = await until_eof(reader)
            finally:
                dripper.cancel()
            elapsed = time.monotonic() - started
        assert data == b""
        assert 0.8 * IDLE_S <= elapsed < 3.0
        assert not dripper.done() or dripper.cancelled(), "the server closed mid-drip"
        assert app.snapshot() == before


async def test_idle_keep_alive_connection_is_closed_after_idle_timeout(
    make_appliance: Callable[..., Any],
) -> None:
    async with make_appliance(idle_timeout_s=IDLE_S) as app, connect(app) as [(reader, writer)]:
        writer.write(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        status, headers, _ = await read_response(reader)
        assert status == 200
        assert headers.get("connection", "keep-alive").lower() == "keep-alive"
        answered = time.monotonic()
        assert await until_eof(reader) == b""
        assert 0.8 * IDLE_S <= time.monotonic() - answered < 3.0


async def test_client_that_reads_nothing_is_cut_off(make_appliance: Callable[..., Any]) -> None:
    """Pipelined requests whose answers are never read: once writing has made no progress
    for idle_timeout_s the appliance aborts the connection instead of waiting in drain()."""
    requests = 1000  # ~13 MB of status page: more than the socket buffers hold
    async with make_appliance(idle_timeout_s=IDLE_S) as app:
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.setblocking(False)
        await asyncio.get_running_loop().sock_connect(sock, (app.running.host, app.running.port))
        reader, writer = await asyncio.open_connection(sock=sock)
        try:
            writer.transport.pause_reading()
            writer.write(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n" * requests)
            await asyncio.sleep(4 * IDLE_S)  # the behaviour under test: it reads nothing
            writer.transport.resume_reading()
            data = await until_eof(reader)
        finally:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()
    assert 0 < data.count(b"HTTP/1.1 200 OK") < requests


# --- the body --------------------------------------------------------------------------


async def test_body_dripper_gets_408_and_nothing_is_stored(
    make_appliance: Callable[..., Any],
) -> None:
    """Valid head, Content-Length 100000, a few bytes every 100 ms: 408 after body_timeout_s;
    the staged document is discarded."""
    async with make_appliance(idle_timeout_s=IDLE_S, body_timeout_s=1.0) as app:
        before = app.snapshot()
        async with connect(app) as [(reader, writer)]:
            started = time.monotonic()
            writer.write(upload_head(100_000) + document_part_start())
            dripper = asyncio.create_task(drip(writer))
            try:
                # The appliance is staging the document while the body trickles in.
                await eventually(lambda: bool(staging(app)), "the document to be staged")
                status, headers, body = await read_response(reader)
            finally:
                dripper.cancel()
            elapsed = time.monotonic() - started
        problem = assert_problem(status, headers, body, 408, "request-timeout")
        assert "1 s" in problem["detail"]
        assert 0.9 <= elapsed < 3.0
        assert staging(app) == []
        assert app.snapshot() == before


async def test_release_body_dripper_gets_408(make_appliance: Callable[..., Any]) -> None:
    async with make_appliance(body_timeout_s=1.0) as app:
        before = app.snapshot()
        async with connect(app) as [(reader, writer)]:
            started = time.monotonic()
            writer.write(
                b"POST /v1/jobs/0123456789abcdef0123456789abcdef/release HTTP/1.1\r\nHost: x\r\n"
                + AUTH.encode()
                + b"Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"
            )
            dripper = asyncio.create_task(drip(writer, b" "))
            try:
                status, headers, body = await read_response(reader)
            finally:
                dripper.cancel()
        assert_problem(status, headers, body, 408, "request-timeout")
        assert 0.9 <= time.monotonic() - started < 3.0
        assert app.snapshot() == before


async def test_release_body_in_pieces_is_read_whole(app: Appliance) -> None:
    """A JSON body split across TCP segments is read to its end, not just the first read()."""
    body = b'{"printer": "printer-01"}'
    async with connect(app) as [(reader, writer)]:
        writer.write(
            b"POST /v1/jobs/0123456789abcdef0123456789abcdef/release HTTP/1.1\r\nHost: x\r\n"
            + AUTH.encode()
            + b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body)
            + body[:5]
        )
        await writer.drain()
        await asyncio.sleep(0.1)  # a gap between the segments is the point of the test
        writer.write(body[5:])
        status, headers, raw = await read_response(reader)
    assert_problem(status, headers, raw, 404, "job-not-found")  # the body parsed; no such job


# --- the connection cap ---------------------------------------------------------------------


def accepted(port: int) -> int:
    """Connections the appliance (in this process) has accepted on ``port``.

    Its TCP sockets whose local end is ``port`` and that have a peer: the listen backlog's
    connections have no descriptor yet, the test's client sockets have another local port,
    and the appliance's other descriptors (store, spool, printers) are not counted.
    """
    count = 0
    for name in os.listdir("/proc/self/fd"):
        try:
            if not os.readlink(f"/proc/self/fd/{name}").startswith("socket:"):
                continue
            with socket.socket(fileno=os.dup(int(name))) as sock:
                if sock.family in (socket.AF_INET, socket.AF_INET6) and (
                    sock.getsockname()[1] == port
                ):
                    sock.getpeername()  # the listening socket has none: OSError
                    count += 1
        except OSError:  # closed meanwhile, or the listening socket
            continue
    return count


async def test_idle_flood_is_capped_and_a_real_request_gets_in(
    make_appliance: Callable[..., Any],
) -> None:
    """300 idle connections against max_connections=50: the appliance holds 50 at most
    (the rest wait in the listen backlog), each newcomer closes the oldest idle one, and a
    real request behind the flood is answered long before the idle time-out."""
    idle_s = 2.0
    async with make_appliance(max_connections=50, idle_timeout_s=idle_s) as app:
        before = app.snapshot()
        port = app.running.port
        started = time.monotonic()
        async with connect(app, 300) as conns:
            # 300 client sockets here, and the appliance's side of at most 50 of them. (An
            # evicted connection's socket is closed on the event loop's next turn, by when
            # its replacement may be accepted: one more than the cap, for that instant.)
            assert accepted(port) <= 50 + 1
            resp = await app.http.get(f"{app.url}/healthz")  # queued behind the flood
            assert resp.status == 200
            assert time.monotonic() - started < idle_s * 0.75  # not waiting for time-outs
            # The cap is reached and held: the newest of the flood and the real request's,
            # 50, or 49 once the gate has made room for the next newcomer in advance.
            assert 50 - 1 <= accepted(port) <= 50 + 1
            # The oldest 251 made room (the last one for the real request), the others
            # stayed open until their idle time-out.
            for reader, _ in conns[:251]:
                assert await until_eof(reader, deadline_s=idle_s * 0.75) == b""
            assert time.monotonic() - started < idle_s * 0.9
            for reader, _ in conns[251:]:
                assert await until_eof(reader) == b""
            assert time.monotonic() - started >= idle_s * 0.9
            assert accepted(port) <= 1  # the real request's keep-alive connection
        assert app.snapshot() == before


async def test_when_every_connection_is_busy_a_newcomer_waits_its_turn(
    make_appliance: Callable[..., Any],
) -> None:
    """max_connections uploads in progress: one more connection is not accepted (it waits
    in the listen backlog) until one of them ends, then it is served at once."""
    async with make_appliance(max_connections=4, body_timeout_s=30.0) as app:
        before = app.snapshot()
        async with connect(app, 4) as busy:
            drippers = []
            for i, (_, writer) in enumerate(busy):
                writer.write(upload_head(100_000, key=f"busy-key-{i:04}") + document_part_start())
                drippers.append(asyncio.create_task(drip(writer)))
            try:
                await eventually(lambda: len(staging(app)) == 4, "four uploads in progress")
                async with connect(app) as [(reader, writer)]:
                    writer.write(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
                    with pytest.raises(TimeoutError):  # not accepted while all four are busy
                        await read_response(reader, deadline_s=0.3)
                    # One upload ends (its client gives up): the newcomer gets in at once.
                    drippers[0].cancel()
                    busy[0][1].write_eof()
                    ended = time.monotonic()
                    status, _, _ = await read_response(reader)
                    assert status == 200
                    assert time.monotonic() - ended < 0.5
            finally:
                for dripper in drippers:
                    dripper.cancel()
            for reader, writer in busy:
                if writer.can_write_eof() and not writer.is_closing():
                    writer.write_eof()
                await until_eof(reader)
        assert staging(app) == []
        assert app.snapshot() == before


# --- malformed heads: 400 problem+json, not aiohttp's text/plain ------------------------------

LONG = 1024  # the smallest max_header_bytes


@pytest.mark.parametrize(
    ("request_bytes", "slug"),
    [
        pytest.param(
            b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Long: " + b"a" * (LONG + 1) + b"\r\n\r\n",
            "header-too-large", id="header-line-too-long",
        ),
        pytest.param(
            b"GET /" + b"a" * (LONG + 1) + b" HTTP/1.1\r\nHost: x\r\n\r\n",
            "header-too-large", id="request-target-too-long",
        ),
        pytest.param(
            b"GET /healthz HTTP/1.1\r\nHost: x\r\n"
            + b"".join(b"X-H%d: 1\r\n" % i for i in range(20)) + b"\r\n",
            "header-too-large", id="too-many-headers",
        ),
        pytest.param(b"GARBAGE\r\n\r\n", "malformed-request", id="bad-request-line"),
        pytest.param(b"G@T / HTTP/1.1\r\nHost: x\r\n\r\n", "malformed-request", id="invalid-method"),
        pytest.param(b"GET / HTTP/9.7\r\nHost: x\r\n\r\n", "malformed-request", id="bad-version"),
        pytest.param(
            b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\n" + AUTH.encode()
            + b"Idempotency-Key: chunky-key-01\r\n"
            + b"Content-Type: multipart/form-data; boundary=x\r\nTransfer-Encoding: chunked\r\n\r\n"
            + b"ZZ\r\nabc\r\n0\r\n\r\n",
            "malformed-request", id="bad-chunk-size",
        ),
        pytest.param(
            b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\n" + AUTH.encode()
            + b"Idempotency-Key: chunky-key-02\r\n"
            + b"Content-Type: multipart/form-data; boundary=x\r\nTransfer-Encoding: chunked\r\n\r\n"
            + b"4\r\nHello\r\n0\r\n\r\n",
            "malformed-request", id="chunk-longer-than-its-size",
        ),
    ],
)  # fmt: skip
async def test_malformed_head_gets_400_problem(
    make_appliance: Callable[..., Any],
    caplog: pytest.LogCaptureFixture,
    request_bytes: bytes,
    slug: str,
) -> None:
    async with make_appliance(max_header_bytes=LONG, max_headers=16) as app:
        before = app.snapshot()
        with caplog.at_level(logging.INFO):
            async with connect(app) as [(reader, writer)]:
                writer.write(request_bytes)
                raw = await until_eof(reader)  # answered, then closed
        status, headers, body = parse(raw)
        problem = assert_problem(status, headers, body, 400, slug)
        assert headers["x-correlation-id"]
        assert "aaaa" not in problem["detail"]  # the request's bytes are not echoed
        assert app.snapshot() == before
    # One concise log line: no traceback, no request bytes (they may carry a token).
    mine = [r for r in caplog.records if getattr(r, "event", None) == "http_bad_request"]
    assert len(mine) == 1
    assert mine[0].exc_info is None
    assert KIOSK_TOKEN not in mine[0].getMessage()
    assert not [r for r in caplog.records if r.name.startswith("aiohttp") and r.exc_info]


# --- file descriptors and accept() errors ---------------------------------------------------


def _nr_open() -> int:
    return int(Path("/proc/sys/fs/nr_open").read_text())


async def test_open_file_limit_is_raised_to_the_hard_limit(
    make_appliance: Callable[..., Any], caplog: pytest.LogCaptureFixture
) -> None:
    """Started under a low soft RLIMIT_NOFILE, the appliance raises it to the hard limit
    (the kernel's nr_open when the hard limit is unlimited) and logs both."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = _nr_open() if hard == resource.RLIM_INFINITY else hard
    low = 512
    assert target > low, "the hard limit leaves nothing to raise"
    resource.setrlimit(resource.RLIMIT_NOFILE, (low, hard))
    try:
        with caplog.at_level(logging.INFO):
            async with make_appliance() as app:
                raised, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
                assert (await app.http.get(f"{app.url}/healthz")).status == 200
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert raised == target
    [logged] = [r for r in caplog.records if getattr(r, "event", None) == "fd_limit"]
    assert (logged.soft_before, logged.soft, logged.hard) == (low, target, hard)  # type: ignore[attr-defined]


async def test_accept_failing_with_emfile_is_logged_once_and_retried(
    app: Appliance, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """accept() failing for want of descriptors: one concise warning, no traceback, and
    the appliance accepts again as soon as it can."""
    loop = asyncio.get_running_loop()
    real_accept = loop.sock_accept
    failures = 5

    async def sock_accept(sock: socket.socket) -> tuple[socket.socket, Any]:
        nonlocal failures
        if failures:
            failures -= 1
            raise OSError(24, "Too many open files")
        return await real_accept(sock)

    monkeypatch.setattr(loop, "sock_accept", sock_accept)
    with caplog.at_level(logging.INFO):
        # The first request is taken by the accept already waiting; then accept() fails.
        for _ in range(2):
            async with connect(app) as [(reader, writer)]:
                writer.write(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                status, _, _ = parse(await until_eof(reader))
                assert status == 200
    assert failures == 0
    lines = [
        r
        for r in caplog.records
        if r.levelno >= logging.WARNING and not r.name.startswith("edgeprint.dispatch.")
    ]
    assert [getattr(r, "event", None) for r in lines] == ["accept_failed"]
    assert "EMFILE" in lines[0].getMessage()
    assert lines[0].exc_info is None


async def test_answered_connections_draining_an_unread_body_make_room(
    make_appliance: Callable[..., Any],
) -> None:
    """A token-less POST announcing a large body gets its 401 at once; aiohttp then drains
    the body for up to 10 s. Such connections count as idle at the cap, so they cannot
    hold every slot: a real request gets in long before their drain would end."""
    async with make_appliance(max_connections=4, idle_timeout_s=30.0) as app:
        before = app.snapshot()
        async with connect(app, 4) as conns:
            for reader, writer in conns:
                writer.write(
                    b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/pdf\r\n"
                    b"Content-Length: 100000000\r\n\r\n%PDF-"
                )
                status, headers, body = await read_response(reader)
                assert_problem(status, headers, body, 401, "unauthorized")
            started = time.monotonic()
            resp = await app.http.get(f"{app.url}/healthz")
            assert resp.status == 200
            assert time.monotonic() - started < 5.0  # the drain would hold them 10 s
        assert app.snapshot() == before
