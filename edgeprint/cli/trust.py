"""Which certificate the CLI trusts when the appliance serves TLS (issue 26).

In order: ``--fingerprint``, ``$EDGEPRINT_TLS_FINGERPRINT`` (either form: the certificate's
SHA-256 as ``openssl x509 -fingerprint -sha256`` prints it, or the public key's
``sha256//…`` pin curl's ``--pinnedpubkey`` takes), then the certificate file the config
names (``/etc/edgeprint/tls.crt`` beside the config found, when it can be read), else the
system's CA store with host name checks (``tls = "files"`` with a campus CA).

A pin is checked **after the handshake and before any byte of the request is sent** (so
a bearer token never reaches a server that is not the appliance), by comparing the peer
certificate's fingerprint — not by loading the file as a trust anchor: a pin names one
certificate (or one key), so the host name is not checked against it, and the CLI works
with whatever address reaches the box. A mismatch names both fingerprints and what to do.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import http.client
import os
import re
import ssl
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edgeprint.cli.errors import ConnectFailed, UsageError

FINGERPRINT_ENV = "EDGEPRINT_TLS_FINGERPRINT"
_HEX_RE = re.compile(r"^(?:sha256:)?((?:[0-9a-f]{2}:?){31}[0-9a-f]{2})$")
_PIN_PREFIX = "sha256//"


@dataclass(frozen=True)
class Pin:
    """One certificate (``kind`` "certificate": SHA-256 of its DER) or one public key
    ("key": SHA-256 of its SubjectPublicKeyInfo) the appliance must present."""

    kind: str
    digest: bytes
    #: Where the pin came from: "--fingerprint", "$EDGEPRINT_TLS_FINGERPRINT", a file.
    source: str

    def shown(self) -> str:
        return show(self.kind, self.digest)

    def matches(self, der: bytes) -> bool:
        return _digest_of(self.kind, der) == self.digest


def show(kind: str, digest: bytes) -> str:
    """A digest as it is printed: openssl's "AB:CD:…" for a certificate, curl's
    ``sha256//…`` for a key."""
    if kind == "key":
        return _PIN_PREFIX + base64.b64encode(digest).decode("ascii")
    return ":".join(f"{b:02X}" for b in digest)


def _digest_of(kind: str, der: bytes) -> bytes:
    if kind == "certificate":
        return hashlib.sha256(der).digest()
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    spki = (
        x509.load_der_x509_certificate(der)
        .public_key()
        .public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    return hashlib.sha256(spki).digest()


def parse_pin(text: str, source: str) -> Pin:
    """``text`` as a pin: 64 hex digits (colons and a ``sha256:`` prefix allowed, any case)
    or ``sha256//`` and the base64 of 32 bytes; raises UsageError naming ``source``."""
    value = text.strip()
    if value.startswith(_PIN_PREFIX):
        try:
            digest = base64.b64decode(value[len(_PIN_PREFIX) :], validate=True)
        except (binascii.Error, ValueError):
            digest = b""
        if len(digest) == 32:
            return Pin("key", digest, source)
    else:
        m = _HEX_RE.fullmatch(value.lower())
        if m:
            return Pin("certificate", bytes.fromhex(m.group(1).replace(":", "")), source)
    raise UsageError(
        f"bad {source}: give the certificate's SHA-256 fingerprint (AB:CD:… as "
        "`edgeprint tls fingerprint` or `openssl x509 -noout -fingerprint -sha256` prints "
        "it) or the key's sha256//… pin"
    )


@dataclass(frozen=True)
class Trust:
    """How an https:// connection is checked: a pin, or the system CA store (``pin`` None;
    ``why_no_pin`` says why the appliance's own certificate was not read, for the error)."""

    pin: Pin | None
    why_no_pin: str | None = None

    def context(self) -> ssl.SSLContext:
        if self.pin is None:
            return ssl.create_default_context()
        # Pinned: the chain and the name are not checked; _PinnedConnection compares the
        # certificate (or its key) with the pin before anything is sent.
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        return ctx

    def handler(self, base: str) -> urllib.request.HTTPSHandler:
        return _PinnedHandler(self, base)


def trust_for(
    flag: str | None, cert_file: Path | None, env: Mapping[str, str] | None = None
) -> Trust:
    """The trust for an https:// appliance: ``--fingerprint``, ``$EDGEPRINT_TLS_FINGERPRINT``,
    the certificate file of the config the URL came from, else the system CAs."""
    env = os.environ if env is None else env
    if flag is not None:
        return Trust(parse_pin(flag, "--fingerprint"))
    if env.get(FINGERPRINT_ENV, "").strip():
        return Trust(parse_pin(env[FINGERPRINT_ENV], f"${FINGERPRINT_ENV}"))
    if cert_file is None:
        return Trust(None)
    from edgeprint import certificates

    try:
        cert = certificates.read_certificate(cert_file)
    except certificates.CertificateError as exc:
        return Trust(None, f"{exc.reason} ({cert_file})")
    from cryptography.hazmat.primitives import hashes

    return Trust(Pin("certificate", cert.fingerprint(hashes.SHA256()), str(cert_file)))


class PinMismatch(ConnectFailed):
    """The appliance presented another certificate than the pinned one."""


class _PinnedConnection(http.client.HTTPSConnection):
    trust: Trust
    base: str

    def connect(self) -> None:
        super().connect()
        pin = self.trust.pin
        if pin is None:
            return
        der = self.sock.getpeercert(binary_form=True) or b""
        if not pin.matches(der):
            self.sock.close()
            raise PinMismatch(mismatch_message(self.base, pin, der))


def mismatch_message(base: str, pin: Pin, der: bytes) -> str:
    presented = show(pin.kind, _digest_of(pin.kind, der)) if der else "none"
    what = "certificate" if pin.kind == "certificate" else "public key"
    head = (
        f"{base} presented a {what} with SHA-256 {presented}, not the pinned {pin.shown()} "
        f"(from {pin.source}); nothing was sent. "
    )
    if pin.source not in ("--fingerprint", f"${FINGERPRINT_ENV}"):  # the config's file
        return head + (
            f"{pin.source} may have been changed without the appliance serving it (a reload "
            "that refused it: journalctl -u edgeprint | grep tls; or a restart still to do): "
            "sudo edgeprint tls fingerprint compares the two. If not, something on the network "
            "is answering in its place"
        )
    return head + (
        "If the appliance's certificate was renewed, read the new one on the box (sudo "
        f"edgeprint tls fingerprint) and pass it with --fingerprint or ${FINGERPRINT_ENV}; "
        "if not, something on the network is answering in its place"
    )


class _PinnedHandler(urllib.request.HTTPSHandler):
    def __init__(self, trust: Trust, base: str) -> None:
        super().__init__(context=trust.context())
        self._trust = trust
        self._base = base

    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        trust, base = self._trust, self._base

        class Connection(_PinnedConnection):
            def __init__(self, *args: Any, **kwargs: Any) -> None:
                super().__init__(*args, **kwargs)
                self.trust, self.base = trust, base

        return self.do_open(Connection, req, context=self._context)  # type: ignore[attr-defined]
