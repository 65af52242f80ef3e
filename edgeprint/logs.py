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


class _WithholdRequestData(logging.Filter):
    """aiohttp logs a malformed request with a traceback quoting the raw bytes, which can
    carry an ``Authorization`` header: keep one line saying what happened, without them."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name.startswith("aiohttp.server") and record.levelno >= logging.WARNING:
            kind = type(record.exc_info[1]).__name__ if record.exc_info else "error"
            record.msg = f"bad HTTP request rejected by the parser ({kind}); details withheld"
            record.args = None
            record.exc_info = None
            record.exc_text = None
            record.event = "http_bad_request"
        return True


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
    handler.addFilter(_WithholdRequestData())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
