"""Standard Webhooks signatures (https://www.standardwebhooks.com/).

``webhook-signature: v1,<base64 HMAC-SHA256(key, "{id}.{timestamp}.{body}")>`` with
``key`` the bytes of the ``whsec_`` secret; ``timestamp`` is unix seconds, sent as
``webhook-timestamp``, so a receiver can refuse old replays.
"""

from __future__ import annotations

import base64
import hashlib
import hmac


def signature(key: bytes, msg_id: str, timestamp: int, body: bytes) -> str:
    """The ``webhook-signature`` header value for one attempt."""
    signed = f"{msg_id}.{timestamp}.".encode() + body
    digest = hmac.new(key, signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()


def headers(key: bytes, msg_id: str, timestamp: int, body: bytes) -> dict[str, str]:
    """The three Standard Webhooks headers for one attempt."""
    return {
        "webhook-id": msg_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": signature(key, msg_id, timestamp, body),
    }
