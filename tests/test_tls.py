"""ipps with trust on first use: a real ippeveprinter's self-signed certificate, pinned, then changed."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import hashlib
import shutil
import socket
import ssl
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import aiohttp
import pytest

from edgeprint import errors
from edgeprint.printers import tls
from testbed.rig import Printer, Rig
from tests.ipp_helpers import printer_attributes
from tests.polling import eventually
from tests.rig_fixtures import require_ippeveprinter


@pytest.fixture
def rig(tmp_path: Path) -> Iterator[Rig]:
    """One ippeveprinter with its own self-signed certificate (it serves ipps on its port)."""
    require_ippeveprinter()
    r = Rig(tmp_path / "rig", own_certificates=True)
    r.start(1)
    try:
        yield r
    finally:
        r.stop()


def ipps(p: Printer) -> str:
    return f"ipps://127.0.0.1:{p.port}/ipp/print"


def file_fingerprint(pem: Path) -> str:
    """The certificate's fingerprint as openssl computes it (independent of the code under test)."""
    out = subprocess.run(
        ["openssl", "x509", "-noout", "-fingerprint", "-sha256", "-in", str(pem)],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    return "sha256:" + out.strip().split("=", 1)[1].replace(":", "").lower()


def requests_logged(p: Printer) -> int:
    """Get-Printer-Attributes requests the printer logged (its own ground truth)."""
    return p.server_log.read_text(errors="replace").count("Get-Printer-Attributes")


async def test_first_contact_pins_the_printers_certificate(rig: Rig) -> None:
    """First contact returns the certificate's SHA-256 to pin; requests with that pin succeed."""
    p = rig["printer-01"]
    first = await tls.trust("127.0.0.1", p.port, None)
    assert first.first_contact
    assert first.fingerprint == file_fingerprint(p.dir / "ssl" / "localhost.crt")
    attrs = await printer_attributes(ipps(p), ["printer-state"], ssl=first.ssl)
    assert attrs["printer-state"] in (3, 4)
    again = await tls.trust(
        "127.0.0.1", p.port, first.fingerprint.upper().replace("SHA256:", "sha256:")
    )
    assert again == tls.Trust(first.fingerprint, first_contact=False)


async def test_changed_certificate_is_refused_and_nothing_is_sent(rig: Rig) -> None:
    """A printer that comes back with a new certificate is refused, showing both fingerprints; it receives no request."""
    p = rig["printer-01"]
    pin = (await tls.trust("127.0.0.1", p.port, None)).fingerprint
    shutil.rmtree(p.dir / "ssl")  # a factory reset: a new self-signed certificate
    rig.restart("printer-01")
    (
        file_fingerprint(p.dir / "ssl" / "localhost.crt")
        if (p.dir / "ssl" / "localhost.crt").exists()
        else None
    )
    with pytest.raises(errors.CertificateChanged) as exc:
        await tls.trust("127.0.0.1", p.port, pin, printer="badge-1")
    now = file_fingerprint(p.dir / "ssl" / "localhost.crt")  # made at the first TLS contact
    assert now != pin
    assert (exc.value.was, exc.value.now) == (pin, now)
    assert str(exc.value) == (
        f"certificate changed: was {pin}, now {now}; re-trust with "
        "`edgeprint printers trust badge-1` or POST /v1/printers/badge-1/trust"
    )
    before = requests_logged(p)
    with pytest.raises(aiohttp.ServerFingerprintMismatch) as mismatch:
        await printer_attributes(ipps(p), ["printer-state"], ssl=tls.request_ssl(pin))
    changed = tls.certificate_changed(mismatch.value, "badge-1")
    assert (changed.was, changed.now) == (pin, now)
    assert requests_logged(p) == before  # the request was never sent
    await sockets_closed(p.port)


async def sockets_closed(port: int, timeout_s: float = 5.0) -> None:
    """Wait until no transport of this loop still holds a socket to ``port``.

    aiohttp closes the connection it refused for a wrong fingerprint through the TLS
    shutdown, which needs the loop to run a little longer (else: ResourceWarning at GC).
    """

    def open_to_port() -> list[object]:
        found = []
        for obj in gc.get_objects():
            if isinstance(obj, asyncio.BaseTransport):
                sock = obj.get_extra_info("socket")
                peer = obj.get_extra_info("peername")
                if sock is not None and sock.fileno() != -1 and peer and peer[1] == port:
                    found.append(obj)
        return found

    await eventually(
        lambda: not open_to_port(), "every connection to the printer closed", timeout_s=timeout_s
    )


async def test_verify_mode_refuses_a_self_signed_printer(rig: Rig) -> None:
    """tls = "verify" uses the system CA store, which does not know a factory certificate."""
    p = rig["printer-01"]
    with pytest.raises(aiohttp.ClientConnectorCertificateError):
        await printer_attributes(ipps(p), ["printer-state"], ssl=tls.verify_context())


@contextlib.contextmanager
def tcp_server(handle: Callable[[socket.socket], None]) -> Iterator[int]:
    """A loopback server (a thread, plain sockets: closed deterministically); yields its port."""
    srv = socket.create_server(("127.0.0.1", 0))
    srv.settimeout(0.05)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
            except TimeoutError:
                continue
            with conn:
                conn.settimeout(5)
                with contextlib.suppress(OSError):
                    handle(conn)

    thread = threading.Thread(target=serve, name="tls-test-server", daemon=True)
    thread.start()
    try:
        yield srv.getsockname()[1]
    finally:
        stop.set()
        thread.join()
        srv.close()


@pytest.fixture
def plain_http() -> Iterator[int]:
    """A plain HTTP server on loopback (what an ipps:// URI may point at by mistake)."""

    def answer(conn: socket.socket) -> None:
        conn.recv(4096)  # a TLS ClientHello, not a request line
        conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")

    with tcp_server(answer) as port:
        yield port


async def test_plain_http_printer_is_a_handshake_failure(plain_http: int) -> None:
    """An ipps:// printer that speaks plain HTTP fails the handshake with a reason naming the likely cause."""
    with pytest.raises(errors.TlsHandshakeFailed, match="needs an ipp:// URI"):
        await tls.trust("127.0.0.1", plain_http, None)


async def test_nothing_listening_is_unreachable() -> None:
    """No server on the port: PrinterUnreachable, not a TLS error."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, never listening: connections are refused
        with pytest.raises(errors.PrinterUnreachable, match="cannot connect"):
            await tls.trust("127.0.0.1", port, None, timeout_s=2)


@pytest.fixture
def throwaway_certificate(tmp_path: Path) -> tuple[Path, Path]:
    """A fresh self-signed P-256 certificate and key made by openssl: (key, cert)."""
    key, cert = tmp_path / "k.pem", tmp_path / "c.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
         "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "1", "-subj", "/CN=printer.local"],
        capture_output=True, check=True,
    )  # fmt: skip
    return key, cert


async def test_throwaway_openssl_certificate(throwaway_certificate: tuple[Path, Path]) -> None:
    """A loopback TLS server with a fresh openssl self-signed certificate is fingerprinted as openssl does."""
    key, cert = throwaway_certificate
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)

    def handshake(conn: socket.socket) -> None:
        with ctx.wrap_socket(conn, server_side=True):
            pass

    with tcp_server(handshake) as port:
        first = await tls.trust("127.0.0.1", port, None)
    der = ssl.PEM_cert_to_DER_cert(cert.read_text())
    assert (
        first.fingerprint == file_fingerprint(cert) == "sha256:" + hashlib.sha256(der).hexdigest()
    )


@pytest.mark.parametrize(
    "text",
    ["sha1:" + "a" * 40, "sha256:" + "a" * 63, "sha256:" + "g" * 64, "a" * 64, ""],
)
def test_bad_pins_are_refused(text: str) -> None:
    """A configured pin must be sha256: and 64 hex digits (colons and upper case allowed)."""
    with pytest.raises(ValueError, match="a pin is 'sha256:' and 64 hex digits"):
        tls.parse_fingerprint(text)


def test_pin_forms() -> None:
    """openssl's colon form and upper case read as the canonical pin."""
    colon = "SHA256:" + ":".join(["AB"] * 32)
    assert tls.parse_fingerprint(colon) == "sha256:" + "ab" * 32
