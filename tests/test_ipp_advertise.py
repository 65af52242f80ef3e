"""DNS-SD: the appliance advertises each IPP queue, found by browsing with python-zeroconf on loopback.

Multicast must be on for the loopback interface (``ip link set lo multicast on``);
the fixture turns it on when it is off (root) and back off afterwards.
"""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from zeroconf import IPVersion, ServiceStateChange, Zeroconf
from zeroconf.asyncio import AsyncServiceBrowser, AsyncServiceInfo, AsyncZeroconf

from edgeprint.config import parse_config
from edgeprint.ipp_server import advertise
from tests.conftest import config_dict
from tests.polling import eventually
from tests.rig_fixtures import in_ci


def _lo_multicast() -> bool:
    flags = Path("/sys/class/net/lo/flags").read_text().strip()
    return bool(int(flags, 16) & 0x1000)  # IFF_MULTICAST


@pytest.fixture
def loopback_multicast() -> Iterator[None]:
    """Multicast on ``lo`` for the test (turned on, then off again, when it was off)."""
    if _lo_multicast():
        yield
        return
    done = subprocess.run(
        ["ip", "link", "set", "lo", "multicast", "on"], capture_output=True, check=False
    )
    if done.returncode != 0:
        why = f"cannot turn on multicast on lo: {done.stderr.decode().strip()}"
        if in_ci():
            pytest.fail(why, pytrace=False)
        pytest.skip(why)
    try:
        yield
    finally:
        subprocess.run(["ip", "link", "set", "lo", "multicast", "off"], check=False)


async def _browse(
    until: Callable[[set[str]], bool],
    timeout_s: float = 10.0,
    types: tuple[str, ...] = (advertise.SERVICE_TYPE,),
) -> set[str]:
    """Names of the ``types`` services seen on loopback once ``until`` holds (deadline)."""
    seen: set[str] = set()

    def changed(
        zeroconf: Zeroconf, service_type: str, name: str, state_change: ServiceStateChange
    ) -> None:
        if state_change is ServiceStateChange.Added:
            seen.add(name)

    azc = AsyncZeroconf(interfaces=["127.0.0.1"], ip_version=IPVersion.V4Only)
    browser = AsyncServiceBrowser(azc.zeroconf, list(types), handlers=[changed])
    try:
        await eventually(
            lambda: until(seen), lambda: f"more than {sorted(seen)}", timeout_s=timeout_s
        )
        return seen
    finally:
        await browser.async_cancel()
        await azc.async_close()


async def _resolve(name: str, service_type: str = advertise.SERVICE_TYPE) -> AsyncServiceInfo:
    azc = AsyncZeroconf(interfaces=["127.0.0.1"], ip_version=IPVersion.V4Only)
    try:
        info = AsyncServiceInfo(service_type, name)
        assert await info.async_request(azc.zeroconf, 5000), f"{name} did not resolve"
        return info
    finally:
        await azc.async_close()


@pytest.mark.usefixtures("loopback_multicast")
async def test_every_queue_is_advertised_with_its_txt_record(
    make_appliance: Callable[..., Any],
) -> None:
    """Each printer and pool is an _ipp._tcp service (also under _print._sub) whose SRV port is the API's and whose TXT says rp, pdl, UUID and adminurl."""
    async with make_appliance(sections={"ipp": {"advertise": True}}) as app:
        wanted = {
            f"edgeprint {q}.{advertise.SERVICE_TYPE}"
            for q in ("printer-01", "printer-02", "printer-03", "lobby")
        }
        await _browse(lambda seen: wanted <= seen)
        sub = (f"_print._sub.{advertise.SERVICE_TYPE}",)
        await _browse(lambda seen: wanted <= seen, types=sub)
        info = await _resolve(f"edgeprint lobby.{advertise.SERVICE_TYPE}")
        assert info.port == app.running.port
        assert info.parsed_addresses() == ["127.0.0.1"]
        txt = {k.decode(): (v or b"").decode() for k, v in info.properties.items()}
        assert txt["rp"] == "ipp/print/lobby"
        assert txt["pdl"] == "application/pdf,image/pwg-raster,image/urf,image/jpeg"
        assert txt["URF"] == "V1.4,CP1,W8,SRGB24,RS300-600,DM1"
        assert txt["UUID"] == str(uuid.uuid5(uuid.NAMESPACE_URL, "edgeprint:ipp/print/lobby"))
        assert txt["adminurl"] == f"http://127.0.0.1:{app.running.port}/"
        assert txt["txtvers"] == "1"
        assert (txt["kind"], txt["PaperMax"], txt["air"]) == ("document", "legal-A4", "none")
        assert "TLS" not in txt


async def test_nothing_is_advertised_when_advertise_is_off(tmp_path: Path) -> None:
    """[ipp] advertise = false (or enabled = false) starts no DNS-SD responder at all."""
    for ipp in ({"advertise": False}, {"enabled": False, "advertise": True}):
        cfg = parse_config({**config_dict(tmp_path / "data"), "ipp": ipp})
        async with advertise.advertised(cfg, "127.0.0.1", 8631) as infos:
            assert infos == []


def _txt(info: AsyncServiceInfo) -> dict[str, str]:
    return {k.decode(): (v or b"").decode() for k, v in info.properties.items()}


@pytest.mark.usefixtures("loopback_multicast")
async def test_with_tls_each_queue_is_ipps_only_with_the_airprint_tls_keys(
    tmp_path: Path,
) -> None:
    """tls = "self-signed": every queue is an _ipps._tcp service (TXT TLS=1.2, https adminurl,
    no certification claimed) and no _ipp._tcp one is advertised, since the port speaks only TLS."""
    cfg = parse_config(
        {
            **config_dict(tmp_path / "data"),
            "server": {**config_dict(tmp_path / "data")["server"], "tls": "self-signed"},
            "ipp": {"advertise": True, "auth": "basic"},
        }
    )
    queues = ("printer-01", "printer-02", "printer-03", "lobby")
    async with advertise.advertised(cfg, "127.0.0.1", 8631) as infos:
        assert {i.type for i in infos} == {advertise.IPPS_SERVICE_TYPE}
        wanted = {f"edgeprint {q}.{advertise.IPPS_SERVICE_TYPE}" for q in queues}
        # Both types browsed at once: the _ipps names are announced together, so by the
        # time all of them are seen an _ipp one would have been seen too.
        both = (advertise.SERVICE_TYPE, advertise.IPPS_SERVICE_TYPE)
        seen = await _browse(lambda seen: wanted <= seen, types=both)
        assert seen == wanted
        # IPP Everywhere's and AirPrint's subtypes name the same services
        for subtype in advertise.SUBTYPES:
            sub = (f"{subtype}._sub.{advertise.IPPS_SERVICE_TYPE}",)
            assert await _browse(lambda seen: wanted <= seen, types=sub) == wanted
        info = await _resolve(
            f"edgeprint lobby.{advertise.IPPS_SERVICE_TYPE}", advertise.IPPS_SERVICE_TYPE
        )
        assert info.port == 8631
        txt = _txt(info)
        assert txt["TLS"] == "1.2"
        assert txt["adminurl"] == "https://127.0.0.1:8631/"
        assert txt["rp"] == "ipp/print/lobby"
        assert txt["air"] == "username,password"
        assert txt["UUID"] == str(uuid.uuid5(uuid.NAMESPACE_URL, "edgeprint:ipp/print/lobby"))
        assert (txt["kind"], txt["PaperMax"], txt["Color"], txt["Duplex"]) == (
            "document",
            "legal-A4",
            "F",
            "F",
        )
        assert txt["URF"] == "V1.4,CP1,W8,SRGB24,RS300-600,DM1"
        assert "mopria-certified" not in txt


@pytest.mark.parametrize("tls", [None, "off"])
def test_plain_ipp_is_advertised_only_when_tls_is_off_or_absent(
    tmp_path: Path, tls: str | None
) -> None:
    """tls absent or "off": _ipp._tcp with an http adminurl and no TLS key."""
    server = {**config_dict(tmp_path / "data")["server"], **({"tls": tls} if tls else {})}
    cfg = parse_config({**config_dict(tmp_path / "data"), "server": server})
    assert advertise.service_type(cfg) == advertise.SERVICE_TYPE
    info = advertise.service_info(cfg, "lobby", "127.0.0.1", 8631, "box.local.")
    assert info.type == advertise.SERVICE_TYPE
    txt = {k.decode(): (v or b"").decode() for k, v in info.properties.items()}
    assert txt["adminurl"] == "http://127.0.0.1:8631/"
    assert "TLS" not in txt
