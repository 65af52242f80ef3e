"""Upload from any browser (issue 24, ``[release] web_upload``): a HELD job and its one-time PIN.

A person with no IPP client uploads a PDF from ``GET /upload``; the job is submitted
through :meth:`Front.submit` like any other (the same document checks, limits,
targets), HELD under the name they typed, with a release PIN the server makes.

The page carries a one-time form key (random, 128 bits). The job's Idempotency-Key is
made from it, so a double tap on "Upload" makes one job; and the PIN is an HMAC of
the form key under a secret of this process, so the second answer shows the same PIN
as the first (the browser shows only the last answer) while no PIN is stored anywhere
but as the job's salted hash. After a restart the secret is new: a replay of an old
form then finds the job but cannot show its PIN (IdempotencyKeyReused, "already
received").
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets

from edgeprint.service.jobs import JobService
from edgeprint.service.records import Caller, JobRequest, SubmitResult
from edgeprint.spool import StagedDocument

#: Digits of a PIN made for an upload (a 1-in-a-million guess; locked after
#: ``[release] max_pin_failures`` wrong ones).
PIN_DIGITS = 6
#: The token name jobs uploaded from the page carry (the page needs no token).
CALLER_NAME = "web-upload"
_FORM_KEY = re.compile(r"^[0-9a-f]{32}$")


def new_form_key() -> str:
    """A fresh one-time key for one upload form."""
    return secrets.token_hex(16)


def is_form_key(text: str) -> bool:
    return bool(_FORM_KEY.match(text))


class WebUploads:
    """Jobs uploaded from the page: their PINs and their submission."""

    def __init__(self, service: JobService, secret: bytes | None = None) -> None:
        self._service = service
        self._secret = secret if secret is not None else secrets.token_bytes(32)

    def pin_for(self, form_key: str) -> str:
        """The PIN of the upload made with ``form_key`` (the same for a double tap)."""
        digest = hmac.new(self._secret, form_key.encode(), hashlib.sha256).digest()
        return str(int.from_bytes(digest[:8], "big") % 10**PIN_DIGITS).zfill(PIN_DIGITS)

    @staticmethod
    def idempotency_key(form_key: str) -> str:
        return f"web-upload-{form_key}"

    async def submit(
        self, meta: JobRequest, document: StagedDocument, form_key: str, correlation_id: str | None
    ) -> SubmitResult:
        """Submit the upload as any job is (raises what Front.submit raises); ``meta``
        must be HELD and carry :meth:`pin_for` ``form_key`` as its release PIN."""
        if not meta.hold or meta.release_pin != self.pin_for(form_key):
            raise ValueError("an upload from the page is HELD with the PIN of its form key")
        caller = Caller(CALLER_NAME, "kiosk", correlation_id)
        return await self._service.front.submit(
            meta, document, self.idempotency_key(form_key), caller
        )
