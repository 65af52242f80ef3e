"""What a request that came without TLS is answered (issue 26, items 1 and 3).

**Plain HTTP on the TLS port** (``[server] tls`` serving, ``allow_plain_http`` not true):
``GET``/``HEAD /healthz`` as usual (load balancers, systemd checks); a request carrying
``Authorization`` (any method, any other path) → ``426 Upgrade Required`` whose detail says
the credentials crossed the network in clear text and should be replaced (never a redirect:
a client following it would drop the header and be told it sent none); any other ``GET`` or
``HEAD`` → ``308 Permanent Redirect`` to the same path and query on ``https://<Host>``;
anything else (a POST of the API) → ``426``, problem+json ``upgrade-required`` naming the
``https://`` URL in ``detail`` and ``url``. An IPP request (a POST to a queue) is answered
in IPP by edgeprint.api.ipp with :func:`tls_only`'s message (``client-error-not-authorized``
naming ``ipps://``): CUPS and ipptool take any HTTP 426 as an offer of an RFC 2817 in-place
upgrade, which is not served, and would only say "Encryption is not supported". Nothing else
runs: no token is looked at, nothing is stored. The redirect's host is the Host header's
name when it is a plain name or address, with the port the request arrived on (never a port
the client chose).

**A token over plain HTTP from off the box** (TLS not serving, i.e. ``tls = "off"``, or a
venue that set ``allow_plain_http = false``): a request carrying ``Authorization`` (a
bearer token, IPP Basic credentials) from an address that is not loopback is refused
before the token is checked (loopback, or the box's own address it connected to, is
this machine: allowed): 426 ``upgrade-required`` for the API; the IPP front door
(edgeprint.api.ipp) answers ``client-error-not-authorized`` with :func:`token_refused`'s
message instead. With ``allow_plain_http = true``, or a config without ``tls`` (it predates
TLS: upgrading must not lock kiosks out), plain HTTP is served as it always was.

Every refusal is one log line with the peer address, the method and the path; never a
header's value.
"""

from __future__ import annotations

import logging
import re

from aiohttp import web

from edgeprint.api import peers, problems
from edgeprint.api.app import DEPS, Handler
from edgeprint.config import ServerConfig
from edgeprint.logs import log_event

log = logging.getLogger(__name__)

HEALTH_PATH = "/healthz"
IPP_PREFIX = "/ipp/print/"
#: A Host header whose name may go into a redirect (name or address, optional port).
_HOST_RE = re.compile(r"^([A-Za-z0-9.-]{1,253}|\[[0-9A-Fa-f:.]{2,45}\])(?::[0-9]{1,5})?$")


def is_loopback(remote: str | None) -> bool:
    """True when the peer address is this machine's own (127/8, ::1, ::ffff:127…)."""
    addr = peers.peer_address(remote)
    return addr is not None and addr.is_loopback


def from_this_machine(request: web.Request) -> bool:
    """The peer is this machine: a loopback address, or the very address it connected to
    (the CLI on the box reaching a LAN-bound appliance; the kernel routes that over lo, and
    no other machine can complete a handshake from an address of this one)."""
    if is_loopback(request.remote):
        return True
    sockname = request.transport.get_extra_info("sockname") if request.transport else None
    return sockname is not None and request.remote == sockname[0]


def _host(request: web.Request, server: ServerConfig) -> str:
    """``name:port``: the Host header's name if it is a plain name or address (else the
    socket's own address), and always the port the request arrived on."""
    sockname = request.transport.get_extra_info("sockname") if request.transport else None
    address, port = (sockname[0], sockname[1]) if sockname else (server.host, server.port)
    match = _HOST_RE.match(request.headers.get("Host", ""))
    if match:
        return f"{match.group(1)}:{port}"
    return f"[{address}]:{port}" if ":" in str(address) else f"{address}:{port}"


def secure_url(request: web.Request, server: ServerConfig) -> str:
    """The URL the request should have used: ``https://`` (``ipps://`` for a queue)."""
    scheme = "ipps" if request.path.startswith(IPP_PREFIX) else "https"
    return f"{scheme}://{_host(request, server)}{request.rel_url}"


def _log(request: web.Request, why: str, event: str) -> None:
    log_event(
        log,
        event,
        message=f"{why}: {request.method[:10]} {request.path[:200]} from {request.remote}",
        level=logging.WARNING,
        peer=request.remote,
        path=request.path[:200],
    )


def _upgrade_required(url: str, detail: str) -> web.Response:
    resp = problems.problem(426, "upgrade-required", detail, url=url)
    resp.headers["Upgrade"] = "TLS/1.2, HTTP/1.1"
    return resp


def _tls_port_refusal(request: web.Request, url: str) -> str:
    """Log a plain-HTTP request refused on the TLS port; the detail to answer it with."""
    if "Authorization" in request.headers:
        _log(
            request, "credentials sent in clear text to the TLS port refused", "plain_token_refused"
        )
        # ASCII (the URL is percent-encoded, the host checked): IPP cuts it to text(255) as is.
        return (
            f"this port speaks TLS only: use {url}; the credentials of this request crossed "
            "the network in clear text: replace them (a new token)"
        )
    _log(request, "plain HTTP request on the TLS port refused", "plain_http_refused")
    return f"this port speaks TLS only: use {url}"


def plain_port(request: web.Request, server: ServerConfig) -> web.Response | None:
    """The answer to a plain-HTTP request on the TLS port (None: /healthz, or an IPP
    request, which edgeprint.api.ipp refuses in IPP with :func:`tls_only`)."""
    if request.method in ("GET", "HEAD") and request.path == HEALTH_PATH:
        return None
    if request.method == "POST" and request.path.startswith(IPP_PREFIX):
        return None
    url = secure_url(request, server)
    if (
        request.method in ("GET", "HEAD")
        and not request.path.startswith(IPP_PREFIX)
        and "Authorization" not in request.headers
    ):
        return web.Response(status=308, headers={"Location": url})
    return _upgrade_required(url, _tls_port_refusal(request, url))


def tls_only(request: web.Request, server: ServerConfig) -> str | None:
    """Why an IPP request is refused for coming without TLS to the TLS port, or None."""
    if request.secure or not server.serves_tls or server.allow_plain_http:
        return None
    return _tls_port_refusal(request, secure_url(request, server))


def token_refused(request: web.Request, server: ServerConfig) -> str | None:
    """Why a request without TLS carrying credentials is refused, or None (it may go on)."""
    if request.secure or server.plain_tokens_allowed or "Authorization" not in request.headers:
        return None
    if from_this_machine(request):
        return None
    url = secure_url(request, server)
    _log(
        request, "credentials sent without TLS from another machine refused", "plain_token_refused"
    )
    # ASCII (the URL is percent-encoded, the host checked): IPP cuts it to text(255) as is.
    return (
        f"use {url}: tokens are refused over plain HTTP from other machines (set [server] "
        'tls = "self-signed"); replace this one, it crossed the network in clear text'
    )


@web.middleware
async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Runs inside edgeprint.api.app.middleware (correlation id, metrics, problems)."""
    server = request.app[DEPS].config.server
    if not request.secure:
        if server.serves_tls and not server.allow_plain_http:
            answer = plain_port(request, server)
            if answer is not None:
                return answer
        elif not request.path.startswith(IPP_PREFIX):  # the queues answer in IPP
            detail = token_refused(request, server)
            if detail is not None:
                return _upgrade_required(secure_url(request, server), detail)
    return await handler(request)
