"""What kiosks pin, shown on the box (issue 26 item 2): ``GET /v1/tls`` to a tech token and
``edgeprint tls fingerprint`` from the certificate file, else read over the network (said).

A real appliance serving TLS on loopback (``tls = "self-signed"`` with a pair made here);
the HTTP client pins the certificate it was given (aiohttp.Fingerprint).
"""

from __future__ import annotations

import asyncio
import datetime
import hashlib
import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from edgeprint import certificates, cli
from edgeprint.config import parse_config
from edgeprint.server import running
from edgeprint.timefmt import rfc3339_ms
from tests.conftest import KIOSK_TOKEN, TECH_TOKEN, config_dict, to_toml


def _rfc3339(when: datetime.datetime) -> str:
    return rfc3339_ms(when.timestamp())


def _expected(cert: certificates.Certificate, mode: str = "self-signed") -> dict[str, Any]:
    return {
        "tls": mode,
        "fingerprint": cert.fingerprint,
        "pin": cert.pin,
        "names": list(cert.names),
        "not_before": _rfc3339(cert.not_before),
        "not_after": _rfc3339(cert.not_after),
        "expires_soon": False,
    }


def _pinned(cert: certificates.Certificate) -> aiohttp.Fingerprint:
    der = certificates.read_certificate(cert.cert_file).public_bytes(
        certificates.serialization.Encoding.DER
    )
    return aiohttp.Fingerprint(hashlib.sha256(der).digest())


class Served:
    def __init__(self, url: str, cert: certificates.Certificate, port: int) -> None:
        self.url, self.cert, self.port = url, cert, port


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[Served]:
    etc = tmp_path / "etc"
    cert = certificates.make_self_signed(
        etc / "tls.crt", etc / "tls.key", ["localhost", "127.0.0.1"]
    )
    data = config_dict(tmp_path / "data")
    data["server"].update(
        {"tls": "self-signed", "cert_file": str(cert.cert_file), "key_file": str(cert.key_file)}
    )
    async with running(parse_config(data)) as run:
        yield Served(f"https://127.0.0.1:{run.port}", cert, run.port)


async def _get(url: str, token: str | None, ssl: aiohttp.Fingerprint | bool) -> tuple[int, Any]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with aiohttp.ClientSession() as http, http.get(url, headers=headers, ssl=ssl) as r:
        return r.status, await r.json(content_type=None)


async def test_v1_tls_shows_the_served_certificate_to_a_tech_token(served: Served) -> None:
    """tech → 200 with both forms, the names and validity; kiosk → 403; none → 401."""
    pin = _pinned(served.cert)
    status, body = await _get(f"{served.url}/v1/tls", TECH_TOKEN, pin)
    assert (status, body) == (200, _expected(served.cert))
    status, body = await _get(f"{served.url}/v1/tls", KIOSK_TOKEN, pin)
    assert (status, body["type"]) == (403, "urn:edgeprint:problem:forbidden")
    assert "fingerprint" not in body
    status, body = await _get(f"{served.url}/v1/tls", None, pin)
    assert (status, body["type"]) == (401, "urn:edgeprint:problem:unauthorized")


@pytest.mark.parametrize("mode", [None, "off"])
async def test_v1_tls_without_tls_is_nulls(tmp_path: Path, mode: str | None) -> None:
    data = config_dict(tmp_path / "data")
    if mode:
        data["server"]["tls"] = mode
    async with running(parse_config(data)) as run:
        status, body = await _get(f"http://127.0.0.1:{run.port}/v1/tls", TECH_TOKEN, False)
    assert status == 200
    assert body == {
        "tls": mode,
        "fingerprint": None,
        "pin": None,
        "names": None,
        "not_before": None,
        "not_after": None,
        "expires_soon": None,
    }


def _cli_config(folder: Path, port: int, **server: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    data = config_dict(folder / "data", port=port)
    data["server"].update({"tls": "self-signed", **server})
    path = folder / "config.toml"
    path.write_text(to_toml(data))
    return path


def _fingerprint(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(["tls", "fingerprint", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def _shown(cert: certificates.Certificate, source: str) -> str:
    return (
        f"The appliance's TLS certificate ({source}):\n"
        f"  SHA-256 fingerprint: {cert.fingerprint}\n"
        f"  public key pin:      {cert.pin}\n"
        f"  names:               {', '.join(cert.names)}\n"
    )


async def test_fingerprint_from_the_file_else_over_the_network(
    served: Served, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The config's file when readable; a file that cannot be read, or --url: what the
    server presents, saying it was read over the network."""
    on_box = _cli_config(tmp_path / "etc", served.port, cert_file="tls.crt", key_file="tls.key")
    code, out, err = await asyncio.to_thread(_fingerprint, capsys, "--config", str(on_box))
    assert (code, err) == (0, "")
    source = f"from {served.cert.cert_file}, which {served.url} serves"
    assert out.startswith(_shown(served.cert, source))
    assert f"curl --insecure --pinnedpubkey '{served.cert.pin}'" in out

    elsewhere = _cli_config(tmp_path / "other", served.port)  # its tls.crt is not there
    code, out, err = await asyncio.to_thread(_fingerprint, capsys, "--config", str(elsewhere))
    assert code == 0
    assert err == (
        f"edgeprint: cannot read {tmp_path / 'other' / 'tls.crt'} (no certificate file here): "
        "reading the certificate the appliance presents instead\n"
    )
    network = (
        f"READ OVER THE NETWORK from {served.url}: only as good as that network. Compare it "
        "with `sudo edgeprint tls fingerprint` on the box (or GET /v1/tls) before kiosks pin it"
    )
    assert out.startswith(_shown(served.cert, network))

    code, out, err = await asyncio.to_thread(_fingerprint, capsys, "--url", served.url)
    assert (code, err) == (0, "")
    assert out.startswith(_shown(served.cert, network))


def test_fingerprint_warns_within_30_days_and_prints_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    etc = tmp_path / "etc"
    cert = certificates.make_self_signed(etc / "v.crt", etc / "v.key", ["printhub"], days=10)
    port = _closed_port()
    path = _cli_config(etc, port, tls="files", cert_file="v.crt", key_file="v.key")
    code, out, err = _fingerprint(capsys, "--config", str(path))
    assert code == 0
    source = (
        f"from {cert.cert_file}; not compared with what is served: cannot connect to "
        f"https://127.0.0.1:{port}: "
    )
    assert out.startswith(f"The appliance's TLS certificate ({source}")
    assert _shown(cert, "").split("\n", 1)[1] in out
    assert err.startswith("warning: the certificate expires in 10.0 days (")
    assert "renew it (edgeprint setup --force --new-certificate" in err

    code, out, err = _fingerprint(capsys, "--config", str(path), "--json")
    assert code == 0
    assert f'"fingerprint": "{cert.fingerprint}"' in out
    assert '"expires_soon": true' in out


def _closed_port() -> int:
    """A loopback port nothing listens on (bound, then closed)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


async def test_fingerprint_of_a_file_the_appliance_does_not_serve(
    served: Served, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The config's certificate file was replaced (a valid pair) but a reload refused it,
    or no restart yet: exit 1, said plainly, and the SERVED certificate is the one shown,
    as kiosks must pin it (fresh-user finding 2)."""
    etc = tmp_path / "new"
    new = certificates.make_self_signed(etc / "tls.crt", etc / "tls.key", ["localhost"])
    path = _cli_config(etc, served.port)
    code, out, err = await asyncio.to_thread(_fingerprint, capsys, "--config", str(path))
    assert code == 1
    assert err == (
        f"edgeprint: the file {new.cert_file} is not what the appliance serves (it serves "
        f"{served.cert.fingerprint}; the file is {new.fingerprint}): a reload may have "
        "refused it — see `journalctl -u edgeprint | grep tls` — or a restart is still to "
        "do; kiosks must pin what is served (shown below)\n"
    )
    source = f"served by {served.url}; NOT the file {new.cert_file}"
    assert out.startswith(_shown(served.cert, source))
    assert f"--pinnedpubkey '{served.cert.pin}'" in out
    assert new.pin not in out
    code, out, err = await asyncio.to_thread(_fingerprint, capsys, "--config", str(path), "--json")
    assert code == 1
    assert f'"fingerprint": "{served.cert.fingerprint}"' in out
    assert err.startswith(f"edgeprint: the file {new.cert_file} is not what the appliance serves")


async def test_fingerprint_of_a_file_whose_key_does_not_match(
    served: Served, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The served certificate's file beside another key (or no key): it is what is served,
    but a reload or a restart would refuse the pair: exit 1 naming the reason; the pin
    shown is still right. Nothing on disk is changed."""
    etc = tmp_path / "pair"
    etc.mkdir()
    crt = etc / "tls.crt"
    crt.write_bytes(served.cert.cert_file.read_bytes())
    other = certificates.make_self_signed(tmp_path / "o.crt", etc / "tls.key", ["localhost"])
    path = _cli_config(etc, served.port)
    key_before = (etc / "tls.key").read_bytes()
    code, out, err = await asyncio.to_thread(_fingerprint, capsys, "--config", str(path))
    assert code == 1
    assert err == (
        f"edgeprint: {crt} cannot be served: {etc / 'tls.key'}: this key does not belong to "
        f"the certificate {crt} (a reload refuses it and a restart would too; fix the pair)\n"
    )
    assert out.startswith(_shown(served.cert, f"from {crt}, which {served.url} serves"))
    assert (etc / "tls.key").read_bytes() == key_before
    assert other.pin not in out

    (etc / "tls.key").unlink()
    code, out, err = await asyncio.to_thread(_fingerprint, capsys, "--config", str(path))
    assert code == 1
    assert err == (
        f"edgeprint: {crt} cannot be served: {etc / 'tls.key'}: no private key file here (a "
        "reload refuses it and a restart would too; fix the pair)\n"
    )


def test_fingerprint_of_a_plain_config_or_port(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No TLS in the config: exit 2 saying so; nothing listening: exit 3."""
    folder = tmp_path / "plain"
    folder.mkdir()
    path = folder / "config.toml"
    path.write_text(to_toml(config_dict(folder / "data", port=8631)))
    code, out, err = _fingerprint(capsys, "--config", str(path))
    assert (code, out) == (2, "")
    assert err == f"edgeprint: {path} does not serve TLS ([server] tls): nothing to pin\n"
    code, out, err = _fingerprint(capsys, "--url", "https://127.0.0.1:1")
    assert (code, out) == (3, "")
    assert err.startswith("edgeprint: cannot connect to https://127.0.0.1:1: ")
