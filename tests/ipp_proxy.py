"""A loopback IPP proxy that makes a real printer misbehave the way real printers do.

It stands *in front of* a real ``ippeveprinter`` (testbed/rig.py), which stays the
ground truth of what came out (its own log): the proxy never decides what
prints, it only changes what edgeprint is told, or cuts what the printer gets.
Every answer goes through edgeprint's own lossless codec
(:mod:`edgeprint.printers.codec`), so what is not rewritten passes untouched.

Personalities (:class:`Personality`, mutable while running)::

    rename_jobs        every job is reported as job-name "Print", user "Guest"
    purge_finished     finished jobs vanish at once: Get-Jobs leaves them out,
                       Get-Job-Attributes answers client-error-not-found
    k_octets           report job-k-octets: the document bytes the proxy handed
                       the printer for that job (KiB rounded up); False: none
    cut_after          Send-Document/Print-Job: the printer gets only the first N
                       bytes of the document (as a complete request, so it prints
                       what it got); edgeprint gets no answer (connection dropped)
    cut_once           cut only the next upload
    cut_wait_s         before dropping edgeprint's connection, wait (up to this long)
                       until the printer has finished the cut job (it "printed what
                       it got" before edgeprint could look)
    refuse_ipp2        IPP/2.x requests get server-error-version-not-supported
    http_status        every request gets this HTTP status (426, 500…)
    job_status         Get-Job-Attributes answers this IPP status (0x0400…)
    job_http           Get-Job-Attributes answers this HTTP status
    jobs_http          Get-Jobs answers this HTTP status
    completed_reasons  job-state-reasons added to completed jobs (e.g.
                       "document-format-error")
    reasons_for_format only jobs whose document was in this format get them
    canceled_reason    job-state-reasons of canceled jobs replaced by this one
                       (e.g. "job-canceled-at-device")
    garbage            every answer is bytes that are not IPP

Use::

    with IppProxy(rig["printer-01"].uri) as proxy:
        proxy.personality.rename_jobs = True
        proxy.uri            # 'ipp://127.0.0.1:PORT/ipp/print' for edgeprint's config
        proxy.seen           # (operation, version) of every request, in order

The proxy runs its own event loop in a thread, so tests that block (waiting
for a child process) do not stall it. ``python -m tests.ipp_proxy URI
--personality renames_jobs`` runs one by hand (one of :data:`PERSONALITIES`) and
prints its URI; the other behaviours are set from Python with :meth:`IppProxy.configure`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import math
import threading
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from aiohttp import web
from yarl import URL

from edgeprint.printers import codec
from edgeprint.printers.codec import GroupTag, Operation, Status, Tag, attr

_TERMINAL = {7, 8, 9}
_COMPLETED = 9
_CANCELED = 7
_UPLOADS = {Operation.SEND_DOCUMENT, Operation.PRINT_JOB}


@dataclass
class Personality:
    """How the printer behind the proxy misbehaves (see the module docstring)."""

    rename_jobs: bool = False
    purge_finished: bool = False
    k_octets: bool = True
    cut_after: int | None = None
    cut_once: bool = False
    cut_wait_s: float = 0.0
    refuse_ipp2: bool = False
    http_status: int | None = None
    job_status: int | None = None
    job_http: int | None = None
    jobs_http: int | None = None
    completed_reasons: tuple[str, ...] = ()
    reasons_for_format: str | None = None
    canceled_reason: str | None = None
    garbage: bool = False


#: Named personalities for parametrised tests.
PERSONALITIES: dict[str, dict[str, Any]] = {
    "plain": {},
    "renames_jobs": {"rename_jobs": True},
    "purges_finished": {"purge_finished": True},
    "no_k_octets": {"k_octets": False},
    "cuts_uploads": {"cut_after": 300, "cut_once": True},
    "refuses_ipp2": {"refuse_ipp2": True},
}


@dataclass
class IppProxy:
    """A proxy on a free loopback port for the printer at ``target`` (ipp://…)."""

    target: str
    personality: Personality = field(default_factory=Personality)
    unix_socket: str | None = None  # reach the printer over this socket (LPrint in tests)
    seen: list[tuple[str, tuple[int, int]]] = field(default_factory=list)
    delivered: dict[int, int] = field(default_factory=dict)  # job-id → document bytes
    formats: dict[int, str] = field(default_factory=dict)  # job-id → document-format sent
    cuts: int = 0
    port: int = 0
    _loop: asyncio.AbstractEventLoop | None = None
    _thread: threading.Thread | None = None
    _runner: web.AppRunner | None = None
    _session: aiohttp.ClientSession | None = None

    @property
    def uri(self) -> str:
        return f"ipp://127.0.0.1:{self.port}{URL(self.target).path}"

    def configure(self, **settings: Any) -> None:
        """Set personality fields (names as in :class:`Personality`)."""
        for key, value in settings.items():
            if not hasattr(self.personality, key):
                raise AttributeError(f"no personality setting {key!r}")
            setattr(self.personality, key, value)

    def count(self, operation: str) -> int:
        """How many requests of ``operation`` (e.g. "Get-Printer-Attributes") arrived."""
        return sum(1 for op, _ in self.seen if op == operation)

    # --- lifecycle --------------------------------------------------------------------

    def start(self) -> IppProxy:
        ready = threading.Event()
        self._loop = asyncio.new_event_loop()

        def run() -> None:
            assert self._loop is not None
            asyncio.set_event_loop(self._loop)
            self._loop.run_until_complete(self._start())
            ready.set()
            self._loop.run_forever()

        self._thread = threading.Thread(target=run, name="ipp-proxy", daemon=True)
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError("IPP proxy did not start")
        return self

    async def _start(self) -> None:
        app = web.Application(client_max_size=256 * 1024 * 1024)
        app.router.add_route("POST", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, handle_signals=False, access_log=None)
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

    def __enter__(self) -> IppProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- one request ----------------------------------------------------------------------

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        p = self.personality
        body = await request.read()
        try:
            msg = codec.parse(body)
        except Exception:  # not IPP: pass it on untouched
            return await self._forward(body)
        op = _op_name(msg.code)
        self.seen.append((op, msg.version))
        if p.garbage:
            return web.Response(body=b"\x00\x01garbage, not IPP", content_type="application/ipp")
        if p.http_status is not None:
            return web.Response(status=p.http_status, text="no")
        if p.refuse_ipp2 and msg.version[0] >= 2:
            answer = codec.response(
                Status.SERVER_ERROR_VERSION_NOT_SUPPORTED, msg.request_id, version=(1, 1),
                status_message="IPP/1.1 only",
            )  # fmt: skip
            return _ipp(answer)
        if msg.code == Operation.GET_JOB_ATTRIBUTES:
            if p.job_http is not None:
                return web.Response(status=p.job_http, text="internal error")
            if p.job_status is not None:
                return _ipp(codec.response(p.job_status, msg.request_id, version=msg.version))
        if msg.code == Operation.GET_JOBS and p.jobs_http is not None:
            return web.Response(status=p.jobs_http, text="internal error")
        if msg.code in _UPLOADS and p.cut_after is not None and len(msg.data) > p.cut_after:
            return await self._cut(request, msg)
        raw = await self._forward_bytes(body)
        try:
            answer = codec.parse(raw)
        except Exception:
            return web.Response(body=raw, content_type="application/ipp")
        if msg.code in _UPLOADS and answer.code < 0x0100:
            self._note_delivery(msg, answer, len(msg.data))
        self._rewrite(msg, answer)
        return _ipp(answer)

    async def _cut(self, request: web.Request, msg: codec.IppMessage) -> web.StreamResponse:
        """The printer gets the first ``cut_after`` document bytes; edgeprint no answer."""
        p = self.personality
        assert p.cut_after is not None
        cut = codec.IppMessage(
            msg.version, msg.code, msg.request_id, msg.groups, msg.data[: p.cut_after]
        )
        raw = await self._forward_bytes(cut.encode())
        with contextlib.suppress(Exception):
            self._note_delivery(msg, codec.parse(raw), p.cut_after)
        self.cuts += 1
        if p.cut_once:
            p.cut_after = None
        job_id = msg.value(GroupTag.OPERATION, "job-id")
        if p.cut_wait_s > 0 and isinstance(job_id, int):
            await self._wait_finished(msg, job_id, p.cut_wait_s)
        transport = request.transport
        if transport is not None:
            transport.abort()  # no answer: the connection breaks after the whole body was sent
        raise ConnectionResetError("upload cut by the proxy")

    async def _wait_finished(self, msg: codec.IppMessage, job_id: int, timeout_s: float) -> None:
        """Poll the printer itself until job ``job_id`` is terminal (bounded)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        uri = msg.value(GroupTag.OPERATION, "printer-uri")
        while loop.time() < deadline:
            ask = codec.request(
                Operation.GET_JOB_ATTRIBUTES, 1, printer_uri=str(uri),
                attributes=[attr("job-id", Tag.INTEGER, job_id)],
            )  # fmt: skip
            answer = codec.parse(await self._forward_bytes(ask.encode()))
            state = answer.value(GroupTag.JOB, "job-state")
            if state in _TERMINAL:
                return
            await asyncio.sleep(0.02)  # the printer is working on it: poll, bounded

    def _note_delivery(self, msg: codec.IppMessage, answer: codec.IppMessage, size: int) -> None:
        job_id = msg.value(GroupTag.OPERATION, "job-id")
        if job_id is None:
            job_id = answer.value(GroupTag.JOB, "job-id")
        if isinstance(job_id, int):
            self.delivered[job_id] = self.delivered.get(job_id, 0) + size
            fmt = msg.value(GroupTag.OPERATION, "document-format")
            if isinstance(fmt, str):
                self.formats[job_id] = fmt

    def _rewrite(self, msg: codec.IppMessage, answer: codec.IppMessage) -> None:
        p = self.personality
        jobs = answer.groups_of(GroupTag.JOB)
        kept = []
        for g in jobs:
            state = g.get("job-state")
            terminal = state is not None and state.value in _TERMINAL
            if p.purge_finished and terminal:
                continue
            kept.append(g)
            if p.rename_jobs:
                if g.get("job-name") is not None:
                    g.set(attr("job-name", Tag.NAME, "Print"))
                if g.get("job-originating-user-name") is not None:
                    g.set(attr("job-originating-user-name", Tag.NAME, "Guest"))
            job_id = g.get("job-id")
            if p.k_octets and job_id is not None and job_id.value in self.delivered:
                kib = math.ceil(self.delivered[int(job_id.value)] / 1024)  # type: ignore[arg-type]
                g.set(attr("job-k-octets", Tag.INTEGER, kib))
            if state is not None and state.value == _COMPLETED and p.completed_reasons:
                fmt = self.formats.get(int(job_id.value)) if job_id is not None else None  # type: ignore[arg-type]
                if p.reasons_for_format is None or fmt == p.reasons_for_format:
                    g.set(attr("job-state-reasons", Tag.KEYWORD, *p.completed_reasons))
            if state is not None and state.value == _CANCELED and p.canceled_reason:
                g.set(attr("job-state-reasons", Tag.KEYWORD, p.canceled_reason))
        if len(kept) != len(jobs):
            answer.groups = [g for g in answer.groups if g.tag != GroupTag.JOB or g in kept]
            if msg.code == Operation.GET_JOB_ATTRIBUTES and not kept:
                answer.status_code = Status.CLIENT_ERROR_NOT_FOUND

    async def _forward_bytes(self, body: bytes) -> bytes:
        assert self._session is not None
        url = URL(self.target).with_scheme("http")
        async with self._session.post(
            url, data=body, headers={"Content-Type": "application/ipp"}
        ) as resp:
            return await resp.read()

    async def _forward(self, body: bytes) -> web.StreamResponse:
        return web.Response(body=await self._forward_bytes(body), content_type="application/ipp")


def _ipp(message: codec.IppMessage) -> web.Response:
    return web.Response(body=message.encode(), content_type="application/ipp")


def _op_name(code: int) -> str:
    try:
        return "-".join(part.capitalize() for part in Operation(code).name.split("_"))
    except ValueError:
        return f"0x{code:04x}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("target", help="the real printer, ipp://127.0.0.1:PORT/ipp/print")
    parser.add_argument("--personality", choices=sorted(PERSONALITIES), default="plain")
    args = parser.parse_args(argv)
    proxy = IppProxy(args.target, Personality(**PERSONALITIES[args.personality]))
    with proxy:
        print(proxy.uri, flush=True)
        threading.Event().wait()
    return 0


if __name__ == "__main__":  # pragma: no cover - a tool for people
    raise SystemExit(main())
