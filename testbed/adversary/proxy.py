"""A loopback proxy that makes a real printer misbehave the way real printers do.

It stands *in front of* a real printer (``ippeveprinter`` from testbed/rig.py, or LPrint),
which stays the ground truth of what came out (its own log): the proxy never decides
what prints. It changes what edgeprint is told (a job's name, a missing figure, a
history it does not keep, an error status instead of an answer) or cuts the exchange
(a connection reset before the body is read, an answer lost after the printer acted);
every answer goes through edgeprint's own lossless codec, so what is not rewritten
passes untouched. The knobs (:class:`Knobs`) are set by the catalogue's behaviours
(testbed/adversary/catalogue.py); :class:`Record` keeps what the proxy told edgeprint,
for the invariants (testbed/adversary/oracle.py).

Use::

    with AdversaryProxy(rig["printer-01"].uri, printer_dir=rig["printer-01"].dir,
                        knobs=Knobs(job_name="replace", history_s=0.0)) as proxy:
        proxy.uri            # 'ipp://127.0.0.1:PORT/ipp/print' for edgeprint's config
        proxy.record         # requests, connections, uploads, what each job was shown as
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import math
import random
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import aiohttp
from aiohttp import web
from yarl import URL

from edgeprint.ipp import codec
from edgeprint.ipp.names import GroupTag, Operation, PrinterState, Status, Tag
from edgeprint.ipp.values import Attribute, AttributeGroup, Value, attr

_TERMINAL = {7, 8, 9}
_COMPLETED, _ABORTED, _CANCELED, _PROCESSING, _HELD = 9, 8, 7, 5, 4  # job-state
_ACTING = {Operation.CREATE_JOB, Operation.PRINT_JOB, Operation.SEND_DOCUMENT}
_UPLOADS = {Operation.PRINT_JOB, Operation.SEND_DOCUMENT}
_MAKES = {Operation.CREATE_JOB, Operation.PRINT_JOB}
#: Reasons that stop a job in hand (a device reports them as -error and stops).
_STALLS = ("media-jam", "cover-open", "media-empty", "media-needed", "door-open")
#: The host name a printer behind a TLS front, or known by its .local name, uses for itself.
OTHER_HOST = "printer.local"
#: A job left out of an answer this soon after the printer last showed its head open
#: (seconds: a few of the appliance's probes) was forgotten under that fault, as far as
#: edgeprint can tell.
FAULT_WINDOW_S = 1.0
#: Attributes the proxy asks the printer for besides edgeprint's, to know a job's age.
_AGE_ATTRIBUTES = ("time-at-completed", "job-printer-up-time")


@dataclass
class Knobs:
    """What the printer behind the proxy does wrong (each knob is one behaviour's means).

    Shares are probabilities per request (drawn from the proxy's seeded RNG).
    """

    # connection handling
    keepalive_s: float | None = None  # idle keep-alive connections closed after this, silently
    connection_close: bool = False  # every answer says Connection: close
    no_chunked: bool = False  # a chunked request body gets HTTP 411 Length Required
    reset_before_body: float = 0.0  # share of requests reset before their body is read
    answer_lost: float = 0.0  # share of Create-Job/Send-Document/Print-Job acted on, answer dropped
    #: Send-Document/Print-Job: the printer gets only the first N document bytes (as a whole
    #: request, so it prints what it got) and edgeprint no answer; ``cut_once``: the next only;
    #: ``cut_wait_s``: wait (up to this long) for the printer to finish it before the cut
    cut_after: int | None = None
    cut_once: bool = False
    cut_wait_s: float = 0.0
    delay_s: tuple[float, float] | None = None  # every answer this much late (uniform)
    # status codes
    busy: float = 0.0  # share of Create-Job/Print-Job answered server-error-busy (not forwarded)
    unavailable: float = 0.0  # share of requests answered server-error-service-unavailable
    ignores_which_jobs: bool = False  # Get-Jobs: which-jobs ignored (0x0001), live jobs only
    gja_status: int | None = None  # Get-Job-Attributes always answered this IPP status
    monitoring_http: float = 0.0  # share of Get-Job-Attributes/Get-Jobs answered HTTP 500
    ipp11_only: bool = False  # IPP/2.x requests get server-error-version-not-supported
    http_status: int | None = None  # every request gets this HTTP status (426…)
    garbage: bool = False  # every answer is bytes that are not IPP
    gja_http: int | None = None  # every Get-Job-Attributes gets this HTTP status
    jobs_http: int | None = None  # every Get-Jobs gets this HTTP status
    # job attributes
    other_host: bool = False  # names itself by another host: Get-Job-Attributes not-found, URIs
    job_name: Literal["replace", "shorten", "decorate"] | None = None
    user_name: Literal["replace", "decorate"] | None = None
    k_octets: Literal["exact", "under"] | None = None  # add job-k-octets (exact, or short)
    impressions: Literal["absent", "zero"] | None = None
    no_time_at_creation: bool = False  # time-at-creation 0, no date-time-at-creation
    stale_s: float = 0.0  # Get-Job-Attributes answers up to this old (a cache)
    no_job_uuid: bool = False
    # job lifecycle
    history_s: float | None = None  # finished jobs vanish from every answer after this
    held_at_printer: bool = False  # a job the rig holds without a reason shows pending-held
    document_errors: bool = False  # a job the rig marked docerror shows document-format-error
    #: completed jobs (of this document-format only, when set) show these job-state-reasons
    completed_reasons: tuple[str, ...] = ()
    reasons_for_format: str | None = None
    cancel_late_s: float = 0.0  # Cancel-Job answered at once, forwarded this much later
    canceled_at_device: bool = False  # job-canceled-by-user shown as job-canceled-at-device
    # printer state
    extra_reasons: tuple[str, ...] = ()  # added to printer-state-reasons (vendor, unknown)
    state_message: str | None = None  # printer-state-message replaced (hostile text, issue 25)
    error_stop: bool = False  # a stalled job's reasons shown as -error, printer-state stopped
    #: a stalled job's reasons shown with another suffix (RFC 8011 §5.4.12): "report"
    #: (media-jam-report), "bare" (media-jam: no suffix), "idle-report" (-report, and
    #: printer-state idle while it holds the jammed job)
    stall_as: Literal["report", "bare", "idle-report"] | None = None
    #: a job cancelled while a stall holds it is shown processing, processing-to-stop-point,
    #: until the stall is cleared (a device keeps the jammed sheet until a person clears
    #: it); the cancel reaches the printer at once, so nothing of it prints
    cancel_waits_for_stall: bool = False
    bypass_empty: bool = False  # the by-pass tray shown empty (main stays loaded)
    supplies_low: bool = False  # marker-supply-low and a low marker level
    #: issue 23: supplies and trays answered with nonsense. ``True`` / ``"types"``:
    #: printer-supply, marker-*, printer-input-tray and media-ready with wrong value types,
    #: malformed fields, control characters; ``"contradictory"``: well-typed values that
    #: disagree (marker-names and marker-levels of different lengths, levels of 101 and -5
    #: beyond RFC 3805's -1/-2/-3, a tray fuller than its capacity, a printer-input-tray
    #: value that is not PWG 5100.13's ``key=value;`` form); media-ready stays true
    garbage_supplies: bool | Literal["types", "contradictory"] = False
    #: a label printer's head is open: printer-state stopped, a bare ``other`` among the
    #: reasons (LPrint's Zebra driver has no better keyword) and its message, until cleared
    head_open: bool = False
    up_time: Literal["frozen", "absent"] | None = None
    uuid_per_life: bool = False  # printer-uuid changes at every restart (a replaced printer)


@dataclass
class Shown:
    """What the proxy told edgeprint about one printer job."""

    states: set[int] = field(default_factory=set)
    reasons: set[str] = field(default_factory=set)
    impressions: set[int] = field(default_factory=set)
    not_found: int = 0  # answers that said it did not exist (or left it out of a list)
    #: it was left out while the printer showed (or had shown within FAULT_WINDOW_S) its head
    #: open: a bare ``other``, an error that may have ended it
    absent_under_fault: bool = False


@dataclass
class Record:
    """Everything the proxy saw and said, for the oracle."""

    #: (monotonic seconds, operation, connection number) of every request received
    requests: list[tuple[float, str, int]] = field(default_factory=list)
    #: the IPP version (major, minor) of every IPP request received, in order
    versions: list[tuple[int, int]] = field(default_factory=list)
    #: monotonic seconds each connection was first seen
    connections: dict[int, float] = field(default_factory=dict)
    #: (life, printer job-id) → the edgeprint job-name it was made with
    made: dict[tuple[int, int], str] = field(default_factory=dict)
    #: (life, printer job-id) → when it was made (wall clock)
    made_at: dict[tuple[int, int], float] = field(default_factory=dict)
    #: (life, printer job-id) → "acknowledged" | "lost" | "refused" for its upload
    uploads: dict[tuple[int, int], str] = field(default_factory=dict)
    #: (life, printer job-id) → what edgeprint was told of it
    shown: dict[tuple[int, int], Shown] = field(default_factory=dict)
    #: answers lost after the printer acted (Create-Job, Send-Document, Print-Job)
    lost: int = 0
    resets: int = 0
    cuts: int = 0  # uploads cut short
    #: (life, printer job-id) → the document-format it was sent in
    formats: dict[tuple[int, int], str] = field(default_factory=dict)
    #: Create-Job/Print-Job received while the head was open (``Knobs.head_open``): seconds
    #: since edgeprint was first told so (None: before any answer said so)
    made_while_stopped: list[float | None] = field(default_factory=list)

    def max_per_second(self, what: Literal["requests", "connections"]) -> int:
        """The most requests (or new connections) seen in any one-second window."""
        times = sorted(
            [t for t, _, _ in self.requests] if what == "requests" else self.connections.values()
        )
        best, lo = 0, 0
        for hi, t in enumerate(times):
            while t - times[lo] >= 1.0:
                lo += 1
            best = max(best, hi - lo + 1)
        return best


@dataclass
class AdversaryProxy:
    """A proxy on a free loopback port for the printer at ``target`` (ipp://…)."""

    target: str
    knobs: Knobs = field(default_factory=Knobs)
    printer_dir: Path | None = None  # the rig printer's folder (fault and docerror files)
    seed: int = 0
    unix_socket: str | None = None  # reach the printer over this socket (LPrint in tests)
    record: Record = field(default_factory=Record)
    port: int = 0
    #: the printer's life as the proxy knows it (:meth:`restarted` counts on)
    life: int = 1
    _rng: random.Random = field(default_factory=random.Random)
    _loop: asyncio.AbstractEventLoop | None = None
    _thread: threading.Thread | None = None
    _runner: web.AppRunner | None = None
    _session: aiohttp.ClientSession | None = None
    _conns: dict[int, int] = field(default_factory=dict)
    _delivered: dict[tuple[int, int], int] = field(default_factory=dict)
    _cache: dict[tuple[int, int], tuple[float, bytes]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _later: set[asyncio.Task[None]] = field(default_factory=set)  # requests forwarded late
    _stopped_shown: float | None = None  # monotonic: first answer that showed the head open
    _fault_shown: float | None = None  # monotonic: last answer that showed the head open
    #: (life, job-id) of jobs cancelled while a stall held them (cancel_waits_for_stall)
    _stopping: set[tuple[int, int]] = field(default_factory=set)

    def __post_init__(self) -> None:
        self._rng.seed(self.seed)

    @property
    def uri(self) -> str:
        return f"ipp://127.0.0.1:{self.port}{URL(self.target).path}"

    def restarted(self) -> None:
        """The printer behind was power-cycled: a new life (its job-ids start again)."""
        with self._lock:
            self.life += 1
            self._delivered.clear()
            self._cache.clear()

    def count(self, operation: str) -> int:
        return sum(1 for _, op, _ in self.record.requests if op == operation)

    # --- lifecycle --------------------------------------------------------------------

    def start(self) -> AdversaryProxy:
        ready = threading.Event()
        self._loop = asyncio.new_event_loop()

        def run() -> None:
            assert self._loop is not None
            asyncio.set_event_loop(self._loop)
            self._loop.run_until_complete(self._start())
            ready.set()
            self._loop.run_forever()

        self._thread = threading.Thread(target=run, name="adversary-proxy", daemon=True)
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError("adversary proxy did not start")
        return self

    async def _start(self) -> None:
        # the connections this proxy cuts on purpose are not errors worth a traceback
        logging.getLogger("aiohttp.server").setLevel(logging.CRITICAL)
        app = web.Application(client_max_size=256 * 1024 * 1024)
        app.router.add_route("POST", "/{tail:.*}", self._handle)
        keepalive = self.knobs.keepalive_s if self.knobs.keepalive_s is not None else 75.0
        # stop() waits at most this long for a request still forwarded to a printer that
        # hung (the appliance gave up on it long ago; aiohttp keeps the handler going), not
        # aiohttp's 60 s: CI's test_seed[53] outwaited stop()'s 10 s under load
        self._runner = web.AppRunner(
            app,
            handle_signals=False,
            access_log=None,
            keepalive_timeout=keepalive,
            shutdown_timeout=2.0,
        )
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        server = site._server
        assert server is not None
        self.port = server.sockets[0].getsockname()[1]  # type: ignore[attr-defined]
        connector = (
            aiohttp.UnixConnector(path=self.unix_socket) if self.unix_socket is not None else None
        )
        self._session = aiohttp.ClientSession(connector=connector)

    def stop(self) -> None:
        if self._loop is None:
            return

        async def close() -> None:
            for task in list(self._later):  # a late cancel not yet forwarded never will be
                task.cancel()
            await asyncio.gather(*self._later, return_exceptions=True)
            if self._session is not None:
                await self._session.close()
            if self._runner is not None:
                await self._runner.cleanup()

        asyncio.run_coroutine_threadsafe(close(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(10)
        self._loop.close()
        self._loop = None

    def __enter__(self) -> AdversaryProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- one request ----------------------------------------------------------------------

    def _chance(self, share: float) -> bool:
        return share > 0 and self._rng.random() < share

    def _note_request(
        self, request: web.Request, op: str, version: tuple[int, int] | None = None
    ) -> None:
        key = id(request.transport)
        now = time.monotonic()
        n = self._conns.get(key)
        if n is None:
            n = self._conns[key] = len(self._conns) + 1
            self.record.connections[n] = now
        self.record.requests.append((now, op, n))
        if version is not None:
            self.record.versions.append(version)

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        k = self.knobs
        if k.no_chunked and "chunked" in request.headers.get("Transfer-Encoding", "").lower():
            self._note_request(request, "chunked")
            resp = web.Response(status=411, text="Length Required")
            resp.force_close()
            return resp
        if self._chance(k.reset_before_body):
            self._note_request(request, "reset")
            self.record.resets += 1
            _abort(request)
        body = await request.read()
        try:
            msg = codec.parse(body)
        except Exception:  # not IPP: pass it on untouched
            self._note_request(request, "not-ipp")
            return await self._respond(web.Response(body=await self._forward(body)))
        op = _op_name(msg.code)
        self._note_request(request, op, msg.version)
        if not k.head_open:
            self._stopped_shown = None
        elif msg.code in _MAKES:
            shown = self._stopped_shown
            self.record.made_while_stopped.append(
                None if shown is None else time.monotonic() - shown
            )
        if k.delay_s is not None:
            await asyncio.sleep(self._rng.uniform(*k.delay_s))  # the printer answers late
        early = self._refuse(msg)
        if early is not None:
            return await self._respond(early)
        if msg.code == Operation.CANCEL_JOB and k.cancel_waits_for_stall and self._stall():
            self._stopping.add((self.life, _job_id(msg) or 0))
        if msg.code == Operation.CANCEL_JOB and k.cancel_late_s > 0:
            self._schedule(body, k.cancel_late_s)
            return await self._respond(_ipp(codec.response(Status.SUCCESSFUL_OK, msg.request_id,
                                                           version=msg.version)))  # fmt: skip
        if msg.code == Operation.GET_JOB_ATTRIBUTES and k.stale_s > 0:
            cached = self._cached(msg)
            if cached is not None:
                return await self._respond(web.Response(body=cached,
                                                        content_type="application/ipp"))  # fmt: skip
        if msg.code in _UPLOADS and k.cut_after is not None and len(msg.data) > k.cut_after:
            return await self._cut(request, msg)
        raw = await self._forward(self._ask(msg).encode())
        try:
            answer = codec.parse(raw)
        except Exception:
            return await self._respond(web.Response(body=raw, content_type="application/ipp"))
        acted = answer.code < 0x0100
        self._note_made(msg, answer)
        if msg.code in _ACTING and acted and self._chance(k.answer_lost):
            self.record.lost += 1
            self._note_upload(msg, answer, "lost")
            _abort(request)
        self._note_upload(msg, answer, "acknowledged" if acted else "refused")
        self._rewrite(msg, answer)
        out = answer.encode()
        if msg.code == Operation.GET_JOB_ATTRIBUTES and k.stale_s > 0:
            self._cache[(self.life, _job_id(msg) or 0)] = (time.monotonic(), out)
        return await self._respond(web.Response(body=out, content_type="application/ipp"))

    async def _respond(self, resp: web.Response) -> web.Response:
        if self.knobs.connection_close:
            resp.force_close()
        return resp

    async def _cut(self, request: web.Request, msg: codec.IppMessage) -> web.StreamResponse:
        """The printer gets the first ``cut_after`` document bytes; edgeprint no answer."""
        k = self.knobs
        assert k.cut_after is not None
        cut = codec.IppMessage(msg.version, msg.code, msg.request_id, msg.groups,
                               msg.data[: k.cut_after])  # fmt: skip
        raw = await self._forward(cut.encode())
        with contextlib.suppress(Exception):
            answer = codec.parse(raw)
            self._note_made(msg, answer)
            self._note_upload(cut, answer, "lost")
        self.record.cuts += 1
        if k.cut_once:
            k.cut_after = None
        job_id = _job_id(msg)
        with contextlib.suppress(Exception):
            job_id = job_id or _int(codec.parse(raw).get(GroupTag.JOB, "job-id"))
        if k.cut_wait_s > 0 and job_id is not None:
            await self._wait_finished(msg, job_id, k.cut_wait_s)
        _abort(request)
        raise AssertionError("unreachable")  # _abort raised

    async def _wait_finished(self, msg: codec.IppMessage, job_id: int, timeout_s: float) -> None:
        """Poll the printer itself until job ``job_id`` is terminal (bounded)."""
        deadline = time.monotonic() + timeout_s
        uri = str(msg.value(GroupTag.OPERATION, "printer-uri"))
        while time.monotonic() < deadline:
            ask = codec.request(Operation.GET_JOB_ATTRIBUTES, 1, printer_uri=uri,
                                attributes=[attr("job-id", Tag.INTEGER, job_id)])  # fmt: skip
            answer = codec.parse(await self._forward(ask.encode()))
            if answer.value(GroupTag.JOB, "job-state") in _TERMINAL:
                return
            await asyncio.sleep(0.02)  # the printer is working on it: poll, bounded

    def _refuse(self, msg: codec.IppMessage) -> web.Response | None:
        """An answer given without asking the printer (it did not act), or None."""
        k = self.knobs
        if k.garbage:
            return web.Response(body=b"\x00\x01garbage, not IPP", content_type="application/ipp")
        if k.http_status is not None:
            return web.Response(status=k.http_status, text="no")
        if msg.code == Operation.GET_JOB_ATTRIBUTES and k.gja_http is not None:
            return web.Response(status=k.gja_http, text="internal error")
        if msg.code == Operation.GET_JOBS and k.jobs_http is not None:
            return web.Response(status=k.jobs_http, text="internal error")
        if k.ipp11_only and msg.version[0] >= 2:
            return _ipp(codec.response(Status.SERVER_ERROR_VERSION_NOT_SUPPORTED, msg.request_id,
                                       version=(1, 1), status_message="IPP/1.1 only"))  # fmt: skip
        monitoring = msg.code in (Operation.GET_JOB_ATTRIBUTES, Operation.GET_JOBS)
        if monitoring and self._chance(k.monitoring_http):
            return web.Response(status=500, text="internal error")
        if msg.code in _MAKES and self._chance(k.busy):
            return _ipp(codec.response(Status.SERVER_ERROR_BUSY, msg.request_id,
                                       version=msg.version,
                                       status_message="Currently printing another job."))  # fmt: skip
        if self._chance(k.unavailable):
            return _ipp(codec.response(Status.SERVER_ERROR_SERVICE_UNAVAILABLE, msg.request_id,
                                       version=msg.version))  # fmt: skip
        if msg.code == Operation.GET_JOB_ATTRIBUTES:
            if k.other_host:
                self._note_shown_absent(_job_id(msg))
                return _ipp(codec.response(Status.CLIENT_ERROR_NOT_FOUND, msg.request_id,
                                           version=msg.version,
                                           status_message="Job not found."))  # fmt: skip
            if k.gja_status is not None:
                return _ipp(codec.response(k.gja_status, msg.request_id, version=msg.version))
        return None

    def _ask(self, msg: codec.IppMessage) -> codec.IppMessage:
        """The request as the printer gets it (which-jobs dropped, the job's age asked)."""
        k = self.knobs
        if msg.code == Operation.GET_JOBS and k.ignores_which_jobs:
            msg.remove(GroupTag.OPERATION, "which-jobs")
        if (
            msg.code in (Operation.GET_JOBS, Operation.GET_JOB_ATTRIBUTES)
            and k.history_s is not None
        ):
            wanted = msg.get(GroupTag.OPERATION, "requested-attributes")
            if wanted is not None:
                names = [str(v.value) for v in wanted.values]
                for extra in _AGE_ATTRIBUTES:
                    if extra not in names:
                        wanted.values.append(Value.keyword(extra))
        return msg

    def _schedule(self, body: bytes, after_s: float) -> None:
        async def later() -> None:
            await asyncio.sleep(after_s)  # the printer gets to the cancel late
            with contextlib.suppress(Exception):
                await self._forward(body)

        assert self._loop is not None
        task = self._loop.create_task(later())
        self._later.add(task)  # held until done: the loop keeps only a weak reference
        task.add_done_callback(self._later.discard)

    def _cached(self, msg: codec.IppMessage) -> bytes | None:
        hit = self._cache.get((self.life, _job_id(msg) or 0))
        if hit is None or time.monotonic() - hit[0] > self.knobs.stale_s:
            return None
        answer = codec.parse(hit[1])
        answer.request_id = msg.request_id
        return answer.encode()

    # --- what edgeprint was told ----------------------------------------------------------

    def _note_made(self, msg: codec.IppMessage, answer: codec.IppMessage) -> None:
        if msg.code not in _MAKES or answer.code >= 0x0100:
            return
        job_id = answer.value(GroupTag.JOB, "job-id")
        name = msg.value(GroupTag.OPERATION, "job-name")
        if isinstance(job_id, int) and isinstance(name, str):
            self.record.made[(self.life, job_id)] = name
            self.record.made_at[(self.life, job_id)] = time.time()

    def _note_upload(self, msg: codec.IppMessage, answer: codec.IppMessage, how: str) -> None:
        if msg.code not in _UPLOADS:
            return
        job_id = _job_id(msg) or answer.value(GroupTag.JOB, "job-id")
        if isinstance(job_id, int):
            key = (self.life, job_id)
            if self.record.uploads.get(key) != "lost":
                self.record.uploads[key] = how
            if how != "refused":
                self._delivered[key] = self._delivered.get(key, 0) + len(msg.data)
            fmt = msg.value(GroupTag.OPERATION, "document-format")
            if isinstance(fmt, str):
                self.record.formats[key] = fmt

    def _note_shown_absent(self, job_id: int | None) -> None:
        if job_id is not None:
            shown = self.record.shown.setdefault((self.life, job_id), Shown())
            shown.not_found += 1
            last = self._fault_shown
            if self.knobs.head_open or (
                last is not None and time.monotonic() - last <= FAULT_WINDOW_S
            ):
                shown.absent_under_fault = True

    # --- rewriting answers ----------------------------------------------------------------

    def _rewrite(self, msg: codec.IppMessage, answer: codec.IppMessage) -> None:
        k = self.knobs
        if k.ignores_which_jobs and msg.code == Operation.GET_JOBS:
            answer.code = Status.SUCCESSFUL_OK_IGNORED_OR_SUBSTITUTED_ATTRIBUTES
            answer.groups.append(AttributeGroup(GroupTag.UNSUPPORTED, [
                attr("which-jobs", Tag.KEYWORD, "all")]))  # fmt: skip
        for g in answer.groups_of(GroupTag.PRINTER):
            self._rewrite_printer(g)
        kept = []
        for g in answer.groups_of(GroupTag.JOB):
            if self._forgotten(g):
                self._note_shown_absent(_int(g.get("job-id")))
                continue
            self._rewrite_job(g)
            kept.append(g)
        jobs = answer.groups_of(GroupTag.JOB)
        if len(kept) != len(jobs):
            answer.groups = [g for g in answer.groups if g.tag != GroupTag.JOB or g in kept]
            if msg.code == Operation.GET_JOB_ATTRIBUTES and not kept:
                answer.code = Status.CLIENT_ERROR_NOT_FOUND
        if k.other_host:
            for g in answer.groups:
                for name in ("job-uri", "job-printer-uri", "printer-uri-supported"):
                    a = g.get(name)
                    if a is not None:
                        for v in a.values:
                            if isinstance(v.value, str):
                                v.value = _other_host(v.value)

    def _forgotten(self, g: AttributeGroup) -> bool:
        k = self.knobs
        if k.history_s is None:
            return False
        state = _int(g.get("job-state"))
        if state not in _TERMINAL:
            return False
        done, now = _int(g.get("time-at-completed")), _int(g.get("job-printer-up-time"))
        if done is None or now is None or k.history_s <= 0:
            return True
        return now - done >= k.history_s

    def _rewrite_job(self, g: AttributeGroup) -> None:
        k = self.knobs
        job_id = _int(g.get("job-id"))
        key = (self.life, job_id or 0)
        state = _int(g.get("job-state"))
        if key in self._stopping and self._stall():  # cancelled, still held by the stall
            g.set(attr("job-state", Tag.ENUM, _PROCESSING))
            g.set(attr("job-state-reasons", Tag.KEYWORD, "processing-to-stop-point"))
            state = _PROCESSING
        if k.held_at_printer and state == _PROCESSING and self._fault().startswith("hold none"):
            g.set(attr("job-state", Tag.ENUM, _HELD))
            g.set(attr("job-state-reasons", Tag.KEYWORD, "job-hold-until-specified"))
            state = _HELD
        folder = self.printer_dir
        marked = folder is not None and (folder / f"docerror-{job_id}").exists()
        if k.document_errors and job_id is not None and marked:
            g.set(attr("job-state-reasons", Tag.KEYWORD, "job-completed-with-errors",
                           "document-format-error"))  # fmt: skip
        if k.completed_reasons and state == _COMPLETED:
            fmt = self.record.formats.get(key)
            if k.reasons_for_format is None or fmt == k.reasons_for_format:
                g.set(attr("job-state-reasons", Tag.KEYWORD, *k.completed_reasons))
        if k.canceled_at_device and state == _CANCELED:
            g.set(attr("job-state-reasons", Tag.KEYWORD, "job-canceled-at-device"))
        name = g.get("job-name")
        if name is not None and k.job_name is not None:
            text = str(name.value)
            new = {"replace": "Print", "shorten": text[:20], "decorate": f"Copy of {text}.pdf"}
            g.set(attr("job-name", Tag.NAME, new[k.job_name]))
        user = g.get("job-originating-user-name")
        if user is not None and k.user_name is not None:
            u = str(user.value)
            g.set(attr("job-originating-user-name", Tag.NAME,
                       "Guest" if k.user_name == "replace" else f"CORP\\{u}"))  # fmt: skip
        if k.k_octets is not None and key in self._delivered:
            kib = math.ceil(self._delivered[key] / 1024)
            g.set(attr("job-k-octets", Tag.INTEGER, kib if k.k_octets == "exact" else kib // 2))
        if k.impressions == "absent":
            g.remove("job-impressions")
            g.remove("job-impressions-completed")
        elif k.impressions == "zero" and g.get("job-impressions-completed") is not None:
            g.set(attr("job-impressions-completed", Tag.INTEGER, 0))
        if k.no_time_at_creation:
            if g.get("time-at-creation") is not None:
                g.set(attr("time-at-creation", Tag.INTEGER, 0))
            g.remove("date-time-at-creation")
        if k.no_job_uuid:
            g.remove("job-uuid")
        for extra in _AGE_ATTRIBUTES:
            g.remove(extra)
        shown = self.record.shown.setdefault(key, Shown())
        if state is not None:
            shown.states.add(state)
        reasons = g.get("job-state-reasons")
        if reasons is not None:
            shown.reasons.update(str(v.value) for v in reasons.values)
        done = _int(g.get("job-impressions-completed"))
        if done is not None:
            shown.impressions.add(done)

    def _rewrite_printer(self, g: AttributeGroup) -> None:
        k = self.knobs
        state = _int(g.get("printer-state"))
        reasons_attr = g.get("printer-state-reasons")
        reasons = [] if reasons_attr is None else [str(v.value) for v in reasons_attr.values]
        reasons = [r for r in reasons if r != "none"]
        suffix = "-warning" if state == PrinterState.PROCESSING else "-report"
        stall = self._stall()
        if not stall:
            self._stopping.clear()  # cleared: the jobs it held show as the printer says
        stopping = stall if any(j[0] == self.life for j in self._stopping) else ""
        if stopping and not any(r.startswith(stopping) for r in reasons):
            reasons.append(f"{stopping}-warning")  # the sheet is still jammed in there
            state = PrinterState.PROCESSING
            g.set(attr("printer-state", Tag.ENUM, state))
        stalled = any(r.startswith(_STALLS) for r in reasons)
        if k.error_stop and state == PrinterState.PROCESSING and stalled:
            reasons = [_as_error(r) if r.startswith(_STALLS) else r for r in reasons]
            g.set(attr("printer-state", Tag.ENUM, PrinterState.STOPPED))
        elif k.stall_as is not None and stalled:
            end = "" if k.stall_as == "bare" else "-report"
            reasons = [_suffixed(r, end) if r.startswith(_STALLS) else r for r in reasons]
            if k.stall_as == "idle-report":
                g.set(attr("printer-state", Tag.ENUM, PrinterState.IDLE))
        if k.bypass_empty:
            reasons.append("media-empty" + suffix)
            trays = g.get("printer-input-tray")
            if trays is not None:
                for v in trays.values:
                    raw = v.value if isinstance(v.value, bytes) else str(v.value).encode()
                    if b"name=by-pass-tray" in raw:
                        v.value = _level(raw, 0)
        if k.supplies_low:
            reasons.append("marker-supply-low" + suffix)
            if g.get("marker-levels") is not None:
                g.set(attr("marker-levels", Tag.INTEGER, 4))
        if k.garbage_supplies == "contradictory":
            _contradict_supplies(g)
        elif k.garbage_supplies:
            for junk in _JUNK_SUPPLIES:
                g.set(junk)
        if k.head_open and state is not None:
            g.set(attr("printer-state", Tag.ENUM, PrinterState.STOPPED))
            g.set(attr("printer-state-message", Tag.TEXT, "Print head open."))
            reasons.append("other")
            self._fault_shown = time.monotonic()
            if self._stopped_shown is None:
                self._stopped_shown = self._fault_shown
        reasons.extend(k.extra_reasons)
        if k.state_message is not None:
            g.set(attr("printer-state-message", Tag.TEXT, k.state_message))
        if reasons_attr is not None or reasons:
            g.set(attr("printer-state-reasons", Tag.KEYWORD, *(reasons or ["none"])))
        if k.up_time == "absent":
            g.remove("printer-up-time")
        elif k.up_time == "frozen" and g.get("printer-up-time") is not None:
            g.set(attr("printer-up-time", Tag.INTEGER, 1000))
        if k.uuid_per_life and g.get("printer-uuid") is not None:
            digest = hashlib.sha256(f"{self.target}:{self.life}".encode()).hexdigest()
            u = f"urn:uuid:{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"
            g.set(attr("printer-uuid", Tag.URI, u))

    def _stall(self) -> str:
        """The stall reason a ``hold`` fault now shows ("media-jam"…), or "" for none."""
        words = self._fault().split()
        if "hold" not in words or words.index("hold") + 1 >= len(words):
            return ""
        held = words[words.index("hold") + 1].split(",")[0]
        return held if held.startswith(_STALLS) else ""

    def _fault(self) -> str:
        if self.printer_dir is None:
            return ""
        try:
            return (self.printer_dir / "fault").read_text().strip()
        except FileNotFoundError:
            return ""

    async def _forward(self, body: bytes) -> bytes:
        assert self._session is not None
        url = URL(self.target).with_scheme("http")
        async with self._session.post(
            url, data=body, headers={"Content-Type": "application/ipp"}
        ) as resp:
            return await resp.read()


#: What a printer answering nonsense about its supplies and trays sends (Knobs.garbage_supplies).
_JUNK_SUPPLIES = (
    Attribute("printer-supply", [Value(Tag.OCTET_STRING, b"\xff\x00;level=lots;type="),
                                       Value(Tag.INTEGER, 42)]),
    attr("printer-supply-description", Tag.INTEGER, 7),
    attr("marker-names", Tag.NAME, "\x07" * 300),
    attr("marker-levels", Tag.TEXT, "full"),
    attr("printer-input-tray", Tag.OCTET_STRING, b"name=;level=-9;maxcapacity=0", b"\x00\x01\x02"),
    Attribute("media-ready", [Value(Tag.KEYWORD, "\x1b\x07"),
                                    Value(Tag.INTEGER, -1)]),
)  # fmt: skip


#: Well-typed supplies that contradict themselves (Knobs.garbage_supplies="contradictory").
_CONTRADICTORY_SUPPLIES = (
    attr("marker-names", Tag.NAME, "Black", "Cyan", "Magenta"),
    attr("marker-levels", Tag.INTEGER, 101, -5),  # one short, both out of range
    attr("marker-colors", Tag.NAME, "#000000"),
    attr("marker-types", Tag.KEYWORD, "toner", "toner", "toner", "toner"),
    attr("marker-low-levels", Tag.INTEGER, 10, 10, 10),
    attr("marker-high-levels", Tag.INTEGER, 100, 100, 100),
    attr("printer-supply", Tag.OCTET_STRING,
         b"index=1;type=toner;unit=percent;maxcapacity=100;level=150;colorantname=black;",
         b"index=2;type=toner;unit=percent;maxcapacity=100;level=-5;colorantname=cyan;",
         b"Magenta toner, about half"),
    attr("printer-supply-description", Tag.TEXT, "Black toner", "Cyan toner"),
)  # fmt: skip


def _contradict_supplies(g: AttributeGroup) -> None:
    """Supplies and trays that contradict themselves; media-ready and media-col-ready (what
    is loaded) are left as the printer said them."""
    for a in _CONTRADICTORY_SUPPLIES:
        g.set(a)
    trays = g.get("printer-input-tray")
    if trays is None:
        return
    for v in trays.values:
        raw = v.value if isinstance(v.value, bytes) else str(v.value).encode()
        if b"name=main" in raw:  # fuller than it can hold
            v.value = b"type=sheetFeedAutoRemovableTray;maxcapacity=250;level=300;name=main;"
        elif b"name=by-pass-tray" in raw:  # not the key=value; form at all
            v.value = b"By-pass tray: 25 sheets of #10 envelopes"
    trays.values.append(Value(Tag.OCTET_STRING, b"name=main;level=-5;maxcapacity=-7;"))


def _abort(request: web.Request) -> None:
    transport = request.transport
    if transport is not None:
        transport.abort()  # no answer: the connection breaks
    raise ConnectionResetError("cut by the adversary proxy")


def _ipp(message: codec.IppMessage) -> web.Response:
    return web.Response(body=message.encode(), content_type="application/ipp")


def _int(a: Attribute | None) -> int | None:
    if a is None or not a.values:
        return None
    v = a.values[0].value
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _job_id(msg: codec.IppMessage) -> int | None:
    """The job a request names: by job-id, or by the last segment of its job-uri (RFC 8011
    §4.1.5: either targets the job)."""
    v = msg.value(GroupTag.OPERATION, "job-id")
    if isinstance(v, int) and not isinstance(v, bool):
        return v
    uri = msg.value(GroupTag.OPERATION, "job-uri")
    tail = uri.rsplit("/", 1)[-1] if isinstance(uri, str) else ""
    return int(tail) if tail.isdigit() else None


def _suffixed(reason: str, suffix: str) -> str:
    """``reason`` with its severity suffix replaced by ``suffix`` ("" for none)."""
    for end in ("-report", "-warning", "-error"):
        if reason.endswith(end):
            return reason[: -len(end)] + suffix
    return reason + suffix


def _as_error(reason: str) -> str:
    for suffix in ("-report", "-warning"):
        if reason.endswith(suffix):
            return reason[: -len(suffix)] + "-error"
    return reason


def _level(raw: bytes, level: int) -> bytes:
    parts = [p for p in raw.split(b";") if p]
    out = [b"level=%d" % level if p.startswith(b"level=") else p for p in parts]
    return b";".join(out) + b";"


def _other_host(uri: str) -> str:
    u = URL(uri)
    return str(u.with_host(OTHER_HOST).with_port(631)) if u.host else uri


def _op_name(code: int) -> str:
    try:
        return "-".join(part.capitalize() for part in Operation(code).name.split("_"))
    except ValueError:
        return f"0x{code:04x}"


@contextlib.contextmanager
def proxies(
    targets: dict[str, tuple[str, Path | None, Knobs]], seed: int
) -> Iterator[dict[str, AdversaryProxy]]:
    """One started proxy per printer name (target URI, printer folder, knobs)."""
    started: dict[str, AdversaryProxy] = {}
    try:
        for i, (name, (uri, folder, knobs)) in enumerate(sorted(targets.items())):
            started[name] = AdversaryProxy(uri, knobs, folder, seed=seed * 31 + i).start()
        yield started
    finally:
        for p in started.values():
            p.stop()


__all__: list[str] = ["AdversaryProxy", "Knobs", "Record", "Shown", "proxies"]
