"""What a printer is known to keep and echo, learnt from its own answers (DESIGN §3).

No printer is described in configuration: each one's *traits* start unknown and
are learnt, one answer at a time, from what it said about copies whose identity
is certain (a job-id edgeprint got from its own Create-Job in the same epoch).
Matching (:func:`edgeprint.evidence.identify`) and settlement use only what a
printer is known to keep: a name is compared only as the printer is known to
echo it, a missing figure proves nothing, a printer whose restarts cannot be seen
is never trusted to have "forgotten" a job.

Pure: :func:`learn_job` and :func:`learn_printer` return new :class:`Traits`;
the monitor stores them and ``GET /v1/printers`` shows them (``as_json``).
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from enum import StrEnum
from typing import Any


class Echo(StrEnum):
    """How a printer reports back a name edgeprint sent it (job-name, requesting-user-name)."""

    UNKNOWN = "unknown"  # not seen yet
    WHOLE = "whole"  # as sent (letter case aside)
    SHORTENED = "shortened"  # the first ``name_length`` characters of it
    CONTAINS = "contains"  # inside a longer name ("edgeprint-X.pdf", "Copy of edgeprint-X")
    REPLACED = "replaced"  # something else ("Print", "Guest", the document's title)
    ABSENT = "absent"  # not reported at all


class History(StrEnum):
    """What a printer keeps of finished jobs."""

    UNKNOWN = "unknown"
    NONE = "none"  # a finished job is gone from its answers at once
    KEPT = "kept"  # finished jobs are listed (for a while)


@dataclass(frozen=True)
class Traits:
    """One printer's personality as learnt so far (``None``: not seen yet)."""

    job_name: Echo = Echo.UNKNOWN
    name_length: int | None = None  # with SHORTENED: how many characters it keeps
    user_name: Echo = Echo.UNKNOWN
    job_uuid: bool | None = None  # reports job-uuid
    k_octets: bool | None = None  # reports job-k-octets
    impressions: bool | None = None  # reports job-impressions-completed
    time_at_creation: bool | None = None  # reports a non-zero time-at-creation
    history: History = History.UNKNOWN
    #: Get-Job-Attributes answered not-found for a job Get-Jobs still listed: ask Get-Jobs
    gja_unreliable: bool = False
    #: Get-Jobs ignored which-jobs=all (it lists only jobs not yet finished)
    lists_live_only: bool = False
    #: printer-up-time advances with time (None: not seen twice yet; False: frozen or absent),
    #: so a restart shows as printer-up-time going back
    up_time_moves: bool | None = None

    @property
    def restarts_visible(self) -> bool:
        """True when a restart of this printer shows in its answers (printer-up-time moves)."""
        return self.up_time_moves is True

    def as_json(self) -> dict[str, Any]:
        """The traits as ``GET /v1/printers`` shows them (``personality``)."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            out[f.name] = value.value if isinstance(value, StrEnum) else value
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Traits:
        """The inverse of :meth:`as_json`; unknown keys are ignored (a newer version's)."""
        known = {f.name for f in fields(cls)}
        kw: dict[str, Any] = {k: v for k, v in data.items() if k in known}
        if "job_name" in kw:
            kw["job_name"] = Echo(kw["job_name"])
        if "user_name" in kw:
            kw["user_name"] = Echo(kw["user_name"])
        if "history" in kw:
            kw["history"] = History(kw["history"])
        return cls(**kw)


def echo_of(sent: str, reported: str | None) -> tuple[Echo, int | None]:
    """How ``reported`` relates to the ``sent`` name (and the length kept when shortened)."""
    if reported is None or reported == "":
        return Echo.ABSENT, None
    s, r = sent.casefold(), reported.casefold()
    if r == s:
        return Echo.WHOLE, None
    if s.startswith(r) and len(r) >= 4:
        return Echo.SHORTENED, len(reported)
    if s in r:
        return Echo.CONTAINS, None
    return Echo.REPLACED, None


def name_matches(traits_echo: Echo, length: int | None, sent: str, reported: str) -> bool | None:
    """Whether ``reported`` is the name ``sent``, as far as the printer's echo lets one say.

    True / False where the printer is known to echo names (whole, shortened,
    contained); None where a name says nothing (replaced, absent, not yet learnt).
    """
    s, r = sent.casefold(), reported.casefold()
    match traits_echo:
        case Echo.WHOLE:
            return r == s
        case Echo.SHORTENED:
            return length is not None and len(r) == length and s.startswith(r)
        case Echo.CONTAINS:
            return s in r
        case _:
            return None


def _merge_echo(
    known: Echo, known_len: int | None, seen: Echo, seen_len: int | None
) -> tuple[Echo, int | None]:
    """A new sighting of how a name was echoed, folded into what was known.

    The weakest echo seen wins (a printer that once replaced a name cannot be
    trusted to echo it): whole > shortened > contains > replaced/absent.
    """
    order = [Echo.WHOLE, Echo.SHORTENED, Echo.CONTAINS, Echo.REPLACED, Echo.ABSENT]
    if known is Echo.UNKNOWN:
        return seen, seen_len
    if seen is known:
        if seen is Echo.SHORTENED and seen_len != known_len:
            return Echo.REPLACED, None  # shortened to varying lengths: not a rule to rely on
        return known, known_len
    worse = max(known, seen, key=order.index)
    if {known, seen} == {Echo.REPLACED, Echo.ABSENT}:
        worse = Echo.REPLACED
    return worse, (known_len if worse is known else seen_len)


@dataclass(frozen=True)
class JobAnswer:
    """What one answer said of a job whose identity is certain (the fields :func:`learn_job`
    reads; :class:`edgeprint.evidence.PrinterJob` is one)."""

    name: str
    user: str
    uuid: str | None
    k_octets: int | None
    impressions_completed: int | None
    created_s: int | None
    terminal: bool
    has_document: bool  # the printer has (all of) the document: figures can be expected


def learn_job(
    traits: Traits, answer: JobAnswer, *, sent_name: str, sent_user: str | None
) -> Traits:
    """Fold one answer about a certainly-identified job into the traits (``sent_user``
    None: the user it was sent as is not at hand; the user echo is left as it was)."""
    name, length = _merge_echo(
        traits.job_name, traits.name_length, *echo_of(sent_name, answer.name)
    )
    user = traits.user_name
    if sent_user is not None:
        user, _ = _merge_echo(traits.user_name, None, *echo_of(sent_user, answer.user))
    new = replace(traits, job_name=name, name_length=length, user_name=user)
    if answer.uuid:
        new = replace(new, job_uuid=True)
    elif new.job_uuid is None:
        new = replace(new, job_uuid=False)
    if answer.created_s:
        new = replace(new, time_at_creation=True)
    elif new.time_at_creation is None:
        new = replace(new, time_at_creation=False)
    if answer.terminal and answer.has_document:
        # a finished job with its document: a printer that keeps figures shows them now
        if answer.k_octets:
            new = replace(new, k_octets=True)
        elif new.k_octets is None:
            new = replace(new, k_octets=False)
        if answer.impressions_completed:
            new = replace(new, impressions=True)
        elif new.impressions is None:
            new = replace(new, impressions=False)
    elif answer.k_octets:
        new = replace(new, k_octets=True)
    if answer.terminal:
        new = replace(new, history=History.KEPT)
    return new


def learn_forgotten(traits: Traits) -> Traits:
    """A job edgeprint saw live is gone from every answer, in the same epoch, while no
    finished job older than it is listed: the printer keeps no (or only a brief) history."""
    if traits.history is History.KEPT:
        return traits  # it kept finished jobs before: this one went another way
    return replace(traits, history=History.NONE)


def learn_printer(
    traits: Traits, *, up_time_s: int | None, previous_up_s: int | None, elapsed_s: float
) -> Traits:
    """Fold two printer-up-time readings ``elapsed_s`` apart into ``up_time_moves``.

    A printer that reports no printer-up-time, or one that stays put over more
    than a few seconds, cannot show a restart by it.
    """
    if up_time_s is None:
        return replace(traits, up_time_moves=False) if traits.up_time_moves is not False else traits
    if previous_up_s is None or elapsed_s < 1.5:
        return traits
    if up_time_s > previous_up_s:
        return traits if traits.up_time_moves else replace(traits, up_time_moves=True)
    if up_time_s == previous_up_s:
        return replace(traits, up_time_moves=False)
    return traits  # it went back: a restart (the epoch says so), not a frozen clock
