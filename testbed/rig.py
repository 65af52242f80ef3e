"""Real IPP printers on loopback for tests and benches: ``ippeveprinter`` processes (stdlib only).

``ippeveprinter`` is the IPP Everywhere printer that ships with CUPS (Debian
package ``cups-ipp-utils``). The rig does not fake a printer; it starts real
ones, each on its own loopback port, and gives every printer a print command
(``testbed/rig_print_command.sh``) that appends one ground-truth line per printed
document to ``printer-NN/prints.log``.

Python API::

    from testbed.rig import Rig

    rig = Rig(tmp_path / "rig", seconds_per_page=0)
    rig.start(2)                      # printer-01, printer-02 on free ports
    rig["printer-01"].uri             # 'ipp://127.0.0.1:PORT/ipp/print'
    rig.printed("printer-01")         # [Printed(time, job_id, job_name, ...)]
    rig.kill("printer-02"); rig.restart("printer-02")
    rig.fault("printer-01", "abort", "media-jam", once=True)   # job-level fault
    rig.fault("printer-02", "abort", match="poison")           # only jobs named *poison*
    rig.clear_fault("printer-01")
    rig.media("printer-01", "empty")                           # paper out ("low", "loaded")
    rig.load_media("printer-01", "na_index-4x6_4x6in")          # 4x6 in labels, every tray
    rig.stop()

Command line (from the project root)::

    python -m testbed.rig start DIR [-n N] [--base-port P] [--speed S]
    python -m testbed.rig status DIR | count DIR | stop DIR
    python -m testbed.rig kill|hang|resume|restart DIR NAME
    python -m testbed.rig speed DIR NAME SECONDS_PER_PAGE
    python -m testbed.rig fault DIR NAME [--once] [--match SUBSTRING] MODE [ARG...]
    python -m testbed.rig clear-fault DIR NAME
    python -m testbed.rig media DIR NAME empty|low|loaded [--size PWG-MEDIA-NAME]

How each printer runs (all flags matter)::

    ippeveprinter -n localhost -p PORT -r off -f application/pdf -d DIR/printer-NN/spool -k \\
                  -c DIR/bin/print-command -M edgeprint-rig -m printer-NN -l "loopback rig" \\
                  -v printer-NN

``-n localhost`` binds 127.0.0.1 *and* ::1 (so IPv6 loopback must work), ``-r off``
turns DNS-SD advertising off, ``-k`` keeps every received document in ``spool/``.
Debian builds ippeveprinter with Avahi, and it exits with "Unable to initialize
DNS-SD" when there is no D-Bus system bus, even with ``-r off``; so each rig folder
gets one private ``dbus-daemon --session`` whose address the printers get as
``DBUS_SYSTEM_BUS_ADDRESS`` ("Ignored Avahi state 101." in server.log is harmless).
The printers need that bus for their whole life: if the dbus-daemon goes, every
printer of the folder exits ("Avahi server crashed, exiting."), so stop() ends
the printers first and the bus last.

Folder layout: ``DIR/printers.tsv`` (name, uri, pid), ``DIR/bin/`` (print command
and the ipptool test it uses), ``DIR/dbus.{pid,address,log}``, and per printer
``DIR/printer-NN/{pid,port,uri,server.log,prints.log,seconds-per-page,spool/}``, and
the fault files ``fault`` (see below) and ``left-reason`` (a reason an ``abort REASON``
fault left on the printer, cleared by the next job that prints).

Job-level faults (:meth:`Rig.fault`): the print command reads the first line of
``printer-NN/fault`` when a job starts (the printer runs one job at a time)::

    [once] [match=SUBSTRING] MODE [ARG...]

    hold REASON[,REASON]  the printer reports REASON-warning (e.g. media-jam; "none": no
                          reason) and the job stays processing (job-printing) until the
                          line is removed or changed (clear_fault); then it prints, unless
                          canceled meanwhile (a cancel while held ends it at once, nothing
                          printed, as a device drops a jammed job it is told to cancel)
    abort [REASON]        job aborted (aborted-by-system, job-state-message "job aborted by
                          injected fault"), nothing printed; REASON stays on the printer
                          (REASON-report) until the next job that prints
    abort-at N [REASON]   N impressions come out (logged with out = N), then the job is
                          aborted with job-impressions-completed N (part of it printed)
    docerror              nothing comes out, the job completes, and docerror-<job-id> in
                          the printer's folder says it could not print the document
                          (what a front reporting document-format-error reads)
    slow SECONDS          the job takes SECONDS longer, then prints
    die-before [SECONDS]  the printer process is SIGKILLed SECONDS (default 0.25) into the
                          job's processing; nothing printed
    die-after [SECONDS]   the document is printed (prints.log), then the printer is
                          SIGKILLed SECONDS (default 0.25) later, before it reports the
                          job completed
                          (ippeveprinter starts the print command before it writes the
                          answer to the Print-Job/Send-Document that started the job; the
                          pause keeps the kill from swallowing that answer, which an
                          immediate kill did in about 1 run of 15)
    once                  one job only: the line is removed when that job starts (a
                          "hold" always lasts until clear_fault, which is what releases it)
    match=SUBSTRING       only jobs whose job-name contains SUBSTRING (case-sensitive);
                          other jobs print normally and do not use up a "once". SUBSTRING
                          has no whitespace and none of \\ " [ (ippeveprinter escapes those
                          in the job-name it hands the print command)

REASON is one of the printer-state-reasons ippeveprinter knows (:data:`PRINTER_REASONS`);
it shows the suffix -warning while processing and -report while idle, never -error:
ippeveprinter 2.4's printer-state is only ever idle or processing, and the suffix follows
it (tools/ippeveprinter.c). A device that stops on a jam or an open cover says
printer-state stopped and REASON-error; testbed/adversary/proxy.py with
``Knobs(error_stop=True)`` in front of the printer reports a held job's jam so
(tests/test_reasons_printers.py).
Without ``once`` a fault applies to every (matching) job until cleared, also after a
restart; a die-* fault therefore kills a restarted printer again at its next job.

Paper (:meth:`Rig.media`) goes through ippeveprinter's ``/media`` web form (a test hook
that sets every tray's paper level): ``empty`` gives printer-state-reasons
media-empty-report while idle, and a job sent then stays processing (job-printing) with
media-empty-warning and media-needed-warning, its print command not even started, until
``loaded`` (ippeveprinter re-checks once a second); ``low`` gives media-low-report. A
restart brings the default trays back (paper loaded), except on a printer given a stock
with :meth:`Rig.load_media` (a PWG self-describing size such as ``oe_4x3-label_4x3in`` and
a media-type in every tray, as a label printer after a roll change): restart() loads that
stock again, full (a power cycle does not unload a roll).

What each document printed on (``Rig(record_media=True)``): the print command asks its
printer for media-ready (Get-Printer-Attributes, ipptool) as it begins printing (the stock
it feeds) and, once the document is out, appends ``<UTC time> <job-id> <job-name> <media-ready, comma-separated>`` to
``printer-NN/media.log`` (:meth:`Rig.media_printed`); "?" when the printer did not answer.
Off by default: it costs an ipptool run per document.

Behaviour worth knowing (ippeveprinter 2.4): one job at a time (a second
Print-Job while one is pending/processing gets server-error-busy 0x0507); job
history and job ids do not survive a restart; Cancel-Job on a processing job is
answered OK while the print command keeps running, so the print command asks
(with ipptool) whether a cancel is pending before it "prints". A job canceled
while held (hold fault, paper out) therefore ends canceled only once released.

Processes are tracked by the pids the rig records and are checked against
``/proc/PID/cmdline`` before any signal; nothing is ever killed by name.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import math
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from testbed.polling import TimedOut, until_sync

HERE = Path(__file__).resolve().parent
PRINT_COMMAND = HERE / "rig_print_command.sh"
CANCEL_TEST = HERE / "rig_job_canceled.test"
#: The lean print engine (Rig(engine="lean")): the same prints.log line for a fraction of
#: the CPU, without speed, faults or the cancel check (see the script's header).
LEAN_PRINT_COMMAND = HERE / "rig_print_lean.sh"
ENGINES = {"full": "print-command", "lean": "print-lean"}

DEFAULT_FORMATS = "application/pdf"
#: printer-01 … printer-99, then printer-100 … (the 200-printer benchmark)
MAX_PRINTERS = 250
#: Attempts per printer when an automatically chosen port was taken meanwhile.
PORT_ATTEMPTS = 3
POLL_INTERVAL_S = 0.05
#: Between two looks at a process's own state (/proc): cheap, so often.
_LOOK_S = POLL_INTERVAL_S / 5
LOG_TAIL_LINES = 15

_SBIN_DIRS = ("/usr/sbin", "/usr/bin", "/sbin", "/bin", "/usr/local/sbin", "/usr/local/bin")
_PACKAGES = {
    "ippeveprinter": "cups-ipp-utils",
    "ipptool": "cups-ipp-utils",
    "dbus-daemon": "dbus-daemon",
}


#: printer-state-reasons keywords ippeveprinter 2.4 knows (STATE: lines with others are ignored).
PRINTER_REASONS = frozenset(
    {
        "other",
        "cover-open",
        "input-tray-missing",
        "marker-supply-empty",
        "marker-supply-low",
        "marker-waste-almost-full",
        "marker-waste-full",
        "media-empty",
        "media-jam",
        "media-low",
        "media-needed",
        "moving-to-paused",
        "paused",
        "spool-area-full",
        "toner-empty",
        "toner-low",
    }
)
#: Job-level fault modes of the print command (see the module docstring).
FAULT_MODES = ("hold", "abort", "abort-at", "docerror", "slow", "die-before", "die-after")
FAULT_FILE = "fault"
LEFT_REASON_FILE = "left-reason"
#: The stock (size, media-type) load_media() put in every tray; loaded again by restart().
STOCK_FILE = "stock"
#: In the rig folder: the print command records media-ready per document (media.log).
RECORD_MEDIA_FILE = "record-media"
MEDIA_READY_TEST = HERE / "rig_media_ready.test"
#: A PWG 5101.1 self-describing media name: class_name_WxHin or _WxHmm.
_PWG_MEDIA_RE = re.compile(r"^[a-z0-9]+_[a-z0-9.-]+_[0-9]+(\.[0-9]+)?x[0-9]+(\.[0-9]+)?(in|mm)$")

#: ``/media`` form values per paper level. The form numbers the trays by their place in
#: media-source-supported (auto, main, manual, by-pass-tray) and skips auto and manual,
#: so the real trays are 1 (main, 250 sheets) and 3 (by-pass-tray, 25 sheets); a tray
#: left out is set to 0 sheets. 0 sheets in any tray is media-empty, 1..24 media-low.
#: "loaded" restores ippeveprinter's own media-ready (letter in main, #10 envelopes).
MEDIA_FORMS = {
    "empty": {
        "size1": "na_letter_8.5x11in",
        "level1": "0",
        "size3": "na_number-10_4.125x9.5in",
        "level3": "0",
    },
    "low": {
        "size1": "na_letter_8.5x11in",
        "level1": "10",
        "size3": "na_number-10_4.125x9.5in",
        "level3": "5",
    },
    "loaded": {
        "size1": "na_letter_8.5x11in",
        "level1": "250",
        "size3": "na_number-10_4.125x9.5in",
        "level3": "25",
    },
}
#: ``media --size``: labels in the main tray per level (0 is media-empty, < 25 media-low).
LOAD_LEVELS = {"empty": 0, "low": 10, "loaded": 100}
_MATCH_FORBIDDEN = ("\\", '"', "[")


class RigError(RuntimeError):
    """The rig could not do what was asked (missing tool, busy port, printer died...)."""


@dataclass(frozen=True)
class Printer:
    """One rig printer as recorded in its folder."""

    name: str
    port: int
    dir: Path
    pid: int | None

    @property
    def uri(self) -> str:
        return f"ipp://127.0.0.1:{self.port}/ipp/print"

    @property
    def prints_log(self) -> Path:
        return self.dir / "prints.log"

    @property
    def server_log(self) -> Path:
        return self.dir / "server.log"

    @property
    def spool(self) -> Path:
        return self.dir / "spool"


@dataclass(frozen=True)
class Printed:
    """One ground-truth line of ``prints.log``: a document that came out of the printer."""

    time: str
    job_id: int
    job_name: str
    user: str
    pages: int
    copies: int
    bytes: int
    #: impressions that came out (pages × copies for a whole copy; fewer for one cut short,
    #: aborted part-way or printed with page-ranges)
    out: int = -1

    @property
    def whole(self) -> bool:
        """Every impression of the document came out."""
        return self.out >= self.pages * self.copies

    @classmethod
    def parse(cls, line: str) -> Printed:
        f = line.rstrip("\n").split("\t")
        if len(f) not in (7, 8):
            raise ValueError(f"not a prints.log line (want 8 tab-separated fields): {line!r}")
        out = int(f[7]) if len(f) == 8 else int(f[4]) * int(f[5])
        return cls(f[0], int(f[1]), f[2], f[3], int(f[4]), int(f[5]), int(f[6]), out)


@dataclass(frozen=True)
class MediaPrinted:
    """One line of ``media.log``: the media a printer had ready as it began a document."""

    time: str
    job_id: int
    job_name: str
    #: media-ready as the printer answered when printing began (() when it did not answer)
    media_ready: tuple[str, ...]

    @classmethod
    def parse(cls, line: str) -> MediaPrinted:
        f = line.rstrip("\n").split("\t")
        if len(f) != 4:
            raise ValueError(f"not a media.log line (want 4 tab-separated fields): {line!r}")
        ready = () if f[3] in ("", "?") else tuple(m for m in f[3].split(",") if m)
        return cls(f[0], int(f[1]), f[2], ready)


# --- job-level faults -------------------------------------------------------------


def fault_line(
    mode: str, *args: str, once: bool = False, match: str | None = None, user: str | None = None
) -> str:
    """The checked line of a ``fault`` file: ``[once] [match=SUBSTRING] [user=NAME] MODE [ARG...]``.

    Raises ValueError for what the print command would not understand.
    """
    args = tuple(str(a) for a in args)
    if mode not in FAULT_MODES:
        raise ValueError(f"fault mode must be one of {', '.join(FAULT_MODES)}, not {mode!r}")
    if mode == "hold":
        if len(args) != 1:
            raise ValueError("hold takes one REASON[,REASON...] (e.g. media-jam) or none")
        if args[0] != "none":
            _check_reasons(args[0])
    elif mode == "abort-at":
        if not 1 <= len(args) <= 2 or not args[0].isdigit() or int(args[0]) < 1:
            raise ValueError("abort-at takes a number of impressions >= 1 and maybe a REASON")
        if len(args) == 2:
            _check_reasons(args[1], several=False)
    elif mode == "docerror":
        if args:
            raise ValueError("docerror takes no argument")
    elif mode == "abort":
        if len(args) > 1:
            raise ValueError("abort takes at most one REASON")
        if args:
            _check_reasons(args[0], several=False)
    elif mode == "slow":
        if len(args) != 1:
            raise ValueError("slow takes one number of SECONDS >= 0")
        args = (_seconds(mode, args[0]),)
    elif len(args) > 1:
        raise ValueError(f"{mode} takes at most one number of SECONDS >= 0")
    elif args:  # die-before / die-after
        args = (_seconds(mode, args[0]),)
    words = ["once"] if once else []
    if match is not None:
        if (
            not match
            or any(c.isspace() for c in match)
            or any(c in match for c in _MATCH_FORBIDDEN)
        ):
            raise ValueError(
                f'match must be a non-empty substring without whitespace, \\, " or [: {match!r}'
            )
        words.append(f"match={match}")
    if user is not None:
        if not user or any(c.isspace() for c in user) or any(c in user for c in _MATCH_FORBIDDEN):
            raise ValueError(f'user must be a name without whitespace, \\, " or [: {user!r}')
        words.append(f"user={user}")
    return " ".join([*words, mode, *args])


def _seconds(mode: str, text: str) -> str:
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not (math.isfinite(seconds) and 0 <= seconds <= 86400):
        raise ValueError(f"{mode} takes a number of SECONDS >= 0, not {text!r}")
    return f"{seconds:.3f}".rstrip("0").rstrip(".")


def _check_reasons(text: str, *, several: bool = True) -> None:
    reasons = text.split(",") if several else [text]
    unknown = [r for r in reasons if r not in PRINTER_REASONS]
    if unknown:
        raise ValueError(
            f"unknown printer-state-reasons {unknown} (ippeveprinter knows: "
            f"{', '.join(sorted(PRINTER_REASONS))})"
        )


# --- tools and processes ----------------------------------------------------------


def _number(folder: Path) -> int:
    """printer-NN → NN (sorts printer-100 after printer-99)."""
    return int(folder.name.rsplit("-", 1)[1])


def find_tool(name: str) -> str | None:
    """Path of ``name`` on PATH or in the sbin folders (a non-root PATH lacks /usr/sbin)."""
    found = shutil.which(name)
    if found:
        return found
    for d in _SBIN_DIRS:
        candidate = Path(d) / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return None


def _need_tool(name: str) -> str:
    path = find_tool(name)
    if path is None:
        pkg = _PACKAGES.get(name, name)
        raise RigError(
            f"{name} not found: install the Debian package {pkg} (apt-get install {pkg})"
        )
    return path


def _proc_state(pid: int) -> str | None:
    """The one-letter state from /proc/PID/stat (R, S, T, Z, ...), or None if gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # "pid (comm) S ..." - comm may hold spaces and parentheses.
    rest = stat[stat.rfind(")") + 2 :]
    return rest[:1] or None


def _pid_is(pid: int | None, word: str) -> bool:
    """True when ``pid`` is alive (not a zombie) and its command line contains ``word``.

    Checking the command line means a recycled pid is never signalled.
    """
    if not pid:
        return False
    state = _proc_state(pid)
    if state is None or state in "ZX":
        return False
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
    except OSError:
        return False
    return word.encode() in cmdline


def _read_int(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def _tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return f"({path} unreadable)"
    return "\n".join(text.splitlines()[-lines:]) or "(empty log)"


# --- ports ------------------------------------------------------------------------


def _bindable(family: socket.AddressFamily, host: str, port: int) -> bool:
    with socket.socket(family, socket.SOCK_STREAM) as s:
        if family == socket.AF_INET6:
            s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def _port_free(port: int) -> bool:
    """ippeveprinter -n localhost binds PORT on both 127.0.0.1 and ::1."""
    return _bindable(socket.AF_INET, "127.0.0.1", port) and _bindable(socket.AF_INET6, "::1", port)


def _check_ipv6_loopback() -> None:
    if not socket.has_ipv6 or not _bindable(socket.AF_INET6, "::1", 0):
        raise RigError("IPv6 loopback (::1) is not available; ippeveprinter -n localhost needs it")


def free_ports(n: int, avoid: set[int] | frozenset[int] = frozenset()) -> list[int]:
    """``n`` distinct ports that are free on 127.0.0.1 and ::1 right now."""
    held: list[socket.socket] = []
    ports: list[int] = []
    try:
        for _ in range(100 * n):
            if len(ports) == n:
                break
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            held.append(s)  # held open until the end so no port is picked twice
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
            if port not in avoid and _bindable(socket.AF_INET6, "::1", port):
                ports.append(port)
    finally:
        for s in held:
            s.close()
    if len(ports) < n:
        raise RigError(f"could not find {n} free loopback port(s)")
    return ports


# --- readiness probe: a raw IPP Get-Printer-Attributes over HTTP --------------------


def _ipp_attr(tag: int, name: str, value: str) -> bytes:
    n, v = name.encode(), value.encode()
    return struct.pack(">BH", tag, len(n)) + n + struct.pack(">H", len(v)) + v


def _get_printer_attributes(uri: str) -> bytes:
    return (
        struct.pack(">BBHI", 2, 0, 0x000B, 1)  # IPP/2.0 Get-Printer-Attributes, request-id 1
        + b"\x01"  # operation-attributes-tag
        + _ipp_attr(0x47, "attributes-charset", "utf-8")
        + _ipp_attr(0x48, "attributes-natural-language", "en")
        + _ipp_attr(0x45, "printer-uri", uri)
        + _ipp_attr(0x44, "requested-attributes", "printer-state")
        + b"\x03"  # end-of-attributes-tag
    )


def probe(port: int, timeout: float = 2.0) -> bool:
    """True when the printer on ``port`` answers Get-Printer-Attributes with successful-ok."""
    uri = f"ipp://127.0.0.1:{port}/ipp/print"
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request(
            "POST", "/ipp/print", _get_printer_attributes(uri), {"Content-Type": "application/ipp"}
        )
        resp = conn.getresponse()
        body = resp.read()
    except (OSError, http.client.HTTPException):
        return False
    finally:
        conn.close()
    # Status codes 0x0000-0x00FF are the successful-ok family.
    return resp.status == 200 and len(body) >= 8 and body[2] == 0


# --- the rig ----------------------------------------------------------------------


class Rig:
    """A set of ippeveprinter processes sharing one folder and one private dbus-daemon.

    The folder is the state: another process (``python -m testbed.rig stop DIR``) can
    stop or poke printers that this one started.
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        seconds_per_page: float = 0.0,
        formats: str = DEFAULT_FORMATS,
        ready_timeout: float = 20.0,
        stop_timeout: float = 5.0,
        own_certificates: bool = False,
        engine: str = "full",
        record_media: bool = False,
    ) -> None:
        if seconds_per_page < 0:
            raise ValueError("seconds_per_page must be >= 0")
        if engine not in ENGINES:
            raise ValueError(f"engine must be one of {sorted(ENGINES)}")
        if engine == "lean" and seconds_per_page:
            raise ValueError("the lean engine prints in no time: seconds_per_page must be 0")
        #: ``full`` (rig_print_command.sh: speed, faults, cancel check) or ``lean``
        #: (rig_print_lean.sh: the prints.log line only, for many printers on one box).
        self.engine = engine
        self.root = Path(root).absolute()
        self.seconds_per_page = seconds_per_page
        self.formats = formats
        self.ready_timeout = ready_timeout
        self.stop_timeout = stop_timeout
        # ippeveprinter answers TLS (ipps) on its port too, with a self-signed certificate it
        # makes on first use in its key folder (-K; default /etc/cups/ssl, shared). With
        # own_certificates each printer keeps its own in printer-NN/ssl: delete that folder
        # and restart() to make the printer present a new certificate.
        self.own_certificates = own_certificates
        #: the full print command logs each document's media-ready in media.log
        self.record_media = record_media
        # Children started by this process, by pid, so they can be reaped (no zombies).
        self._children: dict[int, subprocess.Popen[bytes]] = {}
        self._finished: dict[int, subprocess.Popen[bytes]] = {}
        self._tools: dict[str, str] = {}

    # --- what is there ---

    @property
    def printers(self) -> list[Printer]:
        """The printers recorded in the folder, by name (running or not)."""
        out = []
        for d in sorted(self.root.glob("printer-[0-9][0-9]*"), key=_number):
            port = _read_int(d / "port")
            if d.is_dir() and port is not None:
                out.append(Printer(d.name, port, d, _read_int(d / "pid")))
        return out

    def printer(self, name: str) -> Printer:
        for p in self.printers:
            if p.name == name:
                return p
        raise RigError(f"no printer {name!r} in {self.root}")

    def __getitem__(self, name: str) -> Printer:
        return self.printer(name)

    def __iter__(self) -> Iterator[Printer]:
        return iter(self.printers)

    def __len__(self) -> int:
        return len(self.printers)

    def __enter__(self) -> Rig:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def state(self, name: str) -> str:
        """``running``, ``hung`` (SIGSTOPped) or ``dead``."""
        p = self.printer(name)
        if not self._alive(p.pid, "ippeveprinter"):
            return "dead"
        return "hung" if p.pid is not None and _proc_state(p.pid) == "T" else "running"

    def printed(self, name: str) -> list[Printed]:
        """Ground truth: one entry per document this printer printed, oldest first."""
        try:
            text = self.printer(name).prints_log.read_text()
        except FileNotFoundError:
            return []
        return [Printed.parse(line) for line in text.splitlines() if line.strip()]

    def media_printed(self, name: str) -> list[MediaPrinted]:
        """What each document came out on (``record_media``): one entry per printed document,
        oldest first."""
        try:
            text = (self.printer(name).dir / "media.log").read_text()
        except FileNotFoundError:
            return []
        return [MediaPrinted.parse(line) for line in text.splitlines() if line.strip()]

    def count(self) -> dict[str, int]:
        """Printed documents per printer."""
        return {p.name: len(self.printed(p.name)) for p in self.printers}

    def received(self, name: str) -> int:
        """Documents the printer received (spool files), printed or not."""
        spool = self.printer(name).spool
        if not spool.is_dir():
            return 0
        return sum(1 for f in spool.iterdir() if f.is_file() and f.suffix != ".prn")

    # --- start and stop ---

    def start(self, n: int, base_port: int | None = None) -> list[Printer]:
        """Start printer-01..NN and return once each answers Get-Printer-Attributes.

        Printer i listens on ``base_port + i``, or on free ports when ``base_port``
        is None. A new start wipes the printer folders (logs, spool). On failure
        everything started is stopped and RigError carries the printer's log tail.
        """
        if not 1 <= n <= MAX_PRINTERS:
            raise ValueError(f"n must be 1..{MAX_PRINTERS}")
        if base_port is not None and not (base_port >= 1024 and base_port + n <= 65535):
            raise ValueError(f"base_port must be 1024..{65535 - n}")
        tools = {t: _need_tool(t) for t in ("ippeveprinter", "ipptool", "dbus-daemon")}
        _check_ipv6_loopback()
        for p in self.printers:
            if self._alive(p.pid, "ippeveprinter"):
                raise RigError(f"printers are already running in {self.root}; stop them first")
        auto = base_port is None
        if base_port is None:
            ports = free_ports(n)
        else:
            ports = [base_port + i for i in range(1, n + 1)]
            busy = [port for port in ports if not _port_free(port)]
            if busy:
                raise RigError(f"port(s) {busy} already in use on 127.0.0.1 or ::1")

        self.root.mkdir(parents=True, exist_ok=True)
        for d in self.root.glob("printer-[0-9][0-9]*"):
            shutil.rmtree(d)
        (self.root / "printers.tsv").unlink(missing_ok=True)
        self._install_bin(tools)
        (self.root / "formats").write_text(self.formats + "\n")
        (self.root / "engine").write_text(self.engine + "\n")
        record = self.root / RECORD_MEDIA_FILE
        if self.record_media:
            record.write_text("media-ready of each printed document in printer-NN/media.log\n")
        else:
            record.unlink(missing_ok=True)
        names = [f"printer-{i:02d}" for i in range(1, n + 1)]
        try:
            self._start_dbus(tools["dbus-daemon"])
            for name, port in zip(names, ports, strict=True):
                d = self.root / name
                (d / "spool").mkdir(parents=True)
                (d / "prints.log").touch()
                (d / "seconds-per-page").write_text(f"{self.seconds_per_page:g}\n")
                self._launch(name, port)
            deadline = time.monotonic() + self.ready_timeout
            for name in names:
                for attempt in range(1, PORT_ATTEMPTS + 1):
                    p = self.printer(name)
                    err = self._wait_ready(p, deadline)
                    if err is None:
                        break
                    # An automatically chosen port can be taken between choice and bind.
                    if auto and attempt < PORT_ATTEMPTS and "already in use" in err:
                        used = {q.port for q in self.printers}
                        self._launch(name, free_ports(1, avoid=used)[0])
                        deadline = max(deadline, time.monotonic() + self.ready_timeout)
                        continue
                    raise RigError(err)
            self._write_tsv()
        except BaseException:
            self.stop()
            raise
        return self.printers

    def stop(self) -> None:
        """Stop every printer and the dbus-daemon: SIGCONT, SIGTERM, SIGKILL after a bound.

        Only pids the rig recorded, and only while they still are an
        ippeveprinter / dbus-daemon. Safe to call more than once.
        """
        for p in self.printers:
            self._stop_pid(p.pid, "ippeveprinter")
        self._stop_pid(_read_int(self.root / "dbus.pid"), "dbus-daemon")
        # Reap anything of ours that already died (e.g. after kill()).
        for pid, proc in list(self._children.items()):
            if proc.poll() is not None:
                del self._children[pid]

    # --- printer faults ---

    def kill(self, name: str) -> None:
        """SIGKILL: the printer is gone (connection refused), as after a power cut."""
        p = self._running(name)
        assert p.pid is not None
        os.kill(p.pid, signal.SIGKILL)
        self._wait_gone(p.pid, "ippeveprinter", self.stop_timeout)

    def hang(self, name: str) -> None:
        """SIGSTOP: TCP connects (kernel backlog) but nothing answers; undo with resume()."""
        p = self._running(name)
        assert p.pid is not None
        os.kill(p.pid, signal.SIGSTOP)
        self._wait_proc_state(p.pid, stopped=True)

    def resume(self, name: str) -> None:
        """SIGCONT after hang()."""
        p = self._running(name)
        assert p.pid is not None
        os.kill(p.pid, signal.SIGCONT)
        self._wait_proc_state(p.pid, stopped=False)

    def restart(self, name: str) -> Printer:
        """A fresh process on the same port, as after a power cycle.

        The printer's job history is empty and job ids start at 1 again, its paper
        is loaded and it reports no printer-state-reasons; the ground truth
        (prints.log), the spool folder and the job-level fault are kept.
        """
        p = self.printer(name)
        self._stop_pid(p.pid, "ippeveprinter")
        # A fresh process has no printer-state-reasons: nothing left for a job to clear.
        (p.dir / LEFT_REASON_FILE).unlink(missing_ok=True)
        tools = {t: _need_tool(t) for t in ("ippeveprinter", "ipptool", "dbus-daemon")}
        self._install_bin(tools)
        self._start_dbus(tools["dbus-daemon"])
        self._launch(name, p.port)
        err = self._wait_ready(self.printer(name), time.monotonic() + self.ready_timeout)
        if err is not None:
            self._stop_pid(self.printer(name).pid, "ippeveprinter")
            raise RigError(err)
        with contextlib.suppress(FileNotFoundError):
            stock = (p.dir / STOCK_FILE).read_text().split()
            if len(stock) == 2:  # a power cycle does not unload the roll
                self.load_media(name, stock[0], stock[1])
        self._write_tsv()
        return self.printer(name)

    def fault(
        self,
        name: str,
        mode: str,
        *args: str,
        once: bool = False,
        match: str | None = None,
        user: str | None = None,
    ) -> str:
        """Inject a job-level fault for this printer's next job(s); returns the line written.

        ``mode`` and ``args``: ``hold REASON``, ``abort [REASON]``, ``slow SECONDS``,
        ``die-before [SECONDS]``, ``die-after [SECONDS]`` (see the module docstring).
        ``once``: one job only. ``match``: only jobs whose job-name contains this
        substring; ``user``: only jobs of this requesting-user-name. Takes effect at the next job start (a job already printing is not
        affected, except that changing or clearing a ``hold`` releases the held job).
        Raises ValueError for a mode, argument or match the print command would not take.
        """
        line = fault_line(mode, *args, once=once, match=match, user=user)
        path = self.printer(name).dir / FAULT_FILE
        tmp = path.with_name(path.name + ".new")
        tmp.write_text(line + "\n")
        tmp.replace(path)  # the print command never reads half a line
        return line

    def clear_fault(self, name: str) -> None:
        """Remove the job-level fault; a job held by ``hold`` goes on and prints."""
        (self.printer(name).dir / FAULT_FILE).unlink(missing_ok=True)

    def current_fault(self, name: str) -> str | None:
        """The fault line in force (None when none): a ``once`` fault is gone once used."""
        try:
            text = (self.printer(name).dir / FAULT_FILE).read_text()
        except FileNotFoundError:
            return None
        return text.splitlines()[0] if text.strip() else None

    def media(self, name: str, level: str, timeout: float = 5.0) -> None:
        """Paper in every tray: ``empty``, ``low`` or ``loaded`` (ippeveprinter's /media form).

        Returns once the printer has applied it: it renders the page after the change,
        so the whole answer having been read means Get-Printer-Attributes shows it.
        """
        form = MEDIA_FORMS.get(level)
        if form is None:
            raise ValueError(f"media level must be one of {', '.join(MEDIA_FORMS)}, not {level!r}")
        self._media_form(name, form, timeout)

    def _media_form(self, name: str, form: dict[str, str], timeout: float) -> None:
        p = self._running(name)
        query = "&".join(f"{k}={v}" for k, v in form.items())
        conn = http.client.HTTPConnection("127.0.0.1", p.port, timeout=timeout)
        try:
            conn.request("GET", f"/media?{query}")
            resp = conn.getresponse()
            body = resp.read()
        except (OSError, http.client.HTTPException) as exc:
            raise RigError(f"{name}: /media form failed: {exc!r}") from exc
        finally:
            conn.close()
        if resp.status != 200 or b"<form" not in body:
            raise RigError(f"{name}: /media form answered HTTP {resp.status}: {body[:200]!r}")

    def load_media(
        self, name: str, size: str, media_type: str = "labels", level: int = 100,
        timeout: float = 5.0,
    ) -> None:  # fmt: skip
        """Load ``size`` (a PWG self-describing name, e.g. ``oe_4x3-label_4x3in``) of
        ``media_type`` in both of the printer's trays (main and by-pass), through
        ippeveprinter's own /media form: its media-ready and media-col-ready say so from then
        on. ``level`` is the sheets (labels) in the main tray (0: that roll ran out).
        ``size`` "": no size in either tray (media-ready empty). The stock stays in across
        :meth:`restart` (a power cycle does not unload a roll). ValueError for a size that
        is no PWG self-describing name, before anything is sent."""
        if size and not _PWG_MEDIA_RE.match(size):
            raise ValueError(
                f"size must be a PWG self-describing media name such as oe_4x3-label_4x3in, "
                f"not {size!r}"
            )
        self._media_form(name, {
            "size1": size, "type1": media_type, "level1": str(level),
            "size3": size, "type3": media_type, "level3": str(min(level, 25)),
        }, timeout)  # fmt: skip
        stock = self.printer(name).dir / STOCK_FILE
        if size:
            stock.write_text(f"{size}\t{media_type}\n")
        else:
            stock.unlink(missing_ok=True)

    def wait_state(self, name: str, state: str, timeout: float = 10.0) -> None:
        """Wait (bounded) until :meth:`state` is ``state``, e.g. ``dead`` after a die-* fault."""
        if state not in ("running", "hung", "dead"):
            raise ValueError("state must be running, hung or dead")
        try:
            until_sync(lambda: self.state(name) == state, name, timeout_s=timeout, every_s=_LOOK_S)
        except TimedOut:
            now = self.state(name)
            raise RigError(f"{name} is {now}, not {state}, after {timeout:g}s") from None

    def set_speed(self, name: str, seconds_per_page: float) -> None:
        """Simulated print time per page (and copy) of one printer, effective from its next job."""
        if seconds_per_page < 0:
            raise ValueError("seconds_per_page must be >= 0")
        (self.printer(name).dir / "seconds-per-page").write_text(f"{seconds_per_page:g}\n")

    # --- internals ---

    def _install_bin(self, tools: dict[str, str]) -> None:
        bin_dir = self.root / "bin"
        bin_dir.mkdir(parents=True, exist_ok=True)
        # Copy then rename: a print command running right now (another printer's
        # job) keeps reading the old file instead of a half-written one.
        for src, dst, mode in (
            (PRINT_COMMAND, bin_dir / ENGINES["full"], 0o755),  # even if the checkout lost +x
            (LEAN_PRINT_COMMAND, bin_dir / ENGINES["lean"], 0o755),
            (CANCEL_TEST, bin_dir / "job-canceled.test", 0o644),
            (MEDIA_READY_TEST, bin_dir / "media-ready.test", 0o644),
        ):
            tmp = dst.with_name(dst.name + ".new")
            shutil.copyfile(src, tmp)
            tmp.chmod(mode)
            tmp.replace(dst)
        self._tools = tools

    def _spawn(self, argv: list[str], log: Path, **kw: Any) -> subprocess.Popen[bytes]:
        with open(log, "ab") as out:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                # Own session: a Ctrl-C in the terminal that started the rig does not
                # reach the printers; stop() does.
                start_new_session=True,
                **kw,
            )
        self._children[proc.pid] = proc
        return proc

    def _start_dbus(self, dbus_daemon: str) -> None:
        addr_file = self.root / "dbus.address"
        pid = _read_int(self.root / "dbus.pid")
        if self._alive(pid, "dbus-daemon") and addr_file.exists() and addr_file.read_text():
            return
        self._stop_pid(pid, "dbus-daemon")
        # tmpdir=/tmp keeps the socket path short (pytest's tmp_path can pass 108 bytes).
        with open(addr_file, "wb") as addr_out:
            fd = addr_out.fileno()
            proc = self._spawn(
                [
                    dbus_daemon,
                    "--session",
                    "--nofork",
                    "--nosyslog",
                    "--address=unix:tmpdir=/tmp",
                    f"--print-address={fd}",
                ],
                self.root / "dbus.log",
                pass_fds=(fd,),
            )
        (self.root / "dbus.pid").write_text(f"{proc.pid}\n")

        def started() -> bool:
            return bool(addr_file.read_text().strip()) or proc.poll() is not None

        with contextlib.suppress(TimedOut):
            until_sync(started, "dbus-daemon's address", timeout_s=10, every_s=POLL_INTERVAL_S)
        if addr_file.read_text().strip():
            return
        self._stop_pid(proc.pid, "dbus-daemon")
        raise RigError(f"private dbus-daemon did not start:\n{_tail(self.root / 'dbus.log')}")

    def _launch(self, name: str, port: int) -> None:
        d = self.root / name
        spool = d / "spool"
        spool.mkdir(parents=True, exist_ok=True)  # ippeveprinter needs it to exist
        (d / "port").write_text(f"{port}\n")
        (d / "uri").write_text(f"ipp://127.0.0.1:{port}/ipp/print\n")
        (d / "pid").unlink(missing_ok=True)
        env = {
            **os.environ,
            "DBUS_SYSTEM_BUS_ADDRESS": (self.root / "dbus.address").read_text().strip(),
            "RIG_PRINTER_DIR": str(d),
            "RIG_SECONDS_PER_PAGE": f"{self.seconds_per_page:g}",
            "RIG_IPPTOOL": self._tools["ipptool"],
            "RIG_CANCEL_TEST": str(self.root / "bin" / "job-canceled.test"),
            "RIG_MEDIA_TEST": str(self.root / "bin" / "media-ready.test"),
        }
        formats_file = self.root / "formats"
        formats = formats_file.read_text().strip() if formats_file.exists() else self.formats
        engine_file = self.root / "engine"
        engine = engine_file.read_text().strip() if engine_file.exists() else self.engine
        with open(d / "server.log", "ab") as log:
            log.write(f"--- rig: starting {name} on port {port}\n".encode())
        options = [
            ("-n", "localhost"),  # bind 127.0.0.1 and ::1 only
            ("-p", str(port)),
            ("-r", "off"),  # no DNS-SD advertising
            ("-f", formats),  # document formats accepted
            ("-d", str(spool)),  # spool folder (must exist)
            ("-k", None),  # keep every received document in spool/
            ("-c", str(self.root / "bin" / ENGINES.get(engine, ENGINES["full"]))),  # per document
            ("-M", "edgeprint-rig"),
            ("-m", name),
            ("-l", "loopback rig"),
            ("-v", None),  # log requests and jobs to server.log
        ]
        if self.own_certificates:
            (d / "ssl").mkdir(exist_ok=True)
            options.append(("-K", str(d / "ssl")))  # its own self-signed TLS certificate
        argv = [self._tools["ippeveprinter"]]
        for flag, value in options:
            argv += [flag] if value is None else [flag, value]
        proc = self._spawn([*argv, name], d / "server.log", env=env)
        (d / "pid").write_text(f"{proc.pid}\n")

    def _wait_ready(self, p: Printer, deadline: float) -> str | None:
        """None once the printer answers; else why not (with its log tail)."""
        while True:
            if not self._alive(p.pid, "ippeveprinter"):
                return (
                    f"{p.name} (port {p.port}) exited during start{self._exit_status(p.pid)}; "
                    f"log tail:\n{_tail(p.server_log)}"
                )
            left = deadline - time.monotonic()
            if left <= 0:
                return (
                    f"{p.name} (port {p.port}) did not answer Get-Printer-Attributes within "
                    f"{self.ready_timeout:g}s; log tail:\n{_tail(p.server_log)}"
                )
            if probe(p.port, timeout=min(2.0, left)):
                return None
            time.sleep(POLL_INTERVAL_S)

    def _exit_status(self, pid: int | None) -> str:
        proc = self._finished.get(pid) if pid is not None else None
        if proc is None or proc.returncode is None:
            return ""
        if proc.returncode < 0:
            return f" (killed by {signal.Signals(-proc.returncode).name})"
        return f" (exit status {proc.returncode})"

    def _write_tsv(self) -> None:
        rows = [f"{p.name}\t{p.uri}\t{p.pid}\n" for p in self.printers]
        (self.root / "printers.tsv").write_text("".join(rows))

    def _running(self, name: str) -> Printer:
        p = self.printer(name)
        if not self._alive(p.pid, "ippeveprinter"):
            raise RigError(f"{name} is not running (use restart)")
        return p

    def _alive(self, pid: int | None, word: str) -> bool:
        if pid is None:
            return False
        proc = self._children.get(pid)
        if proc is not None:
            # Our own child: an unreaped pid cannot be recycled, so poll() is the truth.
            # (/proc/PID/cmdline is briefly empty while the child is still inside
            # execve, even after Popen returned: not a reliable test right after start.)
            if proc.poll() is None:
                return True
            self._finished[pid] = self._children.pop(pid)  # reaped; keep the exit status
            return False
        return _pid_is(pid, word)

    def _wait_proc_state(self, pid: int, *, stopped: bool) -> None:
        """Signals are delivered asynchronously: wait (bounded) until /proc shows the effect."""
        become = "stopped" if stopped else "running"

        def there() -> bool:
            return (_proc_state(pid) == "T") == stopped or not self._alive(pid, "ippeveprinter")

        try:
            until_sync(there, f"pid {pid} {become}", timeout_s=self.stop_timeout, every_s=_LOOK_S)
        except TimedOut:
            raise RigError(f"pid {pid} did not become {become}") from None

    def _wait_gone(self, pid: int, word: str, timeout: float) -> bool:
        try:
            until_sync(lambda: not self._alive(pid, word), word, timeout_s=timeout, every_s=_LOOK_S)
        except TimedOut:
            return False
        return True

    def _stop_pid(self, pid: int | None, word: str) -> None:
        if pid is None:
            return
        if self._alive(pid, word):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)  # a hung (SIGSTOPped) printer cannot die otherwise
                os.kill(pid, signal.SIGTERM)
            if not self._wait_gone(pid, word, self.stop_timeout):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
                self._wait_gone(pid, word, self.stop_timeout)
        proc = self._children.pop(pid, None)
        if proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=self.stop_timeout)


# --- command line -------------------------------------------------------------------


def printed_names(rig: Rig) -> dict[str, list[str]]:
    """job-name → printers that printed it (ground truth from each printer's log)."""
    out: dict[str, list[str]] = {}
    for p in rig:
        for line in rig.printed(p.name):
            out.setdefault(line.job_name, []).append(p.name)
    return out


def _status(rig: Rig, out: IO[str]) -> None:
    out.write(
        f"{'NAME':<11} {'PORT':<6} {'PID':<8} {'STATE':<8} {'PRINTED':>7} {'RECEIVED':>8}  FAULT\n"
    )
    for p in rig.printers:
        out.write(
            f"{p.name:<11} {p.port:<6} {p.pid or '-'!s:<8} {rig.state(p.name):<8} "
            f"{len(rig.printed(p.name)):>7} {rig.received(p.name):>8}  "
            f"{rig.current_fault(p.name) or '-'}\n"
        )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m testbed.rig", description="real IPP printers (ippeveprinter) on loopback"
    )
    sub = ap.add_subparsers(dest="cmd", required=True, metavar="COMMAND")
    s = sub.add_parser("start", help="start N printers in DIR")
    s.add_argument("dir", metavar="DIR")
    s.add_argument("-n", type=int, default=2, help="number of printers (default 2)")
    s.add_argument(
        "--base-port", type=int, default=None, help="printer i on BASE+i (default: free)"
    )
    s.add_argument("--speed", type=float, default=0.0, help="simulated seconds per page")
    s.add_argument("--formats", default=DEFAULT_FORMATS, help="document formats accepted")
    s.add_argument("--ready-timeout", type=float, default=20.0)
    for cmd, text in (
        ("stop", "stop the printers and dbus-daemon of DIR"),
        ("status", "NAME PORT PID STATE PRINTED RECEIVED FAULT"),
        ("count", "printed documents per printer and total"),
    ):
        sub.add_parser(cmd, help=text).add_argument("dir", metavar="DIR")
    for cmd, text in (
        ("kill", "SIGKILL a printer"),
        ("hang", "SIGSTOP a printer"),
        ("resume", "SIGCONT a hung printer"),
        ("restart", "fresh process on the same port (empty job history)"),
    ):
        c = sub.add_parser(cmd, help=text)
        c.add_argument("dir", metavar="DIR")
        c.add_argument("name", metavar="NAME")
    sp = sub.add_parser("speed", help="seconds per page of one printer")
    sp.add_argument("dir", metavar="DIR")
    sp.add_argument("name", metavar="NAME")
    sp.add_argument("seconds", type=float)
    f = sub.add_parser(
        "fault",
        help="job-level fault: hold REASON | abort [REASON] | slow SECONDS | "
        "die-before [SECONDS] | die-after [SECONDS]",
    )
    f.add_argument("dir", metavar="DIR")
    f.add_argument("name", metavar="NAME")
    f.add_argument("--once", action="store_true", help="one job only")
    f.add_argument("--match", metavar="SUBSTRING", help="only jobs whose job-name contains it")
    f.add_argument("mode", metavar="MODE", choices=FAULT_MODES)
    f.add_argument("args", metavar="ARG", nargs="*")
    cf = sub.add_parser("clear-fault", help="remove the job-level fault (releases a hold)")
    cf.add_argument("dir", metavar="DIR")
    cf.add_argument("name", metavar="NAME")
    m = sub.add_parser("media", help="paper in every tray (ippeveprinter's /media form)")
    m.add_argument("dir", metavar="DIR")
    m.add_argument("name", metavar="NAME")
    m.add_argument("level", choices=tuple(MEDIA_FORMS))
    m.add_argument(
        "--size", help="that stock (labels) in every tray, e.g. oe_4x3-label_4x3in: load_media"
    )
    args = ap.parse_args(argv)

    try:
        if args.cmd == "start":
            rig = Rig(
                args.dir,
                seconds_per_page=args.speed,
                formats=args.formats,
                ready_timeout=args.ready_timeout,
            )
            t0 = time.monotonic()
            for p in rig.start(args.n, args.base_port):
                print(f"{p.name}\t{p.uri}\t{p.pid}")
            print(f"started {args.n} printer(s) in {time.monotonic() - t0:.2f}s", file=sys.stderr)
            return 0
        rig = Rig(args.dir)
        if args.cmd != "stop" and not rig.root.is_dir():
            raise RigError(f"no such folder: {rig.root}")
        if args.cmd == "stop":
            rig.stop()
            print(f"stopped printers in {rig.root}")
        elif args.cmd == "status":
            _status(rig, sys.stdout)
        elif args.cmd == "count":
            counts = rig.count()
            for name, n in counts.items():
                print(f"{name} {n}")
            print(f"total {sum(counts.values())}")
        elif args.cmd == "speed":
            rig.set_speed(args.name, args.seconds)
        elif args.cmd == "fault":
            line = rig.fault(args.name, args.mode, *args.args, once=args.once, match=args.match)
            print(f"{args.name} fault: {line}")
        elif args.cmd == "clear-fault":
            rig.clear_fault(args.name)
            print(f"{args.name} fault cleared")
        elif args.cmd == "media":
            if args.size:
                rig.load_media(args.name, args.size, level=LOAD_LEVELS[args.level])
            else:
                rig.media(args.name, args.level)
            print(f"{args.name} media {args.level}{f' {args.size}' if args.size else ''}: ok")
        else:
            getattr(rig, args.cmd)(args.name)
            print(f"{args.name} {args.cmd}: ok")
    except (RigError, ValueError) as exc:
        print(f"rig: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
