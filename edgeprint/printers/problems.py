"""Every printer problem in plain words, with when it began and ended (issue 25).

The one vocabulary of printer problems for the API, the status page, the CLI and the
alerts: a *kind* (a stable slug) and one sentence a technician can act on, with its
time — ``not answering at 127.0.0.1:42033 since 08:02:14 — switched off or
unplugged?`` — and the raw detail underneath as *evidence* (reason keywords, the
transport's text, escaped and cut). Transport details never reach the sentence.

Pure: :class:`~edgeprint.printers.health.Health` turns what it sees into
:class:`Fact` values and keeps them in a :class:`Ledger`, which remembers since when
each has held and, for :data:`ENDED_SHOWN_S` after it ended, that it did (the latest
:data:`ENDED_SHOWN` of them);
:func:`sentences` words them for a printer at a given ``now``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from yarl import URL

from edgeprint import printable
from edgeprint.printers import reasons
from edgeprint.timefmt import clock_time

#: An ended problem is shown ("was: …, until …") this long after it ended, then forgotten (s):
#: long enough to see what a printer had this morning's minute, short enough not to pile up.
ENDED_SHOWN_S = 300.0
#: At most this many ended problems are shown (the latest): on a phone, more of them push the
#: printers that matter now below the fold.
ENDED_SHOWN = 2
#: At most this many ended problems are remembered (a flapping printer stays bounded).
ENDED_KEPT = 16
#: The printer's own words quoted in a sentence are cut to this many characters.
SAID_CHARS = 200
#: The evidence is cut to this many characters.
EVIDENCE_CHARS = 300
#: The IPP port when a printer's URI names none (RFC 8010 §3.2; ipps:// too, RFC 7472).
IPP_PORT = 631


@dataclass(frozen=True)
class Words:
    """How one kind reads: ``now`` while it goes on, ``was`` once it ended.

    Fields: ``{since}`` (its start, :func:`~edgeprint.timefmt.clock_time`), ``{where}``
    (HOST:PORT of the printer's URI), ``{name}`` (the printer), ``{says}`` (`` (printer
    says …)`` or nothing), ``{words}`` (what a printer-state-reasons value means).
    """

    now: str
    was: str


#: Every kind, in the order problems of the same age are listed (the cause before its
#: consequences).
KINDS: Mapping[str, Words] = {
    "not-answering": Words(
        "not answering at {where} since {since} — switched off or unplugged?",
        "not answering at {where}",
    ),
    "not-responding": Words(
        "not responding at {where} since {since} — hung? power-cycle it",
        "not responding at {where}",
    ),
    "tls-pin-changed": Words(
        "its certificate changed since {since} — replaced printer? confirm the new pin: "
        "edgeprint printers trust {name}",
        "certificate changed",
    ),
    "tls-required": Words("wants TLS since {since} — make its URI ipps://", "wanted TLS"),
    "tls-failed": Words(
        "no TLS session at {where} since {since} — is it an ipps port? plain HTTP needs ipp://",
        "no TLS session at {where}",
    ),
    "bad-answer": Words(
        "answers in a way edgeprint cannot use since {since} — is {where} its IPP address?",
        "answers edgeprint could not use",
    ),
    "media-jam": Words("paper jam since {since}{says}", "paper jam"),
    "door-open": Words("door or cover open since {since}{says}", "door or cover open"),
    "media-empty": Words("out of paper/labels since {since}{says}", "out of paper/labels"),
    "stopped": Words("stopped since {since}{says}", "stopped"),
    "not-accepting-jobs": Words(
        "not accepting jobs since {since} — enable it at the printer", "not accepting jobs"
    ),
    "cannot-report-job-state": Words(
        "cannot report job state since {since} — its job was set aside; check what it "
        "printed, then resume it",
        "cannot report job state",
    ),
    "quarantined": Words(
        "quarantined since {since} — several different jobs failed here; resume it once checked",
        "quarantined",
    ),
    "unusable-format": Words(
        "takes no format edgeprint can send since {since} — see the evidence for what it lists",
        "took no format edgeprint can send",
    ),
    "paused": Words("paused by a technician since {since} — resume it to print", "paused"),
    "other": Words("{words} since {since}{says}", "{words}"),
}

#: printer-state-reasons keywords with a kind of their own (any other: ``other``).
REASON_KINDS: Mapping[str, str] = {
    "media-jam": "media-jam",
    "door-open": "door-open",
    "cover-open": "door-open",
    "interlock-open": "door-open",
    "media-empty": "media-empty",
    "media-needed": "media-empty",
}

#: Health reasons (edgeprint.printers.health, edgeprint.dispatch.monitor) by how they begin.
REASON_PREFIXES: tuple[tuple[str, str], ...] = (
    ("cannot report job state", "cannot-report-job-state"),
    ("certificate changed", "tls-pin-changed"),
    ("printer requires TLS", "tls-required"),
    ("no TLS session", "tls-failed"),
    ("printer answer unusable", "bad-answer"),
    ("quarantined", "quarantined"),
    ("takes none of the formats", "unusable-format"),
    ("printer-is-accepting-jobs: false", "not-accepting-jobs"),
    ("printer-state: stopped", "stopped"),
)
#: The words for a printer-state-reasons value edgeprint does not know (its value follows).
UNKNOWN_REASON = "a fault edgeprint does not know"
_FIRST_VALUE_RE = re.compile(r"\(([^;()\s]+)")


@dataclass(frozen=True)
class Fact:
    """A problem as health sees it now, before words and times.

    ``key`` says what makes it the same problem from one look to the next (default: the
    kind; a printer-state-reasons keyword; ``transport`` for a printer that does not answer,
    refused or timed out alike). ``began``: when it began, if known before it was seen
    (a printer stopped longer than the grace is a problem since it stopped).
    """

    kind: str
    evidence: str
    said: str = ""  # the printer's own words for it (a reason value, its message)
    words: str = ""  # for kind other: what it means
    key: str = ""
    began: float | None = None

    @property
    def ident(self) -> str:
        return self.key or self.kind


@dataclass(frozen=True)
class Entry:
    """A fact with since when it holds and, once it no longer does, until when."""

    fact: Fact
    since: float
    until: float | None = None


@dataclass(frozen=True)
class Problem:
    """One problem as ``GET /v1/printers`` shows it (the contract of issue 25)."""

    kind: str
    text: str
    since: float
    until: float | None
    evidence: str


class Ledger:
    """Since when each problem holds, and which ended in the last :data:`ENDED_SHOWN_S`.

    Each source of facts (``group``: the health model; a technician's pause) replaces only
    its own: a fact no longer given ends, a new one begins, one given again keeps its start.
    """

    def __init__(self) -> None:
        self._current: dict[tuple[str, str], Entry] = {}
        self._ended: list[tuple[tuple[str, str], Entry]] = []

    def update(self, facts: Iterable[Fact], now: float, group: str = "health") -> None:
        given: dict[tuple[str, str], Fact] = {}
        for f in facts:  # two values of one kind (media-empty and media-needed): one problem
            was = given.get((group, f.ident))
            given[(group, f.ident)] = f if was is None else merged(was, f)
        for key, entry in list(self._current.items()):
            if key[0] == group and key not in given:
                del self._current[key]
                self._ended.append((key, replace(entry, until=now)))
        for key, fact in given.items():
            held = self._current.get(key)
            if held is None:
                # it is back: the "was" line of its last time would only repeat it
                self._ended = [(k, e) for k, e in self._ended if k != key]
                began = fact.began if fact.began is not None and fact.began <= now else now
                self._current[key] = Entry(fact, began)
            else:
                self._current[key] = replace(held, fact=fact)
        del self._ended[:-ENDED_KEPT]

    def entries(self, now: float) -> list[Entry]:
        """Current problems (oldest first), then the :data:`ENDED_SHOWN` latest ended within
        :data:`ENDED_SHOWN_S` — never one of a current problem's kind ("was: paper jam" under
        "paper jam since …" only repeats it)."""
        order = {k: i for i, k in enumerate(KINDS)}
        current = sorted(
            self._current.values(), key=lambda e: (e.since, order.get(e.fact.kind, len(order)))
        )
        going_on = {e.fact.kind for e in current}
        ended = [
            e
            for _, e in self._ended
            if e.until is not None
            and now - e.until <= ENDED_SHOWN_S
            and e.fact.kind not in going_on
        ]
        ended.sort(key=lambda e: -(e.until or 0.0))
        return current + ended[:ENDED_SHOWN]


def merged(a: Fact, b: Fact) -> Fact:
    """One fact saying what two of the same problem say (``said``: both values)."""
    said = ", ".join(x for x in (a.said, b.said) if x)
    return replace(a, said=said, evidence=f"{a.evidence}; {b.evidence}")


def reason_kind(value: str) -> str:
    """The kind of a printer-state-reasons value (any severity)."""
    return REASON_KINDS.get(reasons.keyword(value), "other")


def transport_kind(error: str) -> str:
    """A request that got no answer: ``not-responding`` when a connection was made and
    nothing came back in time (hung), else ``not-answering`` (refused, reset, no route)."""
    return "not-responding" if "no answer in time" in error else "not-answering"


def kind_of(reason: str) -> str:
    """The kind of any health reason edgeprint gives (``other`` for one it does not know)."""
    if reason.startswith("unreachable: "):
        return transport_kind(reason)
    for prefix, kind in REASON_PREFIXES:
        if reason.startswith(prefix):
            return kind
    if reason.startswith("printer-state-reasons: "):
        if "no input tray has media" in reason:
            return "media-empty"
        found = _FIRST_VALUE_RE.search(reason)
        return reason_kind(found.group(1)) if found else "other"
    return "other"


def reason_fact(value: str | None, evidence: str) -> Fact:
    """The fact of a blocking printer-state-reasons value (None: every input tray is empty)."""
    if value is None:
        return Fact(
            "media-empty", evidence, said="every input tray is empty", key="reason:media-empty"
        )
    kind = reason_kind(value)
    known = reasons.keyword(value) in reasons.KNOWN
    words = "" if kind != "other" else reasons.words(value) if known else UNKNOWN_REASON
    # a kind of its own is one problem whatever the values (door-open and cover-open, media-empty
    # and media-needed, -warning then -error); any other reason is one problem per keyword
    key = f"reason:{kind if kind != 'other' else reasons.keyword(value)}"
    return Fact(kind, evidence, said=value, words=words, key=key)


def fact_of(reason: str, *, key: str = "") -> Fact:
    """A fact from a health reason given as text (a transport error, a bad answer)."""
    kind = kind_of(reason)
    said = "" if kind != "other" else printable.escape(reason, SAID_CHARS)
    words = "not usable" if kind == "other" else ""
    return Fact(kind, reason, said=said, words=words, key=key)


def where(uri: str) -> str:
    """HOST:PORT of a printer's URI (``[::1]:631`` for IPv6; 631 when it names no port)."""
    try:
        url = URL(uri)
        host = url.raw_host
    except ValueError:
        host = None
    if not host:
        return printable.escape(uri, SAID_CHARS)
    host = f"[{host}]" if ":" in host else host
    return f"{host}:{url.explicit_port or IPP_PORT}"


def sentence(entry: Entry, *, uri: str, name: str, now: float) -> str:
    """The entry in words: the kind's ``now`` sentence, or ``was: …, until HH:MM:SS``."""
    fact = entry.fact
    said = printable.escape(fact.said, SAID_CHARS)
    fields = {
        "since": clock_time(entry.since, now),
        "where": where(uri),
        "name": printable.escape(name, SAID_CHARS),
        "says": f" (printer says {said})" if said else "",
        "words": printable.escape(fact.words, SAID_CHARS) or "a problem",
    }
    words = KINDS.get(fact.kind, KINDS["other"])
    if entry.until is None:
        return words.now.format(**fields)
    return f"was: {words.was.format(**fields)}, until {clock_time(entry.until, now)}"


def sentences(entries: Iterable[Entry], *, uri: str, name: str, now: float) -> tuple[Problem, ...]:
    """The ledger's entries as ``GET /v1/printers`` shows them."""
    return tuple(
        Problem(
            kind=e.fact.kind if e.fact.kind in KINDS else "other",
            text=sentence(e, uri=uri, name=name, now=now),
            since=e.since,
            until=e.until,
            evidence=printable.escape(e.fact.evidence, EVIDENCE_CHARS),
        )
        for e in entries
    )
