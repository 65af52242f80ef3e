"""A real appliance on its own event loop thread, for synchronous drivers (hypothesis, requests).

``@given`` tests are synchronous and schemathesis speaks ``requests``; the
appliance (real SQLite file, real HTTP on loopback) runs in a background thread
with its own loop, and coroutines are sent to it with :meth:`Live.run`.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import aiohttp

from edgeprint.config import parse_config
from edgeprint.server import running
from tests.conftest import Appliance, config_dict

T = TypeVar("T")

#: Neither rate limits nor full queues may answer for the server under test.
UNLIMITED: dict[str, Any] = {"rate_limit": "1000000/second"}


def unlimited_config(data_dir: Path, **server: Any) -> dict[str, Any]:
    """The test config with no rate limit and printer queues that never fill."""
    cfg = config_dict(data_dir, **{**UNLIMITED, **server})
    cfg["printers"] = [{**p, "high_water": 100_000} for p in cfg["printers"]]
    return cfg


class Live:
    """The appliance and the loop it runs on."""

    def __init__(self, appliance: Appliance, loop: asyncio.AbstractEventLoop) -> None:
        self.appliance = appliance
        self.loop = loop

    @property
    def url(self) -> str:
        return self.appliance.url

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = 30.0) -> T:
        """Run ``coro`` on the appliance's loop and wait for its result."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)


@contextlib.contextmanager
def live_appliance(config: dict[str, Any]) -> Iterator[Live]:
    """Start an appliance for ``config`` on a new loop thread; stop it and the loop on exit."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="appliance-loop", daemon=True)
    thread.start()
    stack = contextlib.AsyncExitStack()

    async def start() -> Appliance:
        try:
            cfg = parse_config(config)
            run = await stack.enter_async_context(running(cfg))
            http = await stack.enter_async_context(
                aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))
            )
        except BaseException:
            await stack.aclose()
            raise
        return Appliance(run, http, cfg)

    try:
        appliance = asyncio.run_coroutine_threadsafe(start(), loop).result(30)
        try:
            yield Live(appliance, loop)
        finally:
            asyncio.run_coroutine_threadsafe(stack.aclose(), loop).result(60)
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()
