"""``GET /``: the technicians' live status page (DESIGN §5, §8; issue 17).

The page lives in package data, ``static/status.html`` and ``static/status.js``;
the script is inlined into the HTML when this module is imported, so the page
stays one self-contained document (no external asset), readable on a phone. It
holds no data, so it is served without a token; the page asks for a tech token
once, keeps it in ``sessionStorage`` and polls ``/v1/stats``, ``/v1/printers``,
``/v1/dead-letter`` and ``/v1/jobs`` every 2 s with ``Authorization: Bearer``. A
link may carry the token in its fragment (``/#token=…``, never sent to the
server); the page moves it to ``sessionStorage`` and strips it from the address
bar. Its buttons (resolve, replay, cancel, pause, resume, drain, identify) each
ask for confirmation in the page and show the API's answer; "Sticker" downloads a
printer's sticker PDF (issue 24).

Everything from the API reaches the page as text nodes (``textContent`` /
``append(string)``), never as markup. A Content-Security-Policy allows only
this page's own script and style (by hash) and requests to the appliance itself.

Registered by the route table (edgeprint.api.routes).
"""

from __future__ import annotations

import base64
import hashlib
import re
from importlib import resources

from aiohttp import web

__all__ = ["PAGE", "status_page"]

_STATIC = resources.files("edgeprint.api") / "static"
_SCRIPT_SLOT = "<script>/* status.js */</script>"


def _load() -> tuple[str, str, str]:
    """The page with its script inlined, and the exact script and style blocks."""
    html = (_STATIC / "status.html").read_text(encoding="utf-8")
    script = "\n" + (_STATIC / "status.js").read_text(encoding="utf-8")
    if html.count(_SCRIPT_SLOT) != 1:  # pragma: no cover - guarded by the page's tests
        raise RuntimeError(f"status.html must hold {_SCRIPT_SLOT} once")
    page = html.replace(_SCRIPT_SLOT, f"<script>{script}</script>")
    style = re.search(r"<style>(.*?)</style>", html, re.S)
    if style is None:  # pragma: no cover - guarded by the page's tests
        raise RuntimeError("status.html has no <style> block")
    return page, script, style.group(1)


def _sha256_source(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


PAGE, _SCRIPT, _STYLE = _load()

#: Only this page's own script and style (by hash); requests only to the appliance itself.
CONTENT_SECURITY_POLICY = (
    f"default-src 'none'; script-src {_sha256_source(_SCRIPT)}; "
    f"style-src {_sha256_source(_STYLE)}; connect-src 'self'; img-src data: blob:; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)

_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
    "X-Frame-Options": "DENY",
}
_BODY_BYTES = PAGE.encode()


async def status_page(request: web.Request) -> web.Response:
    """GET /: the live status page (no data in it, so no token needed)."""
    return web.Response(
        body=_BODY_BYTES, content_type="text/html", charset="utf-8", headers=_HEADERS
    )
