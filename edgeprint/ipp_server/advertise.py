"""DNS-SD advertising of the IPP queues (python-zeroconf's one home).

One service per printer and per pool, named ``edgeprint <queue>`` (python-zeroconf
renames it ``edgeprint <queue>-2`` if another appliance on the LAN has the name), with
the TXT keys of the IPP Everywhere (PWG 5100.14 §4.2) / Bonjour Printing specifications
that apply to a PDF queue. The type follows ``[server] tls``: ``_ipps._tcp`` (TXT
``TLS=1.2``, an https ``adminurl``) when the port serves TLS, ``_ipp._tcp`` only when it
speaks plain HTTP — one port never speaks both, so one type is advertised, never both.

Each service is also under the subtypes ``_print`` (IPP Everywhere, PWG 5100.14) and
``_universal`` (AirPrint): ``_print._sub._ipps._tcp``. python-zeroconf answers one type
per service name in a responder (a second registration of the name is refused), so each
subtype has a responder of its own, registered once the name is won, without probing
again (``cooperating_responders``: the name is this appliance's).
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import socket
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from edgeprint import background
from edgeprint.config import Config
from edgeprint.documents import formats
from edgeprint.ipp_server import attributes as A
from edgeprint.logs import log_event

# zeroconf is imported where it is used: an appliance that does not advertise never loads
# it (issue 28: start-up imports what the configuration needs).
if TYPE_CHECKING:
    from zeroconf import InterfaceChoice, ServiceInfo
    from zeroconf.asyncio import AsyncZeroconf

log = logging.getLogger(__name__)

SERVICE_TYPE = "_ipp._tcp.local."
IPPS_SERVICE_TYPE = "_ipps._tcp.local."
#: Service subtypes: IPP Everywhere's and AirPrint's (what iOS browses for).
SUBTYPES = ("_print", "_universal")
#: PaperMax (Bonjour Printing 1.2): the largest queue media is A4 (iso_a4_210x297mm)
PAPER_MAX = "legal-A4"


def service_type(config: Config) -> str:
    """``_ipps._tcp`` when the port serves TLS, else ``_ipp._tcp`` (plain IPP)."""
    return IPPS_SERVICE_TYPE if config.server.serves_tls else SERVICE_TYPE


def queue_names(config: Config) -> list[str]:
    """Every queue: the printers, then the pools."""
    return [p.name for p in config.printers] + list(config.pools)


def _addresses(host: str) -> list[str]:
    """The addresses to announce for an API bound to ``host`` (all of the box's for 0.0.0.0/::)."""
    addr = ipaddress.ip_address(host) if host not in ("", "localhost") else None
    if addr is not None and not addr.is_unspecified:
        return [host]
    try:
        found = socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET)
    except OSError:
        found = []
    mine = {str(info[4][0]) for info in found}
    return sorted(a for a in mine if not a.startswith("127.")) or ["127.0.0.1"]


def service_info(config: Config, queue: str, host: str, port: int, server: str) -> ServiceInfo:
    """The DNS-SD record of one queue."""
    uuid = A.Queue(queue, "", (), False, "", "", "none", 0).uuid.removeprefix("urn:uuid:")
    addresses = _addresses(host)
    admin_host = addresses[0] if ":" not in addresses[0] else f"[{addresses[0]}]"
    tls = config.server.serves_tls
    stype = service_type(config)
    txt = {
        "txtvers": "1",
        "qtotal": "1",
        "rp": f"ipp/print/{queue}",
        "ty": f"edgeprint {queue}",
        "note": "",
        "product": "(edgeprint)",
        # raw languages are left out: a driverless client picks its format from pdl
        "pdl": ",".join(
            f
            for f in formats.DOCUMENT_FORMATS
            if f != formats.OCTET_STREAM and f not in formats.RAW_FORMATS
        ),
        "URF": ",".join(A.URF_SUPPORTED),  # AirPrint clients look for it
        "UUID": uuid,
        "Color": "F",
        "Duplex": "F",
        "kind": "document",
        "PaperMax": PAPER_MAX,
        "adminurl": f"{'https' if tls else 'http'}://{admin_host}:{port}/",
        "priority": "50",
        # AirPrint: how to authenticate ("none" when the queues are open)
        "air": "username,password" if config.ipp.auth == "basic" else "none",
    }
    if tls:
        txt["TLS"] = "1.2"  # the lowest TLS version served (certificates.server_context)
    # No "mopria-certified": edgeprint is not certified, and the key claims it.
    from zeroconf import ServiceInfo

    return ServiceInfo(
        stype,
        f"edgeprint {queue}.{stype}",
        port=port,
        properties=txt,
        server=server,
        parsed_addresses=addresses,
    )


def subtype_info(info: ServiceInfo, subtype: str) -> ServiceInfo:
    """``info`` (its name, port, host and TXT) under ``<subtype>._sub.<its type>``."""
    from zeroconf import ServiceInfo

    return ServiceInfo(
        f"{subtype}._sub.{info.type}",
        info.name,
        port=info.port,
        properties=info.text,
        server=info.server,
        parsed_addresses=info.parsed_addresses(),
    )


@contextlib.asynccontextmanager
async def advertised(config: Config, host: str, port: int) -> AsyncIterator[list[ServiceInfo]]:
    """Advertise every queue while the block runs (nothing when ``[ipp] advertise`` is off).

    A network without multicast is logged once and the appliance runs on unadvertised.
    """
    if not (config.ipp.enabled and config.ipp.advertise):
        yield []
        return
    from zeroconf import InterfaceChoice, IPVersion
    from zeroconf.asyncio import AsyncZeroconf

    loopback = host not in ("", "0.0.0.0", "::") and ipaddress.ip_address(host).is_loopback
    interfaces: InterfaceChoice | list[str] = [host] if loopback else InterfaceChoice.All
    server = f"{socket.gethostname().split('.')[0]}.local."
    infos = [service_info(config, q, host, port, server) for q in queue_names(config)]
    responders: list[AsyncZeroconf] = []
    try:
        for _ in range(1 + len(SUBTYPES)):  # the type's, then one per subtype
            responders.append(AsyncZeroconf(interfaces=interfaces, ip_version=IPVersion.V4Only))
    except OSError as exc:
        for made in responders:
            await made.async_close()
        log_event(
            log,
            "ipp_advertise_failed",
            message="DNS-SD advertising unavailable",
            level=logging.WARNING,
            error=str(exc),
        )
        yield []
        return

    async def register() -> None:
        # Probing and announcing take about a second per name (RFC 6762 §8): in the
        # background, all at once, so the API is ready without waiting for them.
        zc, *subs = responders
        announced = await asyncio.gather(
            *(zc.async_register_service(info, allow_name_change=True) for info in infos)
        )
        await asyncio.gather(*announced)
        # the names are won (maybe renamed "…-2"): the same services under each subtype
        announced = await asyncio.gather(
            *(
                sub.async_register_service(subtype_info(info, st), cooperating_responders=True)
                for sub, st in zip(subs, SUBTYPES, strict=True)
                for info in infos
            )
        )
        await asyncio.gather(*announced)
        log_event(
            log, "ipp_advertised", message="IPP queues advertised", queues=[i.name for i in infos]
        )

    try:
        async with background.running(register(), "ipp-advertise"):
            yield infos
    finally:
        for responder in responders:
            await responder.async_unregister_all_services()
            await responder.async_close()
