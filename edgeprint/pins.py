"""Release PINs: stored only as a salted scrypt hash (RFC 7914), checked in constant time.

A stored hash reads ``scrypt$<n>$<r>$<p>$<salt, base64>$<digest, base64>``, so
the cost can be raised later without breaking PINs already stored. Hashing
takes ~50 ms of CPU and 16 MiB (n=2**14, r=8): callers run it in a worker
thread (:func:`hash_pin_async`, :func:`verify_pin_async`).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import os

#: scrypt cost (RFC 7914 §2): CPU/memory cost n, block size r, parallelism p.
SCRYPT_N = 2**14
SCRYPT_R = 8
SCRYPT_P = 1
_SALT_BYTES = 16
_DIGEST_BYTES = 32
_MAXMEM = 64 * 1024 * 1024


def _scrypt(pin: str, salt: bytes, n: int, r: int, p: int) -> bytes:
    return hashlib.scrypt(
        pin.encode("ascii"), salt=salt, n=n, r=r, p=p, maxmem=_MAXMEM, dklen=_DIGEST_BYTES
    )


def hash_pin(pin: str) -> str:
    """The stored form of ``pin`` (ASCII digits) with a fresh random salt."""
    salt = os.urandom(_SALT_BYTES)
    digest = _scrypt(pin, salt, SCRYPT_N, SCRYPT_R, SCRYPT_P)
    b64 = base64.b64encode
    return f"scrypt${SCRYPT_N}${SCRYPT_R}${SCRYPT_P}${b64(salt).decode()}${b64(digest).decode()}"


def verify_pin(pin: str, stored: str) -> bool:
    """True when ``pin`` matches ``stored`` (from :func:`hash_pin`); False for any mismatch.

    A malformed ``stored`` value never matches (raises nothing).
    """
    try:
        scheme, n, r, p, salt, digest = stored.split("$")
        if scheme != "scrypt" or not pin.isascii():
            return False
        expected = base64.b64decode(digest, validate=True)
        got = _scrypt(pin, base64.b64decode(salt, validate=True), int(n), int(r), int(p))
    except ValueError:
        return False
    return hmac.compare_digest(got, expected)


async def hash_pin_async(pin: str) -> str:
    """:func:`hash_pin` in a worker thread (the event loop keeps serving)."""
    return await asyncio.to_thread(hash_pin, pin)


async def verify_pin_async(pin: str, stored: str) -> bool:
    """:func:`verify_pin` in a worker thread."""
    return await asyncio.to_thread(verify_pin, pin, stored)
