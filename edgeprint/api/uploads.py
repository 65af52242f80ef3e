"""Streaming ``multipart/form-data`` parser for ``POST /v1/jobs``.

Limits are enforced while streaming (aiohttp's ``client_max_size`` does not
cover multipart streaming): the document goes straight into the spool's
staging file and the request is refused as soon as it passes its limit.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import aiohttp
from aiohttp import BodyPartReader, web
from aiohttp.http_exceptions import HttpProcessingError
from pydantic import ValidationError

from edgeprint import errors
from edgeprint.models import PATTERN_HINTS, SubmitMetadata
from edgeprint.spool import StagedDocument

_CHUNK = 64 * 1024
_PDF_TYPES = {"application/pdf", "application/octet-stream", "application/x-pdf"}
#: issue 23 (zpl): a label in Zebra's language, declared as such (never guessed).
ZPL = "application/vnd.zebra-zpl"
#: multipart framing, part headers and the metadata part fit in this much extra.
_FRAMING_BYTES = 64 * 1024
#: A problem's ``detail`` names at most this many invalid fields (all are in ``errors``).
_DETAIL_FIELDS = 5
_LOC_CHARS = 80
#: A duplicate JSON key is shown in a problem's ``detail`` up to this many characters.
_KEY_CHARS = 40
# aiohttp reports a malformed Content-Disposition with a *warning* and carries on as if
# the part had no name (the warning would reach stderr unstructured). Raised instead, it
# becomes a clear 400 below.
_BAD_DISPOSITION = (
    aiohttp.multipart.BadContentDispositionHeader,
    aiohttp.multipart.BadContentDispositionParam,
)
for _category in _BAD_DISPOSITION:
    warnings.filterwarnings("error", category=_category)


@dataclass
class Upload:
    """A parsed submission: validated metadata and the staged (not yet durable) document."""

    metadata: SubmitMetadata
    document: StagedDocument
    #: ``application/pdf``, or ``application/vnd.zebra-zpl`` (the document part's type).
    document_format: str = "application/pdf"


def validation_problems(exc: ValidationError, prefix: str) -> list[errors.FieldProblem]:
    """Pydantic errors as dotted ``loc`` + message pairs (no bare regexes in messages)."""
    out = []
    for err in exc.errors():
        loc = ".".join([prefix, *(str(p) for p in err["loc"])])
        msg = str(err["msg"])
        if err["type"] == "extra_forbidden":
            msg = "unknown field"
        elif err["type"] == "string_pattern_mismatch":
            msg = PATTERN_HINTS.get(str(err.get("ctx", {}).get("pattern")), msg)
        out.append(errors.FieldProblem(loc[:_LOC_CHARS], msg.removeprefix("Value error, ")))
    return out


def invalid(what: str, problems: list[errors.FieldProblem], prefix: str) -> errors.InvalidRequest:
    """An InvalidRequest whose ``detail`` itself names the first few bad fields and why.

    A model-level problem (``loc`` is just ``prefix``) is shown without its ``loc``.
    """
    shown = [p.message if p.loc == prefix else f"{p.loc}: {p.message}" for p in problems]
    more = len(shown) - _DETAIL_FIELDS
    summary = "; ".join(shown[:_DETAIL_FIELDS]) + (f"; and {more} more" if more > 0 else "")
    return errors.InvalidRequest(f"{what}: {summary}", problems)


class _DuplicateKey(Exception):
    def __init__(self, key: str) -> None:
        self.key = key


def _unique_pairs(pairs: list[tuple[str, object]]) -> dict[str, object]:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(key)
            seen.add(key)
    return out


def duplicate_key(raw: bytes | bytearray) -> str | None:
    """The first key that appears twice in one object of the JSON ``raw`` (None: no such key).

    pydantic (like most JSON parsers) keeps the last of duplicate keys, so
    ``{"owner": "alice", "owner": "bob"}`` would be a job for bob while a proxy or a log
    reader may see alice. Neither pydantic nor pydantic-core can refuse them, so the
    standard library's parser looks first (a few µs for a metadata part). Whatever it
    cannot parse is left to pydantic, whose verdict on invalid JSON stands.
    """
    try:
        json.loads(raw.decode("utf-8"), object_pairs_hook=_unique_pairs)
    except _DuplicateKey as dup:
        return dup.key
    except (ValueError, RecursionError):  # not JSON (or too deep): pydantic says so
        return None
    return None


def duplicate_key_problem(key: str, where: str) -> errors.MalformedRequest:
    """The 400 for a duplicate key (the key is cut short: it is the client's text)."""
    shown = key if len(key) <= _KEY_CHARS else key[:_KEY_CHARS] + "…"
    return errors.MalformedRequest(f"duplicate key {shown!r} in {where}", slug="malformed-json")


def parse_metadata(raw: bytes) -> SubmitMetadata:
    """Validate the metadata JSON; raises errors.MalformedRequest (not JSON, a key given
    twice) or InvalidRequest."""
    if (key := duplicate_key(raw)) is not None:
        raise duplicate_key_problem(key, "the metadata part")
    try:
        return SubmitMetadata.model_validate_json(raw)
    except ValidationError as exc:
        if any(e["type"] == "json_invalid" for e in exc.errors()):
            raise errors.MalformedRequest(
                "the metadata part is not valid JSON", slug="malformed-json"
            ) from None
        if any(e["type"] == "model_type" and not e["loc"] for e in exc.errors()):
            raise errors.InvalidRequest(
                "the metadata part must be a JSON object",
                [errors.FieldProblem("metadata", "expected a JSON object")],
            ) from None
        problems = validation_problems(exc, "metadata")
        raise invalid("invalid metadata", problems, "metadata") from None


async def _read_metadata(part: BodyPartReader, limit: int) -> bytes:
    buf = bytearray()
    while chunk := await part.read_chunk(_CHUNK):
        buf += chunk
        if len(buf) > limit:
            raise errors.PayloadTooLarge("the metadata part", limit)
    return bytes(buf)


def document_format(part: BodyPartReader) -> str:
    """The format the document part declares: ``application/pdf`` (also for
    ``application/octet-stream`` and ``application/x-pdf``, or no Content-Type) or ZPL.

    Raises errors.UnsupportedDocument (415) for any other type.
    """
    ctype = part.headers.get(aiohttp.hdrs.CONTENT_TYPE, "application/pdf")
    media = ctype.split(";", 1)[0].strip().lower()
    if media == ZPL:
        return ZPL
    if media not in _PDF_TYPES:
        raise errors.UnsupportedDocument(
            f"the document part has Content-Type {media[:_LOC_CHARS]!r}; send application/pdf "
            f"(or {ZPL} for a label in Zebra's language)"
        )
    return "application/pdf"


async def _read_document(
    part: BodyPartReader, stage: Callable[[], StagedDocument], limit: int
) -> StagedDocument:
    staged = stage()
    with staged.filling():  # discarded on any error; the caller commits it
        while chunk := await part.read_chunk(_CHUNK):
            if staged.size + len(chunk) > limit:
                raise errors.PayloadTooLarge("the document", limit)
            staged.write(chunk)
    return staged


async def read_upload(
    request: web.Request,
    stage: Callable[[], StagedDocument],
    *,
    max_document_bytes: int,
    max_metadata_bytes: int,
) -> Upload:
    """Parse the submission body into metadata and a staged document.

    Raises errors.MalformedRequest (400: not multipart, truncated, duplicate
    part), errors.PayloadTooLarge (413), errors.UnsupportedDocument (415),
    errors.InvalidRequest (422: missing/unknown parts, bad metadata). On any
    error the staged document is discarded: nothing is left behind.
    """
    if request.content_type != "multipart/form-data":
        raise errors.UnsupportedDocument(
            "send multipart/form-data with a 'metadata' (JSON) and a 'document' (PDF) part"
        )
    limit_total = max_document_bytes + max_metadata_bytes + _FRAMING_BYTES
    if request.content_length is not None and request.content_length > limit_total:
        raise errors.PayloadTooLarge(
            f"the request body ({request.content_length} bytes; a document may have at most "
            f"{max_document_bytes} bytes)",
            limit_total,
        )
    raw_meta: bytes | None = None
    staged: StagedDocument | None = None
    fmt = "application/pdf"
    with contextlib.ExitStack() as on_error:  # the staged document, until it is returned
        try:
            reader = await request.multipart()
            while (part := await reader.next()) is not None:
                if not isinstance(part, BodyPartReader):
                    raise errors.MalformedRequest("nested multipart bodies are not accepted")
                name = part.name
                if name == "metadata":
                    if raw_meta is not None:
                        raise errors.MalformedRequest("more than one 'metadata' part")
                    raw_meta = await _read_metadata(part, max_metadata_bytes)
                elif name == "document":
                    if staged is not None:
                        raise errors.MalformedRequest("more than one 'document' part")
                    fmt = document_format(part)
                    staged = on_error.enter_context(
                        await _read_document(part, stage, max_document_bytes)
                    )
                elif name is None:
                    raise errors.InvalidRequest(
                        "a part has no name; give each part a Content-Disposition header "
                        "'form-data; name=\"metadata\"' or 'form-data; name=\"document\"'",
                        [errors.FieldProblem("(unnamed part)", "unknown part")],
                    )
                else:
                    raise errors.InvalidRequest(
                        f"unexpected part {name[:_LOC_CHARS]!r}; only 'metadata' and 'document' "
                        "are accepted",
                        [errors.FieldProblem(name[:_LOC_CHARS], "unknown part")],
                    )
        except _BAD_DISPOSITION as exc:
            raise errors.MalformedRequest(
                "a part has a malformed Content-Disposition header; send "
                "'form-data; name=\"metadata\"' or 'form-data; name=\"document\"'"
            ) from exc
        except HttpProcessingError as exc:  # e.g. LineTooLong: a part header past the limit
            raise errors.MalformedRequest(
                "malformed or truncated multipart body: a part header is too long or malformed "
                f"({type(exc).__name__})"
            ) from exc
        except (
            ValueError,
            AssertionError,
            asyncio.IncompleteReadError,
            aiohttp.ClientError,
            ConnectionError,
        ) as exc:
            raise errors.MalformedRequest(f"malformed or truncated multipart body: {exc}") from exc
        missing = [n for n, v in (("metadata", raw_meta), ("document", staged)) if v is None]
        if missing:
            raise errors.InvalidRequest(
                f"missing part(s): {', '.join(missing)}",
                [errors.FieldProblem(n, "required part") for n in missing],
            )
        assert raw_meta is not None
        assert staged is not None
        upload = Upload(parse_metadata(raw_meta), staged, fmt)
        on_error.pop_all()  # the caller's now
        return upload
