"""A sticker for a printer (issue 24): its name, a QR code of its release page, the short URL.

A person scans it with a phone at the printer and lands on ``{base}/release/{name}``.
The page is sized for what the printer has ready, so ``edgeprint printers sticker
NAME --print`` prints on that printer without a stock mismatch: its label or roll
stock (or any stock it must fit exactly or centre on), laid out wider than tall as
badge labels are; else (sheets the printer scales to, or stock not known) 4×6 in.

The PDF is drawn by fpdf2 in the render pool's workers (it loads Pillow and
numpy, which the appliance's process does not).
"""

from __future__ import annotations

import contextlib
import ipaddress
import re
import urllib.parse
from collections.abc import Callable

import ifaddr

from edgeprint import errors
from edgeprint.documents.render import RenderPool
from edgeprint.stock import StockView

#: A page for a printer whose stock is unknown or scaled to: 4×6 in, portrait (hmm).
DEFAULT_SIZE_HMM = (10160, 15240)
#: The longest base URL a sticker takes (a QR code of a longer URL is dense to scan).
MAX_BASE_CHARS = 200
_HOST_CHARS = re.compile(r"^[A-Za-z0-9.:\[\]-]+$")


def page_size(stock: StockView | None) -> tuple[int, int]:
    """(width, height) in hundredths of a millimetre: the first stock the printer must fit a
    page to (label or roll stock, or a configured ``exact``/``center`` fit), wider than
    tall; else DEFAULT_SIZE_HMM."""
    for s in stock.stocks if stock is not None else ():
        if stock is not None and stock.fit_of(s) != "scale":
            return (s.long, s.short)
    return DEFAULT_SIZE_HMM


def check_base(base: str) -> str:
    """``base`` as an http(s) origin (and path) without a trailing slash; raises
    errors.InvalidRequest when it is not one (no user info, query or fragment)."""
    why = None
    try:
        parts = urllib.parse.urlsplit(base)
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError:
        why = "not a URL"
    else:
        if parts.scheme not in ("http", "https") or not parts.hostname:
            why = "an http:// or https:// URL with a host, e.g. http://print.example.org:8631"
        elif "@" in parts.netloc or parts.query or parts.fragment:
            why = "no user, password, query or fragment"
        elif not _HOST_CHARS.match(parts.netloc) or len(base) > MAX_BASE_CHARS:
            why = f"a host of letters, digits, '.', '-' and a port; at most {MAX_BASE_CHARS} chars"
    if why is not None:
        raise errors.InvalidRequest(
            f"the base URL {base[:80]!r} cannot be put on a sticker: {why}",
            [errors.FieldProblem("query.base", why)],
        )
    return base.rstrip("/")


def is_loopback(host: str) -> bool:
    """``host`` (a name or an address, IPv6 in brackets or not) names this box itself."""
    host = host.lower().rstrip(".")
    if host == "localhost" or host.endswith(".localhost"):
        return True
    with contextlib.suppress(ValueError):
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    return False


def box_address() -> str | None:
    """The first IPv4 address of this machine's interfaces that is neither loopback nor
    link-local (None: none). Read from the interfaces (ifaddr), never by resolving the host
    name, which many systems map to 127.0.1.1."""
    for adapter in ifaddr.get_adapters():
        for ip in adapter.ips:
            if not ip.is_IPv4:
                continue
            addr = ipaddress.IPv4Address(str(ip.ip))
            if not (addr.is_loopback or addr.is_link_local or addr.is_unspecified):
                return str(addr)
    return None


def choose_base(
    asked: str | None,
    configured: str | None,
    origin: str,
    port: int | None,
    find_address: Callable[[], str | None] | None = None,
) -> str:
    """The release pages' base URL for a sticker, first found: ``asked`` (the ``base``
    parameter); ``configured`` (``[release] public_url``); ``origin``, the address the
    caller reached the appliance at (``scheme://host[:port]``), unless loopback; this
    machine's interface address (``find_address``, default box_address) with ``port``,
    the port the appliance listens on.

    Raises errors.StickerBaseLoopback when none is found or what is found is loopback
    anyway: a phone cannot reach it."""
    base = asked if asked is not None else configured
    if base is None:
        base = origin
        if _loopback_url(origin):
            box = (find_address or box_address)()
            scheme = urllib.parse.urlsplit(origin).scheme or "http"
            base = "" if box is None else f"{scheme}://{box}" + (f":{port}" if port else "")
    if not base or _loopback_url(base):
        raise errors.StickerBaseLoopback()
    return base


def _loopback_url(url: str) -> bool:
    """``url``'s host is this box itself (a URL that does not parse is check_base's to refuse)."""
    try:
        host = urllib.parse.urlsplit(url).hostname
    except ValueError:
        return False
    return host is not None and is_loopback(host)


def release_url(base: str, name: str) -> str:
    """The printer's release page: ``{base}/release/{name}``."""
    return f"{base.rstrip('/')}/release/{name}"


async def sticker(name: str, base: str, stock: StockView | None, pool: RenderPool | None) -> bytes:
    """The sticker of printer ``name`` as a one-page PDF, drawn by ``pool``'s workers.

    Raises errors.InvalidRequest (a bad ``base``), errors.RenderFailed (no render pool,
    or the workers could not draw it now).
    """
    url = release_url(check_base(base), name)
    if pool is None:  # an appliance built without a render pool
        raise errors.RenderFailed("this appliance has no render workers")
    return await pool.sticker(name, url, page_size(stock))
