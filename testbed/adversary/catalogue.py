"""The catalogue: printer behaviours seen in public, each with the source it comes from.

A behaviour is what one printer does wrong (or merely differently), made real by the
adversary proxy's knobs (:class:`~testbed.adversary.proxy.Knobs`), the rig's job faults
(testbed/rig.py) or events during a run (a power cycle, a person at the panel). The
generator (testbed/adversary/generator.py) draws several per printer and per seed.

Each entry names its public source: a bug-tracker thread, an RFC or PWG section, or real
printers' answers kept as test data in a public repository. ``python -m
bench.adversary_bench --list`` prints the catalogue.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

#: Parts of the exchange a behaviour belongs to.
PARTS = ("connection", "status", "attributes", "lifecycle", "state", "restart")


@dataclass
class Draw:
    """What the generator is building for one printer of one seed."""

    rng: random.Random
    printer: str
    knobs: dict[str, Any] = field(default_factory=dict)
    #: (seconds after the first submission, action, arguments) for the runner
    events: list[tuple[float, str, dict[str, Any]]] = field(default_factory=list)
    speed_s: float = 0.0  # seconds per page
    jobs: int = 0  # jobs of the seed (events may name one by its index)
    #: the behaviour's own deterministic test (tests/test_behaviours.py): one job, no other
    #: behaviour; a behaviour may then draw its hardest case
    alone: bool = False
    #: (alone) the job is submitted no earlier than this (seconds): the appliance has seen
    #: what the behaviour set up at the start
    jobs_after: float = 0.0

    def at(self, t: float, action: str, **args: Any) -> None:
        self.events.append((round(t, 3), action, {"printer": self.printer, **args}))

    def job(self) -> int:
        return self.rng.randrange(self.jobs)


@dataclass(frozen=True)
class Behaviour:
    """One printer behaviour of the catalogue."""

    id: str
    part: str
    what: str  # what the printer does, as an IPP client sees it
    source: str  # the public source (URL or spec section) and what it shows
    apply: Callable[[Draw], None]
    #: uses the rig printer's one fault file (at most one such behaviour per printer)
    fault: bool = False
    #: restarts the printer, or stops it answering: seeds with it are not "calm" (I5)
    restarts: bool = False
    #: behaviours it is never combined with on one printer
    excludes: frozenset[str] = frozenset()


def _knob(**knobs: Any) -> Callable[[Draw], None]:
    def apply(d: Draw) -> None:
        d.knobs.update(knobs)

    return apply


def _hang(d: Draw) -> None:
    t = d.rng.uniform(0.05, 0.6)
    d.at(t, "hang")
    d.at(t + d.rng.uniform(0.3, 1.2), "resume")


def _power_cycle(d: Draw) -> None:
    t = d.rng.uniform(0.05, 1.2)
    d.at(t, "power_cycle", down_s=round(d.rng.uniform(0.05, 0.6), 3))


def _other_clients(d: Draw) -> None:
    for _ in range(d.rng.randint(1, 3)):
        d.at(d.rng.uniform(0.0, 1.5), "foreign_job", pages=d.rng.randint(1, 2))


def _slow_jobs(d: Draw) -> None:
    d.speed_s = max(d.speed_s, round(d.rng.uniform(0.15, 0.4), 3))


def _aborts_midway(d: Draw) -> None:
    reason = d.rng.choice(["media-jam", ""])
    d.at(0.0, "fault", mode="abort-at", args=["1", *([reason] if reason else [])],
         job=d.job(), once=True)  # fmt: skip


def _silent_abort(d: Draw) -> None:
    d.at(0.0, "fault", mode="abort", args=[], job=d.job(), once=True)


def _panel_cancel(d: Draw) -> None:
    job = d.job()
    d.at(0.0, "fault", mode="hold", args=["none"], job=job)  # it waits at the panel…
    d.at(d.rng.uniform(0.2, 0.8), "panel_cancel", job=job)  # …where a person cancels it
    d.at(2.0, "clear_fault")


def _document_errors(d: Draw) -> None:
    d.knobs["document_errors"] = True
    d.at(0.0, "fault", mode="docerror", args=[], job=d.job())


def _jams(d: Draw) -> None:
    t = d.rng.uniform(0.0, 0.3)
    d.at(t, "fault", mode="hold", args=["media-jam"], job=d.job())
    d.at(t + d.rng.uniform(0.5, 2.5), "clear_fault")


def _held_at_printer(d: Draw) -> None:
    d.knobs["held_at_printer"] = True
    t = d.rng.uniform(0.0, 0.3)
    d.at(t, "fault", mode="hold", args=["none"], job=d.job())
    d.at(t + d.rng.uniform(0.5, 2.0), "clear_fault")


def _paper_out(d: Draw) -> None:
    t = d.rng.uniform(0.0, 0.8)
    d.at(t, "media", level="empty")
    d.at(t + d.rng.uniform(0.5, 2.0), "media", level="loaded")


def _vendor_error(d: Draw) -> None:
    t = d.rng.uniform(0.0, 0.5)
    d.at(t, "knob", extra_reasons=("com.acme-fuser-error",))
    d.at(t + d.rng.uniform(0.5, 1.5), "knob", extra_reasons=())


#: Rolls a person may load instead of the right one (4×3 in labels, RIGHT_STOCK):
#: one the 4×3 in badge does not fit (labels fit exactly), A4 sheets (a sheet prints any
#: size scaled), and the right roll itself (a swap that changes nothing but the count).
_OTHER_STOCK = (
    ("na_index-4x6_4x6in", "labels"), ("iso_a4_210x297mm", "stationery"),
    ("oe_4x3-label_4x3in", "labels"),
)  # fmt: skip
_WRONG_STOCK = _OTHER_STOCK[0]
#: The stock every job of a run fits exactly (testbed.pdfs makes 4×3 in badges).
RIGHT_STOCK = ("oe_4x3-label_4x3in", "labels")


def _stock_change_silent(d: Draw) -> None:
    if d.alone:  # the hard case: the job arrives after a wrong roll went in
        t, (size, kind), d.jobs_after = 0.0, _WRONG_STOCK, 1.2
        back = 2.5
    else:
        t = d.rng.uniform(0.0, 0.8)
        size, kind = d.rng.choice(_OTHER_STOCK)
        back = t + d.rng.uniform(0.5, 2.0)
    d.at(t, "stock", size=size, media_type=kind)
    d.at(back, "stock", size=RIGHT_STOCK[0], media_type=RIGHT_STOCK[1])


def _garbage_supplies(d: Draw) -> None:
    d.knobs["garbage_supplies"] = "contradictory" if d.alone else d.rng.choice(
        ("types", "contradictory"))  # fmt: skip


def _open_head_other(d: Draw) -> None:
    if d.alone:  # open before the job comes; closed a while later
        d.knobs["head_open"] = True
        d.at(2.0, "knob", head_open=False)
        return
    t = d.rng.uniform(0.0, 0.8)
    d.at(t, "knob", head_open=True)
    d.at(t + d.rng.uniform(0.5, 2.0), "knob", head_open=False)


def _hang_long(d: Draw) -> None:
    t = d.rng.uniform(0.05, 0.6)
    d.at(t, "hang")
    d.at(t + d.rng.uniform(1.5, 4.0), "resume")  # past a probe's time-out: shown down


def _jams_with_suffix(d: Draw) -> None:
    d.knobs["stall_as"] = d.rng.choice(("report", "bare", "idle-report"))
    _jams(d)


def _cancel_held_by_jam(d: Draw) -> None:
    d.knobs["cancel_waits_for_stall"] = True
    _jams(d)


def _stops_on_error(d: Draw) -> None:
    d.knobs["error_stop"] = True
    _jams(d)


_B = Behaviour
CATALOGUE: tuple[Behaviour, ...] = (
    # --- connection handling ---------------------------------------------------------
    _B("keepalive_dropped", "connection",
       "closes idle keep-alive connections after 50 ms without a word; the next request on a "
       "pooled connection meets a closed socket",
       "aio-libs/aiohttp#9138 (https://github.com/aio-libs/aiohttp/issues/9138): a server's "
       "keep-alive timeout racing the client gives ServerDisconnectedError; OpenPrinting/ipp-usb#17 "
       "(https://github.com/OpenPrinting/ipp-usb/issues/17): an Epson sends Keep-Alive: timeout=30",
       _knob(keepalive_s=0.05)),
    _B("connection_close", "connection",
       "answers every request with Connection: close (an HTTP/1.0-style printer)",
       "apple/cups#2683 (https://github.com/apple/cups/issues/2683): a Lexmark T620dn answers every "
       "request as HTTP/1.0, without persistent connections",
       _knob(connection_close=True)),
    _B("no_chunked", "connection",
       "refuses chunked request bodies (HTTP 411): it needs Content-Length",
       "apple/cups#3987 (https://github.com/apple/cups/issues/3987): the Orange Livebox2 / SAGEM f@st "
       "3504 does not support chunked encoding (CUPS grew nohttpchunking=1 for it)",
       _knob(no_chunked=True)),
    _B("reset_before_body", "connection",
       "resets a quarter of the connections after the request's headers, before its body: "
       "nothing was acted on",
       "apple/cups#1601 (https://github.com/apple/cups/issues/1601): the printer resets during the "
       "data transfer ('Connection reset by peer'); apple/cups#4185: packets lost during job "
       "creation, the printer never starts the job",
       _knob(reset_before_body=0.25)),
    _B("answer_lost", "connection",
       "acts on a third of Create-Job, Send-Document and Print-Job requests (the job is made, "
       "the document taken) and the answer never comes back",
       "apple/cups#953 (https://github.com/apple/cups/issues/953): a LinkSys PSUS4 corrupts its "
       "answer on completion and the retrying client prints the job again and again; "
       "apple/cups#4073, #443: HP printers over IPP print jobs several times",
       _knob(answer_lost=0.34)),
    _B("upload_cut", "connection",
       "loses the connection part-way through an upload: the printer prints what it got of "
       "the document (its last page incomplete) and edgeprint gets no answer",
       "apple/cups#1601 (https://github.com/apple/cups/issues/1601): the printer resets during "
       "the data transfer; OpenPrinting/ipp-usb#95 (https://github.com/OpenPrinting/ipp-usb/"
       "issues/95): an HP drops the last page of a job",
       _knob(cut_after=1200, cut_once=True, cut_wait_s=3.0)),
    _B("slow_answers", "connection",
       "answers every request 20–150 ms late",
       "home-assistant/core#93006 (https://github.com/home-assistant/core/issues/93006): time-outs "
       "while printers wake (Epson ET2720, HP ENVY 7800, Brother DCP-L3550CDW); apple/cups#5559",
       _knob(delay_s=(0.02, 0.15))),
    _B("hangs", "connection",
       "stops answering for a while (accepts TCP, never answers), then goes on",
       "apple/cups#4515 (https://github.com/apple/cups/issues/4515): ipptool hung 18 hours in "
       "http_read on a Canon iR3225",
       _hang, restarts=True, excludes=frozenset({"power_cycle"})),
    _B("hangs_long", "connection",
       "stops answering for 1.5–4 s (accepts TCP, never answers: longer than a probe's "
       "time-out, so it is shown down), then goes on as if nothing happened",
       "apple/cups#4515 (https://github.com/apple/cups/issues/4515): ipptool hung 18 hours in "
       "http_read on a Canon iR3225; home-assistant/core#93006 (https://github.com/"
       "home-assistant/core/issues/93006): printers time out while they wake",
       _hang_long, restarts=True, excludes=frozenset({"power_cycle", "hangs"})),
    # --- status codes ------------------------------------------------------------------
    _B("busy", "status",
       "answers a third of job creations server-error-busy (0x0507) without making a job",
       "Zelenov/SharpIpp#14 (https://github.com/Zelenov/SharpIpp/issues/14): a second document "
       "while one prints gets ServerErrorBusy; RFC 8011 Appendix B.1.5.8",
       _knob(busy=0.34)),
    _B("service_unavailable", "status",
       "answers a fifth of all requests server-error-service-unavailable (0x0502) without acting",
       "RFC 8011 Appendix B.1.5.3; apple/cups#2951 (https://github.com/apple/cups/issues/2951): the "
       "CUPS backend retries on busy and service-unavailable",
       _knob(unavailable=0.2)),
    _B("ignores_which_jobs", "status",
       "ignores which-jobs=all in Get-Jobs (successful-ok-ignored-or-substituted-attributes): it "
       "lists only jobs not yet finished",
       "RFC 8011 §4.1.7 and §4.2.6.1 (which-jobs default 'not-completed'); the python-ipp fixture "
       "get-printer-attributes-kyocera-ecosys-m2540dn-001.bin "
       "(https://github.com/ctalkington/python-ipp) answers 0x0001 with unsupported attributes",
       _knob(ignores_which_jobs=True)),
    _B("monitoring_bad_request", "status",
       "answers every Get-Job-Attributes client-error-bad-request while printing works",
       "gmuth/ipp-client-kotlin#19 (https://github.com/gmuth/ipp-client-kotlin/issues/19): an HP "
       "prints, but every Get-Job-Attributes gets client-error-bad-request; HPInc/jipp#107",
       _knob(gja_status=0x0400), excludes=frozenset({"other_host"})),
    _B("monitoring_http_500", "status",
       "answers a third of Get-Job-Attributes and Get-Jobs with HTTP 500",
       "apple/cups#6194 (https://github.com/apple/cups/issues/6194): an Epson L6290's Get-Jobs "
       "fails; apple/cups#669: bad answers to job attributes led to a job printed five times",
       _knob(monitoring_http=0.34)),
    _B("ipp11_only", "status",
       "speaks IPP/1.1 only: IPP/2.0 requests get server-error-version-not-supported",
       "apple/cups#4079 (https://github.com/apple/cups/issues/4079); ctalkington/python-ipp#221 "
       "(https://github.com/ctalkington/python-ipp/issues/221): HP LaserJet 4700/5200 need IPP 1.1",
       _knob(ipp11_only=True)),
    _B("vendor_error", "status",
       "reports a vendor error reason (com.acme-fuser-error) for a while: it cannot print then",
       "apple/cups#3658 (https://github.com/apple/cups/issues/3658) and #3688: vendor reasons "
       "(com.apple.print.recoverable…) reach clients; RFC 8011 §5.4.12 (-error: stopped)",
       _vendor_error),
    # --- job attributes ----------------------------------------------------------------
    _B("other_host", "attributes",
       "knows itself by another name (behind a TLS front, or as printer.local): "
       "Get-Job-Attributes answers not-found, Get-Jobs lists the job, and every URI it reports "
       "names printer.local",
       "gmuth/ipp-client-kotlin#40 (https://github.com/gmuth/ipp-client-kotlin/issues/40): "
       "Get-Job-Attributes through NAT fails for an existing job; HPInc/jipp#191; the python-ipp "
       "Kyocera fixture reports job-uri with a host name the client did not use; "
       "OpenPrinting/ipp-usb#29: devices mirror the Host header into their URIs",
       _knob(other_host=True)),
    _B("names_replaced", "attributes",
       "reports every job as job-name 'Print' by user 'Guest'",
       "williamkapke/ipp#44 (https://github.com/williamkapke/ipp/issues/44): HP PageWide Pro "
       "477w/452dw show job name 'Print' and user 'Guest'",
       _knob(job_name="replace", user_name="replace"),
       excludes=frozenset({"names_shortened", "names_decorated"})),
    _B("names_shortened", "attributes",
       "keeps only the first 20 characters of job-name",
       "OpenPrinting/cups#644 (https://github.com/OpenPrinting/cups/issues/644) and PR#866: long "
       "job names fail on older printers, names are truncated; RFC 8011 §5.3.5 job-name (name(MAX))",
       _knob(job_name="shorten"), excludes=frozenset({"names_replaced", "names_decorated"})),
    _B("names_decorated", "attributes",
       "reports job-name as 'Copy of <name>.pdf' and the user as 'CORP\\\\<user>'",
       "apple/cups PR#6147 (https://github.com/apple/cups/pull/6147): a Canon MF4550d shows "
       "HOST\\\\USER; the python-ipp Kyocera fixture reports job-originating-user-name "
       "'CORP\\\\OFFICE20708$'",
       _knob(job_name="decorate", user_name="decorate"),
       excludes=frozenset({"names_replaced", "names_shortened"})),
    _B("k_octets_reported", "attributes",
       "reports job-k-octets: the document bytes it received",
       "RFC 8011 §5.3.17.1 job-k-octets (recommended, not required; Table 13)",
       _knob(k_octets="exact"), excludes=frozenset({"k_octets_under"})),
    _B("k_octets_under", "attributes",
       "reports job-k-octets at half what it received (a compressed size)",
       "RFC 8011 §5.3 Table 13: job-k-octets is not REQUIRED and its meaning per implementation; "
       "the python-ipp Kyocera fixture has job-impressions with no value and no job-k-octets",
       _knob(k_octets="under"), excludes=frozenset({"k_octets_reported"})),
    _B("no_impressions", "attributes",
       "reports neither job-impressions nor job-impressions-completed",
       "apple/cups#1762 (https://github.com/apple/cups/issues/1762): a Ricoh Aficio 2035 lacks "
       "job-state and job-media-sheets-completed",
       _knob(impressions="absent"), excludes=frozenset({"impressions_zero"})),
    _B("impressions_zero", "attributes",
       "reports job-impressions-completed 0, whatever came out",
       "apple/cups#5743 (https://github.com/apple/cups/issues/5743): both counters stay at 0; "
       "OpenPrinting/cups-browsed#76: CUPS says 10 sheets, the HP OfficeJet 8010 says 0",
       _knob(impressions="zero"), excludes=frozenset({"no_impressions"})),
    _B("no_time_at_creation", "attributes",
       "reports time-at-creation 0 and no date-time-at-creation",
       "OpenPrinting/cups#1440 (https://github.com/OpenPrinting/cups/issues/1440): time-at-creation "
       "omitted; PWG IPP list 1999 (https://www.pwg.org/hypermail/ipp/2392.html): 0 means before "
       "power-up, date-time-* optional",
       _knob(no_time_at_creation=True)),
    _B("stale_state", "attributes",
       "answers Get-Job-Attributes from a cache up to 300 ms old",
       "OpenPrinting/cups#648 (https://github.com/OpenPrinting/cups/issues/648): a Pantum M6559NW "
       "stays 'printing' about 60 s after the page is out",
       _knob(stale_s=0.3)),
    _B("no_job_uuid", "attributes",
       "reports no job-uuid",
       "ctalkington/python-ipp#410 (https://github.com/ctalkington/python-ipp/issues/410): a Brother "
       "HL-L2370DW gives uuid=None; apple/cups#1410: job-uuid only from CUPS 1.2",
       _knob(no_job_uuid=True)),
    # --- job lifecycle -----------------------------------------------------------------
    _B("no_history", "lifecycle",
       "keeps no job history: a finished job is gone from every answer at once",
       "apple/cups#4079 (https://github.com/apple/cups/issues/4079): 'Printer does not provide "
       "REQUIRED job history'; HPInc/jipp#191 (https://github.com/HPInc/jipp/issues/191): "
       "low-memory printers delete jobs and answer not-found",
       _knob(history_s=0.0), excludes=frozenset({"brief_history"})),
    _B("brief_history", "lifecycle",
       "keeps finished jobs for 1 s, then forgets them",
       "RFC 8011 Appendix B.1.4.7 (quoted in Zelenov/SharpIpp#5); HPInc/jipp#191: retention is the "
       "implementation's choice",
       _knob(history_s=1.0), excludes=frozenset({"no_history"})),
    _B("held_at_printer", "lifecycle",
       "holds a job (pending-held, job-hold-until-specified) until someone releases it at the panel",
       "HPInc/jipp#107 (https://github.com/HPInc/jipp/issues/107): a plain Print-Job comes back "
       "pending-held, job-hold-until-specified; apple/cups#5604: jobs held for authentication",
       _held_at_printer, fault=True),
    _B("slow_jobs", "lifecycle",
       "takes 0.15–0.4 s a page",
       "apple/cups#5404 (https://github.com/apple/cups/issues/5404) and #5517: printers that stay "
       "'printing' for long",
       _slow_jobs),
    _B("aborts_midway", "lifecycle",
       "aborts a job after its first impression came out (maybe leaving media-jam behind)",
       "apple/cups#3730 (https://github.com/apple/cups/issues/3730): a Photosmart 3310 aborts part "
       "way; OpenPrinting/ipp-usb#95: an HP drops the last page and errors the job; RFC 8011 "
       "§5.3.8 aborted-by-system",
       _aborts_midway, fault=True),
    _B("silent_abort", "lifecycle",
       "aborts a job before anything came out, with no reason",
       "apple/cups#5544 (https://github.com/apple/cups/issues/5544): a printer crashed mid-operation "
       "and aborted the job; RFC 8011 §5.3.7 'aborted'",
       _silent_abort, fault=True),
    _B("panel_cancel", "lifecycle",
       "a person cancels a job at the printer's panel while it waits there",
       "OpenPrinting/cups-browsed#75 (https://github.com/OpenPrinting/cups-browsed/issues/75): a "
       "cancel at the panel of HP or Canon printers; ftp.pwg.org/pub/pwg/jmp/contributions/"
       "statreas.txt: canceled-at-device is a cancel at the op panel",
       _panel_cancel, fault=True),
    _B("canceled_at_device", "lifecycle",
       "reports a person's cancel as job-canceled-at-device",
       "OpenPrinting/cups#428 (https://github.com/OpenPrinting/cups/issues/428): a Konica Minolta "
       "C458 reports 'canceled at printer'; PWG 5100.x job-state-reasons",
       _knob(canceled_at_device=True)),
    _B("document_errors", "lifecycle",
       "cannot print a job's document: nothing comes out and the job completes with "
       "document-format-error",
       "OpenPrinting/cups#1703 (https://github.com/OpenPrinting/cups/issues/1703): a Brother MFC "
       "ends a job 'completed' with document-format-error and 0 impressions",
       _document_errors, fault=True),
    _B("cancel_late", "lifecycle",
       "answers Cancel-Job at once but gets to it 300 ms later",
       "OpenPrinting/cups#1703: Cancel-Job not possible while processing-to-stop-point; "
       "michaelrsweet/pappl#163 (https://github.com/michaelrsweet/pappl/issues/163): a job "
       "'Canceling' for ever; apple/cups#1695: the printer keeps printing after the cancel",
       _knob(cancel_late_s=0.3)),
    # --- printer state -----------------------------------------------------------------
    _B("unknown_reasons", "state",
       "reports vendor and unknown reasons at -warning and -report (com.acme-widget-warning, "
       "other-report) all the time",
       "apple/cups#3688 (https://github.com/apple/cups/issues/3688): a Xerox 7435 and "
       "com.apple.print.recoverable-message; OpenPrinting/cups#1460: garbage bare words as reasons; "
       "RFC 8011 §5.4.12",
       _knob(extra_reasons=("com.acme-widget-warning", "other-report"))),
    _B("jams", "state",
       "jams on a job (media-jam while it holds it) until a person clears it 0.5–2.5 s later",
       "apple/cups#5517 (https://github.com/apple/cups/issues/5517): a Ricoh reports cover open, "
       "no toner or jam and holds the job; OpenPrinting/cups#1005: an open door pauses the queue",
       _jams, fault=True),
    _B("stops_on_error", "state",
       "reports a jam as the device does: media-jam-error, printer-state stopped",
       "RFC 8011 §5.4.11 'stopped' and §5.4.12 (-error); apple/cups#5544: a paper jam pauses the "
       "queue",
       _stops_on_error, fault=True),
    _B("jams_with_suffix", "state",
       "jams on a job and says so as media-jam-report, as a bare media-jam, or as "
       "media-jam-report with printer-state idle while it holds the jammed job, until a "
       "person clears it",
       "RFC 8011 §5.4.12 (https://www.rfc-editor.org/rfc/rfc8011#section-5.4.12): -report, "
       "-warning, -error, and a keyword without a suffix read as an error; "
       "google/cloudprint_logocert#137 (https://github.com/google/cloudprint_logocert/issues/"
       "137): a jammed job stays active and the printer 'does not detect paper jam under idle "
       "state'",
       _jams_with_suffix, fault=True, excludes=frozenset({"stops_on_error"})),
    _B("cancel_held_by_jam", "state",
       "jams on a job, answers Cancel-Job at once and keeps the job processing, "
       "processing-to-stop-point, until a person clears the jam (nothing of it prints)",
       "michaelrsweet/pappl#163 (https://github.com/michaelrsweet/pappl/issues/163): a job "
       "'Canceling' for ever while the printer is stopped; michaelrsweet/pappl#23 "
       "(https://github.com/michaelrsweet/pappl/pull/23): papplJobIsCanceled means 'somebody "
       "canceled this job but I haven't finished canceling it yet (usually to eject the "
       "current page …)'; RFC 8011 §5.3.8 processing-to-stop-point",
       _cancel_held_by_jam, fault=True),
    _B("bypass_empty", "state",
       "reports its by-pass tray empty (media-empty, level 0) while the main tray is full",
       "apple/cups#4656 (https://github.com/apple/cups/issues/4656): Xerox Phaser 4622 and "
       "WorkCentre 7830/7890 report out of paper unless the by-pass tray is loaded; apple/cups#5776: "
       "media-empty-warning means one or more trays are empty",
       _knob(bypass_empty=True)),
    _B("supplies_low", "state",
       "reports marker-supply-low and a low marker level",
       "ctalkington/python-ipp#410 (https://github.com/ctalkington/python-ipp/issues/410); "
       "apple/cups#4759 (marker-levels 60,-1); the python-ipp Epson XP-6000 fixture: "
       "marker-supply-low-warning",
       _knob(supplies_low=True)),
    _B("garbage_supplies", "state",
       "answers its supplies and trays with nonsense: wrong value types and control "
       "characters, or well-typed values that contradict each other (marker-names and "
       "marker-levels of different lengths, levels 101 and -5 beyond RFC 3805's -1/-2/-3, a "
       "tray fuller than its capacity, a printer-input-tray value not in key=value; form)",
       "apple/cups#4016 (https://github.com/apple/cups/issues/4016): printers report supply "
       "levels as percentages and RFC 3805 special values that CUPS misread; apple/cups#4759: "
       "marker-levels 60,-1 beside two marker-names (parallel lists a reader must pair); "
       "Tylan/check_snmp_printer#11 (https://github.com/Tylan/check_snmp_printer/issues/11): a "
       "Lexmark's input level -3 while its panel knows the count; OpenPrinting/cups#1462 "
       "(https://github.com/OpenPrinting/cups/issues/1462): a misread waste-toner level stops "
       "a working printer; PWG 5100.13 §6.5.5 printer-input-tray (key=value; octetString)",
       _garbage_supplies),
    _B("stock_change_silent", "state",
       "has its roll swapped during the run (4×6 in labels the 4×3 in badge does not fit, A4 "
       "sheets, or the right roll again) and back to the right roll later: media-ready and "
       "media-col-ready change, printer-config-change-time does not",
       "michaelrsweet/pappl#395 (https://github.com/michaelrsweet/pappl/issues/395): the ready "
       "media is set apart from the printer's configuration (media-ready could not be changed "
       "by 'modify'); RFC 3995 §5.3.1 ties printer-config-change-time to the "
       "printer-config-changed event only; ippeveprinter's /media form (CUPS "
       "tools/ippeveprinter.c) changes media-ready and leaves printer-config-change-time",
       _stock_change_silent),
    _B("open_head_other", "state",
       "a label printer with its head open: printer-state stopped, printer-state-reasons a "
       "bare 'other' (no suffix) and 'Print head open.' as its message for a while, then idle",
       "michaelrsweet/lprint lprint-zpl.c (https://github.com/michaelrsweet/lprint), its ~HQES "
       "status: every error but media-out, jam and pause, the head open among them, becomes "
       "the one reason 'other' (the head only named in its log); RFC 8011 §5.4.12: a keyword "
       "without a suffix is an error",
       _open_head_other),
    _B("paper_out", "state",
       "runs out of paper in every tray for a while, then is refilled",
       "apple/cups#5776 (https://github.com/apple/cups/issues/5776): media-empty-warning on a Dell "
       "MFP 2335dn",
       _paper_out),
    # --- restarts ------------------------------------------------------------------------
    _B("power_cycle", "restart",
       "loses power after running a while (2 s at least) and comes back: job-ids from 1, no "
       "history, printer-up-time from 0",
       "PWG IPP list 1999 (http://www.pwg.org/archives/ipp/1999/001474.html): up-time and job "
       "times restart after a reboot; home-assistant/core#112891: a printer's uptime after power-on",
       _power_cycle, restarts=True, excludes=frozenset({"hangs"})),
    _B("other_clients", "restart",
       "prints jobs from other clients in between (a shared printer)",
       "apple/cups#4073 (https://github.com/apple/cups/issues/4073): printers busy with other "
       "jobs; the python-ipp Kyocera fixture lists a Windows client's Word job",
       _other_clients),
    _B("up_time_frozen", "restart",
       "reports a printer-up-time that never moves",
       "home-assistant/core#111583 (https://github.com/home-assistant/core/issues/111583): an HP "
       "M545dw's uptime behaves oddly; RFC 8011 §5.4.29 printer-up-time",
       _knob(up_time="frozen")),
    _B("uuid_per_life", "restart",
       "reports another printer-uuid after each restart (a replaced or reset printer)",
       "istopwg/ippsample#15 (https://github.com/istopwg/ippsample/issues/15): printer-uuid changes "
       "on every run; google/virtual-printer#14",
       _knob(uuid_per_life=True)),
)  # fmt: skip

BY_ID: dict[str, Behaviour] = {b.id: b for b in CATALOGUE}
assert len(BY_ID) == len(CATALOGUE), "duplicate behaviour ids"
assert all(b.part in PARTS for b in CATALOGUE)


def listing() -> str:
    """The catalogue, one behaviour a line with its source (``--list``)."""
    return "\n".join(f"{b.id} [{b.part}]: {b.what}. Source: {b.source}" for b in CATALOGUE)
