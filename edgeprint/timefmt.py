"""RFC 3339 UTC times with milliseconds (``2026-12-01T13:33:46.804Z``), as API and logs write;
and the box's local clock time a person reads in a sentence (:func:`clock_time`).

The same text as ``datetime.fromtimestamp(ts, UTC).isoformat(timespec="milliseconds")``
with ``Z`` for ``+00:00``, at a fraction of its cost: the seconds part is
formatted once per second and kept (every job answer carries up to four times,
every log line one). A job answer mixes seconds (created long ago, updated now):
the last ``KEEP_SECONDS`` seconds formatted are kept, not just the last one.
"""

from __future__ import annotations

import math
import time

#: How many formatted seconds are kept (then they are forgotten all at once).
KEEP_SECONDS = 4096
_prefixes: dict[int, str] = {}


def rfc3339_ms(ts: float) -> str:
    """``ts`` (unix seconds) as ``YYYY-MM-DDTHH:MM:SS.mmmZ`` in UTC."""
    # As datetime.fromtimestamp: microseconds rounded half to even, then cut to milliseconds.
    frac, whole = math.modf(ts)
    second = int(whole)
    us = round(frac * 1e6)
    if us < 0:  # before 1970: the fraction counts back from the next second
        second, us = second - 1, us + 1_000_000
    if us >= 1_000_000:
        second, us = second + 1, us - 1_000_000
    prefix = _prefixes.get(second)
    if prefix is None:
        if len(_prefixes) >= KEEP_SECONDS:
            _prefixes.clear()
        prefix = _prefixes[second] = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
    return f"{prefix}.{us // 1000:03d}Z"


#: Month names for :func:`clock_time`, whatever the locale.
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def clock_time(ts: float, now: float) -> str:
    """``ts`` as the box's local time a person reads beside a printer: ``08:02:14`` when it is
    the same day as ``now``, else ``Dec 6 08:02`` (pure: ``now`` is given; the zone is the
    process's, ``TZ``)."""
    t, n = time.localtime(ts), time.localtime(now)
    if (t.tm_year, t.tm_yday) == (n.tm_year, n.tm_yday):
        return f"{t.tm_hour:02d}:{t.tm_min:02d}:{t.tm_sec:02d}"
    return f"{_MONTHS[t.tm_mon - 1]} {t.tm_mday} {t.tm_hour:02d}:{t.tm_min:02d}"
