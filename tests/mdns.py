"""Multicast DNS on loopback for tests: printers advertised with python-zeroconf on 127.0.0.1.

Registered from tests/conftest.py with ``pytest_plugins``. ``lo`` gets the MULTICAST flag
when it lacks it (root and ``ip`` from iproute2 needed); it keeps it after.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from zeroconf import IPVersion, ServiceInfo, Zeroconf

from tests.rig_fixtures import in_ci

IFF_MULTICAST = 0x1000
LOOPBACK = "127.0.0.1"


def _lo_flags() -> int:
    return int(Path("/sys/class/net/lo/flags").read_text(), 16)


@pytest.fixture
def lo_multicast() -> None:
    """Multicast on the loopback interface, switched on for the test if it was off.

    It is left on: the flag is harmless, and turning it off could pull it from under
    another test on this machine that relies on it at the same time.
    """
    if not _lo_flags() & IFF_MULTICAST:
        if os.geteuid() != 0 or shutil.which("ip") is None:
            why = "multicast is off on lo and switching it on needs root and ip (iproute2)"
            if in_ci():
                pytest.fail(why, pytrace=False)
            pytest.skip(why)
        subprocess.run(["ip", "link", "set", "lo", "multicast", "on"], check=True)


@pytest.fixture
def advertiser(lo_multicast: None) -> Iterator[Zeroconf]:
    """A multicast DNS responder on 127.0.0.1, closed (services withdrawn) after the test."""
    zc = Zeroconf(interfaces=[LOOPBACK], ip_version=IPVersion.V4Only)
    try:
        yield zc
    finally:
        zc.unregister_all_services()
        zc.close()


def advertise(zc: Zeroconf, service: str, instance: str, port: int, **txt: str) -> None:
    zc.register_service(
        ServiceInfo(
            f"{service}.local.",
            f"{instance}.{service}.local.",
            addresses=[socket.inet_aton(LOOPBACK)],
            port=port,
            properties=txt,
            server=f"{uuid.uuid4().hex[:12]}.local.",
        )
    )


def port_of(uri: str) -> int:
    """The port of ``ipp://host:PORT/path``."""
    return int(uri.split(":")[2].split("/")[0])
