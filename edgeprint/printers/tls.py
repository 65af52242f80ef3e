"""ipps:// with self-signed certificates: trust on first use, then the pin (pure library).

A printer's factory certificate is self-signed, so it cannot be verified
against a CA. Instead its SHA-256 fingerprint (of the DER certificate, as
``openssl x509 -fingerprint -sha256`` prints it) is recorded on first contact
— the *pin* — and every later connection must present the same certificate.

- :func:`trust` opens one TLS connection (no CA check), reads the peer
  certificate and compares: no pin yet → ``first_contact`` with the
  fingerprint to record; the pinned one → fine; another →
  :class:`errors.CertificateChanged` showing both fingerprints.
- :func:`request_ssl` is what every request then passes to aiohttp
  (``ssl=``): an ``aiohttp.Fingerprint`` check made right after the handshake,
  before any byte of the request is sent; a mismatch raises
  ``aiohttp.ServerFingerprintMismatch``, which :func:`certificate_changed`
  turns into :class:`errors.CertificateChanged`.
- :func:`verify_context` is ``tls = "verify"``: the system CA store and host
  name checks, no pin.

Only fingerprints are ever shown or logged: no certificate body, no key.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
import socket
import ssl
from dataclasses import dataclass

import aiohttp

from edgeprint import errors

PREFIX = "sha256:"
_HEX = re.compile(r"^[0-9a-f]{64}$")


def fingerprint_of(der: bytes) -> str:
    """``sha256:<64 lower-case hex digits>`` of a DER certificate."""
    return PREFIX + hashlib.sha256(der).hexdigest()


def parse_fingerprint(text: str) -> str:
    """A configured pin in canonical form; accepts ``sha256:`` + hex, upper case and colons.

    Raises ValueError for anything else (another hash, a wrong length).
    """
    value = text.strip().lower()
    if not value.startswith(PREFIX):
        raise ValueError(f"a pin is 'sha256:' and 64 hex digits, not {text!r}")
    digits = value[len(PREFIX) :].replace(":", "")
    if not _HEX.match(digits):
        raise ValueError(f"a pin is 'sha256:' and 64 hex digits, not {text!r}")
    return PREFIX + digits


def _digest(pin: str) -> bytes:
    return bytes.fromhex(parse_fingerprint(pin)[len(PREFIX) :])


def _no_ca_context() -> ssl.SSLContext:
    """TLS without CA or host name checks: the fingerprint is checked instead."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    return ctx


def verify_context() -> ssl.SSLContext:
    """``tls = "verify"``: the system CA store, host name checked."""
    return ssl.create_default_context()


async def peer_certificate(
    host: str, port: int, *, timeout_s: float = 10.0, server_name: str | None = None
) -> bytes:
    """The DER certificate the printer at ``host:port`` presents (no CA check).

    One blocking handshake in a worker thread (plain sockets close deterministically,
    also when the handshake fails). Raises errors.TlsHandshakeFailed when no TLS
    session can be made (a plain HTTP port answers garbage to a ClientHello),
    errors.PrinterUnreachable when nothing answers.
    """
    return await asyncio.to_thread(_peer_certificate, host, port, timeout_s, server_name)


def _peer_certificate(host: str, port: int, timeout_s: float, server_name: str | None) -> bytes:
    try:
        with (
            socket.create_connection((host, port), timeout=timeout_s) as raw,
            _no_ca_context().wrap_socket(raw, server_hostname=server_name or host) as tls,
        ):
            der = tls.getpeercert(binary_form=True)
    except ssl.SSLError as exc:
        raise errors.TlsHandshakeFailed(
            f"no TLS session with {host}:{port} ({exc.reason or exc}): is it an ipps port? "
            "a printer that speaks plain HTTP there needs an ipp:// URI"
        ) from exc
    except TimeoutError as exc:
        raise errors.PrinterUnreachable(
            "TLS handshake", f"{host}:{port}: no answer in time"
        ) from exc
    except OSError as exc:
        raise errors.PrinterUnreachable("TLS handshake", f"cannot connect: {exc}") from exc
    if not der:
        raise errors.TlsHandshakeFailed(f"{host}:{port} presented no certificate")
    return bytes(der)


@dataclass(frozen=True)
class Trust:
    """The outcome of :func:`trust`: the fingerprint in force, and whether to record it."""

    fingerprint: str
    first_contact: bool

    @property
    def ssl(self) -> aiohttp.Fingerprint:
        """What to pass as ``ssl=`` on every request to this printer."""
        return request_ssl(self.fingerprint)


async def trust(
    host: str,
    port: int,
    pinned: str | None,
    *,
    printer: str | None = None,
    timeout_s: float = 10.0,
) -> Trust:
    """Trust on first use: the printer's certificate against the pin (None: none yet).

    Raises errors.CertificateChanged (both fingerprints), errors.TlsHandshakeFailed,
    errors.PrinterUnreachable.
    """
    now = fingerprint_of(await peer_certificate(host, port, timeout_s=timeout_s))
    if pinned is None:
        return Trust(now, first_contact=True)
    was = parse_fingerprint(pinned)
    if now != was:
        raise errors.CertificateChanged(was, now, printer)
    return Trust(was, first_contact=False)


def request_ssl(pinned: str) -> aiohttp.Fingerprint:
    """``ssl=`` for aiohttp requests: the session must present the pinned certificate."""
    return aiohttp.Fingerprint(_digest(pinned))


def certificate_changed(
    exc: aiohttp.ServerFingerprintMismatch, printer: str | None = None
) -> errors.CertificateChanged:
    """aiohttp's mismatch as our error, with both fingerprints."""
    return errors.CertificateChanged(PREFIX + exc.expected.hex(), PREFIX + exc.got.hex(), printer)
