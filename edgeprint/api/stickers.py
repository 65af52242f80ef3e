"""GET /v1/printers/{name}/sticker.pdf (tech): a printer's sticker to print and put on it.

The QR code points at ``{base}/release/{name}``, where ``base`` is, first found:
the ``base`` query parameter; ``[release] public_url``; the address the caller
reached the appliance at (the URL a technician's browser or ``edgeprint --url``
used), unless that is a loopback address a phone could not reach; the box's own
first non-loopback IPv4 address and the port the request came in on.
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket

from aiohttp import web

from edgeprint import errors
from edgeprint.api.app import _deps, _query
from edgeprint.api.uploads import invalid
from edgeprint.service import stickers


def _loopback(host: str) -> bool:
    if host == "localhost" or host.endswith(".localhost"):
        return True
    with contextlib.suppress(ValueError):
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    return False


def _box_address() -> str | None:
    """The first non-loopback IPv4 address of this box's host name (None: none found)."""
    try:
        found = socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET)
    except OSError:
        return None
    for *_, addr in found:
        ip = str(addr[0])
        if not ipaddress.ip_address(ip).is_loopback:
            return ip
    return None


def base_for(request: web.Request, asked: str | None) -> str:
    """The release pages' base URL for a sticker (see the module docstring)."""
    if asked is not None:
        return asked
    configured = _deps(request).config.release.public_url
    if configured is not None:
        return configured
    origin = f"{request.scheme}://{request.host}"
    host = request.url.host or ""
    if not _loopback(host):
        return origin
    box = _box_address()
    if box is None:
        return origin
    port = request.url.port
    return f"{request.scheme}://{box}" + (f":{port}" if port else "")


async def printer_sticker(request: web.Request) -> web.Response:
    """GET /v1/printers/{name}/sticker.pdf?base= (tech)."""
    deps = _deps(request)
    name = request.match_info["name"]
    problems: list[errors.FieldProblem] = []
    q = _query(request, {"base"}, problems)
    if problems:
        raise invalid("invalid query parameters", problems, "query")
    if deps.config.printer(name) is None:
        raise errors.PrinterNotFound(name)
    stock = next((s.stock for s in deps.printers() if s.name == name), None)
    pdf = await stickers.sticker(
        name, base_for(request, q.get("base")), stock, deps.service.renderer
    )
    return web.Response(
        body=pdf,
        content_type="application/pdf",
        headers={"Content-Disposition": f'attachment; filename="sticker-{name}.pdf"'},
    )
