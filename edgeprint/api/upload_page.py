"""``GET /upload`` and ``POST /upload``: print from any browser (issue 24, ``web_upload``).

A plain HTML form, rendered here (every value escaped), that works without script on
any phone or borrowed laptop: a name, a printer or pool of the configured ones, a PDF.
The answer is a page too: "Your PIN is 482193 — release it at the printer", with the
job's number and a link to its printer's release page (the job in the fragment, never
the PIN), or what was wrong in plain words (no field paths, library names or content
types: a student reads it), with the form again. A tiny script (allowed by its hash, like
the style; nothing else may load or run) only greys the button while the file goes up.

The door has no token, so it is guarded otherwise: off unless ``[release]
web_upload`` (404); only from ``[ipp] allowed_networks`` (403, as the IPP queues);
``[release] upload_rate_limit`` uploads per client address (429 with Retry-After,
counted before the body is read); and the job goes through
:meth:`edgeprint.service.JobService.submit` with the same document checks and limits
as ``POST /v1/jobs`` (the document is streamed to the spool's staging file and
refused past ``[server] max_document_bytes``). The hidden one-time form key makes a
double tap one job (:mod:`edgeprint.service.web_uploads`).
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import ipaddress
from dataclasses import dataclass
from urllib.parse import quote

import aiohttp
from aiohttp import BodyPartReader, web
from aiohttp.http_exceptions import HttpProcessingError
from pydantic import ValidationError

from edgeprint import errors
from edgeprint.api import audited, peers, problems
from edgeprint.api.app import CORRELATION_ID, Deps, deps_of
from edgeprint.api.pages import content_security_policy, html_response, page_headers
from edgeprint.api.ratelimit import TokenRateLimiter
from edgeprint.api.uploads import _read_document, document_format, validation_problems
from edgeprint.models import SubmitMetadata
from edgeprint.service import JobRecord
from edgeprint.service.web_uploads import WebUploads, is_form_key, new_form_key
from edgeprint.spool import StagedDocument
from edgeprint.titles import file_title

#: A text field of the form (name, target, form key) is at most this long.
_FIELD_BYTES = 1024
#: The job number shown: the id's first characters, as the release page shows it (and
#: the release page's PIN path takes it back).
JOB_NUMBER_CHARS = 6

STYLE = """
*{box-sizing:border-box}
body{margin:0;font:17px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;
color:#1b1b1b;background:#f4f5f7}
main{max-width:34rem;margin:0 auto;padding:1rem}
h1{font-size:1.4rem;margin:.2rem 0 1rem}
label{display:block;font-weight:600;margin:1rem 0 .3rem}
input[type=text],select{width:100%;font:inherit;padding:.6rem;border:1px solid #767676;
border-radius:6px;background:#fff;color:#1b1b1b}
input[type=file]{width:100%;font:inherit;padding:.4rem 0}
button{margin-top:1.3rem;width:100%;font:inherit;font-weight:700;padding:.8rem;border:0;
border-radius:6px;background:#0b5394;color:#fff}
button:disabled{background:#5b5b5b}
.hint{color:#4a4a4a;font-size:.92rem;margin:.2rem 0 0}
.problem{border-left:5px solid #b00020;background:#fff;padding:.7rem .9rem;margin:0 0 1rem}
.done{border-left:5px solid #1e7d32;background:#fff;padding:.9rem;margin:0 0 1rem}
.pin{font-size:2.4rem;font-weight:800;letter-spacing:.18em;margin:.3rem 0;
font-variant-numeric:tabular-nums}
a{color:#0b5394}
"""

SCRIPT = """
document.getElementById("upload").addEventListener("submit", function () {
  var b = document.getElementById("send");
  b.disabled = true;
  b.textContent = "Uploading\\u2026";
});
"""


#: Only this module's style and script (by hash); the form posts only to this appliance.
CONTENT_SECURITY_POLICY = content_security_policy(
    SCRIPT, STYLE, "form-action 'self'", "base-uri 'none'"
)
_HEADERS = page_headers(CONTENT_SECURITY_POLICY)


class UploadDoor:
    """The page's state in one appliance (set by ``factory.build_app``): the PINs' secret and
    the uploads counted per client address against ``[release] upload_rate_limit``."""

    def __init__(self, deps: Deps) -> None:
        self._deps = deps
        self._uploads: WebUploads | None = None
        self._limiter: TokenRateLimiter | None = None

    @property
    def uploads(self) -> WebUploads:
        if self._uploads is None:  # made at first use: the service is there by then
            self._uploads = WebUploads(self._deps.service)
        return self._uploads

    async def hit(self, address: str) -> None:
        """Count one upload from ``address``; raises errors.RateLimited when over."""
        spec = self._deps.config.release.upload_rate_limit
        if self._limiter is None:
            self._limiter = TokenRateLimiter(spec)
        elif self._limiter.spec != spec:  # a reload changed it
            self._limiter.reconfigure(spec)
        await self._limiter.hit(f"addr:{address}")


DOOR = web.AppKey("upload_door", UploadDoor)


def _allowed(request: web.Request) -> bool:
    """The client's address is in ``[ipp] allowed_networks`` (as for the IPP queues)."""
    networks = deps_of(request).config.ipp.allowed_networks
    return peers.in_networks(
        request.remote, (ipaddress.ip_network(n, strict=False) for n in networks)
    )


def _guard(request: web.Request) -> None:
    if not deps_of(request).config.release.web_upload:
        raise web.HTTPNotFound()


# --- the pages ---------------------------------------------------------------------------


def _page(title: str, body: str, status: int = 200, **headers: str) -> web.Response:
    doc = (
        '<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width,initial-scale=1">\n'
        f"<title>{html.escape(title)}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n"
        f"<main>\n{body}\n</main>\n<script>{SCRIPT}</script>\n</body>\n</html>\n"
    )
    return html_response(doc.encode(), {**_HEADERS, **headers}, status)


def _targets(request: web.Request) -> list[tuple[str, str]]:
    """(value, label) of every printer and pool a person may pick."""
    config = deps_of(request).config
    out = [
        (f"pool:{name}", f"{name}: the first free of {len(members)} printers")
        for name, members in config.pools.items()
    ]
    out += [(f"printer:{p.name}", p.name) for p in config.printers]
    return out


def _form(request: web.Request, owner: str = "", target: str = "") -> str:
    """The upload form with a fresh one-time key (a problem page offers a new try)."""
    max_mb = deps_of(request).config.server.max_document_bytes / (1 << 20)
    options = "".join(
        f'<option value="{html.escape(value)}"{" selected" if value == target else ""}>'
        f"{html.escape(label)}</option>"
        for value, label in _targets(request)
    )
    return (
        '<form id="upload" method="post" action="/upload" enctype="multipart/form-data">\n'
        f'<input type="hidden" name="form_key" value="{new_form_key()}">\n'
        '<label for="owner">Your name</label>\n'
        f'<input type="text" id="owner" name="owner" required maxlength="128" '
        f'autocomplete="name" value="{html.escape(owner)}">\n'
        '<p class="hint">The job is kept under this name.</p>\n'
        '<label for="target">Printer</label>\n'
        f'<select id="target" name="target" required>{options}</select>\n'
        '<label for="document">PDF file</label>\n'
        '<input type="file" id="document" name="document" required '
        'accept="application/pdf,.pdf">\n'
        f'<p class="hint">A PDF of at most {max_mb:.3g} MB.</p>\n'
        '<button type="submit" id="send">Upload</button>\n</form>'
    )


async def upload_form(request: web.Request) -> web.Response:
    """GET /upload: the form (404 unless ``[release] web_upload``; 403 off the networks)."""
    _guard(request)
    if not _allowed(request):
        return _refused(403, _NOT_HERE)
    return _page("Print a PDF", "<h1>Print a PDF</h1>\n" + _form(request))


def _refused(
    status: int,
    words: str,
    request: web.Request | None = None,
    owner: str = "",
    target: str = "",
    headers: dict[str, str] | None = None,
) -> web.Response:
    """A problem in words, and (with ``request``) the form again with a new key."""
    body = f'<h1>Not uploaded</h1>\n<p class="problem" role="alert">{html.escape(words)}</p>\n'
    if request is not None:
        body += _form(request, owner, target)
    else:
        body += '<p><a href="/upload">Try again</a></p>'
    return _page("Not uploaded", body, status, **(headers or {}))


# --- the upload --------------------------------------------------------------------------


@dataclass
class _Fields:
    owner: str = ""
    target: str = ""
    form_key: str = ""
    document: StagedDocument | None = None
    title: str | None = None  # the uploaded file's name, cleaned


async def _read_field(part: BodyPartReader) -> str:
    raw = bytearray()
    while chunk := await part.read_chunk(_FIELD_BYTES + 1):
        raw += chunk
        if len(raw) > _FIELD_BYTES:
            raise errors.PayloadTooLarge(f"the form field {part.name!r}", _FIELD_BYTES)
    try:
        return raw.decode("utf-8").strip()
    except UnicodeDecodeError:
        raise errors.MalformedRequest(f"the form field {part.name!r} is not UTF-8") from None


async def _read_form(request: web.Request, fields: _Fields) -> None:
    """Fill ``fields`` from the form, the document staged (discarded here on any error; the
    fields read so far stay, to fill the form again)."""
    if request.content_type != "multipart/form-data":
        raise errors.UnsupportedDocument("send the upload form (multipart/form-data)")
    server = deps_of(request).config.server
    service = deps_of(request).service
    with contextlib.ExitStack() as on_error:  # the staged document, until the form is read
        try:
            reader = await request.multipart()
            while (part := await reader.next()) is not None:
                if not isinstance(part, BodyPartReader):
                    raise errors.MalformedRequest("nested multipart bodies are not accepted")
                if part.name == "document" and not part.filename and fields.document is None:
                    await part.release()  # no file chosen: the browser sends an empty part
                elif part.name == "document":
                    if fields.document is not None:
                        raise errors.MalformedRequest("more than one file")
                    if document_format(part) != "application/pdf":
                        raise errors.UnsupportedDocument("a ZPL label, not a PDF")
                    fields.title = file_title(part.filename)
                    fields.document = on_error.enter_context(
                        await _read_document(
                            part, service.documents.stage_document, server.max_document_bytes
                        )
                    )
                elif part.name in ("owner", "target", "form_key"):
                    setattr(fields, part.name, await _read_field(part))
                else:
                    raise errors.InvalidRequest(
                        "unexpected form field",
                        [errors.FieldProblem(str(part.name)[:40], "unknown field")],
                    )
        except (
            ValueError,
            AssertionError,
            asyncio.IncompleteReadError,
            aiohttp.ClientError,
            ConnectionError,
            HttpProcessingError,
        ) as exc:
            fields.document = None
            raise errors.MalformedRequest(f"malformed or truncated form: {exc}") from exc
        except BaseException:
            fields.document = None
            raise
        on_error.pop_all()  # read whole: upload_submit's now


def _meta(fields: _Fields, pin: str) -> SubmitMetadata:
    kind, _, name = fields.target.partition(":")
    target = {"printer": name} if kind == "printer" else {"pool": name} if kind == "pool" else {}
    if not target:
        raise errors.InvalidRequest(
            "choose a printer",
            [errors.FieldProblem("form.target", "a printer or pool of the list")],
        )
    try:
        return SubmitMetadata.model_validate(
            {
                "owner": fields.owner,
                "hold": True,
                "release_pin": pin,
                "title": fields.title,
                **target,
            }
        )
    except ValidationError as exc:
        raise errors.InvalidRequest("invalid form", validation_problems(exc, "form")) from None


#: The sentence for a form field that is wrong (a field the page does not know: the last).
_FIELD_WORDS = {
    "form.owner": "Type your name (at most 128 letters).",
    "form.document": "Choose a PDF file.",
    "form.target": "Pick a printer.",
    "form.printer": "Pick a printer.",
    "form.pool": "Pick a printer.",
}
_NOT_HERE = "Uploads are not taken from your network. Ask at the desk."
_UNREADABLE = "That PDF could not be read. Save it again and try again."
_DOCUMENT_WORDS = {
    "document-unreadable": _UNREADABLE,
    "document-encrypted": "That PDF is locked with a password. Save it without one and try again.",
    "too-many-pages": "That PDF has too many pages to print here.",
    "no-media-fits": "That PDF's pages are larger than the paper in this printer. Pick "
    "another printer, or ask at the desk.",
}


def _field_words(problem: errors.FieldProblem, owner: str) -> str:
    if problem.loc == "form.owner" and not owner:
        return "Type your name."
    return _FIELD_WORDS.get(problem.loc, "Check the form and try again.")


def _words(exc: errors.EdgeprintError, owner: str = "") -> str:
    """What went wrong, for a person at a phone: plain words, never a field path, a
    library's message or a content type (the technician's log has those)."""
    match exc:
        case errors.UnsupportedDocument():
            return "That file is not a PDF. Save it as PDF and try again."
        case errors.PayloadTooLarge() if exc.what.startswith("the form field"):
            return "Something typed in the form is too long. Make it shorter and try again."
        case errors.PayloadTooLarge():
            return f"That file is too large: at most {exc.limit_bytes / (1 << 20):.3g} MB."
        case errors.IdempotencyKeyReused():
            return (
                "This form was already used to upload a file (its PIN was shown then). "
                "To upload again, use the new form below."
            )
        case errors.UnknownTarget():
            return "That printer is not here any more. Pick a printer from the list."
        case errors.InvalidRequest() if exc.errors:
            return " ".join(dict.fromkeys(_field_words(p, owner) for p in exc.errors))
        case errors.DocumentRejected() | errors.DocumentUnprintable():
            return _DOCUMENT_WORDS.get(
                exc.slug, "That PDF cannot be printed here. Save it again, or ask at the desk."
            )
        case errors.InvalidRequest():
            return "That PDF cannot be printed here. Save it again, or ask at the desk."
        case errors.MalformedRequest() if "form is damaged" in exc.detail:
            return "The form is out of date: reload the page and try again."
        case errors.MalformedRequest():
            return "The upload did not arrive whole. Try again."
        case errors.RateLimited():
            return f"Too many uploads from your address. Try again in {exc.retry_after_s} seconds."
        case errors.BodyTimeout():
            return "The file took too long to arrive: try again on a better connection."
        case errors.Backpressure() | errors.StoreError():
            return "The print server cannot take it right now: try again in a minute."
        case _:
            return "The upload did not work. Try again, or ask at the desk."


def _done(job: JobRecord, pin: str) -> str:
    """The answer's body: the PIN, the job's number as the release page shows it, and a
    link to the release page of its printer or pool with the job filled in (the job in
    the fragment, which the browser never sends; never the PIN)."""
    place = job.printer or job.pool or ""
    where = job.printer or f"any printer in {job.pool}"
    pages = f"{job.document_pages} page(s)" if job.document_pages else "your PDF"
    number = job.id[:JOB_NUMBER_CHARS]
    link = f"/release/{quote(place, safe='')}#job={job.id}"
    return (
        "<h1>Uploaded</h1>\n"
        f'<div class="done" role="status" data-job="{html.escape(job.id)}">\n'
        f'<p>Your PIN is</p>\n<p class="pin" id="pin">{pin}</p>\n'
        f'<p>Job number <strong id="job-number">{html.escape(number)}</strong></p>\n'
        f"<p>Release it at the printer: {html.escape(where)}. It is kept for "
        f"{html.escape(job.owner)}, {pages}; nobody can print it without this PIN.</p>\n"
        "<p>This is the only time the PIN is shown: note it now.</p>\n</div>\n"
        f'<p><a id="release-link" href="{html.escape(link)}">Print it now at '
        f"{html.escape(place)}</a> (type the PIN there)</p>\n"
        '<p><a href="/upload">Upload another PDF</a></p>'
    )


async def upload_submit(request: web.Request) -> web.Response:
    """POST /upload: the form's answer page (201 with the PIN; a problem in words)."""
    _guard(request)
    if not _allowed(request):
        return _refused(403, _NOT_HERE)
    door = request.app[DOOR]
    try:
        await door.hit(str(request.remote))
    except errors.RateLimited as exc:
        deps_of(request).metrics.rate_limited.inc()
        return _refused(429, _words(exc), headers={"Retry-After": str(exc.retry_after_s)})
    fields = _Fields()
    try:
        timeout_s = deps_of(request).config.server.body_timeout_s
        try:
            async with asyncio.timeout(timeout_s):
                await _read_form(request, fields)
        except TimeoutError:
            raise errors.BodyTimeout(timeout_s) from None
        if fields.document is None:
            raise errors.InvalidRequest(
                "no file", [errors.FieldProblem("form.document", "choose a PDF file")]
            )
        with fields.document as staged:  # discarded unless the job takes it
            if not is_form_key(fields.form_key):
                raise errors.MalformedRequest("the form is damaged: reload the page")
            pin = door.uploads.pin_for(fields.form_key)
            meta = _meta(fields, pin)
            result = await door.uploads.submit(
                meta, staged, fields.form_key, request.get(CORRELATION_ID)
            )
    except errors.EdgeprintError as exc:
        audited.note(request).actor = fields.owner or None  # the audit row's who
        answer = problems.from_error(exc)  # the status (and Retry-After) /v1/jobs would give
        retry = answer.headers.get("Retry-After")
        return _refused(
            answer.status,
            _words(exc, fields.owner),
            request,
            fields.owner,
            fields.target,
            {"Retry-After": retry} if retry else None,
        )
    found = audited.note(request)  # the audit row: who uploaded what (never the PIN)
    found.actor, found.target = meta.owner, result.job.id
    return _page("Your PIN", _done(result.job, pin), 201 if result.created else 200)
