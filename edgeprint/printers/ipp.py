"""A typed IPP client over pyipp for the operations edgeprint uses (RFC 8011).

This module is the only home of pyipp. Every failure is classified once, by
:mod:`edgeprint.printers.failures`, into :mod:`edgeprint.errors` types:

- :class:`errors.PrinterUnreachable`: no connection; the printer did not act.
- :class:`errors.PrinterBusy`: ``server-error-busy`` (0x0507), backpressure.
- :class:`errors.PrinterTransient`: other failures the printer did not act on.
- :class:`errors.PrinterPermanent`: the printer refused the document or its
  attributes (RFC 8011 §4.1.6 / PWG 5100.x status codes listed in
  :data:`edgeprint.printers.failures.POISON_STATUSES`).
- :class:`errors.PrinterAmbiguous`: time-out or broken connection during an
  operation that may have acted (Create-Job, Send-Document, Print-Job).

pyipp 0.17.2 is used for what it does well, encoding and parsing IPP
messages; the HTTP exchange is ours, on the shared aiohttp session, because
its ``IPP`` class raises on any status ≥ 0x0200 with only the code (we keep
``status-message``), its ``request_timeout`` does not cover reading the
answer (ours covers the whole exchange), and it cannot tell whether a
document upload was handed over whole (we track it: a time-out after the
whole body was written is a different case from a broken upload, DESIGN §3.7).
Attributes missing from its tag map are silently dropped (we check ours at
import); one value parses to a scalar and several to a list (normalised).
"""

from __future__ import annotations

import asyncio
import itertools
import ssl
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import aiohttp.abc
from pyipp.enums import IppOperation, IppStatus
from pyipp.parser import parse as parse_ipp
from pyipp.serializer import encode_dict as encode_ipp
from pyipp.tags import ATTRIBUTE_TAG_MAP
from yarl import URL

from edgeprint import errors, faults
from edgeprint.evidence import Listing, PrinterJob
from edgeprint.ipp.names import Operation, Status, operation_name
from edgeprint.printers import answers, failures, tls, transport

#: Every attribute this client sends; pyipp drops any it has no tag for.
_SENT_ATTRIBUTES = (
    "requesting-user-name",
    "job-name",
    "document-format",
    "last-document",
    "job-id",
    "which-jobs",
    "requested-attributes",
    "copies",
)
_missing = [a for a in _SENT_ATTRIBUTES if a not in ATTRIBUTE_TAG_MAP]
if _missing:  # pragma: no cover - a pyipp upgrade would trip this at import
    raise ImportError(f"pyipp has no tag for {_missing}: it would drop them silently")

#: Observer of each request: (operation, outcome, seconds).
Observe = Callable[[str, str, float], None]

_HEADERS = {"Content-Type": "application/ipp", "Accept": "application/ipp"}
_request_ids = itertools.count(1)


@dataclass(frozen=True)
class PrinterStatus:
    """What Get-Printer-Attributes says (RFC 8011 §5.4)."""

    state: int  # printer-state: 3 idle, 4 processing, 5 stopped
    reasons: tuple[str, ...]  # printer-state-reasons, e.g. ("media-empty-report",)
    message: str
    queued_job_count: int
    operations: frozenset[str]  # e.g. {"Create-Job", "Send-Document", …}
    formats: frozenset[str]  # document-format-supported
    copies_supported: bool
    accepting_jobs: bool
    up_time_s: int | None  # printer-up-time, seconds
    #: printer-config-change-time (RFC 3995 §5.3.1; IPP Everywhere requires it): the
    #: printer-up-time of its last configuration change; None when not reported
    config_change_time: int | None = None
    printer_uuid: str | None = None  # printer-uuid (PWG 5100.13): a printer's identity
    #: printer-config-change-date-time (RFC 3995 §5.3.2), as text: set when the printer
    #: started (ippeveprinter) or its configuration changed
    config_change_dt: str | None = None
    #: True when the answer holds the ``probe_attributes`` too (capabilities, supplies)
    described: bool = True
    #: every attribute of the answer as pyipp parsed it (capabilities are read from it)
    attributes: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def supports_create_job(self) -> bool:
        """True when Create-Job and Send-Document are both in operations-supported."""
        return {"Create-Job", "Send-Document"} <= self.operations


@dataclass(frozen=True)
class PrinterJobRef:
    """The printer job a Create-Job or Print-Job made: its job-id, and job-uuid if reported."""

    job_id: int
    uuid: str | None = None


#: operations-supported values in words, as pyipp's enum names every one it knows (CUPS's too).
_OPERATION_NAMES = {op.value: operation_name(op) for op in IppOperation}


def _status_name(code: int) -> str:
    """A status in pyipp's words (the outcome label of the request metric)."""
    try:
        return IppStatus(code).name.lower().replace("_", "-")
    except ValueError:
        return "unknown-status"


class IppClient:
    """One printer at ``uri`` (ipp://host:port/path), over the shared aiohttp ``session``.

    ``request_timeout_s`` bounds every request (seconds) except document
    uploads, which get ``upload_timeout_s``, and Get-Printer-Attributes, which gets
    ``probe_timeout_s`` (default: ``request_timeout_s``), as does Get-Job-Attributes: a
    printer that does not say how it is within that is shown as not answering (DESIGN §4),
    while the other requests about a job keep the longer bound.
    ``observe(operation, outcome, seconds)`` is called for every request, ``on_held()`` for
    each one the request budget held back (metrics).
    """

    def __init__(
        self,
        uri: str,
        session: aiohttp.ClientSession,
        *,
        request_timeout_s: float = 10.0,
        upload_timeout_s: float = 60.0,
        probe_timeout_s: float | None = None,
        observe: Observe | None = None,
        on_held: Callable[[], None] | None = None,
        probe_attributes: Sequence[str] = (),
    ) -> None:
        """``probe_attributes`` are asked for besides the printer's state, on every probe that
        describes the printer (:meth:`get_printer_attributes`)."""
        self.uri = uri
        self._probe_attributes = list(
            dict.fromkeys([*answers.PRINTER_ATTRIBUTES, *probe_attributes])
        )
        self._state_attributes = list(answers.PRINTER_ATTRIBUTES)
        self._session = session
        self._request_timeout_s = request_timeout_s
        self._upload_timeout_s = upload_timeout_s
        self._probe_timeout_s = request_timeout_s if probe_timeout_s is None else probe_timeout_s
        self._observe = observe
        parsed = URL(uri)
        scheme = "https" if parsed.scheme in ("ipps", "https") else "http"
        default_port = 631 if parsed.scheme in ("ipp", "ipps") else None
        self._url = parsed.with_scheme(scheme)
        #: The IPP version spoken; (1, 1) once the printer refused 2.0 (remembered).
        self.version: tuple[int, int] = (2, 0)
        #: Bounds the requests to this printer (transport.MAX_REQUESTS_PER_S).
        self.budget = transport.RequestBudget(on_held=on_held)
        #: ``ssl=`` of every request: the pinned certificate (printers.tls) for ipps://.
        self.ssl: aiohttp.Fingerprint | ssl.SSLContext | bool = True
        if parsed.explicit_port is None and default_port is not None:
            self._url = self._url.with_port(default_port)

    # --- transport and classification ---------------------------------------------

    def _encode(self, op: Operation, message: dict[str, Any]) -> bytes:
        operation_attributes = {
            "attributes-charset": "utf-8",
            "attributes-natural-language": "en",
            "printer-uri": self.uri,
            **message.get("operation-attributes-tag", {}),
        }
        request = {
            "version": self.version,
            "operation": op,
            "request-id": next(_request_ids),
            "operation-attributes-tag": operation_attributes,
        }
        if "job-attributes-tag" in message:
            request["job-attributes-tag"] = message["job-attributes-tag"]
        encoded: bytes = encode_ipp(request)
        return encoded

    async def _call(
        self,
        op: Operation,
        message: dict[str, Any],
        *,
        document: bytes | None = None,
        ok_not_found: bool = False,
        timeout_s: float | None = None,
    ) -> dict[str, Any] | None:
        """Send one request; the parsed answer, or None for not-found when allowed.

        A printer that answers ``server-error-version-not-supported`` to IPP/2.0
        has not acted on the request: it is sent again at IPP/1.1 at once, and
        the client speaks 1.1 to it from then on.
        """
        try:
            return await self._call_once(
                op, message, document=document, ok_not_found=ok_not_found, timeout_s=timeout_s
            )
        except errors.PrinterTransient as exc:
            if exc.status_code != Status.SERVER_ERROR_VERSION_NOT_SUPPORTED or self.version == (
                1,
                1,
            ):
                raise
        self.version = (1, 1)
        return await self._call_once(
            op, message, document=document, ok_not_found=ok_not_found, timeout_s=timeout_s
        )

    async def _call_once(
        self,
        op: Operation,
        message: dict[str, Any],
        *,
        document: bytes | None = None,
        ok_not_found: bool = False,
        timeout_s: float | None = None,
    ) -> dict[str, Any] | None:
        """One HTTP exchange: the parsed answer, or None for not-found when allowed.

        With a ``document``, the deadline is ``upload_timeout_s`` and an
        ambiguous failure says whether the whole body was handed to the
        connection (``errors.PrinterAmbiguous.body_sent``); ``timeout_s`` overrides
        the deadline of a request without one.
        """
        name = operation_name(op)
        await self.budget.take()
        started = time.perf_counter()
        outcome = "error"
        body = transport.TrackedBody(self._encode(op, message) + (document or b""))
        if document and faults.armed("during_send_document"):
            body.split_at = len(body._value) - len(document) // 2
        if document is not None:
            timeout_s = self._upload_timeout_s
        elif timeout_s is None:
            timeout_s = self._request_timeout_s
        try:
            try:
                async with asyncio.timeout(timeout_s):
                    async with self._session.post(
                        self._url,
                        data=body,
                        headers=_HEADERS,
                        allow_redirects=False,
                        ssl=self.ssl,
                    ) as resp:
                        raw = await resp.read()
                        http_status = resp.status
            except aiohttp.ServerFingerprintMismatch as exc:
                outcome = "certificate-changed"
                raise tls.certificate_changed(exc) from exc  # nothing was sent
            except TimeoutError as exc:
                outcome = "timeout"
                raise failures.transport_error(op, "no answer in time", exc, body.written) from exc
            except (aiohttp.ClientError, OSError) as exc:
                outcome = "unreachable"
                raise failures.transport_error(
                    op, str(exc) or type(exc).__name__, exc, body.written
                ) from exc
            if http_status == 426:
                outcome = "http-426"
                raise errors.PrinterNeedsTls(
                    name, "printer requires TLS (HTTP 426 Upgrade Required): use ipps://"
                )
            if http_status != 200:
                outcome = f"http-{http_status}"
                raise errors.PrinterAnswerError(
                    name, f"HTTP status {http_status}", http_status=http_status
                )
            try:
                parsed: dict[str, Any] = parse_ipp(raw)
                status = int(parsed["status-code"])
            except Exception as exc:  # struct.error, IndexError… from a malformed answer
                outcome = "bad-answer"
                raise errors.PrinterProtocolError(
                    name, f"answer is not valid IPP ({len(raw)} bytes)", head=raw[:32]
                ) from exc
            outcome = _status_name(status)
            if status < 0x0200:
                return parsed
            if ok_not_found and status in failures.NOT_FOUND:
                return None
            op_attrs = parsed.get("operation-attributes")
            said = str(op_attrs.get("status-message", "")) if isinstance(op_attrs, dict) else ""
            detail = f"{_status_name(status)}{': ' + said if said else ''}"
            raise failures.status_error(op, status, detail)
        finally:
            if self._observe is not None:
                self._observe(name, outcome, time.perf_counter() - started)

    # --- operations ------------------------------------------------------------------

    async def get_printer_attributes(self, *, describe: bool = True) -> PrinterStatus:
        """Get-Printer-Attributes (RFC 8011 §4.2.5): the printer's state, and with ``describe``
        the ``probe_attributes`` too; raises errors.PrinterTransient and kin."""
        wanted = self._probe_attributes if describe else self._state_attributes
        parsed = await self._call(
            Operation.GET_PRINTER_ATTRIBUTES,
            {"operation-attributes-tag": {"requested-attributes": wanted}},
            timeout_s=self._probe_timeout_s,
        )
        assert parsed is not None
        attrs: dict[str, Any] = parsed["printers"][0] if parsed["printers"] else {}
        copies = attrs.get("copies-supported")
        up = attrs.get("printer-up-time")
        changed = attrs.get("printer-config-change-time")
        return PrinterStatus(
            state=int(attrs.get("printer-state", 3)),
            reasons=tuple(
                str(r) for r in answers.as_list(attrs.get("printer-state-reasons")) if r != "none"
            ),
            message=str(attrs.get("printer-state-message", "")),
            queued_job_count=int(attrs.get("queued-job-count", 0)),
            operations=frozenset(
                _OPERATION_NAMES.get(int(o), str(o))
                for o in answers.as_list(attrs.get("operations-supported"))
            ),
            formats=frozenset(
                str(f) for f in answers.as_list(attrs.get("document-format-supported"))
            ),
            copies_supported=copies is not None and copies != [1, 1] and copies != 1,
            accepting_jobs=bool(attrs.get("printer-is-accepting-jobs", True)),
            up_time_s=int(up) if isinstance(up, int) else None,
            config_change_time=changed if isinstance(changed, int) else None,
            printer_uuid=answers.text(attrs.get("printer-uuid")),
            config_change_dt=answers.text(attrs.get("printer-config-change-date-time")),
            described=describe,
            attributes=attrs,
        )

    async def get_printer_description(self, names: Sequence[str]) -> dict[str, Any]:
        """Get-Printer-Attributes for ``names`` (e.g. printer-make-and-model, media-ready),
        as parsed: one value a scalar, several a list. For read-only callers (discovery)."""
        parsed = await self._call(
            Operation.GET_PRINTER_ATTRIBUTES,
            {"operation-attributes-tag": {"requested-attributes": list(names)}},
        )
        assert parsed is not None
        return dict(parsed["printers"][0]) if parsed["printers"] else {}

    def _job_attributes(self, copies: int | None) -> dict[str, Any]:
        return {"job-attributes-tag": {"copies": copies}} if copies and copies > 1 else {}

    async def create_job(
        self, job_name: str, user: str, *, copies: int | None = None
    ) -> PrinterJobRef:
        """Create-Job (RFC 8011 §4.2.4); the printer's job-id (and job-uuid, if it says).

        Raises errors.PrinterAmbiguous (it may exist), errors.PrinterBusy,
        errors.PrinterPermanent, errors.PrinterTransient.
        """
        message: dict[str, Any] = {
            "operation-attributes-tag": {"requesting-user-name": user, "job-name": job_name},
            **self._job_attributes(copies),
        }
        parsed = await self._call(Operation.CREATE_JOB, message)
        return self._job_ref(Operation.CREATE_JOB, parsed)

    async def send_document(
        self, job_id: int, user: str, data: bytes, document_format: str
    ) -> None:
        """Send-Document with last-document=true (RFC 8011 §4.3.1); the whole upload is bounded.

        Raises errors.PrinterAmbiguous (the printer may have all or part of it),
        errors.PrinterPermanent, errors.PrinterUnreachable, errors.PrinterTransient.
        """
        message = {
            "operation-attributes-tag": {
                "job-id": job_id,
                "requesting-user-name": user,
                "document-format": document_format,
                "last-document": True,
            }
        }
        await self._call(Operation.SEND_DOCUMENT, message, document=data)

    async def print_job(
        self,
        job_name: str,
        user: str,
        data: bytes,
        document_format: str,
        *,
        copies: int | None = None,
    ) -> PrinterJobRef:
        """Print-Job (RFC 8011 §4.2.1), for printers without Create-Job; the job-id (and uuid)."""
        message: dict[str, Any] = {
            "operation-attributes-tag": {
                "requesting-user-name": user,
                "job-name": job_name,
                "document-format": document_format,
            },
            **self._job_attributes(copies),
        }
        parsed = await self._call(Operation.PRINT_JOB, message, document=data)
        return self._job_ref(Operation.PRINT_JOB, parsed)

    async def get_job_attributes(self, job_id: int) -> PrinterJob | None:
        """Get-Job-Attributes (RFC 8011 §4.3.4); None when the printer does not know the job-id."""
        parsed = await self._call(
            Operation.GET_JOB_ATTRIBUTES,
            {
                "operation-attributes-tag": {
                    "job-id": job_id,
                    "requested-attributes": answers.JOB_ATTRIBUTES,
                }
            },
            ok_not_found=True,
            # one job's attributes: as small a status read as a probe, so a printer that hangs
            # while it holds a job is seen within the probe's bound (Get-Jobs, a list that
            # may be long, keeps the request bound)
            timeout_s=self._probe_timeout_s,
        )
        if parsed is None or not parsed["jobs"]:
            return None
        return answers.printer_job(parsed["jobs"][0])

    async def get_jobs(self, which: str = "all") -> tuple[list[PrinterJob], Listing]:
        """Get-Jobs (RFC 8011 §4.2.6) with the job attributes edgeprint reads.

        The listing says what the list covers: with ``which = "all"``, every job the
        printer keeps — unless it answered successful-ok-ignored-or-substituted-attributes
        naming ``which-jobs`` (RFC 8011 §4.1.7), when it listed its default, the jobs
        not yet finished (RFC 8011 §4.2.6.1).
        """
        parsed = await self._call(
            Operation.GET_JOBS,
            {
                "operation-attributes-tag": {
                    "which-jobs": which,
                    "requested-attributes": answers.JOB_ATTRIBUTES,
                }
            },
        )
        assert parsed is not None
        jobs = [answers.printer_job(j) for j in parsed["jobs"]]
        ignored = any("which-jobs" in group for group in parsed.get("unsupported-attributes", []))
        return jobs, Listing.LIVE if (which != "all" or ignored) else Listing.ALL

    async def cancel_job(self, job_id: int) -> bool:
        """Cancel-Job (RFC 8011 §4.3.3); False when the job is unknown or already finished."""
        try:
            parsed = await self._call(
                Operation.CANCEL_JOB,
                {"operation-attributes-tag": {"job-id": job_id}},
                ok_not_found=True,
            )
        except errors.PrinterTransient as exc:
            if exc.status_code == Status.CLIENT_ERROR_NOT_POSSIBLE:
                return False
            raise
        return parsed is not None

    @staticmethod
    def _job_ref(op: Operation, parsed: dict[str, Any] | None) -> PrinterJobRef:
        assert parsed is not None
        op_attrs = parsed.get("operation-attributes")
        groups = (*parsed["jobs"], op_attrs if isinstance(op_attrs, dict) else {})
        for group in groups:
            if "job-id" in group:
                return PrinterJobRef(int(group["job-id"]), answers.text(group.get("job-uuid")))
        raise errors.PrinterProtocolError(operation_name(op), "the answer has no job-id")

    async def identify(self, user: str) -> None:
        """Identify-Printer (PWG 5100.13 §6.1.1) with the printer's default identify-actions.

        Raises errors.PrinterTransient and kin (Identify-Printer changes nothing
        that matters if sent twice).
        """
        await self._call(
            Operation.IDENTIFY_PRINTER,
            {"operation-attributes-tag": {"requesting-user-name": user}},
        )
