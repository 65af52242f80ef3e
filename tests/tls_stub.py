"""A small HTTPS server on loopback for the TLS clients' tests (issue 26): aiohttp with
``certificates.server_context`` (what the appliance serves with), in a thread of its own so
blocking clients (the CLI, curl, node) can be run against it from a test.

Every GET answers JSON naming the path and whether a bearer token arrived; ``requests``
records each request's path and Authorization header, so a test can assert that nothing
was sent to a server whose pin did not match.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from aiohttp import web

from edgeprint import certificates


@dataclass
class Stub:
    url: str
    port: int
    requests: list[tuple[str, str]] = field(default_factory=list)


@contextmanager
def https_stub(cert: certificates.Certificate | None, host: str = "127.0.0.1") -> Iterator[Stub]:
    """An HTTPS server with ``cert`` (None: plain HTTP) on a free port of ``host``."""
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    stub = Stub("", 0)
    runner: web.AppRunner | None = None

    async def answer(request: web.Request) -> web.Response:
        stub.requests.append((request.path, request.headers.get("Authorization", "")))
        return web.json_response({"path": request.path, "status": "ok", "jobs": []})

    async def start() -> None:
        nonlocal runner
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", answer)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        ctx = certificates.server_context(cert) if cert else None
        site = web.TCPSite(runner, host, 0, ssl_context=ctx)
        await site.start()
        server = site._server
        assert server is not None
        stub.port = server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        stub.url = f"{'https' if cert else 'http'}://{host}:{stub.port}"

    def run() -> None:
        asyncio.set_event_loop(loop)
        loop.run_until_complete(start())
        ready.set()
        loop.run_forever()
        if runner is not None:
            loop.run_until_complete(runner.cleanup())
        loop.close()

    thread = threading.Thread(target=run, name="https-stub", daemon=True)
    thread.start()
    ready.wait(10)
    assert stub.port, "the HTTPS stub did not start"
    try:
        yield stub
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
