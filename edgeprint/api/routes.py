"""The route table: every route's path, method, handler, role and OpenAPI description, once.

:data:`ROUTES` drives the three things that used to be written twice: the
routes :func:`build_app` registers, the role each one checks before its handler
runs (``None``: no token), and the OpenAPI document (:mod:`edgeprint.api.openapi`
reads the same rows).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

from aiohttp import web

from edgeprint.api import (
    app,
    audit,
    audited,
    bulk,
    desk,
    event,
    ipp,
    openapi,
    plain_http,
    previews,
    release,
    release_page,
    status_page,
    stickers,
    tls_info,
    tokens,
    upload_page,
)  # fmt: skip
from edgeprint.api.openapi import PATH, Answer, Body, Handler, Operation, Role
from edgeprint.ipp_server.attributes import ICON_SIZES
from edgeprint.models import (
    MAX_BULK,
    ApplianceTlsOut,
    AuditOut,
    BulkOut,
    DeadLetterOut,
    DrainOut,
    EventOut,
    Health,
    IdentifyOut,
    JobListOut,
    JobOut,
    JobStoryOut,
    MediaLoadedOut,
    OwnerCredentialsOut,
    PrinterCheckOut,
    PrinterOut,
    PrintersOut,
    Problem,
    ReleaseLookupOut,
    ReleasePrintOut,
    StatsOut,
    TokenOut,
    TokensOut,
    WebhookDeliveriesOut,
)
from edgeprint.service.release_desk import ReleaseDesk

# --- answers shared by many operations --------------------------------------------------


def _problem(description: str, *headers: str) -> Answer:
    return Answer(description, Problem, headers=headers)


_401 = _problem(
    "`unauthorized`: no, malformed or unknown bearer token, or one past its `expires`",
    "WWW-Authenticate",
)
_403_TECH = _problem("`forbidden`: the token's role is not `tech`")
_403_ACT = _problem("`forbidden`: the token's role may not act (a viewer or a station token)")
_404_JOB = _problem("`job-not-found` (also for an id that is not 32 lowercase hex characters)")
_404_PRINTER = _problem("`printer-not-found`")
_409 = _problem("`state-conflict`: the action does not apply to the job's state; `state` names it")
_429 = _problem("`rate-limited`: too many requests for this token", "Retry-After")
_503_STORE = _problem("`store-unavailable`: the job store cannot work now", "Retry-After")
_503_WRITE = _problem(
    "`queue-full` (the printer's and its pool's queues are at their high-water mark; nothing "
    "stored) or `store-unavailable`",
    "Retry-After",
)
_507 = _problem("`storage-full`: the appliance's disk is full; nothing was stored")
_AUTH = {401: _401, 429: _429}
_JSON_BODY = {
    400: _problem("`malformed-json`: the body is not JSON"),
    408: _problem("`request-timeout`: the body did not arrive within the time limit"),
    413: _problem("`payload-too-large`: the body is over 64 KiB"),
    415: _problem("`unsupported-media-type`: a body that is not application/json"),
}
#: The release page's calls: no token, or a station's (only at its printers).
_AT_PLACE = {
    **_JSON_BODY,
    401: _problem(
        "`unauthorized`: a bearer token was sent and it is unknown or malformed", "WWW-Authenticate"
    ),
    403: _problem(
        "`credential-invalid`: the code, card or PIN opens nothing (the same answer whether "
        "or not such an owner or job exists); `forbidden`: a station token used at a printer "
        "or pool it is not set up for, or a viewer token (it only reads)"
    ),
    404: _404_PRINTER,
    423: _problem("`release-locked`: the job's release is locked after wrong PINs", "Retry-After"),
    429: _problem(
        "`release-locked`: too many wrong credentials from this address; `rate-limited`: too "
        "many requests from this address (or station token)",
        "Retry-After",
    ),
    503: _503_STORE,
    507: _507,
}
_AT_PLACE_NOTE = (
    " No token is needed (the code is the credential); a `station` token may be sent and "
    "then only works at the printers and pools of its `printers`. Rate limited per client "
    "address; wrong credentials count per address (`[release] max_pin_failures`, "
    "`pin_lockout_s`) before they are checked: a right one takes back only its own try, "
    "and the count ages out `pin_lockout_s` after the last wrong one."
)
_TECH = {**_AUTH, 403: _403_TECH}
#: A kiosk's action (a viewer reads, a station releases at its printers: both refused).
_KIOSK = {**_AUTH, 403: _403_ACT}
#: Reading jobs: kiosk, viewer and tech tokens.
_READ = {**_AUTH, 403: _problem("`forbidden`: a station token")}
#: What the status page shows a technician (printers, stats, …): viewer and tech tokens.
_VIEW = {**_AUTH, 403: _problem("`forbidden`: the token's role is neither `viewer` nor `tech`")}


def _icon(size: int) -> Callable[[ipp.IppEndpoint], Handler]:
    """``bind`` of the icon route of ``size``."""
    return lambda endpoint: endpoint.icon(size)


def _job(description: str) -> Answer:
    return Answer(description, JobOut)


def _bulk(verb: str, summary: str, role: Role, single: str, handler: Handler) -> Operation:
    """The row of a bulk call (issue 24): ``POST /v1/jobs/{verb}`` acting as ``single`` does."""
    target = (
        ", `unknown-target` (a printer or pool of the body or the filter that is not configured)"
    )
    return Operation(
        handler, "post", f"/v1/jobs/{verb}", f"{verb}Jobs", summary, "jobs", role,
        body=cast(Body, f"bulk-{verb}"),
        description=(
            f'`{{"ids": [...], "limit": N}}` or `{{"filter": {{...}}, "limit": N}}`; `limit` is '
            f"required (1–{MAX_BULK}). A filter takes the oldest matching jobs in the states "
            f"{verb} applies to. Each job goes through {single} (same rules, exactly once under "
            "concurrent calls); the answer lists each job's outcome. Ids that are not 32 "
            "lowercase hex characters are refused (422); well-formed ids of no job answer "
            "`not-found` among the results. A filter needs at least one field; its `pool` "
            "and `printer` must be configured (a typo is refused, not an empty answer)."
        ),
        answers={
            200: Answer("one outcome per selected job (a filter matching nothing: none)", BulkOut),
            400: _problem("`malformed-json`: the body is not JSON"),
            408: _problem("`request-timeout`: the body did not arrive within the time limit"),
            413: _problem("`payload-too-large`: the body is over 64 KiB"),
            415: _problem("`unsupported-media-type`: a body that is not application/json"),
            422: _problem(
                "`invalid-request` (no or a bad `limit`, both or neither of `ids` and `filter`, "
                "an empty filter, an unknown field, a bad state or one the action does not "
                "apply to, a `created_*` that is not a date or an RFC 3339 date-time with an "
                "offset; `errors`)"
                + target
            ),
            503: _503_STORE,
            **(_TECH if role == "tech" else _KIOSK),
        },
    )  # fmt: skip


# --- the table: every route, its handler and role, every status it can give ---------------

# fmt: off
ROUTES: tuple[Operation, ...] = (
    Operation(
        app.submit_job,
        "post", "/v1/jobs", "submitJob", "Submit a job (PDF + metadata)", "jobs", "kiosk",
        headers=("Idempotency-Key",), body="multipart",
        description=(
            "multipart/form-data with exactly two parts: `metadata` (JSON, SubmitMetadata) and "
            "`document` (a PDF). The same Idempotency-Key with the same metadata and document "
            "answers the earlier job (200, `Idempotent-Replayed: true`); with other content, "
            "422 `idempotency-key-reused`. A 4xx or 5xx stores nothing."
        ),
        answers={
            201: Answer("a new job, HELD (or RELEASED when `hold` is false)", JobOut,
                        headers=("Location",)),
            200: Answer("the job this Idempotency-Key already made (same payload)", JobOut,
                        headers=("Location", "Idempotent-Replayed")),
            400: _problem(
                "`idempotency-key-missing`, `idempotency-key-invalid`, `malformed-request` "
                "(broken or truncated multipart, duplicate part), `malformed-json` (metadata)"
            ),
            408: _problem("`request-timeout`: the body did not arrive within the time limit"),
            413: _problem("`payload-too-large`: the document, the metadata or the whole body"),
            415: _problem(
                "`unsupported-media-type`: not multipart/form-data, a document part that is "
                "not application/pdf (or application/vnd.zebra-zpl), or a PDF without a `%PDF-` "
                "header"
            ),
            422: _problem(
                "`invalid-request` (metadata invalid, parts missing or unknown; `errors` lists "
                "the fields), `unknown-target` (printer or pool not configured), "
                "`idempotency-key-reused`, `document-encrypted`, `document-unreadable` (also a "
                "ZPL document that is not `^XA…^XZ` labels), `too-many-pages`, `too-many-labels` "
                "(ZPL), `unsupported-document` (no printer of the target takes ZPL)"
            ),
            503: _503_WRITE, 507: _507, **_KIOSK,
        },
        links={201: ("getJob", "releaseJob", "cancelJob", "replayJob")},
    ),
    Operation(
        app.list_jobs,
        "get", "/v1/jobs", "listJobs", "List jobs, newest first", "jobs", "read",
        query=("state", "owner", "printer", "idempotency_key", "id_prefix", "owner_contains",
               "limit", "cursor"),
        description=(
            "Filters combine (every one given must match). Search: `idempotency_key` (exact), "
            "`id_prefix` (the id's first 4–32 hex characters), `owner_contains` (part of the "
            "owner, case-insensitive; `%` and `_` match themselves)."
        ),
        answers={
            200: Answer("a page of jobs; pass `next_cursor` as `cursor` for the next", JobListOut),
            422: _problem("`invalid-request`: a bad or unknown query parameter (`errors`)"),
            503: _503_STORE, **_READ,
        },
    ),
    Operation(
        desk.reprint_job,
        "post", "/v1/jobs/{job_id}/reprint", "reprintJob",
        "Print a DONE job again, on purpose, with a record", "jobs", "kiosk",
        headers=("Idempotency-Key",), body="reprint",
        description=(
            "A new job with the same document, owner, target and copies, RELEASED at once, "
            "naming the original in `reprint_of` (the original lists it in `reprints`; a "
            "reprint of a reprint names the first original). The reason and who asked are in "
            "both jobs' events; a `job.reprinted` webhook. The same Idempotency-Key again "
            "answers the same reprint (200, `Idempotent-Replayed: true`); another key makes "
            "another reprint, up to `[release] max_reprints` per original."
        ),
        answers={
            201: Answer("the reprint, RELEASED", JobOut, headers=("Location",)),
            200: Answer("the reprint this Idempotency-Key already made", JobOut,
                        headers=("Location", "Idempotent-Replayed")),
            400: _problem(
                "`idempotency-key-missing`, `idempotency-key-invalid`, `malformed-json`"
            ),
            404: _404_JOB,
            408: _problem("`request-timeout`: the body did not arrive within the time limit"),
            409: _problem(
                "`state-conflict`: the job is not DONE (`state` names its state); "
                "`reprint-limit`: it was reprinted `max_reprints` times (`count`, `limit`)"
            ),
            410: _problem("`document-gone`: retention deleted the job's document"),
            413: _problem("`payload-too-large`: the body is over 64 KiB"),
            415: _problem("`unsupported-media-type`: a body that is not application/json"),
            422: _problem(
                "`invalid-request` (`reason` missing, empty, over 200 characters or with "
                "control characters; `errors`), `idempotency-key-reused` (the key made another "
                "job or another reprint), `unknown-target` (its printer or pool is no longer "
                "configured)"
            ),
            503: _503_WRITE, 507: _507, **_KIOSK,
        },
        links={201: ("getJob", "cancelJob")},
    ),
    Operation(
        desk.job_story,
        "get", "/v1/jobs/{job_id}/events", "jobStory",
        "A job's story: state changes, copies, who and why", "jobs", "read",
        description=(
            "Every state change (who made it and why), every event that changed no state (a "
            "reprint made from it), every copy handed to a printer (which printer, its IPP "
            "job-id) and the printer's answer that settled it, oldest first, each in words."
        ),
        answers={
            200: Answer("the job and its story", JobStoryOut),
            404: _404_JOB, 503: _503_STORE, **_READ,
        },
    ),
    Operation(
        app.get_job,
        "get", "/v1/jobs/{job_id}", "getJob", "A job", "jobs", "read",
        answers={200: _job("the job"), 404: _404_JOB, 503: _503_STORE, **_READ},
    ),
    Operation(
        app.release_job,
        "post", "/v1/jobs/{job_id}/release", "releaseJob", "Release a HELD job", "jobs", "kiosk",
        body="release",
        description=(
            "HELD → RELEASED, optionally to another printer or pool (required when the job was "
            "submitted without one); `pin` when the job was submitted with a `release_pin`. Of "
            "concurrent releases exactly one wins; the others get 409."
        ),
        answers={
            200: _job("the job, RELEASED"),
            400: _problem("`malformed-json`: the body is not JSON"),
            403: _problem("`pin-required` or `pin-mismatch` (the job's release PIN); "
                          "`forbidden`: a viewer or a station token"),
            404: _404_JOB,
            408: _problem("`request-timeout`: the body did not arrive within the time limit"),
            409: _409,
            413: _problem("`payload-too-large`: the body is over 64 KiB"),
            415: _problem("`unsupported-media-type`: a body that is not application/json"),
            422: _problem(
                "`invalid-request` (bad body; `errors`), `unknown-target` (printer or pool not "
                "configured), `missing-target` (the job names no printer or pool), "
                "`unsupported-document` (no printer of the target takes the job's format)"
            ),
            423: _problem("`release-locked`: too many wrong PINs; retry later", "Retry-After"),
            503: _503_WRITE, 507: _507, **_AUTH,
        },
    ),
    Operation(
        app.cancel_job,
        "post", "/v1/jobs/{job_id}/cancel", "cancelJob", "Cancel a job", "jobs", "kiosk",
        body="cancel",
        description=(
            "HELD, RELEASED or DEAD → CANCELLED; a PRINTING job is cancelled at the printer "
            "(202). A kiosk cancelling a HELD job that has a release PIN gives `pin` (wrong PINs "
            "count towards the same lock as releases); a technician's token needs none."
        ),
        answers={
            200: _job("the job, CANCELLED"),
            202: _job("the job, still PRINTING with `cancel_requested`; the printer cancels it"),
            400: _problem("`malformed-json`: the body is not JSON"),
            403: _problem("`pin-required` or `pin-mismatch` (a HELD job's release PIN); "
                          "`forbidden`: a viewer or a station token"),
            404: _404_JOB, 409: _409,
            408: _problem("`request-timeout`: the body did not arrive within the time limit"),
            413: _problem("`payload-too-large`: the body is over 64 KiB"),
            415: _problem("`unsupported-media-type`: a body that is not application/json"),
            422: _problem("`invalid-request` (bad body; `errors`)"),
            423: _problem("`release-locked`: too many wrong PINs; retry later", "Retry-After"),
            503: _503_STORE, 507: _507, **_AUTH,
        },
    ),
    Operation(
        app.replay_job,
        "post", "/v1/jobs/{job_id}/replay", "replayJob", "Replay a DEAD job (tech)", "jobs", "tech",
        answers={
            200: _job("the job, RELEASED again (exactly once)"),
            404: _404_JOB, 409: _409, 503: _503_STORE, 507: _507, **_TECH,
        },
    ),
    Operation(
        app.resolve_job,
        "post", "/v1/jobs/{job_id}/resolve", "resolveJob",
        "Settle a DEAD job whose outcome is unknown (tech)", "jobs", "tech", body="resolve",
        description=(
            "For a job parked DEAD `outcome_unknown` (the printer may have printed it and forgot "
            'it): `{"printed": true}` → DONE; `{"printed": false}` → RELEASED, printed once '
            "more. Of concurrent resolutions exactly one wins; the job's events record who "
            "decided and what."
        ),
        answers={
            200: _job("the job, DONE (printed) or RELEASED (not printed)"),
            400: _problem("`malformed-json`: the body is not JSON"),
            404: _404_JOB,
            408: _problem("`request-timeout`: the body did not arrive within the time limit"),
            409: _problem(
                "`outcome-not-unknown`: the job is not DEAD `outcome_unknown` (any more); "
                "`state` names its state"
            ),
            413: _problem("`payload-too-large`: the body is over 64 KiB"),
            415: _problem("`unsupported-media-type`: a body that is not application/json"),
            422: _problem("`invalid-request`: `printed` missing or not a boolean (`errors`)"),
            503: _503_STORE, 507: _507, **_TECH,
        },
    ),
    # issue 24: release where you stand
    Operation(
        release.put_owner,
        "put", "/v1/owners/{owner}", "putOwnerCredentials",
        "Set an owner's release code and/or card", "release", "kiosk",
        body="owner-credentials",
        description=(
            "Stored only as a salted scrypt hash and a keyed lookup digest. Codes and cards "
            "are one namespace, unique across owners: a value another owner (or this owner's "
            "other credential) holds is refused with 409 and nothing changes. A credential "
            "not given is kept."
        ),
        answers={
            200: Answer("which credentials the owner has now (never their values)",
                        OwnerCredentialsOut),
            **_JSON_BODY,
            409: _problem("`credential-taken`: the value is not available"),
            422: _problem("`invalid-request`: a bad code (6–12 digits), card or owner (`errors`)"),
            503: _503_STORE, 507: _507, **_AUTH,
            403: _403_ACT,
        },
    ),
    Operation(
        release.delete_owner,
        "delete", "/v1/owners/{owner}", "deleteOwnerCredentials",
        "Remove an owner's release code and card", "release", "kiosk",
        answers={
            204: Answer("removed"),
            404: _problem("`owner-not-found`: the owner has no code or card"),
            422: _problem("`invalid-request`: not a valid owner name"),
            503: _503_STORE, 507: _507, **_AUTH,
            403: _403_ACT,
        },
    ),
    Operation(
        release_page.release_page,
        "get", "/release/{name}", "releasePage",
        "The release page of a printer or pool (HTML)", "release", None,
        description=(
            "For a phone (from the printer's sticker), a tablet or a station at the printer: "
            "a release code, card (a keyboard-wedge reader: its number and Enter releases "
            "everything) or a job's PIN shows and releases the person's HELD jobs here."
        ),
        answers={
            200: Answer("the page", media="text/html"),
            404: Answer("a page saying there is no such printer or pool", media="text/html"),
        },
    ),
    Operation(
        release_page.release_page_slash,
        "get", "/release/{name}/", "releasePageSlash",
        "The release page's address with a trailing slash: a redirect to it", "release", None,
        answers={308: Answer("to /release/{name} (in the Location header)")},
    ),
    Operation(
        release_page.release_index,
        "get", "/release/", "releaseIndex",
        "No printer named: the release page's 'No such printer' page (HTML)", "release", None,
        answers={404: Answer("a page saying there is no such printer or pool",
                             media="text/html")},
    ),
    Operation(
        release.release_lookup,
        "post", "/release/{name}/lookup", "releaseLookup",
        "A person's HELD jobs, by release code, card or a job's PIN", "release", None,
        body="release-lookup",
        description=(
            '`{"code"}` and `{"card"}` are looked up alike (one namespace); `{"pin", "job"}` '
            "opens that one job (`job`: its id, or 6+ of its first hex characters naming one "
            "HELD job). A valid credential with nothing waiting is 200 with no jobs. "
            "The answer also lists the place's printers and the least loaded ready one."
            + _AT_PLACE_NOTE
        ),
        answers={
            200: Answer("the person's HELD jobs (maybe none)", ReleaseLookupOut),
            422: _problem("`invalid-request`: not one credential (`errors`)"),
            **_AT_PLACE,
        },
    ),
    Operation(
        release.release_print,
        "post", "/release/{name}/print", "releasePrint",
        "Release a person's HELD jobs at this printer or pool", "release", None,
        body="release-print",
        description=(
            "The credential as for the look-up, and `jobs` (ids) or `all`. Each job goes "
            "through the release of one job (exactly once under double taps; PINs, admission, "
            "failover as there), to this printer, or on a pool's page to `printer` of the "
            "pool (else the pool). A job that is not the person's is `not-found`."
            + _AT_PLACE_NOTE
        ),
        answers={
            200: Answer("each job's outcome and a sentence saying what happened",
                        ReleasePrintOut),
            422: _problem(
                "`invalid-request`: not one credential, neither or both of `jobs` and `all`, "
                "a job id that is not 32 lowercase hex, or a `printer` not of this pool "
                "(`errors`)"
            ),
            **_AT_PLACE,
        },
    ),
    Operation(
        release.release_preview,
        "post", "/release/{name}/preview", "releasePreview",
        "The first page of one of a person's HELD jobs, as a PNG", "release", None,
        body="release-preview",
        description=(
            "The credential as for the look-up, and `job_id`: one of the jobs it opens "
            "(HELD). Drawn 300 px wide by the render workers and kept with the renditions."
            + _AT_PLACE_NOTE
        ),
        answers={
            200: Answer("the page", media="image/png"),
            **_AT_PLACE,
            404: _problem("`printer-not-found`; `job-not-found`: not a HELD job of the person "
                          "(whoever's it is)"),
            410: _problem("`document-gone`: retention deleted the job's document"),
            415: _problem("`unsupported-media-type`: a body that is not application/json, or a "
                          "job that is not a PDF (a ZPL label has no pages to draw)"),
            422: _problem("`invalid-request`: not one credential, or no `job_id` (`errors`)"),
            503: _problem("`render-failed` (the workers could not draw it now) or "
                          "`store-unavailable`", "Retry-After"),
        },
    ),
    # issue 24 (many jobs at once): the single calls above, for jobs chosen by id or filter
    _bulk("release", "Release many HELD jobs", "kiosk", "releaseJob", bulk.release_jobs),
    _bulk("cancel", "Cancel many jobs", "kiosk", "cancelJob", bulk.cancel_jobs),
    _bulk("replay", "Replay many DEAD jobs (tech)", "tech", "replayJob", bulk.replay_jobs),
    _bulk("resolve", "Settle many DEAD outcome_unknown jobs (tech)", "tech", "resolveJob",
          bulk.resolve_jobs),
    Operation(
        previews.job_preview,
        "get", "/v1/jobs/{job_id}/preview.png", "previewJob",
        "A page of a job's document as a PNG", "jobs", "read", query=("page", "width"),
        description=(
            "Drawn by the render workers and kept with the document's renditions (the same "
            "document, page and width are drawn once); `page` 1 and `width` 300 px by default. "
            "`ETag` names the document, page and width; `If-None-Match` with it answers 304."
        ),
        answers={
            200: Answer("the page, `width` pixels wide, its height in proportion",
                        media="image/png", headers=("ETag", "Cache-Control")),
            304: Answer("the preview the client holds is this one", headers=("ETag",)),
            404: _404_JOB,
            410: _problem("`document-gone`: retention deleted the job's document"),
            415: _problem("`unsupported-media-type`: the job is not a PDF (a ZPL label is sent "
                          "as it came; it has no pages to draw)"),
            422: _problem("`invalid-request`: `width` outside 50–1200, `page` below 1 or past "
                          "the document's last page, or an unknown query parameter (`errors`)"),
            503: _problem("`render-failed` (the workers could not draw it now) or "
                          "`store-unavailable`", "Retry-After"),
            **_READ,
        },
    ),
    Operation(
        app.list_printers,
        "get", "/v1/printers", "listPrinters", "Printers and pools (viewer or tech)", "printers",
        "view",
        answers={200: Answer("every printer and pool", PrintersOut), 503: _503_STORE, **_VIEW},
    ),
    *(
        Operation(
            handler, "post", f"/v1/printers/{{name}}/{verb}", f"{verb}Printer", summary,
            "printers", "tech",
            answers={
                200: Answer("the printer", PrinterOut), 404: _404_PRINTER,
                503: _503_STORE, 507: _507, **_TECH,
            },
        )
        for verb, summary, handler in (
            ("pause", "Pause a printer: no new work; the job in hand finishes (tech)",
             app.pause_printer),
            ("resume", "Resume a paused printer; also clears what only a person can (cannot "
             "report job state, quarantine) (tech)", app.resume_printer),
        )
    ),
    Operation(
        app.trust_printer,
        "post", "/v1/printers/{name}/trust", "trustPrinter",
        "Trust the certificate an ipps printer presents now (tech)", "printers", "tech",
        description=(
            "Forgets the pinned certificate fingerprint: the next contact pins the one the "
            "printer presents (after a factory reset made it a new self-signed certificate)."
        ),
        answers={
            200: Answer("the printer", PrinterOut), 404: _404_PRINTER,
            422: _problem("`invalid-request`: not an ipps printer, or pinned in the config"),
            503: _503_STORE, 507: _507, **_TECH,
        },
    ),
    Operation(
        app.media_loaded,
        "post", "/v1/printers/{name}/media-loaded", "mediaLoaded",
        "Say a new label roll is in: the runway counts from a full roll (tech)", "printers",
        "tech",
        description=(
            "For printers with `labels_per_roll`: edgeprint counts the labels printed since "
            "the roll was changed. A change is also seen by itself when the printer goes from "
            "media-empty to ready or its media-ready changes; this says so when it cannot see "
            "it (a roll swapped before it ran out)."
        ),
        answers={
            200: Answer("the printer's runway (null without labels_per_roll)", MediaLoadedOut),
            404: _404_PRINTER, 503: _503_STORE, 507: _507, **_TECH,
        },
    ),
    Operation(
        app.drain_printer,
        "post", "/v1/printers/{name}/drain", "drainPrinter",
        "Pause a printer and move its waiting jobs to its pool (tech)", "printers", "tech",
        answers={
            200: Answer("the printer (paused) and the ids of the jobs moved", DrainOut),
            404: _404_PRINTER, 503: _503_STORE, 507: _507, **_TECH,
        },
    ),
    Operation(
        app.identify_printer,
        "post", "/v1/printers/{name}/identify", "identifyPrinter",
        "Make a printer show itself: Identify-Printer or a test page (tech)", "printers", "tech",
        body="identify",
        description=(
            "`how`: `auto` (IPP Identify-Printer when the printer lists it in "
            "operations-supported, else a one-page test print), `identify` or `test-page`. "
            "The test page is printed directly, not as a job."
        ),
        answers={
            200: Answer("what the printer was asked to do", IdentifyOut),
            400: _problem("`malformed-json`: the body is not JSON"),
            404: _404_PRINTER,
            408: _problem("`request-timeout`: the body did not arrive within the time limit"),
            409: _problem("`identify-unsupported`: the printer has no Identify-Printer"),
            413: _problem("`payload-too-large`: the body is over 64 KiB"),
            415: _problem("`unsupported-media-type`: a body that is not application/json"),
            422: _problem("`invalid-request`: a bad `how` (`errors`)"),
            502: _problem("`printer-error`: the printer failed or did not answer"),
            **_TECH,
        },
    ),
    Operation(
        stickers.printer_sticker,
        "get", "/v1/printers/{name}/sticker.pdf", "printerSticker",
        "A sticker for the printer: its name and a QR code of its release page (tech)",
        "printers", "tech", query=("base",),
        description=(
            "A one-page vector PDF sized for the printer's label stock (else 4×6 in): the "
            "printer's name, a QR code of `{base}/release/{name}` and that URL. `base`: the "
            "query parameter, else `[release] public_url`, else the address this request "
            "reached the appliance at (unless loopback), else the first IPv4 address of the box's "
            "interfaces that is neither loopback nor link-local, with the port it listens on. "
            "A base that is loopback anyway is refused (422 `sticker-base-loopback`)."
        ),
        answers={
            200: Answer("the sticker", media="application/pdf",
                        headers=("Content-Disposition",)),
            404: _404_PRINTER,
            422: _problem("`invalid-request`: `base` is not an http(s) URL with a host (no "
                          "user, query or fragment), or an unknown query parameter (`errors`); "
                          "`sticker-base-loopback`: the base found is loopback (127.0.0.1), "
                          "which phones cannot reach: set `[release] public_url` or pass "
                          "`base`"),
            503: _problem("`render-failed`: the render workers could not draw it now",
                          "Retry-After"),
            **_TECH,
        },
    ),
    # issue 23 (preflight): a printer asked now, and the event's mode
    Operation(
        event.check_printer,
        "post", "/v1/printers/{name}/check", "checkPrinter",
        "Ask a printer now and time it: state, reasons, ready media, TLS pin (tech)",
        "printers", "tech",
        description=(
            "One Get-Printer-Attributes made now (not the last probe's view), its round trip "
            "timed; for an ipps printer, the certificate it presents against its pin; the "
            "badge's stock (`[event] badge_media`) against the ready media. An unreachable "
            "printer is a 200 with `reachable` false and `error` saying why. No body."
        ),
        answers={
            200: Answer("what the printer answered now", PrinterCheckOut),
            404: _404_PRINTER,
            422: _problem("`invalid-request`: a body was sent (this request takes none)"),
            **_TECH,
        },
    ),
    Operation(
        event.get_event,
        "get", "/v1/event", "getEvent", "The event's mode: live or rehearsal (viewer or tech)",
        "operations", "view",
        answers={200: Answer("the mode, since when, the rehearsal's jobs", EventOut),
                 503: _503_STORE, **_VIEW},
    ),
    Operation(
        event.start_rehearsal,
        "post", "/v1/event/rehearsal", "startRehearsal", "Start a rehearsal (tech)",
        "operations", "tech",
        description=(
            "From now on every new job is a rehearsal job (`rehearsal: true`), counted apart "
            "from the live figures, until POST /v1/event/live. Survives a restart. No body."
        ),
        answers={
            200: Answer("the event, now in rehearsal", EventOut),
            409: _problem("`already-in-rehearsal`: `mode` is `rehearsal`"),
            422: _problem("`invalid-request`: a body was sent (this request takes none)"),
            503: _503_STORE, 507: _507, **_TECH,
        },
    ),
    Operation(
        event.go_live,
        "post", "/v1/event/live", "goLive", "End the rehearsal: go live (tech)", "operations",
        "tech",
        description=(
            "In one transaction: the event goes live and the rehearsal's jobs still HELD, "
            "RELEASED or DEAD are CANCELLED (reason `rehearsal_ended`, listed in `cancelled`); "
            "a rehearsal job a printer holds finishes as a rehearsal job. No body."
        ),
        answers={
            200: Answer("the event, now live, and the jobs cancelled", EventOut),
            409: _problem("`not-in-rehearsal`: `mode` is `live`"),
            422: _problem("`invalid-request`: a body was sent (this request takes none)"),
            503: _503_STORE, 507: _507, **_TECH,
        },
    ),
    Operation(
        app.dead_letter,
        "get", "/v1/dead-letter", "deadLetter", "DEAD jobs, oldest first (viewer or tech)", "jobs",
        "view", query=("limit", "cursor"),
        answers={
            200: Answer("a page of DEAD jobs with their `dead_reason`", DeadLetterOut),
            422: _problem("`invalid-request`: a bad or unknown query parameter (`errors`)"),
            503: _503_STORE, **_VIEW,
        },
    ),
    Operation(
        tls_info.get_tls,
        "get", "/v1/tls", "getTls",
        "The TLS certificate served now and what clients pin (tech)", "operations", "tech",
        description=(
            "What `edgeprint tls fingerprint` prints: the certificate's SHA-256 fingerprint "
            "(openssl's form) and the public key's `sha256//` pin (curl's `--pinnedpubkey`), "
            "its names and validity. The running certificate (after a refused reload, the one "
            "still served). Without TLS (`tls` off or absent) the other fields are null."
        ),
        answers={200: Answer("the certificate served", ApplianceTlsOut), **_TECH},
    ),
    Operation(
        app.stats,
        "get", "/v1/stats", "getStats",
        "Jobs by state, dead letters by reason, printers in short (viewer or tech)", "operations",
        "view",
        description="What the status page and `edgeprint stats` show; read at the request.",
        answers={200: Answer("the numbers", StatsOut), 503: _503_STORE, **_VIEW},
    ),
    Operation(
        app.webhook_deliveries,
        "get", "/v1/webhooks/deliveries", "webhookDeliveries",
        "Webhook deliveries parked as failed, oldest first (tech)", "operations", "tech",
        query=("delivery_state", "limit", "cursor"),
        description=(
            "Events a receiver did not take (2xx) within its `max_delivery_s`; they are not "
            "retried. Delivered events are not listed."
        ),
        answers={
            200: Answer("a page of failed deliveries", WebhookDeliveriesOut),
            422: _problem("`invalid-request`: a bad or unknown query parameter (`errors`)"),
            503: _503_STORE, **_TECH,
        },
    ),
    # issue 26: the tokens, their roles, expiry and last use (never a secret)
    Operation(
        tokens.list_tokens,
        "get", "/v1/tokens", "listTokens",
        "The configured tokens: role, printers, expiry, last use (tech)", "operations", "tech",
        description=(
            "In config order; never a token or its digest. Last use (time and client address "
            "of the last authenticated request) is kept in memory by this appliance since "
            "`since`: null means none since then."
        ),
        answers={200: Answer("every configured token", TokensOut), **_TECH},
    ),
    Operation(
        tokens.this_token,
        "get", "/v1/token", "thisToken",
        "The token this request carries: its name, role and expiry", "operations", "read",
        description="What the status page asks to know whether it may offer actions.",
        answers={200: Answer("this token", TokenOut), **_READ},
    ),
    Operation(
        audit.audit_trail,
        "get", "/v1/audit", "auditTrail", "Who did what: the audit trail, newest first (tech)",
        "operations", "tech",
        query=("since", "audit_limit", "audit_actor", "audit_action", "audit_target"),
        description=(
            "One row per action (release, cancel, replay, resolve, reprint, bulk calls, pause, "
            "resume, drain, identify, trust, media-loaded, owners' credentials, event mode, "
            "release-page prints, web uploads, IPP cancels, config reloads): when, who "
            "(`actor`, `actor_kind`), from where (`source`: the peer address, no proxy "
            "header), the target, `outcome` (`done`, `conflict`: the state said no, "
            "`refused`) and a short `detail`. Never a token, PIN, code or card. Kept "
            "`[retention] audit_s` (90 days)."
        ),
        answers={
            200: Answer("the rows, newest first", AuditOut),
            422: _problem("`invalid-request`: a bad or unknown query parameter (`errors`)"),
            503: _503_STORE, **_TECH,
        },
    ),
    Operation(
        app.healthz,
        "get", "/healthz", "healthz", "Liveness", "operations", None,
        answers={200: Answer("the process and its event loop answer", Health)},
    ),
    Operation(
        app.readyz,
        "get", "/readyz", "readyz", "Readiness", "operations", None,
        answers={
            200: Answer("the store takes a write", Health),
            503: Answer("the store cannot take a write (`status` is `unavailable`)", Health),
        },
    ),
    Operation(
        app.metrics,
        "get", "/metrics", "metrics", "Prometheus metrics", "operations", None,
        description=(
            "No token, unless `[metrics] token_required = true`: then a kiosk, viewer or tech "
            "bearer token."
        ),
        answers={
            200: Answer("Prometheus text format 0.0.4", media="text/plain"),
            503: _problem("`store-unavailable`", "Retry-After"),
            401: _problem("`unauthorized`: `[metrics] token_required` and no, an unknown or an "
                          "expired token", "WWW-Authenticate"),
            403: _problem("`forbidden`: `[metrics] token_required` and a station token"),
            429: _429,
        },
    ),
    Operation(
        openapi.openapi_json,
        "get", PATH, "openapi", "This document (no token: it describes the API)", "operations",
        None, answers={200: Answer("the OpenAPI 3.1 document", media="application/json")},
    ),
    Operation(
        status_page.status_page,
        "get", "/", "statusPage", "The technicians' live status page", "operations", None,
        description=(
            "HTML only; the page asks for a tech token (or a viewer's: then it only reads) and "
            "reads the API with it."
        ),
        answers={200: Answer("the page", media="text/html")},
    ),
    Operation(
        upload_page.upload_form,
        "get", "/upload", "uploadPage",
        "Print from any browser: the upload form (`[release] web_upload`)", "jobs", None,
        description="HTML: a name, a printer or pool, a PDF; from `[ipp] allowed_networks`.",
        answers={
            200: Answer("the form, with a one-time form key", media="text/html"),
            403: Answer("the client's address is outside `[ipp] allowed_networks`",
                        media="text/html"),
            404: _problem("`not-found`: `[release] web_upload` is false"),
        },
    ),
    Operation(
        upload_page.upload_submit,
        "post", "/upload", "uploadJob",
        "Print from any browser: upload a PDF as a HELD job with a one-time PIN", "jobs", None,
        body="upload",
        description=(
            "The form of GET /upload. The same document checks and limits as POST /v1/jobs; "
            "the job is HELD under `owner` with a PIN the server makes, shown once in the "
            "answer page. The same `form_key` again (a double tap) answers the same job and "
            "PIN. Every answer is an HTML page; a refusal says why in words, with the form."
        ),
        answers={
            201: Answer("the PIN page: a new HELD job", media="text/html"),
            200: Answer("the PIN page of the job this form key already made", media="text/html"),
            400: Answer("a malformed body, or a form key that is not the form's",
                        media="text/html"),
            403: Answer("the client's address is outside `[ipp] allowed_networks`",
                        media="text/html"),
            404: _problem("`not-found`: `[release] web_upload` is false"),
            408: Answer("the file did not arrive within the time limit", media="text/html"),
            413: Answer("the file (or a field) is too large", media="text/html"),
            415: Answer("not a PDF, or not a form", media="text/html"),
            422: Answer("a bad name or printer, a PDF that cannot be printed, or a form used "
                        "for another file", media="text/html"),
            429: Answer("`[release] upload_rate_limit` reached for this address",
                        media="text/html", headers=("Retry-After",)),
            503: Answer("the store cannot take it now", media="text/html",
                        headers=("Retry-After",)),
            507: Answer("the appliance's disk is full", media="text/html"),
        },
    ),
    Operation(
        None,
        "post", "/ipp/print/{name}", "ippQueue",
        "IPP queue of a printer or pool (edgeprint as an IPP Everywhere printer)", "ipp", None,
        description="An IPP/1.1–2.0 request (RFC 8010) as `application/ipp`; the answer is an "
        "IPP response whose status-code says how it went (README, 'Print from any device'). "
        "`[ipp] auth = \"basic\"`: HTTP Basic with the token's name and the token.",
        answers={
            200: Answer("an IPP response", media="application/ipp"),
            401: Answer("`[ipp] auth = \"basic\"` and no or wrong credentials: an IPP "
                        "response, client-error-not-authenticated", media="application/ipp",
                        headers=("WWW-Authenticate",)),
            403: Answer("the client's address is outside `[ipp] allowed_networks`, or (`basic`) "
                        "a token past its `expires` or whose role may not print (viewer, "
                        "station): an IPP response, client-error-not-authorized",
                        media="application/ipp"),
            404: _problem("`not-found`: `[ipp] enabled = false`"),
            415: _problem("`unsupported-document`: the body is not `application/ipp`, or it is "
                          "compressed (Content-Encoding)"),
        },
        bind=lambda endpoint: endpoint.handle,
    ),
    Operation(
        None,
        "post", ipp.JOB_PATH, "ippJob",
        "IPP job-uri of a job on a queue (job operations on that job)", "ipp", None,
        description="Send-Document, Close-Job, Cancel-Job and Get-Job-Attributes addressed to "
        "the job-uri a queue answered; the operation attributes must name the same job "
        "(job-uri, or printer-uri and job-id). Otherwise as the queue's path.",
        answers={
            200: Answer("an IPP response (client-error-bad-request for a printer operation "
                        "or another job; client-error-not-found when `job` is no job-id)",
                        media="application/ipp"),
            401: Answer("as the queue's path", media="application/ipp",
                        headers=("WWW-Authenticate",)),
            403: Answer("as the queue's path", media="application/ipp"),
            404: _problem("`not-found`: `[ipp] enabled = false`"),
            415: _problem("`unsupported-document`: as the queue's path"),
        },
        bind=lambda endpoint: endpoint.handle,
    ),
    *(
        Operation(
            None,
            "get", f"/ipp/icons/{size}.png", f"ippIcon{size}",
            f"The IPP queues' icon, {size}x{size} (printer-icons)", "ipp", None,
            answers={
                200: Answer("a PNG", media="image/png"),
                403: _problem("`http-error`: the client's address is outside "
                              "`[ipp] allowed_networks`"),
                404: _problem("`not-found`: `[ipp] enabled = false`"),
            },
            bind=_icon(size),
        )
        for size in ICON_SIZES
    ),
)
# fmt: on


def _guarded(handler: Handler, role: Role | None) -> Handler:
    """``handler`` behind its role check (the caller is then in ``request[app.CALLER]``)."""
    if role is None:
        return handler

    async def guarded(request: web.Request) -> web.StreamResponse:
        request[app.CALLER] = await app.authorize(request, role)
        return await handler(request)

    guarded.__doc__ = handler.__doc__
    return guarded


def build_app(deps: app.Deps) -> web.Application:
    """The application with every route of :data:`ROUTES`; ``deps`` is stored under ``DEPS``."""
    application = web.Application(
        # plain_http inside app's: its answers get the correlation id and the metrics
        middlewares=[app.middleware, plain_http.middleware],
        client_max_size=app.MAX_JSON_BODY,
    )
    application[app.DEPS] = deps
    application[release.DESK] = ReleaseDesk(deps.service)
    endpoint = application[ipp.ENDPOINT] = ipp.IppEndpoint(deps, app.CORRELATION_ID)
    application[upload_page.DOOR] = upload_page.UploadDoor(deps)
    for route in ROUTES:
        handler = route.handler if route.bind is None else route.bind(endpoint)
        assert handler is not None, route.operation_id
        guarded = audited.wrap(route.operation_id, route.role, _guarded(handler, route.role))
        if route.method == "get":
            application.router.add_get(route.path, guarded)  # and HEAD
        else:
            application.router.add_route(route.method.upper(), route.path, guarded)
    return application
