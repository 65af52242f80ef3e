"""The route table's rows for release where you stand (issue 24): owners' codes and cards,
the release pages of each printer and pool and their calls."""

from __future__ import annotations

from edgeprint.api import (
    release,
    release_page,
)
from edgeprint.api.route_table import (
    AT_PLACE,
    AT_PLACE_NOTE,
    AUTH,
    FORBIDDEN_ACT,
    JSON_BODY,
    STORAGE_FULL,
    STORE_UNAVAILABLE,
    Answer,
    Operation,
    problem,
)
from edgeprint.models import (
    OwnerCredentialsOut,
    ReleaseLookupOut,
    ReleasePrintOut,
)

#: The owners' credentials and the release pages.
# fmt: off
ROUTES: tuple[Operation, ...] = (
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
            **JSON_BODY,
            409: problem("`credential-taken`: the value is not available"),
            422: problem("`invalid-request`: a bad code (6–12 digits), card or owner (`errors`)"),
            503: STORE_UNAVAILABLE, 507: STORAGE_FULL, **AUTH,
            403: FORBIDDEN_ACT,
        },
    ),
    Operation(
        release.delete_owner,
        "delete", "/v1/owners/{owner}", "deleteOwnerCredentials",
        "Remove an owner's release code and card", "release", "kiosk",
        answers={
            204: Answer("removed"),
            404: problem("`owner-not-found`: the owner has no code or card"),
            422: problem("`invalid-request`: not a valid owner name"),
            503: STORE_UNAVAILABLE, 507: STORAGE_FULL, **AUTH,
            403: FORBIDDEN_ACT,
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
            + AT_PLACE_NOTE
        ),
        answers={
            200: Answer("the person's HELD jobs (maybe none)", ReleaseLookupOut),
            422: problem("`invalid-request`: not one credential (`errors`)"),
            **AT_PLACE,
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
            + AT_PLACE_NOTE
        ),
        answers={
            200: Answer("each job's outcome and a sentence saying what happened",
                        ReleasePrintOut),
            422: problem(
                "`invalid-request`: not one credential, neither or both of `jobs` and `all`, "
                "a job id that is not 32 lowercase hex, or a `printer` not of this pool "
                "(`errors`)"
            ),
            **AT_PLACE,
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
            + AT_PLACE_NOTE
        ),
        answers={
            200: Answer("the page", media="image/png"),
            **AT_PLACE,
            404: problem("`printer-not-found`; `job-not-found`: not a HELD job of the person "
                          "(whoever's it is)"),
            410: problem("`document-gone`: retention deleted the job's document"),
            415: problem("`unsupported-media-type`: a body that is not application/json, or a "
                          "job that is not a PDF (a ZPL label has no pages to draw)"),
            422: problem("`invalid-request`: not one credential, or no `job_id` (`errors`)"),
            503: problem("`render-failed` (the workers could not draw it now) or "
                          "`store-unavailable`", "Retry-After"),
        },
    ),
)
# fmt: on
