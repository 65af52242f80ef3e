"""A real webhook receiver on loopback (aiohttp), for the webhook tests.

It records every request (headers and raw body) and answers as its ``mode``
says: ``ok`` (204), ``fail`` (500), ``hang`` (never answers until stopped),
``redirect`` (307 to ``/elsewhere``, which would answer 204). ``fail_first``
answers 500 to that many requests before its mode applies.
"""

from __future__ import annotations

import asyncio
import base64
import json
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web
from standardwebhooks import Webhook

from tests.polling import eventually

#: A Standard Webhooks secret (32 bytes) used by every test.
SECRET = "whsec_" + base64.b64encode(b"edgeprint-webhook-test-secret-32").decode()


@dataclass
class Received:
    """One request the receiver got."""

    path: str
    headers: dict[str, str]
    body: bytes

    def verified(self) -> dict[str, Any]:
        """The payload, after checking its signature as a Standard Webhooks receiver does."""
        payload: dict[str, Any] = Webhook(SECRET).verify(self.body, self.headers)
        return payload

    @property
    def id(self) -> str:
        return self.headers["webhook-id"]


@dataclass
class Receiver:
    """The receiver's state; :meth:`start` binds it (again, on the same port after a stop)."""

    mode: str = "ok"
    fail_first: int = 0
    port: int = 0
    requests: list[Received] = field(default_factory=list)
    _runner: web.AppRunner | None = None
    _release: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        self.requests.append(Received(request.path, dict(request.headers), await request.read()))
        if request.path == "/elsewhere":
            return web.Response(status=204)
        if self.fail_first > 0:
            self.fail_first -= 1
            return web.Response(status=500)
        if self.mode == "fail":
            return web.Response(status=500, text="receiver error")
        if self.mode == "hang":
            await self._release.wait()
            return web.Response(status=204)
        if self.mode == "redirect":
            raise web.HTTPTemporaryRedirect("/elsewhere")
        return web.Response(status=204)

    async def start(self) -> Receiver:
        app = web.Application()
        app.router.add_post("/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, shutdown_timeout=0.1)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", self.port, reuse_address=True)
        await site.start()
        self.port = int(self._runner.addresses[0][1])
        return self

    async def stop(self) -> None:
        self._release.set()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        self._release = asyncio.Event()

    def hooks(self) -> list[Received]:
        """The requests to the hook URL (not the redirect target)."""
        return [r for r in self.requests if r.path == "/hook"]

    def delivered_types(self) -> list[tuple[str, str | None]]:
        """(type, job_id) of each verified request, in arrival order, one per webhook-id."""
        seen: set[str] = set()
        out = []
        for r in self.hooks():
            if r.id in seen:
                continue
            seen.add(r.id)
            payload = r.verified()
            out.append((payload["type"], payload["data"].get("job_id")))
        return out

    async def wait_for(self, count: int, timeout_s: float = 20.0) -> list[Received]:
        """Poll until ``count`` requests reached the hook URL; fails after ``timeout_s``."""
        await eventually(
            lambda: len(self.hooks()) >= count,
            lambda: (
                f"{count} webhook requests: {[json.loads(r.body).get('type') for r in self.hooks()]}"
            ),
            timeout_s=timeout_s,
        )
        return self.hooks()


def webhook(url: str, events: list[str], **overrides: Any) -> dict[str, Any]:
    """A ``[[webhooks]]`` entry with fast retries for tests."""
    return {
        "url": url,
        "events": events,
        "secret": SECRET,
        "retry_base_s": 0.02,
        "retry_max_s": 0.1,
        "poll_interval_s": 0.02,
        "timeout_s": 2.0,
        "max_delivery_s": 60.0,
        **overrides,
    }
