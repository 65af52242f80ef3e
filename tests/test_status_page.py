"""The technicians' status page (GET /): self-contained, safe, and live in a real browser.

The browser tests drive Debian's ``chromium`` headless (``--dump-dom`` and
``--screenshot``) against a real appliance on loopback; on two rig printers
the screenshot goes to ``test-artifacts/status-page.png``. Without chromium
they skip locally and fail in CI (the same rule as ippeveprinter).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import os
import re
import shutil
import signal
import tempfile
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from edgeprint.api.status_page import CONTENT_SECURITY_POLICY, PAGE
from testbed.rig import Rig
from tests.conftest import KIOSK_TOKEN, TECH_TOKEN, Appliance
from tests.printing import appliance
from tests.rig_fixtures import in_ci
from tests.test_cli_tech import busy_floor, floor_config

ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts"
CHROMIUM_DEADLINE_S = 60.0
#: Virtual time the page may run in the browser: enough for a first poll (not a sleep:
#: chromium ends as soon as the budget is used, and the page marks a finished render).
VIRTUAL_TIME_MS = 3000
LOADED = 'data-loaded="1"'


def require_chromium() -> str:
    """chromium's path; skip (locally) or fail (in CI) when it is not installed."""
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    why = "chromium not found: install the Debian package chromium (apt-get install chromium)"
    if in_ci():
        pytest.fail(f"{why}; CI is set, so this is a failure, not a skip", pytrace=False)
    pytest.skip(f"{why}; set CI=1 to make this a failure")


@pytest.fixture
def chromium_path() -> str:
    """Checked before the printers start: a missing browser skips (or fails) at once."""
    return require_chromium()


@pytest.fixture
async def page_app(make_appliance: Callable[..., Any]) -> AsyncIterator[Appliance]:
    async with make_appliance() as a:
        yield a


async def chromium(url: str, *args: str, workdir: Path) -> str:
    """Run headless chromium on ``url`` with ``args``; its stdout. Bounded by a deadline."""
    exe = require_chromium()
    profile = tempfile.mkdtemp(prefix="chromium-", dir=workdir)
    argv = [
        exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--disable-dev-shm-usage", "--hide-scrollbars", f"--user-data-dir={profile}",
        f"--virtual-time-budget={VIRTUAL_TIME_MS}", *args, url,
    ]  # fmt: skip
    proc = await asyncio.create_subprocess_exec(
        *argv,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,  # its own process group: its helpers go with it on a time-out
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(), CHROMIUM_DEADLINE_S)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        await proc.wait()
        raise AssertionError(f"chromium did not finish in {CHROMIUM_DEADLINE_S}s") from None
    assert proc.returncode == 0, err.decode(errors="replace")[-2000:]
    return out.decode(errors="replace")


async def dump_dom(url: str, workdir: Path, attempts: int = 3) -> str:
    """The page's DOM once it has rendered the API's data (a few tries, each bounded)."""
    dom = ""
    for _ in range(attempts):
        dom = await chromium(url, "--dump-dom", workdir=workdir)
        if LOADED in dom or 'id="auth-error" class="alert" role="alert">' in dom:
            return dom
    raise AssertionError(f"the page never rendered data:\n{dom[-3000:]}")


def _text(dom: str) -> str:
    """The DOM's text, tags removed, entities as written (so escaped markup stays visible)."""
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", dom))


# --- the page itself ---------------------------------------------------------------------


async def test_page_is_served_without_token_and_self_contained(page_app: Appliance) -> None:
    """GET / needs no token, is one HTML document with no external asset and a strict CSP."""
    async with page_app.http.get(f"{page_app.url}/") as r:
        body = await r.text()
        assert r.status == 200
        assert r.content_type == "text/html"
        assert r.charset == "utf-8"
        assert r.headers["Cache-Control"] == "no-store"
        assert r.headers["Content-Security-Policy"] == CONTENT_SECURITY_POLICY
        assert r.headers["X-Content-Type-Options"] == "nosniff"
    assert body == PAGE
    async with page_app.http.head(f"{page_app.url}/") as r:
        assert r.status == 200
    # no external asset: nothing is loaded from anywhere but the page itself
    assert not re.search(r"""(src|href)\s*=\s*(?!["']?data:)""", body), "external asset"
    assert "http://" not in body
    assert "https://" not in body
    assert "@import" not in body
    assert "url(" not in body
    # data never becomes markup
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("):
        assert sink not in body, sink
    # the CSP allows exactly the inline script and style by hash, and only 'self' to fetch
    script = re.search(r"<script>(.*)</script>", body, re.S)
    style = re.search(r"<style>(.*)</style>", body, re.S)
    assert script is not None
    assert style is not None
    for block in (script.group(1), style.group(1)):
        digest = base64.b64encode(hashlib.sha256(block.encode()).digest()).decode()
        assert f"'sha256-{digest}'" in CONTENT_SECURITY_POLICY
    assert "connect-src 'self'" in CONTENT_SECURITY_POLICY
    assert "default-src 'none'" in CONTENT_SECURITY_POLICY
    # it holds no data and no token
    assert TECH_TOKEN not in body
    assert "printer-01" not in body


async def test_api_still_needs_a_token(page_app: Appliance) -> None:
    """Serving the page opens nothing else: the data it polls stays tech-only."""
    for path in ("/v1/printers", "/v1/dead-letter"):
        async with page_app.http.get(f"{page_app.url}{path}") as r:
            assert r.status == 401


# --- in a real browser ----------------------------------------------------------------------


async def test_page_shows_printers_health_and_dead_jobs_in_chromium(
    chromium_path: str, tmp_path: Path, printers: Rig
) -> None:
    """On two real printers: names, health (one out of paper), the DEAD job, escaped data.

    Saves phone-sized and desktop screenshots to test-artifacts/.
    """
    async with appliance(floor_config(tmp_path, printers)) as (_, kiosk):
        ids = await busy_floor(printers, kiosk)
        url = f"{kiosk.url}/#token={TECH_TOKEN}"
        dom = await dump_dom(url, tmp_path)
        ARTIFACTS.mkdir(exist_ok=True)
        shot = ARTIFACTS / "status-page.png"
        wide = ARTIFACTS / "status-page-desktop.png"
        for path in (shot, wide):
            path.unlink(missing_ok=True)
        await chromium(url, f"--screenshot={shot}", "--window-size=412,1500", workdir=tmp_path)
        await chromium(url, f"--screenshot={wide}", "--window-size=1280,900", workdir=tmp_path)
    text = _text(dom)
    assert LOADED in dom
    for name in ("printer-01", "printer-02"):
        assert f'data-printer="{name}"' in dom
    # the CLI's words for health (edgeprint.cli.render.health), one per state
    assert 'class="badge healthy">ok<' in dom
    assert 'class="badge unhealthy">UNHEALTHY<' in dom
    assert "media-empty" in text
    # each reason with its severity in words, what it means and since when; the message verbatim
    assert 'data-reason="media-empty-report" data-severity="report"' in dom
    # printer-02 takes no work: its note is labelled the printer's own, with the card's one
    # time format (HH:MM:SS today, as the problem sentences)
    assert re.search(
        r"Printer's note out of paper or labels \(media-empty-report\) , since \d\d:\d\d:\d\d\b",
        text,
    ), text
    assert "Printer says \u201cIdle.\u201d" in text
    assert f'data-job="{ids["dead"]}"' in dom
    assert 'class="badge dead">DEAD<' in dom
    assert "attempts_exhausted" in text
    assert ids["printing"] in text  # printer-01's job in hand
    assert "Dead-letter queue ( 1 )" in text
    # the owner "<b>mallory</b>" arrived as text, not as an element
    assert "&lt;b&gt;mallory&lt;/b&gt;" in dom
    assert "<b>mallory</b>" not in dom
    # the token left the address bar and never entered the document
    assert TECH_TOKEN not in dom
    for path in (shot, wide):
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert path.stat().st_size > 10_000  # a rendered page, not a blank one


@pytest.mark.parametrize(
    ("token", "message"),
    [
        pytest.param(KIOSK_TOKEN, "not a technician's token (403 Forbidden)", id="kiosk-403"),
        pytest.param("no-such-token-1234", "refused the token (401 Unauthorized)", id="unknown-401"),
    ],
)  # fmt: skip
async def test_refused_token_is_explained_in_chromium(
    chromium_path: str, page_app: Appliance, tmp_path: Path, token: str, message: str
) -> None:
    """A kiosk or unknown token gets a clear message and the token form, no data."""
    dom = await dump_dom(f"{page_app.url}/#token={token}", tmp_path)
    alert = re.search(r'<div id="auth-error" class="alert" role="alert">([^<]*)</div>', dom)
    assert alert is not None, dom[-3000:]
    assert message in alert.group(1)
    assert '<form id="login" autocomplete="off">' in dom  # shown (no hidden attribute)
    assert LOADED not in dom


async def test_no_token_asks_for_one_in_chromium(
    chromium_path: str, page_app: Appliance, tmp_path: Path
) -> None:
    """Without a token the page shows the token form and fetches nothing."""
    dom = await chromium(f"{page_app.url}/", "--dump-dom", workdir=tmp_path)
    assert '<form id="login" autocomplete="off">' in dom
    assert "Technician token" in dom
    assert LOADED not in dom
