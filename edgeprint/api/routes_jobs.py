"""The route table's rows for jobs: submit, list, follow, release, cancel, replay, resolve,
reprint, a job's story and preview, and the bulk calls (issue 24)."""

from __future__ import annotations

from typing import cast

from edgeprint.api import (
    bulk,
    desk,
    jobs,
    previews,
)
from edgeprint.api.route_table import (
    AUTH,
    JOB_NOT_FOUND,
    KIOSK,
    READ,
    STATE_CONFLICT,
    STORAGE_FULL,
    STORE_UNAVAILABLE,
    TECH,
    WRITE_UNAVAILABLE,
    Answer,
    Body,
    Handler,
    Operation,
    Role,
    job_answer,
    problem,
)
from edgeprint.models import (
    MAX_BULK,
    BulkOut,
    JobListOut,
    JobOut,
    JobStoryOut,
)


def _bulk(verb: str, summary: str, role: Role, single: str, handler: Handler) -> Operation:
    """The row of a bulk call (issue 24): ``POST /v1/jobs/{verb}`` acting as ``single`` does."""
    target = (
        ", `unknown-target` (a printer or pool of the body or the filter that is not configured)"
    )
    return Operation(
        handler,
        "post",
        f"/v1/jobs/{verb}",
        f"{verb}Jobs",
        summary,
        "jobs",
        role,
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
            400: problem("`malformed-json`: the body is not JSON"),
            408: problem("`request-timeout`: the body did not arrive within the time limit"),
            413: problem("`payload-too-large`: the body is over 64 KiB"),
            415: problem("`unsupported-media-type`: a body that is not application/json"),
            422: problem(
                "`invalid-request` (no or a bad `limit`, both or neither of `ids` and `filter`, "
                "an empty filter, an unknown field, a bad state or one the action does not "
                "apply to, a `created_*` that is not a date or an RFC 3339 date-time with an "
                "offset; `errors`)" + target
            ),
            503: STORE_UNAVAILABLE,
            **(TECH if role == "tech" else KIOSK),
        },
    )


#: One job at a time, by id (and submit, list).
# fmt: off
SINGLE: tuple[Operation, ...] = (
    Operation(
        jobs.submit_job,
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
            400: problem(
                "`idempotency-key-missing`, `idempotency-key-invalid`, `malformed-request` "
                "(broken or truncated multipart, duplicate part), `malformed-json` (metadata)"
            ),
            408: problem("`request-timeout`: the body did not arrive within the time limit"),
            413: problem("`payload-too-large`: the document, the metadata or the whole body"),
            415: problem(
                "`unsupported-media-type`: not multipart/form-data, a document part that is "
                "not application/pdf (or application/vnd.zebra-zpl), or a PDF without a `%PDF-` "
                "header"
            ),
            422: problem(
                "`invalid-request` (metadata invalid, parts missing or unknown; `errors` lists "
                "the fields), `unknown-target` (printer or pool not configured), "
                "`idempotency-key-reused`, `document-encrypted`, `document-unreadable` (also a "
                "ZPL document that is not `^XA…^XZ` labels), `too-many-pages`, `too-many-labels` "
                "(ZPL), `unsupported-document` (no printer of the target takes ZPL)"
            ),
            503: WRITE_UNAVAILABLE, 507: STORAGE_FULL, **KIOSK,
        },
        links={201: ("getJob", "releaseJob", "cancelJob", "replayJob")},
    ),
    Operation(
        jobs.list_jobs,
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
            422: problem("`invalid-request`: a bad or unknown query parameter (`errors`)"),
            503: STORE_UNAVAILABLE, **READ,
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
            400: problem(
                "`idempotency-key-missing`, `idempotency-key-invalid`, `malformed-json`"
            ),
            404: JOB_NOT_FOUND,
            408: problem("`request-timeout`: the body did not arrive within the time limit"),
            409: problem(
                "`state-conflict`: the job is not DONE (`state` names its state); "
                "`reprint-limit`: it was reprinted `max_reprints` times (`count`, `limit`)"
            ),
            410: problem("`document-gone`: retention deleted the job's document"),
            413: problem("`payload-too-large`: the body is over 64 KiB"),
            415: problem("`unsupported-media-type`: a body that is not application/json"),
            422: problem(
                "`invalid-request` (`reason` missing, empty, over 200 characters or with "
                "control characters; `errors`), `idempotency-key-reused` (the key made another "
                "job or another reprint), `unknown-target` (its printer or pool is no longer "
                "configured)"
            ),
            503: WRITE_UNAVAILABLE, 507: STORAGE_FULL, **KIOSK,
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
            404: JOB_NOT_FOUND, 503: STORE_UNAVAILABLE, **READ,
        },
    ),
    Operation(
        jobs.get_job,
        "get", "/v1/jobs/{job_id}", "getJob", "A job", "jobs", "read",
        answers={200: job_answer("the job"), 404: JOB_NOT_FOUND, 503: STORE_UNAVAILABLE, **READ},
    ),
    Operation(
        jobs.release_job,
        "post", "/v1/jobs/{job_id}/release", "releaseJob", "Release a HELD job", "jobs", "kiosk",
        body="release",
        description=(
            "HELD → RELEASED, optionally to another printer or pool (required when the job was "
            "submitted without one); `pin` when the job was submitted with a `release_pin`. Of "
            "concurrent releases exactly one wins; the others get 409."
        ),
        answers={
            200: job_answer("the job, RELEASED"),
            400: problem("`malformed-json`: the body is not JSON"),
            403: problem("`pin-required` or `pin-mismatch` (the job's release PIN); "
                          "`forbidden`: a viewer or a station token"),
            404: JOB_NOT_FOUND,
            408: problem("`request-timeout`: the body did not arrive within the time limit"),
            409: STATE_CONFLICT,
            413: problem("`payload-too-large`: the body is over 64 KiB"),
            415: problem("`unsupported-media-type`: a body that is not application/json"),
            422: problem(
                "`invalid-request` (bad body; `errors`), `unknown-target` (printer or pool not "
                "configured), `missing-target` (the job names no printer or pool), "
                "`unsupported-document` (no printer of the target takes the job's format)"
            ),
            423: problem("`release-locked`: too many wrong PINs; retry later", "Retry-After"),
            503: WRITE_UNAVAILABLE, 507: STORAGE_FULL, **AUTH,
        },
    ),
    Operation(
        jobs.cancel_job,
        "post", "/v1/jobs/{job_id}/cancel", "cancelJob", "Cancel a job", "jobs", "kiosk",
        body="cancel",
        description=(
            "HELD, RELEASED or DEAD → CANCELLED; a PRINTING job is cancelled at the printer "
            "(202). A kiosk cancelling a HELD job that has a release PIN gives `pin` (wrong PINs "
            "count towards the same lock as releases); a technician's token needs none."
        ),
        answers={
            200: job_answer("the job, CANCELLED"),
            202: job_answer(
                "the job, still PRINTING with `cancel_requested`; the printer cancels it"
            ),
            400: problem("`malformed-json`: the body is not JSON"),
            403: problem("`pin-required` or `pin-mismatch` (a HELD job's release PIN); "
                          "`forbidden`: a viewer or a station token"),
            404: JOB_NOT_FOUND, 409: STATE_CONFLICT,
            408: problem("`request-timeout`: the body did not arrive within the time limit"),
            413: problem("`payload-too-large`: the body is over 64 KiB"),
            415: problem("`unsupported-media-type`: a body that is not application/json"),
            422: problem("`invalid-request` (bad body; `errors`)"),
            423: problem("`release-locked`: too many wrong PINs; retry later", "Retry-After"),
            503: STORE_UNAVAILABLE, 507: STORAGE_FULL, **AUTH,
        },
    ),
    Operation(
        jobs.replay_job,
        "post", "/v1/jobs/{job_id}/replay", "replayJob", "Replay a DEAD job (tech)", "jobs", "tech",
        answers={
            200: job_answer("the job, RELEASED again (exactly once)"),
            404: JOB_NOT_FOUND, 409: STATE_CONFLICT, 503: STORE_UNAVAILABLE, 507: STORAGE_FULL,
            **TECH,
        },
    ),
    Operation(
        jobs.resolve_job,
        "post", "/v1/jobs/{job_id}/resolve", "resolveJob",
        "Settle a DEAD job whose outcome is unknown (tech)", "jobs", "tech", body="resolve",
        description=(
            "For a job parked DEAD `outcome_unknown` (the printer may have printed it and forgot "
            'it): `{"printed": true}` → DONE; `{"printed": false}` → RELEASED, printed once '
            "more. Of concurrent resolutions exactly one wins; the job's events record who "
            "decided and what."
        ),
        answers={
            200: job_answer("the job, DONE (printed) or RELEASED (not printed)"),
            400: problem("`malformed-json`: the body is not JSON"),
            404: JOB_NOT_FOUND,
            408: problem("`request-timeout`: the body did not arrive within the time limit"),
            409: problem(
                "`outcome-not-unknown`: the job is not DEAD `outcome_unknown` (any more); "
                "`state` names its state"
            ),
            413: problem("`payload-too-large`: the body is over 64 KiB"),
            415: problem("`unsupported-media-type`: a body that is not application/json"),
            422: problem("`invalid-request`: `printed` missing or not a boolean (`errors`)"),
            503: STORE_UNAVAILABLE, 507: STORAGE_FULL, **TECH,
        },
    ),
)
# fmt: on

#: Many jobs at once (issue 24): the single calls above, for jobs chosen by id or filter;
#: and a job's preview.
# fmt: off
MANY: tuple[Operation, ...] = (
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
            404: JOB_NOT_FOUND,
            410: problem("`document-gone`: retention deleted the job's document"),
            415: problem("`unsupported-media-type`: the job is not a PDF (a ZPL label is sent "
                          "as it came; it has no pages to draw)"),
            422: problem("`invalid-request`: `width` outside 50–1200, `page` below 1 or past "
                          "the document's last page, or an unknown query parameter (`errors`)"),
            503: problem("`render-failed` (the workers could not draw it now) or "
                          "`store-unavailable`", "Retry-After"),
            **READ,
        },
    ),
)
# fmt: on
