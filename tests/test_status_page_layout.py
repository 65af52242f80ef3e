"""The status page's layout on a phone, measured in a real browser: headless chromium driven
over the DevTools protocol (its own ``--remote-debugging-port``), the page rendered with a
printer out of paper, its reasons with their severities, and no horizontal scroll at 390 px."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from testbed.rig import Rig
from tests.conftest import TECH_TOKEN
from tests.polling import eventually
from tests.printing import appliance
from tests.test_cli_tech import busy_floor, floor_config
from tests.test_status_page import require_chromium

pytestmark = pytest.mark.slow

PHONE_WIDTH = 390
DEADLINE_S = 30.0


class DevTools:
    """One page of a headless chromium, spoken to over its DevTools WebSocket."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self.ws = ws
        self.ids = 0

    async def call(self, method: str, **params: Any) -> dict[str, Any]:
        self.ids += 1
        await self.ws.send_json({"id": self.ids, "method": method, "params": params})
        async with asyncio.timeout(DEADLINE_S):
            while True:
                msg = await self.ws.receive_json()
                if msg.get("id") == self.ids:
                    assert "error" not in msg, msg
                    result: dict[str, Any] = msg["result"]
                    return result

    async def evaluate(self, expression: str) -> Any:
        out = await self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        return out["result"].get("value")


@contextlib.asynccontextmanager
async def devtools(workdir: Path, width: int) -> AsyncIterator[DevTools]:
    """A headless chromium ``width`` px wide with one blank page; stopped after."""
    exe = require_chromium()
    profile = tempfile.mkdtemp(prefix="chromium-", dir=workdir)
    proc = await asyncio.create_subprocess_exec(
        exe, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--disable-dev-shm-usage", f"--user-data-dir={profile}", "--remote-debugging-port=0",
        f"--window-size={width},900", "about:blank",
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
        start_new_session=True,
    )  # fmt: skip
    try:
        port_file = Path(profile) / "DevToolsActivePort"

        def port_written() -> str:
            assert proc.returncode is None, "chromium exited"
            return port_file.read_text().strip() if port_file.exists() else ""

        what = "chromium's DevTools port"
        written = await eventually(port_written, what, timeout_s=DEADLINE_S, every_s=0.05)
        port = int(written.split()[0])
        async with aiohttp.ClientSession() as http:
            async with http.get(f"http://127.0.0.1:{port}/json/list") as r:
                pages = [t for t in json.loads(await r.text()) if t["type"] == "page"]
            async with http.ws_connect(pages[0]["webSocketDebuggerUrl"], max_msg_size=0) as ws:
                tools = DevTools(ws)
                await tools.call("Runtime.enable")
                await tools.call(
                    "Emulation.setDeviceMetricsOverride",
                    width=width, height=900, deviceScaleFactor=1, mobile=True,
                )  # fmt: skip
                yield tools
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        await proc.wait()


async def test_reasons_fit_a_phone_without_horizontal_scroll(tmp_path: Path, printers: Rig) -> None:
    """At 390 px the page shows printer-02's reason with its severity, and nothing is wider
    than the screen (the jobs are cards there, issue 25)."""
    async with appliance(floor_config(tmp_path, printers)) as (_, kiosk):
        await busy_floor(printers, kiosk)
        async with devtools(tmp_path, PHONE_WIDTH) as page:
            await page.call("Page.navigate", url=f"{kiosk.url}/#token={TECH_TOKEN}")
            loaded = "document.body && document.body.getAttribute('data-loaded') === '1'"
            await eventually(
                lambda: page.evaluate(loaded),
                "the page to render data",
                timeout_s=DEADLINE_S,
                every_s=0.05,
            )
            reason = await page.evaluate(
                "(() => { const li = document.querySelector("
                "'[data-printer=\"printer-02\"] li[data-reason]');"
                " return li && [li.dataset.severity, li.textContent]; })()"
            )
            widths = await page.evaluate(
                "[document.documentElement.scrollWidth, document.documentElement.clientWidth,"
                " window.innerWidth]"
            )
            wide = await page.evaluate(
                "Array.from(document.querySelectorAll('body *')).filter(e =>"
                " e.getBoundingClientRect().right > document.documentElement.clientWidth + 0.5)"
                ".map(e => e.tagName + '.' + e.className + ':' + Math.round(e.getBoundingClientRect().right) + ':' + (e.textContent || '').slice(0, 40)).slice(0, 12)"
            )
    assert widths[2] == PHONE_WIDTH, widths
    assert reason is not None
    severity, text = reason
    assert severity == "report"
    # the printer takes no work: its note is said as the printer's own (issue 25 follow-up)
    assert text.startswith("Printer's note out of paper or labels (media-empty-report), since ")
    assert widths[0] <= widths[1], f"horizontal scroll at {PHONE_WIDTH} px: {widths}, {wide}"
    assert wide == []
