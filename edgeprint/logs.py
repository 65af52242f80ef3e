"""JSON logs: one object per line on stdout (journald keeps them).

Log an event with :func:`log_event`: ``log_event(log, "job_accepted", job_id=…,
printer=…)``; event names are those of DESIGN §7. Never log tokens or PINs.
"""

from __future__ import annotations

import json
import logging
import math
import sys
from json.encoder import encode_basestring_ascii as _quote

from edgeprint.timefmt import rfc3339_ms

#: What every LogRecord carries; anything else on a record is a field given in ``extra``.
_RECORD_ATTRS = frozenset(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {
    "message",
    "asctime",
    "taskName",
}
_encode = json.JSONEncoder(default=str).encode
#: Leading keys that an ``extra`` field may also name (it then replaces their value; the
#: others are LogRecord attributes, which ``extra`` cannot set).
_LEADING = frozenset({"time", "level", "logger"})


def _value(value: object) -> str:
    """``value`` as ``_encode`` writes it; the common scalars without building an encoder."""
    if type(value) is str:
        return _quote(value)
    if value is None:
        return "null"
    if type(value) is int:
        return int.__repr__(value)
    if type(value) is bool:
        return "true" if value else "false"
    if type(value) is float and math.isfinite(value):
        return float.__repr__(value)
    return _encode(value)  # anything else (lists, enums, NaN, objects) as json writes it


class JsonLines(logging.Formatter):
    """One JSON object per record: ``time`` (RFC 3339 UTC, milliseconds: log lines are used
    to time recoveries), ``level``, ``logger``, ``message``, ``exc_info`` when there is
    one, then the ``extra`` fields in the order given.

    The same lines python-json-logger made with those renamed fields, in about a
    third of its time (a released job logs one line; the log was a third of a
    release's CPU), and the same text ``json.dumps`` of the object would give: strings,
    numbers, booleans and null are written directly, anything else by the json encoder
    (tests/test_logs.py compares the two on random fields).
    """

    def format(self, record: logging.LogRecord) -> str:
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if not _LEADING.isdisjoint(record.__dict__):
            return self._as_object(record)
        parts = [
            '{"time": "',
            rfc3339_ms(record.created),
            '", "level": ',
            _quote(record.levelname),
            ', "logger": ',
            _quote(record.name),
            ', "message": ',
            _quote(record.getMessage()),
        ]
        if record.exc_text:
            parts += (', "exc_info": ', _quote(record.exc_text))
        if record.stack_info:
            parts += (', "stack_info": ', _quote(self.formatStack(record.stack_info)))
        for key, value in record.__dict__.items():
            if key not in _RECORD_ATTRS:
                parts += (", ", _quote(key), ": ", _value(value))
        parts.append("}")
        return "".join(parts)

    def _as_object(self, record: logging.LogRecord) -> str:
        """The line as the encoder writes the whole object (an extra field overrides one of
        the leading keys in place)."""
        out: dict[str, object] = {
            "time": rfc3339_ms(record.created),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_text:
            out["exc_info"] = record.exc_text
        if record.stack_info:
            out["stack_info"] = self.formatStack(record.stack_info)
        for key, value in record.__dict__.items():
            if key not in _RECORD_ATTRS:
                out[key] = value
        return _encode(out)


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


def log_event(
    logger: logging.Logger,
    event: str,
    /,
    *,
    message: str | None = None,
    level: int = logging.INFO,
    exc_info: bool | BaseException | None = None,
    **fields: object,
) -> None:
    """Log ``event`` with ``fields`` as one line's keys, in the order given.

    The message is ``message``, or the event's name with spaces (``job_expired`` → "job
    expired"). Nothing is built when ``level`` is not logged.
    """
    if logger.isEnabledFor(level):
        text = event.replace("_", " ") if message is None else message
        logger.log(level, text, exc_info=exc_info, extra={"event": event, **fields})


def configure(level: str = "INFO") -> None:
    """Send every log record to stdout as one JSON object per line."""
    # The lines carry no thread or process: do not look them up for every record (the
    # logging HOWTO's "Optimization" switches).
    logging.logThreads = False
    logging.logProcesses = False
    logging.logMultiprocessing = False
    # Nor where each call was made (the HOWTO's "Information about where calls were made
    # from"): findCaller walks the stack for every record, and the lines do not show it.
    logging._srcfile = None
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(JsonLines())
    handler.addFilter(_WithholdRequestData())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
