"""What each printer answer proves, about which copy, in which epoch (DESIGN §3): pure.

Every settlement of a copy names the :class:`Evidence` that allowed it
(``settled_by``); :data:`EVIDENCE` says for each what it proves and what it does
not, and DESIGN §3 prints that table (:func:`table_markdown`, tested to agree).

:func:`identify` says whether a printer job *is* a stored copy (job-id within
the copy's epoch, ``time-at-creation`` and ``job-uuid`` where known, the name
only as the printer is known to echo it); :func:`find_orphans` looks for the
printer job of a copy whose job-id edgeprint never learnt; :func:`observe` turns
what the printer said (a :class:`Sighting`) into what the copy now is. The
job-level rules that follow are :func:`edgeprint.copy_policy.judge`.

The table and the answers' types are :mod:`.table`, identity :mod:`.identity`, what an
answer means for a copy :mod:`.observe`; this package re-exports every public name.
"""

from __future__ import annotations

from edgeprint.evidence.identity import (
    find_orphans,
    identify,
)
from edgeprint.evidence.observe import (
    ending_reasons,
    observe,
)
from edgeprint.evidence.table import (
    EVIDENCE,
    JOB_ABORTED,
    JOB_CANCELED,
    JOB_COMPLETED,
    JOB_ENDING_REASONS,
    JOB_HELD,
    JOB_LIVE,
    JOB_PENDING,
    JOB_PROCESSING,
    JOB_STOPPED,
    JOB_STOPPED_REASONS,
    JOB_TERMINAL,
    UNSPECIFIC_REASONS,
    UP_TIME_SLACK_S,
    Context,
    Evidence,
    Listing,
    Observation,
    PrinterJob,
    Proof,
    Sighting,
    printer_job_name,
    table_markdown,
    unverified_words,
)

__all__ = [
    "EVIDENCE",
    "JOB_ABORTED",
    "JOB_CANCELED",
    "JOB_COMPLETED",
    "JOB_ENDING_REASONS",
    "JOB_HELD",
    "JOB_LIVE",
    "JOB_PENDING",
    "JOB_PROCESSING",
    "JOB_STOPPED",
    "JOB_STOPPED_REASONS",
    "JOB_TERMINAL",
    "UNSPECIFIC_REASONS",
    "UP_TIME_SLACK_S",
    "Context",
    "Evidence",
    "Listing",
    "Observation",
    "PrinterJob",
    "Proof",
    "Sighting",
    "ending_reasons",
    "find_orphans",
    "identify",
    "observe",
    "printer_job_name",
    "table_markdown",
    "unverified_words",
]
