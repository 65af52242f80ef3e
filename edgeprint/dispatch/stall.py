"""Is the job in hand stalled? A pure reading of the printer's reasons and the copy's figures.

Health (:mod:`edgeprint.printers.health`) says whether a printer takes *new* work. This
says whether the copy a printer holds can go on: the printer lists it live, it reports a
jam, an open door or missing media with no other input that has some, and the copy's
figures have not moved since. The severity suffix does not matter here (RFC 8011
§5.4.12 lets a printer say ``media-jam-warning`` while it waits for a person, or
``-report``, or nothing), nor does ``printer-state``: a device may stay "idle" with a
jammed job it holds (google/cloudprint_logocert#137). A copy stalled for ``[dispatch]
blocked_grace_s`` with none of it out is cancelled there and moved (DESIGN §4).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from edgeprint.printers import reasons
from edgeprint.printers.health import Tray, media_elsewhere

#: Reasons (any severity) that stop the job in hand until a person acts.
JOB_STALLS = frozenset(
    {"media-jam", "door-open", "cover-open", "interlock-open", "media-needed", "media-empty"}
)
#: Of those, the ones about one input's paper: another input with media may print instead.
_ONE_INPUT = frozenset({"media-empty"})


def stall_reasons(printer_reasons: Sequence[str], trays: Sequence[Tray]) -> tuple[str, ...]:
    """The values of ``printer-state-reasons`` that stall a job in hand, as sent."""
    elsewhere = media_elsewhere(trays)
    out = []
    for r in printer_reasons:
        kw = reasons.keyword(r)
        if kw not in JOB_STALLS or (kw in _ONE_INPUT and elsewhere):
            continue
        out.append(r)
    return tuple(out)


def stalled_since(
    shown: Sequence[str], since: Mapping[str, float], progressed_at: float
) -> float | None:
    """Since when the job in hand is stalled (unix seconds), None when it is not: the
    earliest time one of the ``shown`` stall values has been showing (``since``: each
    value's first sighting), but not before its figures last moved (``progressed_at``)."""
    times = [since[r] for r in shown if r in since]
    if not shown:
        return None
    began = min(times) if times else progressed_at
    return max(began, progressed_at)
