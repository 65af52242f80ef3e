"""``GET /v1/tls`` (tech, issue 26): the certificate the appliance serves now, in the two
forms kiosks pin — what ``edgeprint tls fingerprint`` prints on the box.

The certificate is the running one (``SERVED``, set by the composition root: after a
refused reload it is still the old one, which is what clients see), never read from disk
here. Without TLS every field but ``tls`` is null.
"""

from __future__ import annotations

import datetime

from aiohttp import web

from edgeprint.api.app import DEPS, json_response
from edgeprint.certificates import Certificate
from edgeprint.models import ApplianceTlsOut
from edgeprint.timefmt import rfc3339_ms
from edgeprint.tls_runtime import ServedCertificate

#: The certificate served now (None or absent: plain HTTP).
SERVED = web.AppKey("tls_served", ServedCertificate)


def _rfc3339(when: datetime.datetime) -> str:
    return rfc3339_ms(when.timestamp())


def tls_out(mode: str | None, cert: Certificate | None, now: datetime.datetime) -> ApplianceTlsOut:
    """The answer for ``mode`` and the certificate served (None: plain HTTP)."""
    if cert is None:
        empty = ("fingerprint", "pin", "names", "not_before", "not_after", "expires_soon")
        return ApplianceTlsOut.model_validate({"tls": mode, **dict.fromkeys(empty)})
    return ApplianceTlsOut.model_validate(
        {
            "tls": mode,
            "fingerprint": cert.fingerprint,
            "pin": cert.pin,
            "names": list(cert.names),
            "not_before": _rfc3339(cert.not_before),
            "not_after": _rfc3339(cert.not_after),
            "expires_soon": cert.expires_soon(now),
        }
    )


async def get_tls(request: web.Request) -> web.Response:
    """GET /v1/tls (tech): the certificate served now, or nulls without TLS."""
    served = request.app.get(SERVED)
    mode = request.app[DEPS].config.server.tls
    cert = None if served is None else served.certificate
    return json_response(tls_out(mode, cert, datetime.datetime.now(datetime.UTC)))
