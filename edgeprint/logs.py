"""JSON logs: one object per line on stdout (journald keeps them), via python-json-logger.

Log with ``extra={"event": "job_accepted", "job_id": …, "printer": …,
"correlation_id": …}``; event names are those of DESIGN §7. Never log tokens
or PINs.
"""

from __future__ import annotations

import logging
import sys

from pythonjsonlogger.json import JsonFormatter


def configure(level: str = "INFO") -> None:
    """Send every log record to stdout as one JSON object per line."""
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(
        JsonFormatter(
            "{asctime}{levelname}{name}{message}",
            style="{",
            rename_fields={"asctime": "time", "levelname": "level", "name": "logger"},
            datefmt="%Y-%m-%dT%H:%M:%S%z",
        )
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
