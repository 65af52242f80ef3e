"""Drive headless chromium over the DevTools protocol (a WebSocket, with aiohttp).

Enough to click through the status page like a technician: open a URL, evaluate
JavaScript in the page, wait for a condition in the page. Chromium is started as
in tests/test_status_page.py (its own profile and process group, bounded waits).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import re
import signal
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp

from tests.polling import eventually
from tests.test_status_page import CHROMIUM_DEADLINE_S, require_chromium

_LISTENING = re.compile(rb"DevTools listening on (ws://[^\s]+)")

# What chromium answers an evaluation that a navigation overtook (a form posted, a link
# followed): the page it asked has gone and the next one is not there yet.
_NAVIGATING = (
    "Inspected target navigated or closed",
    "Execution context was destroyed",
    "Cannot find context with specified id",
)


class Navigating(AssertionError):
    """An evaluation overtaken by a navigation: ask again once the next page is there."""


class Page:
    """One page of a running chromium, reached over its DevTools WebSocket."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self._ws = ws
        self._ids = itertools.count(1)

    async def call(self, method: str, **params: Any) -> dict[str, Any]:
        """One DevTools command; its ``result`` (events in between are skipped)."""
        msg_id = next(self._ids)
        await self._ws.send_json({"id": msg_id, "method": method, "params": params})
        async with asyncio.timeout(CHROMIUM_DEADLINE_S):
            while True:
                msg = await self._ws.receive_json()
                if msg.get("id") == msg_id:
                    if "error" in msg:
                        text = str(msg["error"].get("message", ""))
                        kind = Navigating if text.startswith(_NAVIGATING) else AssertionError
                        raise kind(f"{method}: {msg['error']}")
                    result: dict[str, Any] = msg["result"]
                    return result

    async def burst(self, commands: list[tuple[str, dict[str, Any]]]) -> None:
        """Send DevTools commands back to back, then wait for every answer (input that must
        arrive as fast as a device sends it: a card reader's keys)."""
        ids = []
        for method, params in commands:
            msg_id = next(self._ids)
            ids.append(msg_id)
            await self._ws.send_json({"id": msg_id, "method": method, "params": params})
        waiting = set(ids)
        async with asyncio.timeout(CHROMIUM_DEADLINE_S):
            while waiting:
                msg = await self._ws.receive_json()
                if msg.get("id") in waiting:
                    if "error" in msg:
                        raise AssertionError(f"burst: {msg['error']}")
                    waiting.discard(msg["id"])

    async def eval(self, expression: str) -> Any:
        """The value of ``expression`` in the page (promises awaited); page errors raise."""
        result = await self.call(
            "Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True
        )
        if "exceptionDetails" in result:
            text = json.dumps(result["exceptionDetails"])
            kind = Navigating if any(n in text for n in _NAVIGATING) else AssertionError
            raise kind(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    async def wait(self, expression: str, timeout_s: float = 20.0) -> Any:
        """Poll until ``expression`` is truthy in the page; its value. Fails after the deadline.

        A poll that a navigation overtook counts as "not yet" (a posted form's answer is a
        new page); any other error in the page fails at once."""

        async def value() -> Any:
            try:
                return await self.eval(expression)
            except Navigating:
                return None

        return await eventually(value, expression, timeout_s=timeout_s, every_s=0.02)

    async def goto(self, url: str) -> None:
        await self.call("Page.navigate", url=url)

    async def navigate(self, url: str) -> str | None:
        """Open ``url``; chromium's error for a navigation that failed
        (``net::ERR_CERT_AUTHORITY_INVALID``), None when the page came."""
        result = await self.call("Page.navigate", url=url)
        error: str | None = result.get("errorText")
        return error


@contextlib.asynccontextmanager
async def browser(workdir: Path, *flags: str) -> AsyncIterator[Page]:
    """Headless chromium with remote debugging on a free loopback port; its first page.

    ``flags``: more command-line switches (``--ignore-certificate-errors-spki-list=…``)."""
    exe = require_chromium()
    profile = tempfile.mkdtemp(prefix="chromium-cdp-", dir=workdir)
    argv = [
        exe, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--disable-dev-shm-usage", "--remote-debugging-address=127.0.0.1",
        "--remote-debugging-port=0", f"--user-data-dir={profile}", *flags, "about:blank",
    ]  # fmt: skip
    proc = await asyncio.create_subprocess_exec(
        *argv,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
    )
    assert proc.stderr is not None
    drain: asyncio.Task[None] | None = None
    try:
        async with asyncio.timeout(CHROMIUM_DEADLINE_S):
            while True:
                line = await proc.stderr.readline()
                if not line:
                    raise AssertionError("chromium exited before it listened for DevTools")
                if found := _LISTENING.search(line):
                    break
        port = int(found.group(1).decode().split(":")[2].split("/")[0])

        async def _drain() -> None:  # keep chromium's stderr from filling its pipe
            assert proc.stderr is not None
            while await proc.stderr.read(65536):
                pass

        drain = asyncio.create_task(_drain())
        async with aiohttp.ClientSession() as http:
            async with http.get(f"http://127.0.0.1:{port}/json/list") as r:
                targets = json.loads(await r.text())
            page_ws = next(t["webSocketDebuggerUrl"] for t in targets if t["type"] == "page")
            async with http.ws_connect(page_ws, max_msg_size=0) as ws:
                page = Page(ws)
                await page.call("Runtime.enable")
                yield page
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        await proc.wait()
        if drain is not None:
            drain.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await drain
