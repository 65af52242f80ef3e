"""``GET /release/{name}``: the release page of a printer or pool (issue 24).

Like the status page (edgeprint.api.status_page): package data ``static/release.html``
and ``static/release.js``, the script inlined when this module is imported, one
self-contained document under a strict Content-Security-Policy (its own script and
style by hash, requests to the appliance only, previews as ``blob:`` images). The
page holds no data, so it needs no token; the code typed into it is the credential.
A station's token may ride in the fragment (``#token=…``, never sent to the server)
and is then kept in ``sessionStorage``; so may a job number (``#job=…``, the upload
page's link: the PIN is never in a URL). An unknown name is a 404 page in words, and
so is ``/release/`` with none; ``/release/{name}/`` (a hand-typed slash) redirects.
"""

from __future__ import annotations

from urllib.parse import quote

from aiohttp import web

from edgeprint.api.app import DEPS
from edgeprint.api.pages import api_page_csp, html_response, load_static, page_headers

__all__ = ["PAGE", "release_index", "release_page", "release_page_slash"]

_PAGE = load_static("release")
PAGE = _PAGE.html

#: Only this page's own script and style (by hash); requests only to the appliance
#: itself; the previews are ``blob:`` images.
CONTENT_SECURITY_POLICY = api_page_csp(_PAGE, "blob:")
_HEADERS = page_headers(CONTENT_SECURITY_POLICY)
_NOT_FOUND = (
    b'<!doctype html><html lang="en"><head><meta charset="utf-8">'
    b'<meta name="viewport" content="width=device-width, initial-scale=1">'
    b"<title>No such printer</title></head><body><main><h1>No such printer</h1>"
    b"<p>There is no printer or pool of that name here. Check the address on the "
    b"printer's sticker, or ask at the desk.</p></main></body></html>"
)
_NOT_FOUND_HEADERS = {**_HEADERS, "Content-Security-Policy": "default-src 'none'"}
_BODY_BYTES = PAGE.encode()


async def release_page(request: web.Request) -> web.Response:
    """GET /release/{name}: the page (no data in it, so no token); 404 page if unknown."""
    config = request.app[DEPS].config
    name = request.match_info["name"]
    if config.printer(name) is None and name not in config.pools:
        return html_response(_NOT_FOUND, _NOT_FOUND_HEADERS, 404)
    return html_response(_BODY_BYTES, _HEADERS)


async def release_page_slash(request: web.Request) -> web.Response:
    """GET /release/{name}/: 308 to the page (a trailing slash typed by hand or a QR app)."""
    location = "/release/" + quote(request.match_info["name"], safe="")
    return web.Response(status=308, headers={"Location": location, "Cache-Control": "no-store"})


async def release_index(request: web.Request) -> web.Response:
    """GET /release/: no printer named, so the 404 page in words (not problem+json)."""
    return html_response(_NOT_FOUND, _NOT_FOUND_HEADERS, 404)
