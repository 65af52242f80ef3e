"""JSON logs: one object per line on stdout (journald keeps them), via python-json-logger.

Log with ``extra={"event": "job_accepted", "job_id": …, "printer": …,
"correlation_id": …}``; event names are those of DESIGN §7. Never log tokens
or PINs.
"""

from __future__ import annotations

import logging
import sys
from datetime import UTC, datetime

from pythonjsonlogger.json import JsonFormatter


def _rfc3339(record: logging.LogRecord, datefmt: str | None = None) -> str:
    return (
        datetime.fromtimestamp(record.created, UTC)
        .isoformat(timespec="milliseconds")
        .replace("+00:00", "Z")
    )


def configure(level: str = "INFO") -> None:
    """Send every log record to stdout as one JSON object per line."""
    handler = logging.StreamHandler(sys.stdout)
    formatter = JsonFormatter(
        "{asctime}{levelname}{name}{message}",
        style="{",
        rename_fields={"asctime": "time", "levelname": "level", "name": "logger"},
    )
    # RFC 3339 UTC with milliseconds: log lines are used to time recoveries.
    formatter.formatTime = _rfc3339  # type: ignore[method-assign]
    handler.setFormatter(formatter)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
