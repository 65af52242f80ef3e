"""Ask one printer now, and time it (issue 23: preflight's ``POST /v1/printers/{name}/check``).

One Get-Printer-Attributes with the printer's own IPP client (its request budget,
its pinned certificate), timed from the call to the parsed answer; for an ipps
printer, one TLS handshake more to read the certificate it presents and hold it
against the pin. Nothing is stored and no job is touched: the worker's own probes
go on as before.
"""

from __future__ import annotations

import time

from yarl import URL

from edgeprint import errors
from edgeprint.config import PrinterConfig
from edgeprint.dispatch.ready import ready_stock
from edgeprint.documents.capabilities import parse_capabilities
from edgeprint.ipp import names
from edgeprint.printers import tls
from edgeprint.printers.ipp import IppClient
from edgeprint.service import JobService, PrinterCheck
from edgeprint.service.records import TlsCheck


async def check_printer(
    printer: PrinterConfig, client: IppClient, service: JobService, timeout_s: float
) -> PrinterCheck:
    """What ``printer`` answers now; a failure is part of the answer, not an error."""
    tls_check = await _tls(printer, service, timeout_s) if printer.secure else None
    started = time.perf_counter()
    try:
        status = await client.get_printer_attributes()
    except (errors.PrinterError, errors.CertificateChanged, errors.TlsHandshakeFailed) as exc:
        return PrinterCheck(
            reachable=isinstance(exc, errors.PrinterAnswerError | errors.CertificateChanged),
            round_trip_s=None,
            printer_state=None,
            printer_state_reasons=(),
            printer_state_message="",
            accepting_jobs=None,
            media_ready=(),
            error=str(exc),
            tls=tls_check,
        )
    elapsed = time.perf_counter() - started
    media = parse_capabilities(status.attributes).media_ready
    view, _ = ready_stock(status.attributes, printer)
    return PrinterCheck(
        reachable=True,
        round_trip_s=round(elapsed, 4),
        printer_state=names.state_keyword(status.state),
        printer_state_reasons=status.reasons,
        printer_state_message=status.message,
        accepting_jobs=status.accepting_jobs,
        media_ready=tuple(str(m) for m in media),
        error=None,
        tls=tls_check,
        stock=view,
    )


async def _tls(printer: PrinterConfig, service: JobService, timeout_s: float) -> TlsCheck:
    if printer.tls == "verify":
        return TlsCheck("verify", None, None, None)
    pinned = printer.tls_fingerprint or await service.printers.printer_pin(printer.name)
    pinned = tls.parse_fingerprint(pinned) if pinned else None
    url = URL(printer.uri)
    try:
        der = await tls.peer_certificate(url.host or "", url.port or 631, timeout_s=timeout_s)
    except (errors.TlsHandshakeFailed, errors.PrinterError) as exc:
        return TlsCheck("pin", pinned, None, None, error=str(exc))
    presented = tls.fingerprint_of(der)
    return TlsCheck("pin", pinned, presented, None if pinned is None else presented == pinned)
