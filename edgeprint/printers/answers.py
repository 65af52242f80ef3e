"""What a printer's answers say, read from the dicts pyipp parses them into (pyipp itself stays
in ``printers/ipp.py``): one value parses to a scalar and several to a list (normalised
here); a job's attributes become an :class:`edgeprint.evidence.PrinterJob`."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from edgeprint.evidence import PrinterJob

#: The printer attributes every probe asks for.
PRINTER_ATTRIBUTES = [
    "printer-state",
    "printer-state-reasons",
    "printer-state-message",
    "queued-job-count",
    "operations-supported",
    "document-format-supported",
    "copies-supported",
    "printer-is-accepting-jobs",
    "printer-up-time",
    "printer-config-change-time",
    "printer-uuid",
    "printer-input-tray",
    "printer-config-change-date-time",
    # the stock it has ready, on every probe: a roll change is seen within one interval
    # even where printer-config-change-time does not move (issue 23)
    "media-ready",
    "media-col-ready",
]
#: The job attributes asked for and read (:func:`printer_job`).
JOB_ATTRIBUTES = [
    "job-id",
    "job-name",
    "job-state",
    "job-state-reasons",
    "job-state-message",
    "job-k-octets",
    "job-k-octets-processed",
    "job-originating-user-name",
    "job-impressions",
    "job-impressions-completed",
    "job-media-sheets-completed",
    "time-at-creation",
    "date-time-at-creation",
    "job-uuid",
]


def as_list(value: Any) -> list[Any]:
    """A value as a list (pyipp parses one value to a scalar, several to a list)."""
    if value is None:
        return []
    if isinstance(value, list):
        return value
    return [value]


def integer(value: Any) -> int | None:
    """An integer value, or None (a bool is no integer here)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def text(value: Any) -> str | None:
    """A value as text (a dateTime in ISO 8601), or None when absent or empty."""
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return value.isoformat()
    return str(value)


def printer_job(attrs: Mapping[str, Any]) -> PrinterJob:
    """A printer's job from its job attributes (Get-Job-Attributes, Get-Jobs)."""
    k = attrs.get("job-k-octets")
    state = attrs.get("job-state")
    return PrinterJob(
        job_id=int(attrs.get("job-id", 0)),
        name=str(attrs.get("job-name", "")),
        state=int(state) if isinstance(state, int) else 0,
        reasons=tuple(str(r) for r in as_list(attrs.get("job-state-reasons"))),
        message=str(attrs.get("job-state-message", "")),
        k_octets=int(k) if isinstance(k, int) else None,
        created_s=int(t) if isinstance(t := attrs.get("time-at-creation"), int) and t > 0 else None,
        user=str(attrs.get("job-originating-user-name", "")),
        impressions_completed=integer(attrs.get("job-impressions-completed")),
        uuid=text(attrs.get("job-uuid")),
        impressions=integer(attrs.get("job-impressions")),
        sheets_completed=integer(attrs.get("job-media-sheets-completed")),
        created_dt=text(attrs.get("date-time-at-creation")),
    )
