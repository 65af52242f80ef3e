"""``POST /ipp/print/{queue}`` and a job's ``…/{job-id}``: the HTTP side of the IPP queues.

Addresses (``[ipp] allowed_networks``), Basic auth, the rate limit, and the
body's size and time limits are checked here; the IPP itself is
:class:`edgeprint.ipp_server.server.IppServer`'s. Every answer to a request
that got this far is an IPP response (``application/ipp``), HTTP 200, except
401 (Basic auth wanted) and 403 (address not allowed), which carry one too.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import functools
import importlib.resources
import ipaddress
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from aiohttp import web

from edgeprint import errors
from edgeprint.api import peers, plain_http
from edgeprint.faults import crash_point
from edgeprint.ipp import codec
from edgeprint.ipp.names import Operation, Status
from edgeprint.ipp_server import limits
from edgeprint.ipp_server.request import Context
from edgeprint.ipp_server.server import IppServer
from edgeprint.ipp_server.statuses import status_for
from edgeprint.logs import log_event
from edgeprint.service import Caller
from edgeprint.spool import StagedDocument

if TYPE_CHECKING:
    from edgeprint.api.app import Deps

log = logging.getLogger(__name__)

PATH = "/ipp/print/{name}"
#: A job's job-uri: it takes the job operations on that job (DESIGN §11).
JOB_PATH = "/ipp/print/{name}/{job}"
#: Operations whose request carries a document after the attributes.
_WITH_DOCUMENT = {Operation.PRINT_JOB, Operation.SEND_DOCUMENT}
CONTENT_TYPE = "application/ipp"
#: The attributes of a request may take this much besides the document.
ATTRIBUTES_BYTES = 64 * 1024
_CHUNK = 64 * 1024
_Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def _answer(status: int, detail: str, head: bytes, http_status: int = 200) -> web.Response:
    request_id = int.from_bytes(head[4:8], "big", signed=True) if len(head) >= 8 else 0
    version = (head[0], head[1]) if len(head) >= 2 and head[0] in (1, 2) else (2, 0)
    answer = codec.response(status, request_id, version=version, status_message=detail)
    body = limits.fit_message(answer).encode()
    return web.Response(status=http_status, body=body, content_type=CONTENT_TYPE)


class IppEndpoint:
    """The aiohttp handlers of the IPP queues and their icons: one per app (one IppServer,
    so a Create-Job's pending id is known to every route)."""

    def __init__(self, deps: Deps, correlation_id: web.RequestKey[str]) -> None:
        self.deps = deps
        self.correlation_id = correlation_id

    @functools.cached_property
    def server(self) -> IppServer:
        # Built on first use: build_app registers the route before anything runs.
        return IppServer(self.deps.service, self.deps.printers)

    @functools.cached_property
    def networks(self) -> list[_Network]:
        return [
            ipaddress.ip_network(n, strict=False) for n in self.deps.config.ipp.allowed_networks
        ]

    def _allowed(self, remote: str | None) -> bool:
        return peers.in_networks(remote, self.networks)

    def _basic(self, request: web.Request) -> tuple[str, str]:
        """(user, role) from Basic credentials; raises errors.Unauthorized."""
        scheme, _, encoded = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() != "basic":
            raise errors.Unauthorized("this queue needs HTTP Basic auth (token name, token)")
        try:
            user, sep, password = base64.b64decode(encoded, validate=True).decode().partition(":")
        except (binascii.Error, UnicodeDecodeError):
            raise errors.Unauthorized("malformed Basic credentials") from None
        token = self.deps.auth.authenticate(f"Bearer {password}", "kiosk", request.remote)
        if not sep or token.name != user:
            raise errors.Unauthorized("the user name must be the token's name")
        return token.name, token.role

    async def _peek_head(self, request: web.Request) -> bytes:
        """The request's version and request-id (8 bytes) for an early answer, if they come."""
        with contextlib.suppress(TimeoutError, OSError):
            async with asyncio.timeout(self.deps.config.server.body_timeout_s):
                return await request.content.read(8)
        return b""

    async def _read_head(self, request: web.Request) -> tuple[bytes, bytes | None]:
        """The request up to its end-of-attributes tag, and the document bytes that came
        with it (None: the operation carries no document, or the head is malformed, which
        the IPP server then answers). The document itself is never held in memory."""
        buf = bytearray()
        while True:
            chunk = await request.content.read(_CHUNK)
            buf += chunk
            try:
                message = codec.parse(bytes(buf))
            except errors.IppParseError as exc:
                if exc.truncated and chunk:
                    if len(buf) > ATTRIBUTES_BYTES:
                        raise errors.PayloadTooLarge(
                            "the IPP request's attributes", ATTRIBUTES_BYTES
                        ) from None
                    continue
                return bytes(buf), None
            start = len(buf) - len(message.data)
            first = bytes(buf[start:]) if message.operation_id in _WITH_DOCUMENT else None
            return bytes(buf[:start]), first

    async def _read_document(
        self, request: web.Request, first: bytes, limit: int, staged: StagedDocument
    ) -> None:
        """The rest of the body, streamed into ``staged`` (at most ``limit``)."""
        if len(first) > limit:
            raise errors.PayloadTooLarge("the document", limit)
        staged.write(first)
        crash_point("ipp_during_document")
        while chunk := await request.content.read(_CHUNK):
            if staged.size + len(chunk) > limit:
                raise errors.PayloadTooLarge("the document", limit)
            staged.write(chunk)

    async def handle(self, request: web.Request) -> web.Response:
        """One IPP request on one queue."""
        if not self.deps.config.ipp.enabled:
            raise web.HTTPNotFound()
        if not self._allowed(request.remote):
            return _answer(
                Status.CLIENT_ERROR_NOT_AUTHORIZED,
                "your address may not use this printer ([ipp] allowed_networks)",
                b"",
                403,
            )
        config = self.deps.config
        refused = plain_http.tls_only(request, config.server)  # issue 26: ipps:// only
        if refused is None and request.content_type != CONTENT_TYPE:
            raise errors.UnsupportedDocument(f"send IPP requests as {CONTENT_TYPE}")
        refused = refused or plain_http.token_refused(request, config.server)  # not in clear
        if refused is not None:
            head = await self._peek_head(request)  # status-message is text(255)
            return _answer(Status.CLIENT_ERROR_NOT_AUTHORIZED, refused[:255], head)
        name, role, user = f"ipp:{request.remote}", "kiosk", None
        if config.ipp.auth == "basic":
            try:
                user, role = self._basic(request)
            except (errors.TokenExpired, errors.Forbidden) as exc:  # known, but not now / here
                return _answer(Status.CLIENT_ERROR_NOT_AUTHORIZED, str(exc), b"", 403)
            except errors.EdgeprintError as exc:
                resp = _answer(Status.CLIENT_ERROR_NOT_AUTHENTICATED, str(exc), b"", 401)
                resp.headers["WWW-Authenticate"] = 'Basic realm="edgeprint", charset="UTF-8"'
                return resp
            name = user
        server = config.server
        head = b""
        document: StagedDocument | None = None
        with contextlib.ExitStack() as staging:  # the document is discarded unless a job took it
            try:
                await self.deps.rate_limiter.hit(name)
                async with asyncio.timeout(server.body_timeout_s):
                    limit = server.max_document_bytes + ATTRIBUTES_BYTES
                    if request.content_length is not None and request.content_length > limit:
                        head = await request.content.read(8)
                        raise errors.PayloadTooLarge("the IPP request", limit)
                    head, first = await self._read_head(request)
                    if first is not None:
                        document = staging.enter_context(
                            self.deps.service.documents.stage_document()
                        )
                        await self._read_document(
                            request, first, server.max_document_bytes, document
                        )
                        crash_point("ipp_after_document")
            except TimeoutError:
                late = errors.BodyTimeout(server.body_timeout_s)
                return _answer(Status.CLIENT_ERROR_TIMEOUT, str(late), head)
            except errors.EdgeprintError as exc:
                if isinstance(exc, errors.RateLimited):
                    self.deps.metrics.rate_limited.inc()
                status, detail = status_for(exc)
                return _answer(status, detail, head)
            except ConnectionResetError:
                log_event(
                    log,
                    "ipp_client_gone",
                    message="IPP client went away while sending its request",
                    queue=request.match_info["name"][:40],
                )
                return _answer(Status.CLIENT_ERROR_BAD_REQUEST, "the request was cut short", head)

            def not_found(text: str) -> web.Response:
                return _answer(Status.CLIENT_ERROR_NOT_FOUND, text, head[:8])

            host, s = request.host, "s" if request.secure else ""  # ipps:// and https:// over TLS
            queue = self.server.queue(
                request.match_info["name"], f"ipp{s}://{host}", f"http{s}://{host}/"
            )
            if queue is None:
                return not_found(
                    f"no queue {request.match_info['name'][:40]!r}; queues are printer and "
                    "pool names"
                )
            job = request.match_info.get("job")
            if job is not None and not (job.isascii() and job.isdigit()):
                return not_found(f"no job {job[:40]!r} on this queue; job-uris end in a job-id")
            caller = Caller(
                name, role, request.get(self.correlation_id), request.remote, "ipp-user"
            )
            ctx = Context(queue, caller, user, document, int(job) if job is not None else None)
            body = await self.server.handle(head, ctx)
        return web.Response(body=body, content_type=CONTENT_TYPE)

    def icon(self, size: int) -> Callable[[web.Request], Awaitable[web.Response]]:
        """The handler of ``GET /ipp/icons/{size}.png``: a queue icon (printer-icons); the
        same addresses as the queues may fetch it."""

        async def icon(request: web.Request) -> web.Response:
            if not self.deps.config.ipp.enabled:
                raise web.HTTPNotFound()
            if not self._allowed(request.remote):
                raise web.HTTPForbidden(
                    text="your address may not use this printer ([ipp] allowed_networks)"
                )
            return web.Response(
                body=_icon(size),
                content_type="image/png",
                headers={"Cache-Control": "max-age=86400"},
            )

        icon.__doc__ = f"GET /ipp/icons/{size}.png"
        return icon


#: The app's one endpoint (its IPP routes' handlers are bound to it).
ENDPOINT = web.AppKey("ipp_endpoint", IppEndpoint)


@functools.cache
def _icon(size: int) -> bytes:
    icons = importlib.resources.files("edgeprint.ipp_server") / "icons"
    return (icons / f"{size}.png").read_bytes()
