"""Printers: IPP requests (classified once, in edgeprint.printers.ipp), the IPP codec,
documents for a printer, TLS to printers."""

from __future__ import annotations

from collections.abc import Sequence

from edgeprint.errors.base import EdgeprintError


class PrinterError(EdgeprintError):
    """An IPP request failed. ``operation`` is the IPP operation name (RFC 8011 §4)."""

    def __init__(self, operation: str, detail: str, *, status_code: int | None = None) -> None:
        self.operation = operation
        self.detail = detail
        self.status_code = status_code
        code = f" (status 0x{status_code:04x})" if status_code is not None else ""
        super().__init__(f"{operation}: {detail}{code}")


class PrinterTransient(PrinterError):
    """Failed, and the printer did not act on it: safe to try again later."""


class PrinterUnreachable(PrinterTransient):
    """No connection (refused, no route): the request never reached the printer."""


class PrinterTimedOut(PrinterTransient):
    """No answer in time to a request the printer cannot have acted on (a hung printer)."""


class PrinterBusy(PrinterTransient):
    """``server-error-busy`` (0x0507): backpressure, not a failure."""


class PrinterPermanent(PrinterError):
    """The printer refused the job or document itself (bad format, unsupported attributes).

    Sending the same job again would fail the same way: the job is poison.
    """


class PrinterAmbiguous(PrinterError):
    """Time-out or broken connection during a request the printer may have acted on.

    Never settled by sending again: reconcile with the printer's job list
    (DESIGN §3). ``body_sent`` is False when the request body (the document)
    was not handed over whole: any copy the printer made from it is truncated.
    """

    def __init__(self, operation: str, detail: str, *, body_sent: bool = True) -> None:
        self.body_sent = body_sent
        super().__init__(operation, detail)


class PrinterNeedsTls(PrinterTransient):
    """HTTP 426 Upgrade Required: the printer takes IPP only over TLS (``ipps://``)."""


class PrinterAnswerError(PrinterTransient):
    """The printer answered in a way that cannot be taken at its word (HTTP error, bad IPP).

    ``http_status`` is the HTTP status when that was the problem; ``head`` the
    first bytes of an answer that does not parse as IPP (for the log).
    """

    def __init__(
        self,
        operation: str,
        detail: str,
        *,
        status_code: int | None = None,
        http_status: int | None = None,
        head: bytes = b"",
    ) -> None:
        self.http_status = http_status
        self.head = head
        super().__init__(operation, detail, status_code=status_code)


class PrinterProtocolError(PrinterAnswerError):
    """The printer's answer could not be parsed as IPP (``head``: its first bytes)."""


# --- the IPP codec (edgeprint.ipp.codec) -------------------------------------


class IppParseError(EdgeprintError):
    """Bytes that are not a valid IPP message: truncated or malformed at ``offset``.

    ``expected`` says what the codec expected to find there; ``truncated`` is True when
    the bytes simply ended there (more of the message would have been needed).
    """

    def __init__(self, offset: int, expected: str, *, truncated: bool = False) -> None:
        self.offset = offset
        self.expected = expected
        self.truncated = truncated
        super().__init__(f"malformed IPP message at byte {offset}: expected {expected}")


class IppEncodeError(EdgeprintError):
    """An IppMessage that cannot be encoded (a value too long, a value of the wrong type)."""


# --- documents for a printer (edgeprint.documents) ---------------------------


class DocumentUnprintable(EdgeprintError):
    """This document cannot be made into something this printer takes (HTTP 422).

    ``slug`` is ``unsupported-document`` (no format edgeprint can produce is
    listed; ``takes`` holds what the printer lists), ``no-media-fits`` (no
    loaded media is as large as a page) or ``document-renders-empty``.
    """

    def __init__(self, slug: str, detail: str, *, takes: Sequence[str] = ()) -> None:
        self.slug = slug
        self.detail = detail
        self.takes = tuple(takes)
        super().__init__(detail)


class RenderFailed(EdgeprintError):
    """Rendering a page to raster failed (PDFium refused the page, or the worker died)."""

    def __init__(self, detail: str) -> None:
        self.detail = detail
        super().__init__(detail)


class IppRefused(EdgeprintError):
    """An IPP request the IPP server answers with an error ``status_code`` (RFC 8011 §B).

    ``unsupported`` names the request attributes to return in the unsupported group.
    """

    def __init__(self, status_code: int, detail: str, unsupported: Sequence[str] = ()) -> None:
        self.status_code = status_code
        self.detail = detail
        self.unsupported = tuple(unsupported)
        super().__init__(detail)


# --- TLS to printers (edgeprint.printers.tls) --------------------------------


class CertificateChanged(EdgeprintError):
    """An ipps printer presents another certificate than the pinned one: nothing is sent to it.

    ``was`` and ``now`` are ``sha256:…`` fingerprints (never key material).
    """

    def __init__(self, was: str, now: str, printer: str | None = None) -> None:
        self.was = was
        self.now = now
        self.printer = printer
        how = (
            f"`edgeprint printers trust {printer}` or POST /v1/printers/{printer}/trust"
            if printer
            else "`edgeprint printers trust NAME`"
        )
        super().__init__(f"certificate changed: was {was}, now {now}; re-trust with {how}")


class TlsHandshakeFailed(EdgeprintError):
    """No TLS session with an ipps printer (it may speak plain HTTP on that port)."""

    def __init__(self, detail: str) -> None:
        self.detail = detail
        super().__init__(detail)
