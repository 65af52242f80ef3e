"""Every failure of an IPP request to a printer, classified once into :mod:`edgeprint.errors`
types (DESIGN §3): transient, busy, permanent (poison) or ambiguous (the printer may have
acted)."""

from __future__ import annotations

import aiohttp

from edgeprint import errors
from edgeprint.ipp.names import Operation, Status, operation_name

#: Statuses that blame the document or its attributes: the job is poison. The codes are
#: the ones pyipp's enum named document-format-error, -password, -permission, -security
#: and -unprintable: its names from 0x040F on are one code below RFC 8011's and PWG
#: 5100.13's (it lacks compression-not-supported), so the set holds these numbers.
POISON_STATUSES = frozenset(
    {
        Status.CLIENT_ERROR_DOCUMENT_FORMAT_NOT_SUPPORTED,  # 0x040A
        Status.CLIENT_ERROR_ATTRIBUTES_OR_VALUES_NOT_SUPPORTED,  # 0x040B
        Status.CLIENT_ERROR_CONFLICTING_ATTRIBUTES,  # 0x040E
        Status.CLIENT_ERROR_COMPRESSION_ERROR,  # 0x0410
        Status.CLIENT_ERROR_PRINT_SUPPORT_FILE_NOT_FOUND,  # 0x0417
        Status.CLIENT_ERROR_DOCUMENT_PASSWORD_ERROR,  # 0x0418
        Status.CLIENT_ERROR_DOCUMENT_PERMISSION_ERROR,  # 0x0419
        Status.CLIENT_ERROR_DOCUMENT_SECURITY_ERROR,  # 0x041A
        Status.CLIENT_ERROR_REQUEST_ENTITY_TOO_LARGE,  # 0x0408 too large for this printer
    }
)
NOT_FOUND = frozenset({Status.CLIENT_ERROR_NOT_FOUND, Status.CLIENT_ERROR_GONE})

#: Operations the printer may have acted on before a time-out or disconnect.
ACTING = frozenset({Operation.CREATE_JOB, Operation.SEND_DOCUMENT, Operation.PRINT_JOB})


def transport_error(
    op: Operation, detail: str, cause: BaseException, body_sent: bool
) -> errors.PrinterError:
    """A request that got no answer: unreachable, ambiguous (an operation that may have
    acted), timed out, or transient."""
    name = operation_name(op)
    if isinstance(cause, aiohttp.ClientConnectorError | ConnectionRefusedError):
        return errors.PrinterUnreachable(name, f"cannot connect: {cause}")
    if op in ACTING:
        return errors.PrinterAmbiguous(name, f"outcome unknown: {detail}", body_sent=body_sent)
    if isinstance(cause, TimeoutError):
        return errors.PrinterTimedOut(name, detail)
    return errors.PrinterTransient(name, detail)


def status_error(op: Operation, status: int, detail: str) -> errors.PrinterError:
    """An answer with an error status (``detail``: the status and its status-message)."""
    name = operation_name(op)
    if status == Status.SERVER_ERROR_BUSY:
        return errors.PrinterBusy(name, detail, status_code=status)
    if status in POISON_STATUSES:
        return errors.PrinterPermanent(name, detail, status_code=status)
    return errors.PrinterTransient(name, detail, status_code=status)
