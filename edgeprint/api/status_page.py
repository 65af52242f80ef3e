"""``GET /``: the technicians' live status page (DESIGN §5, §8; issue 17).

The page lives in package data, ``static/status.html`` and ``static/status.js``;
the script is inlined into the HTML when this module is imported, so the page
stays one self-contained document (no external asset), readable on a phone. It
holds no data, so it is served without a token; the page asks for a tech token
once, keeps it in ``sessionStorage`` and polls ``/v1/stats``, ``/v1/printers``,
``/v1/dead-letter`` and ``/v1/jobs`` every 2 s with ``Authorization: Bearer``. A
link may carry the token in its fragment (``/#token=…``, never sent to the
server); the page moves it to ``sessionStorage`` and strips it from the address
bar. Its buttons (resolve, replay, cancel, release, pause, resume, drain, identify)
each ask for confirmation in the page and show the API's answer; "Sticker" downloads a
printer's sticker PDF (issue 24). Release asks on which printer or pool (issue 25).

Everything from the API reaches the page as text nodes (``textContent`` /
``append(string)``), never as markup. A Content-Security-Policy allows only
this page's own script and style (by hash) and requests to the appliance itself.

Registered by the route table (edgeprint.api.routes).
"""

from __future__ import annotations

from aiohttp import web

from edgeprint.api.pages import api_page_csp, html_response, load_static, page_headers

__all__ = ["PAGE", "status_page"]

_PAGE = load_static("status")
PAGE = _PAGE.html

#: Only this page's own script and style (by hash); requests only to the appliance itself.
CONTENT_SECURITY_POLICY = api_page_csp(_PAGE, "data: blob:")
_HEADERS = page_headers(CONTENT_SECURITY_POLICY)
_BODY_BYTES = PAGE.encode()


async def status_page(request: web.Request) -> web.Response:
    """GET /: the live status page (no data in it, so no token needed)."""
    return html_response(_BODY_BYTES, _HEADERS)
