"""``printer-state-reasons`` values: keyword, severity, whether edgeprint knows it, plain words.

Pure: no I/O. RFC 8011 §5.4.12 writes a value as a keyword with an optional severity
suffix (``-report``, ``-warning``, ``-error``); a value without one is an error. The
keywords named here are RFC 8011's and PWG 5100.x's (the IANA IPP registry); any other
value (a vendor's ``com.acme-fuser-error``, garbage) is *unknown* but keeps its severity:
an unknown error blocks new work like a known one (:mod:`edgeprint.printers.health`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

Severity = Literal["error", "warning", "report"]

SUFFIXES = ("-report", "-warning", "-error")

#: Registered keywords (RFC 8011 §5.4.12, PWG 5100.9/5100.13, IANA) → what they mean.
KNOWN: Mapping[str, str] = {
    "other": "a fault the printer does not name",
    "connecting-to-device": "connecting to the device",
    "cover-open": "a cover is open",
    "deactivated": "the printer is deactivated",
    "developer-empty": "developer is empty",
    "developer-low": "developer is low",
    "door-open": "a door is open",
    "fuser-over-temp": "the fuser is too hot",
    "fuser-under-temp": "the fuser is not warm yet",
    "hold-new-jobs": "new jobs are held at the printer",
    "identify-printer-requested": "identify was asked for",
    "input-tray-missing": "an input tray is missing",
    "interlock-open": "an interlock is open",
    "interpreter-resource-unavailable": "the printer lacks a font or other resource",
    "marker-supply-empty": "ink, toner or ribbon is empty",
    "marker-supply-low": "ink, toner or ribbon is low",
    "marker-waste-almost-full": "the waste container is almost full",
    "marker-waste-full": "the waste container is full",
    "media-empty": "out of paper or labels",
    "media-jam": "paper or labels jammed",
    "media-low": "paper or labels running low",
    "media-needed": "the job needs paper or labels the printer has not got",
    "moving-to-paused": "the printer is pausing",
    "offline": "the printer is offline",
    "opc-life-over": "the drum is worn out",
    "opc-near-eol": "the drum is near its end of life",
    "output-area-almost-full": "the output tray is almost full",
    "output-area-full": "the output tray is full",
    "output-tray-missing": "the output tray is missing",
    "paused": "the printer is paused",
    "printer-restarted": "the printer restarted",
    "printer-shutdown": "the printer was shut down",
    "shutdown": "the printer is shutting down",
    "spool-area-full": "the printer's spool is full",
    "stopped-partly": "part of the printer has stopped",
    "stopping": "the printer is stopping",
    "timed-out": "the printer timed out talking to the device",
    "toner-empty": "toner is empty",
    "toner-low": "toner is low",
    "wifi-not-configured": "Wi-Fi is not set up",
}


def keyword(reason: str) -> str:
    """``media-jam-warning`` → ``media-jam`` (strip the severity suffix)."""
    for suffix in SUFFIXES:
        if reason.endswith(suffix):
            return reason[: -len(suffix)]
    return reason


def severity(reason: str) -> Severity:
    """``error``, ``warning`` or ``report``; a keyword without a suffix is an error
    (RFC 8011 §5.4.12)."""
    if reason.endswith("-report"):
        return "report"
    if reason.endswith("-warning"):
        return "warning"
    return "error"


def words(reason: str) -> str:
    """What the value says, in plain words (an unknown one: that edgeprint does not know it)."""
    kw = keyword(reason)
    said = KNOWN.get(kw)
    if said is None:
        sev = severity(reason)
        said = f"{'an' if sev == 'error' else 'a'} {sev} edgeprint does not know ({kw})"
    return said


@dataclass(frozen=True)
class Reason:
    """One ``printer-state-reasons`` value as a technician sees it (``GET /v1/printers``)."""

    value: str  # verbatim, as the printer sent it
    keyword: str
    severity: Severity
    known: bool  # a registered keyword (KNOWN)
    words: str
    since: float | None  # unix seconds: first seen in this run of probes (None: unknown)


def describe(
    reasons: Iterable[str], since: Mapping[str, float] | None = None
) -> tuple[Reason, ...]:
    """Each value but ``none``, in the printer's order, with when it was first seen."""
    seen = since or {}
    return tuple(
        Reason(r, keyword(r), severity(r), keyword(r) in KNOWN, words(r), seen.get(r))
        for r in reasons
        if r != "none"
    )


def first_seen(
    previous: Mapping[str, float], reasons: Iterable[str], now: float
) -> dict[str, float]:
    """When each value now shown was first seen: kept from ``previous``, ``now`` for a new
    one; a value no longer shown is forgotten (it starts again if it comes back)."""
    return {r: previous.get(r, now) for r in reasons if r != "none"}
