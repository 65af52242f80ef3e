"""Crash points for fault-injection tests: ``EDGEPRINT_CRASH_AT=<point>`` kills the process there.

The environment variable is read once at import. Unset (always, in
production) a crash point is one string comparison. Points, in the order a
job meets them: ``after_claim``, ``after_create_job`` (before its job-id is
stored), ``after_send_document`` (the printer has the document; nothing
after it is stored), ``during_send_document`` (half the document handed to the
connection), ``after_printer_completed`` (before DONE is stored). On the IPP
server side (a client such as CUPS sending to edgeprint's queues):
``ipp_create_job`` (a Create-Job came; before its answer), ``ipp_during_document``
(part of a document received), ``ipp_after_document`` (the whole document received,
nothing stored), ``ipp_after_store`` (the job stored; before the answer).
"""

from __future__ import annotations

import os
import signal

_ARMED = os.environ.get("EDGEPRINT_CRASH_AT", "")


def crash_point(name: str) -> None:
    """SIGKILL this process if ``name`` is the armed crash point (no clean-up runs)."""
    if name == _ARMED:
        os.kill(os.getpid(), signal.SIGKILL)


def armed(name: str) -> bool:
    """True when ``name`` is the armed crash point (to take a slower path that reaches it)."""
    return name == _ARMED
