"""The use cases; the only door to the store (DESIGN §1).

``jobs``: :class:`JobService`, one handle on the parts the API, the IPP server and the
dispatcher call (``front``, ``views``, ``resolutions``, ``worker``, ``outcomes``,
``printers``, ``documents``, ``upkeep``); ``admission``: where a printable job goes (reads the
dispatcher's published :class:`~edgeprint.board.PrinterBoard`); ``records``:
what the service takes and returns.
"""

from edgeprint.service.jobs import JobService
from edgeprint.service.records import (
    Caller,
    CheckPrinter,
    Identified,
    Identify,
    JobRecord,
    JobRequest,
    JobStats,
    PrinterCheck,
    PrinterJobReport,
    SubmitResult,
    request_digest,
)
from edgeprint.service.views import Queues

__all__ = [
    "Caller",
    "CheckPrinter",
    "Identified",
    "Identify",
    "JobRecord",
    "JobRequest",
    "JobService",
    "JobStats",
    "PrinterCheck",
    "PrinterJobReport",
    "Queues",
    "SubmitResult",
    "request_digest",
]
