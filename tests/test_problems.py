"""The vocabulary of printer problems (edgeprint.printers.problems) fed as the health model
feeds it: every kind as one sentence with its time, ended problems, escaping and cutting,
ordering, and every health reason edgeprint gives mapped to a kind. Pure: no I/O."""

from __future__ import annotations

import ast
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from edgeprint import errors, printable
from edgeprint.dispatch import formats
from edgeprint.documents.capabilities import parse_capabilities
from edgeprint.printers import problems
from edgeprint.printers.health import Health, HealthSettings
from edgeprint.printers.ipp import PrinterStatus
from edgeprint.timefmt import clock_time

PACKAGE = Path(__file__).resolve().parent.parent / "edgeprint"
SETTINGS = HealthSettings(failure_threshold=3, stopped_grace_s=10, quarantine_after=3)
URI = "ipp://127.0.0.1:42033/ipp/print"
#: 08:02:14 on Dec 7 2026 in the zone the tests pin (UTC+1, no daylight saving)
T0 = datetime(2026, 12, 7, 7, 2, 14, tzinfo=UTC).timestamp()
REFUSED = (
    "Get-Printer-Attributes: cannot connect: Cannot connect to host 127.0.0.1:42033 "
    "ssl:default [Connect call failed ('127.0.0.1', 42033)]"
)
TIMED_OUT = "Get-Printer-Attributes: no answer in time"


@pytest.fixture(autouse=True)
def box_zone(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The box's local zone, pinned: UTC+1 (a POSIX TZ string needs no tz database)."""
    monkeypatch.setenv("TZ", "XXX-1")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def status(
    state: int = 3,
    reasons: tuple[str, ...] = (),
    *,
    accepting: bool = True,
    message: str = "",
    trays: tuple[str, ...] = (),
) -> PrinterStatus:
    attributes = {"printer-input-tray": list(trays)} if trays else {}
    return PrinterStatus(
        state=state,
        reasons=reasons,
        message=message,
        queued_job_count=0,
        operations=frozenset({"Create-Job", "Send-Document"}),
        formats=frozenset(),
        copies_supported=True,
        accepting_jobs=accepting,
        up_time_s=1,
        attributes=attributes,
    )


def tray(name: str, level: int) -> str:
    return f"type=sheetFeedAutoRemovableTray;maxcapacity=250;level={level};status=0;name={name};"


def shown(h: Health, now: float, uri: str = URI) -> list[problems.Problem]:
    return list(problems.sentences(h.ledger.entries(now), uri=uri, name="printer-01", now=now))


def texts(h: Health, now: float) -> list[str]:
    return [p.text for p in shown(h, now)]


# --- times -----------------------------------------------------------------------------------


def test_clock_time_is_the_box_local_time_today_else_with_the_day() -> None:
    assert clock_time(T0, T0 + 3600) == "08:02:14"
    assert clock_time(T0 - 86400, T0) == "Dec 6 08:02"
    # the local day, not UTC's: 23:30 local on Dec 6 is 22:30 UTC, still "yesterday"
    late = datetime(2026, 12, 6, 22, 30, tzinfo=UTC).timestamp()
    assert clock_time(late, T0) == "Dec 6 23:30"
    midnight = datetime(2026, 12, 6, 23, 0, 1, tzinfo=UTC).timestamp()  # 00:00:01 local Dec 7
    assert clock_time(midnight, T0) == "00:00:01"


# --- every kind, fed as the health model is fed ------------------------------------------------

CAPS_URF = parse_capabilities({"document-format-supported": ["image/urf"]})


def _pin_changed() -> str:
    # as edgeprint.dispatch.monitor.Monitor.on_bad_answer words it
    return str(errors.CertificateChanged("sha256:" + "a" * 64, "sha256:" + "b" * 64, "printer-01"))


#: kind → (how the printer gets there from healthy at T0, its sentence at T0 + 5)
SCENARIOS: dict[str, tuple[Callable[[Health, float], object], str]] = {
    "not-answering": (
        lambda h, t: h.on_transport_failure(REFUSED, t),
        "not answering at 127.0.0.1:42033 since 08:02:14 — switched off or unplugged?",
    ),
    "not-responding": (
        lambda h, t: h.on_transport_failure(TIMED_OUT, t),
        "not responding at 127.0.0.1:42033 since 08:02:14 — hung? power-cycle it",
    ),
    "media-jam": (
        lambda h, t: h.on_probe(status(5, ("media-jam-error",)), t),
        "paper jam since 08:02:14 (printer says media-jam-error)",
    ),
    "door-open": (
        lambda h, t: h.on_probe(status(3, ("cover-open-error",)), t),
        "door or cover open since 08:02:14 (printer says cover-open-error)",
    ),
    "media-empty": (
        lambda h, t: h.on_probe(status(3, ("media-empty",), trays=(tray("main", 0),)), t),
        "out of paper/labels since 08:02:14 (printer says media-empty)",
    ),
    "tls-pin-changed": (
        lambda h, t: h.on_bad_answer(_pin_changed(), t),
        "its certificate changed since 08:02:14 — replaced printer? confirm the new pin: "
        "edgeprint printers trust printer-01",
    ),
    "tls-required": (
        lambda h, t: h.on_bad_answer("printer requires TLS: use ipps://", t),
        "wants TLS since 08:02:14 — make its URI ipps://",
    ),
    "tls-failed": (
        lambda h, t: h.on_bad_answer("no TLS session: no TLS session with 127.0.0.1:42033", t),
        "no TLS session at 127.0.0.1:42033 since 08:02:14 — is it an ipps port? plain HTTP "
        "needs ipp://",
    ),
    "bad-answer": (
        lambda h, t: h.on_bad_answer(
            "printer answer unusable: Get-Printer-Attributes: HTTP status 404", t
        ),
        "answers in a way edgeprint cannot use since 08:02:14 — is 127.0.0.1:42033 its IPP "
        "address?",
    ),
    "cannot-report-job-state": (
        lambda h, t: h.on_monitoring_failed("Get-Job-Attributes and Get-Jobs failed", t),
        "cannot report job state since 08:02:14 — its job was set aside; check what it "
        "printed, then resume it",
    ),
    "stopped": (
        lambda h, t: (h.on_probe(status(5, message="Paused"), t - 20), h.on_probe(status(5), t)),
        "stopped since 08:01:54",  # since it stopped, not since the grace ran out
    ),
    "not-accepting-jobs": (
        lambda h, t: h.on_probe(status(accepting=False), t),
        "not accepting jobs since 08:02:14 — enable it at the printer",
    ),
    "quarantined": (
        lambda h, t: [h.on_job_failed(f"job-{i}", t) for i in range(3)],
        "quarantined since 08:02:14 — several different jobs failed here; resume it once checked",
    ),
    "unusable-format": (
        lambda h, t: h.on_probe(status(), t, unusable=formats.unusable(CAPS_URF)),
        "takes no format edgeprint can send since 08:02:14 — see the evidence for what it lists",
    ),
    "paused": (
        lambda h, t: h.ledger.update([problems.Fact("paused", "paused")], t, group="paused"),
        "paused by a technician since 08:02:14 — resume it to print",
    ),
    "other": (
        lambda h, t: h.on_probe(status(3, ("toner-empty-error",)), t),
        "toner is empty since 08:02:14 (printer says toner-empty-error)",
    ),
}


def test_every_kind_has_a_scenario_and_words() -> None:
    assert set(SCENARIOS) == set(problems.KINDS)


@pytest.mark.parametrize("kind", list(SCENARIOS))
def test_each_kind_reads_as_one_sentence_with_its_time(kind: str) -> None:
    h = Health(SETTINGS)
    h.on_probe(status(), T0 - 60)
    assert shown(h, T0 - 60) == []
    act, text = SCENARIOS[kind]
    act(h, T0)
    [problem] = shown(h, T0 + 5)
    assert (problem.kind, problem.text, problem.until) == (kind, text, None)
    assert problem.since <= T0
    assert problem.evidence
    if kind not in ("paused", "quarantined", "cannot-report-job-state"):
        assert h.reason is None or problems.kind_of(h.reason) == kind


def test_transport_details_stay_in_the_evidence_never_in_the_text() -> None:
    h = Health(SETTINGS)
    for i in range(3):
        h.on_transport_failure(REFUSED, T0 + i)
    [p] = shown(h, T0 + 3)
    assert p.text == "not answering at 127.0.0.1:42033 since 08:02:14 — switched off or unplugged?"
    assert "ssl:default" not in p.text
    assert "Connect call" not in p.text
    assert p.evidence == f"unreachable: {REFUSED}"
    # a refusal, then time-outs: one problem, from the first miss on, in its latest words
    h.on_transport_failure(TIMED_OUT, T0 + 4)
    [p] = shown(h, T0 + 5)
    assert p.text.startswith("not responding at 127.0.0.1:42033 since 08:02:14")


def test_host_and_port_come_from_the_uri() -> None:
    assert problems.where("ipp://10.0.0.7/ipp/print") == "10.0.0.7:631"
    assert problems.where("ipps://printer-03.local:8443/ipp/print") == "printer-03.local:8443"
    assert problems.where("ipp://[fe80::1]:8631/ipp/print") == "[fe80::1]:8631"
    assert problems.where("not a uri\x1b") == "not a uri\\x1b"


def test_media_empty_beside_a_full_tray_is_no_problem() -> None:
    h = Health(SETTINGS)
    h.on_probe(status(3, ("media-empty-warning",), trays=(tray("main", 100), tray("by", 0))), T0)
    assert shown(h, T0) == []
    h.on_probe(status(3, (), trays=(tray("main", 0), tray("by", 0))), T0 + 1)
    [p] = shown(h, T0 + 1)
    assert (p.kind, p.text) == (
        "media-empty",
        "out of paper/labels since 08:02:15 (printer says every input tray is empty)",
    )


def test_a_warning_jam_stalls_only_a_busy_printer() -> None:
    h = Health(SETTINGS)
    h.on_probe(status(3, ("media-jam-warning",)), T0)
    assert shown(h, T0) == []
    h.on_probe(status(4, ("media-jam-warning",)), T0 + 2)
    [p] = shown(h, T0 + 2)
    assert p.text == "paper jam since 08:02:16 (printer says media-jam-warning)"


def test_an_unknown_reason_is_other_with_its_value_escaped() -> None:
    h = Health(SETTINGS)
    h.on_probe(status(3, ("com.acme-fuser\x1b[2J-error",)), T0)
    [p] = shown(h, T0)
    assert p.kind == "other"
    assert "\x1b" not in p.text + p.evidence
    assert p.text == (
        "a fault edgeprint does not know since 08:02:14 (printer says com.acme-fuser\\x1b[2J-error)"
    )


# --- ended problems, last_error, ordering ----------------------------------------------------


def test_a_recovered_printer_shows_was_until_then_nothing_and_no_last_error() -> None:
    h = Health(SETTINGS)
    for i in range(3):
        h.on_transport_failure(REFUSED, T0 + i)
    assert h.last_error == REFUSED
    h.on_probe(status(), T0 + 30)
    assert h.healthy
    assert h.last_error is None  # it never outlives the recovery
    [p] = shown(h, T0 + 31)
    assert (p.kind, p.since, p.until) == ("not-answering", T0, T0 + 30)
    assert p.text == "was: not answering at 127.0.0.1:42033, until 08:02:44"
    assert shown(h, T0 + 30 + problems.ENDED_SHOWN_S) != []
    assert shown(h, T0 + 31 + problems.ENDED_SHOWN_S) == []


def test_a_new_jam_is_listed_before_an_old_connection_error_and_apart_from_it() -> None:
    h = Health(SETTINGS)
    for i in range(3):
        h.on_transport_failure(REFUSED, T0 + i)
    h.on_probe(status(), T0 + 10)
    h.on_probe(status(5, ("media-jam-error",)), T0 + 120)
    assert h.last_error is None
    assert texts(h, T0 + 125) == [
        "paper jam since 08:04:14 (printer says media-jam-error)",
        "was: not answering at 127.0.0.1:42033, until 08:02:24",
    ]
    h.on_probe(status(), T0 + 140)  # the jam is cleared
    assert texts(h, T0 + 141) == [
        "was: paper jam, until 08:04:34",
        "was: not answering at 127.0.0.1:42033, until 08:02:24",
    ]
    h.on_probe(status(5, ("media-jam-error",)), T0 + 150)  # jammed again: one line, anew
    assert texts(h, T0 + 151) == [
        "paper jam since 08:04:44 (printer says media-jam-error)",
        "was: not answering at 127.0.0.1:42033, until 08:02:24",
    ]


def test_current_problems_oldest_first_and_a_person_clears_what_only_a_person_can() -> None:
    h = Health(SETTINGS)
    h.on_monitoring_failed("Get-Jobs failed", T0)
    h.on_probe(status(3, ("door-open-error",)), T0 + 1)
    assert [p.kind for p in shown(h, T0 + 2)] == ["cannot-report-job-state", "door-open"]
    h.on_transport_failure(REFUSED, T0 + 3)  # what the printer showed is no longer known
    assert [(p.kind, p.until) for p in shown(h, T0 + 4)] == [
        ("cannot-report-job-state", None),
        ("not-answering", None),
        ("door-open", T0 + 3),
    ]
    h.clear(T0 + 5)  # resume
    h.on_probe(status(), T0 + 6)
    assert [(p.kind, p.until) for p in shown(h, T0 + 7)] == [
        ("not-answering", T0 + 6),
        ("cannot-report-job-state", T0 + 5),
    ]  # the door's "was" is the third ended one: only the ENDED_SHOWN latest are shown


def test_the_ended_list_is_bounded() -> None:
    h = Health(SETTINGS)
    for i in range(40):  # a printer that says another thing at each probe
        h.on_probe(status(3, (f"com.acme-fault{i}-error",)), T0 + i)
    assert len(h.ledger._ended) == problems.ENDED_KEPT  # remembered: bounded
    h.on_probe(status(3, ("media-jam-error",)), T0 + 40)
    listed = shown(h, T0 + 41)
    assert [(p.kind, p.until) for p in listed] == [
        ("media-jam", None),
        ("other", T0 + 40),  # the latest ended first
        ("other", T0 + 39),
    ]


def test_ended_problems_are_few_short_lived_and_never_of_a_current_kind() -> None:
    """A morning on one printer: unplugged, a jam, a door, out of paper, each cleared. Only
    the 2 latest "was" lines are shown, for 5 minutes; none of a kind that is going on."""
    assert (problems.ENDED_SHOWN, problems.ENDED_SHOWN_S) == (2, 300.0)
    h = Health(SETTINGS)
    for i in range(3):
        h.on_transport_failure(REFUSED, T0 + i)
    h.on_probe(status(), T0 + 10)
    for i, reason in enumerate(("media-jam-error", "door-open-error", "media-empty-error")):
        h.on_probe(status(5, (reason,)), T0 + 20 + 20 * i)
        h.on_probe(status(), T0 + 30 + 20 * i)
    assert texts(h, T0 + 100) == [
        "was: out of paper/labels, until 08:03:24",
        "was: door or cover open, until 08:03:04",
    ]
    assert texts(h, T0 + 70 + problems.ENDED_SHOWN_S) == [
        "was: out of paper/labels, until 08:03:24"
    ]
    assert texts(h, T0 + 71 + problems.ENDED_SHOWN_S) == []
    # a fault of kind "other" ended; another of that kind now: the old one is not shown under it
    h.on_probe(status(5, ("com.acme-fuser-error",)), T0 + 400)
    h.on_probe(status(), T0 + 410)
    h.on_probe(status(5, ("com.acme-drum-error",)), T0 + 420)
    assert [(p.kind, p.until) for p in shown(h, T0 + 421)] == [("other", None)]


# --- bad input: control characters, 4 KB of junk --------------------------------------------


def test_a_printer_message_with_controls_and_4kb_of_junk_is_escaped_and_cut() -> None:
    junk = "\x1b[31mPAPER\x07\r\n" + "Z" * 4096
    h = Health(SETTINGS)
    h.on_probe(status(5, message=junk), T0)
    h.on_probe(status(5, message=junk), T0 + 11)
    h.on_bad_answer("printer answer unusable: " + junk, T0 + 12)
    h.on_probe(status(5, ("media-jam-error",), message=junk), T0 + 13)
    for p in shown(h, T0 + 14):
        assert not printable.CONTROL_RE.search(p.text + p.evidence), p
        assert len(p.evidence) <= problems.EVIDENCE_CHARS
        assert len(p.text) <= problems.SAID_CHARS + 100
    stopped = next(p for p in shown(h, T0 + 14) if p.kind == "stopped")
    assert stopped.text.startswith('stopped since 08:02:14 (printer says "\\x1b[31mPAPER\\x07')
    assert stopped.text.endswith("…)")
    assert stopped.evidence.endswith("…")
    assert stopped.evidence.startswith('printer-state: stopped; the printer says "\\x1b[31mPAPER')


def test_escape_cuts_and_escapes() -> None:
    assert printable.escape("ok", 10) == "ok"
    assert printable.escape("a\nb\x9b", 10) == "a\\x0ab\\x9b"
    assert printable.escape("x" * 20, 10) == "x" * 9 + "…"
    assert printable.clean("a\x1bb") == "a?b"


# --- no health reason reaches a person without a kind ----------------------------------------


def _calls(path: Path, method: str) -> int:
    """How many calls of ``….method(False, …)`` ``path`` holds."""
    return sum(
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == method
        and isinstance(node.args[0], ast.Constant)
        and node.args[0].value is False
        for node in ast.walk(ast.parse(path.read_text()))
    )


def test_every_health_reason_edgeprint_gives_has_a_kind() -> None:
    """Each way health.py turns a printer unhealthy (its _set(False, …) calls) and each
    problem the monitor hands on_bad_answer is driven here; a new one fails this count
    until it is given a kind and added to SCENARIOS."""
    assert _calls(PACKAGE / "printers" / "health.py", "_set") == 10
    monitor = (PACKAGE / "dispatch" / "monitor.py").read_text()
    on_bad = monitor.split("async def on_bad_answer", 1)[1].split("\n    async def ", 1)[0]
    assert on_bad.count("problem = ") == 4  # TLS required, pin changed, no TLS, unusable
    reasons = set()
    for kind, (act, _) in SCENARIOS.items():
        h = Health(SETTINGS)
        for i in range(3):
            act(h, T0 + i * 20)
        if h.reason is not None:
            reasons.add(h.reason)
            assert problems.kind_of(h.reason) == kind, h.reason
    h = Health(SETTINGS)
    h.on_probe(status(5, message="x"), T0)
    h.on_probe(status(5, message="x"), T0 + 10)  # stopped, the grace out, no reason
    assert problems.kind_of(h.reason or "") == "stopped"
    reasons.add(h.reason or "")
    assert len(reasons) >= 14
    assert problems.kind_of("something new went wrong") == "other"
    fact = problems.fact_of("something new\x1b went wrong")
    assert (fact.kind, fact.said) == ("other", "something new\\x1b went wrong")


def test_two_values_of_one_kind_are_one_problem_and_a_severity_change_keeps_its_start() -> None:
    """Paper out mid-job: ippeveprinter says media-empty-warning and media-needed-warning;
    one sentence, not two; when the printer then stops (-error) it is the same problem."""
    h = Health(SETTINGS)
    empty = (tray("main", 0),)
    h.on_probe(status(4, ("media-empty-warning", "media-needed-warning"), trays=empty), T0)
    [p] = shown(h, T0 + 1)
    assert p.text == (
        "out of paper/labels since 08:02:14 (printer says media-empty-warning, "
        "media-needed-warning)"
    )
    assert p.evidence.count("printer-state-reasons: ") == 2
    h.on_probe(status(5, ("media-empty-error", "door-open-warning", "cover-open")), T0 + 5)
    assert texts(h, T0 + 6) == [
        "out of paper/labels since 08:02:14 (printer says media-empty-error)",
        "door or cover open since 08:02:19 (printer says door-open-warning, cover-open)",
    ]
