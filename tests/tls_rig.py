"""An appliance serving TLS (``[server] tls = "self-signed"``) for the interop tests, and
clients that trust exactly its certificate: what a kiosk that pinned it does.

The certificate is made here (edgeprint.certificates, as setup makes it) for 127.0.0.1 and
localhost, so a test knows its fingerprint and pin before the appliance starts.
"""

from __future__ import annotations

import contextlib
import ssl
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp

from edgeprint import certificates
from edgeprint.config import parse_config
from edgeprint.server import Running, running
from tests.printing import Client


def with_tls(cfg: dict[str, Any], folder: Path) -> certificates.Certificate:
    """``cfg`` made to serve TLS with a new self-signed certificate kept in ``folder``."""
    cert = certificates.make_self_signed(
        folder / "tls.crt", folder / "tls.key", ["127.0.0.1", "localhost"]
    )
    cfg["server"] = {
        **cfg["server"],
        "tls": "self-signed",
        "cert_file": str(cert.cert_file),
        "key_file": str(cert.key_file),
    }
    return cert


def trusting(cert: certificates.Certificate) -> ssl.SSLContext:
    """A client context that trusts ``cert`` and nothing else (host name checked)."""
    return ssl.create_default_context(cafile=str(cert.cert_file))


def spki_pin(cert: certificates.Certificate) -> str:
    """The base64 SHA-256 of the public key (Chromium's ``--ignore-certificate-errors-spki-list``)."""
    return cert.pin.removeprefix("sha256//")


@contextlib.asynccontextmanager
async def tls_appliance(
    cfg: dict[str, Any], folder: Path
) -> AsyncIterator[tuple[Running, Client, certificates.Certificate]]:
    """An in-process appliance for ``cfg`` serving TLS, and a kiosk client over https that
    trusts only its certificate."""
    cert = with_tls(cfg, folder)
    connector = aiohttp.TCPConnector(ssl=trusting(cert))
    async with (
        running(parse_config(cfg)) as run,
        aiohttp.ClientSession(connector=connector) as http,
    ):
        yield run, Client(http, f"https://{run.host}:{run.port}"), cert
