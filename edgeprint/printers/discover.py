"""Finding IPP printers on the LAN: DNS-SD browse (python-zeroconf), then Get-Printer-Attributes.

Printers advertise ``_ipp._tcp`` (and ``_ipps._tcp`` for IPP over TLS) with TXT keys
``rp`` (resource path, e.g. ``ipp/print``), ``ty`` (make and model) and ``pdl`` (formats)
(PWG 5100.14 §3.1, Bonjour Printing 1.2). Each service found is resolved to an address
and asked, read-only, for its make and model, state, formats and media ready.

The URI uses the advertised IPv4 address, not the ``.local`` host name: the appliance
does not resolve mDNS names. A printer whose address changes (DHCP) needs a reservation.
"""

from __future__ import annotations

import asyncio
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import aiohttp
from zeroconf import DNSQuestionType, InterfaceChoice, IPVersion, ServiceStateChange, Zeroconf
from zeroconf.asyncio import AsyncServiceBrowser, AsyncServiceInfo, AsyncZeroconf

from edgeprint import errors
from edgeprint.ipp import names
from edgeprint.printers.ipp import IppClient

SERVICE_TYPES = ("_ipp._tcp.local.", "_ipps._tcp.local.")
_DESCRIPTION = ("printer-make-and-model", "media-ready", "printer-info")
_QM = DNSQuestionType.QM
#: TXT ``product`` of the queues an edgeprint appliance advertises (ipp_server/advertise.py):
#: an appliance, not a printer; offering it to setup would make a box print to itself.
EDGEPRINT_PRODUCT = "(edgeprint)"
#: How long one service's address lookup may take (seconds).
RESOLVE_TIMEOUT_S = 2.0


@dataclass(frozen=True)
class Advert:
    """One DNS-SD service instance of an IPP printer."""

    instance: str  # the service instance name, e.g. "Lobby HP LaserJet"
    service: str  # "_ipp._tcp" or "_ipps._tcp"
    uri: str  # ipp://192.0.2.7:631/ipp/print
    txt: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class FoundPrinter:
    """An advertised printer and what it says about itself (``error`` when it did not)."""

    instance: str
    service: str
    uri: str
    make_and_model: str | None
    state: str | None  # idle, processing, stopped
    state_reasons: list[str]
    formats: list[str]
    media_ready: list[str]
    error: str | None

    def as_json(self) -> dict[str, Any]:
        """The stable JSON form (``edgeprint discover --json``)."""
        return asdict(self)


async def browse(timeout_s: float, interfaces: Sequence[str] | None = None) -> list[Advert]:
    """Every ``_ipp._tcp``/``_ipps._tcp`` service answering within ``timeout_s`` seconds.

    ``interfaces`` (IPv4 addresses) limits the browse to those interfaces; default all.
    """
    found: dict[tuple[str, str], None] = {}

    def on_change(
        zeroconf: Zeroconf, service_type: str, name: str, state_change: ServiceStateChange
    ) -> None:
        if state_change in (ServiceStateChange.Added, ServiceStateChange.Updated):
            found[(service_type, name)] = None

    azc = AsyncZeroconf(
        interfaces=list(interfaces) if interfaces else InterfaceChoice.All,
        ip_version=IPVersion.V4Only,
    )
    try:
        # QM: answers come by multicast to every listener. A QU question asks for a unicast
        # answer to port 5353, which the kernel hands to one of the sockets bound there
        # (SO_REUSEPORT): when another mDNS stack runs on this machine, not always ours.
        browser = AsyncServiceBrowser(
            azc.zeroconf, list(SERVICE_TYPES), handlers=[on_change], question_type=_QM
        )
        try:
            await asyncio.sleep(timeout_s)  # the browse window: answers arrive meanwhile
        finally:
            await browser.async_cancel()
        adverts = await asyncio.gather(*(_resolve(azc, t, n) for t, n in found))
    finally:
        await azc.async_close()
    return sorted((a for a in adverts if a is not None), key=lambda a: (a.instance, a.service))


async def _resolve(azc: AsyncZeroconf, service_type: str, name: str) -> Advert | None:
    info = AsyncServiceInfo(service_type, name)
    if not await info.async_request(azc.zeroconf, int(RESOLVE_TIMEOUT_S * 1000), question_type=_QM):
        return None
    addresses = info.parsed_addresses(IPVersion.V4Only)
    if not addresses or not info.port:
        return None
    txt = {
        k.decode("utf-8", "replace").lower(): (v or b"").decode("utf-8", "replace")
        for k, v in info.properties.items()
    }
    if txt.get("product") == EDGEPRINT_PRODUCT:
        return None
    scheme = "ipps" if service_type.startswith("_ipps.") else "ipp"
    path = txt.get("rp", "ipp/print").lstrip("/")
    instance = name.removesuffix("." + service_type)
    return Advert(
        instance=instance,
        service=service_type.removesuffix(".local."),
        uri=f"{scheme}://{addresses[0]}:{info.port}/{path}",
        txt=txt,
    )


async def describe(
    advert: Advert, session: aiohttp.ClientSession, timeout_s: float
) -> FoundPrinter:
    """Ask the advertised printer (read-only) for its state, formats, make and model, media."""
    client = IppClient(advert.uri, session, request_timeout_s=timeout_s)
    try:
        status = await client.get_printer_attributes()
        extra = await client.get_printer_description(_DESCRIPTION)
    except errors.PrinterError as exc:
        return FoundPrinter(
            instance=advert.instance,
            service=advert.service,
            uri=advert.uri,
            make_and_model=advert.txt.get("ty") or None,
            state=None,
            state_reasons=[],
            formats=sorted(f for f in advert.txt.get("pdl", "").split(",") if f),
            media_ready=[],
            error=f"{exc.operation}: {exc.detail}",
        )
    model = extra.get("printer-make-and-model") or advert.txt.get("ty") or None
    return FoundPrinter(
        instance=advert.instance,
        service=advert.service,
        uri=advert.uri,
        make_and_model=str(model) if model else None,
        state=names.state_keyword(status.state),
        state_reasons=list(status.reasons),
        formats=sorted(status.formats),
        media_ready=[str(m) for m in _as_list(extra.get("media-ready"))],
        error=None,
    )


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, list | tuple) else [value]


async def discover(
    timeout_s: float, interfaces: Sequence[str] | None = None, request_timeout_s: float = 5.0
) -> list[FoundPrinter]:
    """Browse for ``timeout_s`` seconds, then ask every printer found (concurrently)."""
    adverts = await browse(timeout_s, interfaces)
    if not adverts:
        return []
    # Discovery only reads attributes: a printer's self-signed certificate (ipps) is
    # accepted here; printing later checks it as configured.
    connector = aiohttp.TCPConnector(ssl=False)
    async with aiohttp.ClientSession(connector=connector) as session:
        return list(
            await asyncio.gather(*(describe(a, session, request_timeout_s) for a in adverts))
        )


def config_name(instance: str, taken: Sequence[str] = ()) -> str:
    """A ``[[printers]].name`` ([a-z0-9-]{1,40}) made from a DNS-SD instance name."""
    ascii_ = unicodedata.normalize("NFKD", instance).encode("ascii", "ignore").decode()
    base = re.sub(r"[^a-z0-9]+", "-", ascii_.lower()).strip("-")[:36].strip("-") or "printer"
    name, n = base, 2
    while name in taken:
        name, n = f"{base}-{n}", n + 1
    return name
