"""The appliance's own TLS certificate (issue 26): made, read, checked and shown.

``[server] tls = "self-signed"`` — :func:`make_self_signed` writes an ECDSA P-256 key and a
certificate naming every address and host name a client may use (subject alternative
names), both ``0600``. ``tls = "files"`` — the venue's own PEM files. Either way
:func:`load` reads the pair and refuses, with the reason in plain words, a key that does
not match its certificate, a certificate that has expired or is not yet valid, or a file
that is not PEM. :func:`server_context` is the ``ssl.SSLContext`` the listener uses:
TLS 1.2 or newer, and no TLS 1.3 session tickets (``num_tickets = 0``: CUPS 2.4's ipptool
waits for ever on an asyncio TLS 1.3 server that sends them).

What kiosks pin, both printed by setup and ``edgeprint tls fingerprint``:

- :attr:`Certificate.fingerprint` — the SHA-256 of the DER certificate, upper-case hex
  with colons, as ``openssl x509 -noout -fingerprint -sha256`` shows it;
- :attr:`Certificate.pin` — ``sha256//`` and the base64 SHA-256 of the public key
  (SubjectPublicKeyInfo), as curl's ``--pinnedpubkey`` and Chromium's
  ``--ignore-certificate-errors-spki-list`` (without the prefix) take it. It survives a
  renewal that keeps the key.

Pure apart from reading and writing the two files; uses ``cryptography`` (a well-kept
library) for keys, certificates and PEM.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import ipaddress
import os
import ssl
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from edgeprint import errors

#: A self-signed certificate's life. 825 days is the longest Apple's clients accept for a
#: certificate that is not from a public CA.
SELF_SIGNED_DAYS = 825
#: A certificate this close to its end is a warning (check-config, the log, a metric).
EXPIRY_WARNING_S = 30 * 86400.0


class CertificateError(errors.EdgeprintError):
    """A certificate or key file that cannot be served; ``reason`` says why in plain words."""

    def __init__(self, path: Path, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"{path}: {reason}")


@dataclass(frozen=True, slots=True)
class Certificate:
    """What is shown and checked of a loaded certificate (never the key)."""

    cert_file: Path
    key_file: Path
    #: SHA-256 of the DER certificate, "AB:CD:…" (openssl's form).
    fingerprint: str
    #: "sha256//<base64>" of the SubjectPublicKeyInfo (curl's --pinnedpubkey).
    pin: str
    subject: str
    #: DNS names and IP addresses of the subject alternative names.
    names: tuple[str, ...]
    not_before: datetime.datetime
    not_after: datetime.datetime

    def seconds_left(self, now: datetime.datetime) -> float:
        return (self.not_after - now).total_seconds()

    def expires_soon(self, now: datetime.datetime) -> bool:
        return self.seconds_left(now) < EXPIRY_WARNING_S


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def fingerprint_of(cert: x509.Certificate) -> str:
    digest = cert.fingerprint(hashes.SHA256())
    return ":".join(f"{b:02X}" for b in digest)


def pin_of(cert: x509.Certificate) -> str:
    spki = cert.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return "sha256//" + base64.b64encode(hashlib.sha256(spki).digest()).decode("ascii")


def _names(cert: x509.Certificate) -> tuple[str, ...]:
    try:
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return ()
    dns = san.get_values_for_type(x509.DNSName)
    ips = [str(ip) for ip in san.get_values_for_type(x509.IPAddress)]
    return tuple(dns) + tuple(ips)


def describe(cert: x509.Certificate, cert_file: Path, key_file: Path) -> Certificate:
    return Certificate(
        cert_file=cert_file,
        key_file=key_file,
        fingerprint=fingerprint_of(cert),
        pin=pin_of(cert),
        subject=cert.subject.rfc4514_string(),
        names=_names(cert),
        not_before=cert.not_valid_before_utc,
        not_after=cert.not_valid_after_utc,
    )


def _read(path: Path, what: str) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise CertificateError(path, f"no {what} file here") from None
    except OSError as exc:
        raise CertificateError(path, f"cannot read the {what}: {exc.strerror}") from None


def read_certificate(cert_file: Path) -> x509.Certificate:
    """The first certificate of a PEM file (the server's own; a chain may follow)."""
    data = _read(cert_file, "certificate")
    try:
        return x509.load_pem_x509_certificates(data)[0]
    except (ValueError, IndexError):
        raise CertificateError(cert_file, "not a PEM certificate") from None


def load(cert_file: Path, key_file: Path, *, now: datetime.datetime | None = None) -> Certificate:
    """Read and check a certificate and its key; raises :class:`CertificateError`.

    Refused: a file that is missing, unreadable or not PEM, a key that does not match the
    certificate, a certificate not yet valid or expired. A certificate close to its end is
    accepted (the caller warns: :meth:`Certificate.expires_soon`).
    """
    when = now or _now()
    cert = read_certificate(cert_file)
    key_data = _read(key_file, "private key")
    try:
        key = serialization.load_pem_private_key(key_data, password=None)
    except TypeError:
        raise CertificateError(
            key_file, "the private key is encrypted; give it unencrypted"
        ) from None
    except ValueError:
        raise CertificateError(key_file, "not a PEM private key") from None
    public = serialization.PublicFormat.SubjectPublicKeyInfo
    if key.public_key().public_bytes(serialization.Encoding.DER, public) != (
        cert.public_key().public_bytes(serialization.Encoding.DER, public)
    ):
        raise CertificateError(key_file, f"this key does not belong to the certificate {cert_file}")
    if when < cert.not_valid_before_utc:
        raise CertificateError(
            cert_file, f"not valid before {cert.not_valid_before_utc:%Y-%m-%d %H:%M} UTC"
        )
    if when >= cert.not_valid_after_utc:
        raise CertificateError(
            cert_file, f"expired on {cert.not_valid_after_utc:%Y-%m-%d %H:%M} UTC"
        )
    return describe(cert, cert_file, key_file)


def server_context(cert: Certificate) -> ssl.SSLContext:
    """The listener's context for ``cert``: TLS ≥ 1.2, no session tickets."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.num_tickets = 0
    try:
        ctx.load_cert_chain(cert.cert_file, cert.key_file)
    except (ssl.SSLError, OSError) as exc:  # changed between load() and here
        raise CertificateError(cert.cert_file, f"cannot be served: {exc}") from None
    return ctx


def _san(names: Iterable[str]) -> list[x509.GeneralName]:
    out: list[x509.GeneralName] = []
    seen: set[str] = set()
    for name in names:
        if not name or name in seen:
            continue
        seen.add(name)
        try:
            out.append(x509.IPAddress(ipaddress.ip_address(name)))
        except ValueError:
            out.append(x509.DNSName(name))
    return out


def _stage_private(path: Path, data: bytes) -> Path:
    """A temporary file beside ``path`` holding ``data``: 0600 before any byte, fsync'ed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    return tmp


def _write_private(files: dict[Path, bytes]) -> None:
    """Write each file 0600, atomically and durably, the set as one: every file is staged
    and synced first, then all are renamed and their folders fsync'ed (a power cut leaves
    the old set or the new one, never a new key beside no certificate)."""
    staged = [(_stage_private(path, data), path) for path, data in files.items()]
    for tmp, path in staged:
        os.replace(tmp, path)
    for folder in {path.parent for path in files}:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


#: A server certificate's key signs the TLS handshake, and does nothing else.
_SIGNING_ONLY = x509.KeyUsage(
    digital_signature=True,
    content_commitment=False,
    key_encipherment=False,
    data_encipherment=False,
    key_agreement=False,
    key_cert_sign=False,
    crl_sign=False,
    encipher_only=False,
    decipher_only=False,
)


def make_self_signed(
    cert_file: Path,
    key_file: Path,
    names: Iterable[str],
    *,
    now: datetime.datetime | None = None,
    days: int = SELF_SIGNED_DAYS,
) -> Certificate:
    """A new ECDSA P-256 key and a self-signed certificate for ``names`` (host names and
    addresses; the first is the common name), both written ``0600``."""
    when = now or _now()
    san = _san(names)
    if not san:
        raise ValueError("a certificate needs at least one name or address")
    key = ec.generate_private_key(ec.SECP256R1())
    first = san[0].value
    subject = x509.Name(
        [
            x509.NameAttribute(NameOID.COMMON_NAME, str(first)),
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "edgeprint appliance"),
        ]
    )
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(when - datetime.timedelta(minutes=5))
        .not_valid_after(when + datetime.timedelta(days=days))
        .add_extension(x509.SubjectAlternativeName(san), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_SIGNING_ONLY, critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    _write_private({key_file: key_pem, cert_file: cert.public_bytes(serialization.Encoding.PEM)})
    return describe(cert, cert_file, key_file)
