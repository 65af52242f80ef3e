"""What every HTML page of the appliance shares: its files, its CSP and its headers.

The status, release and upload pages are each one self-contained document (no
external asset) under a strict Content-Security-Policy that allows only the page's
own script and style, by their sha256 hash. The status and release pages live in
package data (``static/<name>.html`` with a ``<script>/* <name>.js */</script>``
slot the script is inlined into); the upload page is rendered in Python from its own
style and script. Keeping the loading, hashing and headers here means a fix to one
(a new header, a stricter directive) reaches every page.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources

from aiohttp import web

__all__ = [
    "StaticPage",
    "api_page_csp",
    "content_security_policy",
    "html_response",
    "load_static",
    "page_headers",
    "sha256_source",
]

_STATIC = resources.files("edgeprint.api") / "static"


def sha256_source(text: str) -> str:
    """The CSP source expression (``'sha256-…'``) allowing exactly this script or style."""
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


@dataclass(frozen=True)
class StaticPage:
    """A page from package data: the document with its script inlined, and the exact
    script and style blocks its CSP hashes."""

    html: str
    script: str
    style: str


def load_static(name: str) -> StaticPage:
    """``static/<name>.html`` with ``static/<name>.js`` inlined into its script slot."""
    slot = f"<script>/* {name}.js */</script>"
    html = (_STATIC / f"{name}.html").read_text(encoding="utf-8")
    script = "\n" + (_STATIC / f"{name}.js").read_text(encoding="utf-8")
    if html.count(slot) != 1:  # pragma: no cover - guarded by the page's tests
        raise RuntimeError(f"{name}.html must hold {slot} once")
    style = re.search(r"<style>(.*?)</style>", html, re.S)
    if style is None:  # pragma: no cover - guarded by the page's tests
        raise RuntimeError(f"{name}.html has no <style> block")
    return StaticPage(html.replace(slot, f"<script>{script}</script>"), script, style.group(1))


def content_security_policy(script: str, style: str, *directives: str) -> str:
    """Nothing but this script and style (by hash), then the page's own ``directives``
    (what it may fetch, show and post to), and never inside another site's frame."""
    return "; ".join(
        (
            "default-src 'none'",
            f"script-src {sha256_source(script)}",
            f"style-src {sha256_source(style)}",
            *directives,
            "frame-ancestors 'none'",
        )
    )


def api_page_csp(page: StaticPage, img_src: str) -> str:
    """The CSP of a page from package data that reads the appliance's API: requests only
    to the appliance itself, images only from ``img_src``, no ``<base>``, no form posts."""
    return content_security_policy(
        page.script,
        page.style,
        "connect-src 'self'",
        f"img-src {img_src}",
        "base-uri 'none'",
        "form-action 'none'",
    )


def page_headers(csp: str) -> dict[str, str]:
    """The headers every page is served with: its CSP, no sniffing, no referrer, no
    caching (a page is small and changes with the appliance), no framing."""
    return {
        "Content-Security-Policy": csp,
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
        "Cache-Control": "no-store",
        "X-Frame-Options": "DENY",
    }


def html_response(body: bytes, headers: Mapping[str, str], status: int = 200) -> web.Response:
    """A page as the answer: UTF-8 HTML with its headers."""
    return web.Response(
        status=status, body=body, content_type="text/html", charset="utf-8", headers=headers
    )
