"""A client's address as the front doors judge it: the socket's peer, never a proxy header."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def peer_address(remote: str | None) -> Address | None:
    """``request.remote`` as an address (an IPv4-mapped IPv6 one as IPv4, a zone dropped);
    None when there is none or it is not an address."""
    if not remote:
        return None
    try:
        addr = ipaddress.ip_address(remote.split("%", 1)[0])
    except ValueError:
        return None
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        return addr.ipv4_mapped
    return addr


def in_networks(remote: str | None, networks: Iterable[Network]) -> bool:
    """The peer is in one of ``networks``."""
    addr = peer_address(remote)
    return addr is not None and any(addr.version == n.version and addr in n for n in networks)
