"""GET /v1/printers/{name}/sticker.pdf (tech): a printer's sticker to print and put on it.

The QR code points at ``{base}/release/{name}``, where ``base`` is, first found:
the ``base`` query parameter; ``[release] public_url``; the address the caller
reached the appliance at (the URL a technician's browser or ``edgeprint --url``
used), unless that is a loopback address a phone could not reach; the first IPv4
address of the machine's interfaces that is neither loopback nor link-local, with
the port the appliance listens on. When what is found is loopback anyway (or
nothing is), 422 ``sticker-base-loopback``: a QR code of 127.0.0.1 leads nowhere.
"""

from __future__ import annotations

from aiohttp import web

from edgeprint import errors
from edgeprint.api.app import deps_of, query_params
from edgeprint.api.uploads import invalid
from edgeprint.service import stickers


def _listen_port(request: web.Request) -> int | None:
    """The port the appliance took this request on (its socket's), else the configured one."""
    sockname = request.transport.get_extra_info("sockname") if request.transport else None
    if isinstance(sockname, tuple) and len(sockname) >= 2 and isinstance(sockname[1], int):
        return sockname[1]
    return deps_of(request).config.server.port or None


def base_for(request: web.Request, asked: str | None) -> str:
    """The release pages' base URL for a sticker (see the module docstring); raises
    errors.StickerBaseLoopback when a phone could not reach any found."""
    return stickers.choose_base(
        asked,
        deps_of(request).config.release.public_url,
        f"{request.scheme}://{request.host}",
        _listen_port(request),
    )


async def printer_sticker(request: web.Request) -> web.Response:
    """GET /v1/printers/{name}/sticker.pdf?base= (tech)."""
    deps = deps_of(request)
    name = request.match_info["name"]
    problems: list[errors.FieldProblem] = []
    q = query_params(request, {"base"}, problems)
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
