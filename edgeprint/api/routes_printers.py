"""The route table's rows for technicians and viewers: printers and pools, the event's mode,
the dead-letter queue, TLS, statistics, webhook deliveries, tokens and the audit trail."""

from __future__ import annotations

from edgeprint.api import (
    audit,
    event,
    printers,
    stickers,
    tls_info,
    tokens,
)
from edgeprint.api.route_table import (
    PRINTER_NOT_FOUND,
    READ,
    STORAGE_FULL,
    STORE_UNAVAILABLE,
    TECH,
    VIEW,
    Answer,
    Operation,
    problem,
)
from edgeprint.models import (
    ApplianceTlsOut,
    AuditOut,
    DeadLetterOut,
    DrainOut,
    EventOut,
    IdentifyOut,
    MediaLoadedOut,
    PrinterCheckOut,
    PrinterOut,
    PrintersOut,
    StatsOut,
    TokenOut,
    TokensOut,
    WebhookDeliveriesOut,
)

#: Printers, the event, and what operators read.
# fmt: off
ROUTES: tuple[Operation, ...] = (
    Operation(
        printers.list_printers,
        "get", "/v1/printers", "listPrinters", "Printers and pools (viewer or tech)", "printers",
        "view",
        answers={
            200: Answer("every printer and pool", PrintersOut), 503: STORE_UNAVAILABLE, **VIEW,
        },
    ),
    *(
        Operation(
            handler, "post", f"/v1/printers/{{name}}/{verb}", f"{verb}Printer", summary,
            "printers", "tech",
            answers={
                200: Answer("the printer", PrinterOut), 404: PRINTER_NOT_FOUND,
                503: STORE_UNAVAILABLE, 507: STORAGE_FULL, **TECH,
            },
        )
        for verb, summary, handler in (
            ("pause", "Pause a printer: no new work; the job in hand finishes (tech)",
             printers.pause_printer),
            ("resume", "Resume a paused printer; also clears what only a person can (cannot "
             "report job state, quarantine) (tech)", printers.resume_printer),
        )
    ),
    Operation(
        printers.trust_printer,
        "post", "/v1/printers/{name}/trust", "trustPrinter",
        "Trust the certificate an ipps printer presents now (tech)", "printers", "tech",
        description=(
            "Forgets the pinned certificate fingerprint: the next contact pins the one the "
            "printer presents (after a factory reset made it a new self-signed certificate)."
        ),
        answers={
            200: Answer("the printer", PrinterOut), 404: PRINTER_NOT_FOUND,
            422: problem("`invalid-request`: not an ipps printer, or pinned in the config"),
            503: STORE_UNAVAILABLE, 507: STORAGE_FULL, **TECH,
        },
    ),
    Operation(
        printers.media_loaded,
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
            404: PRINTER_NOT_FOUND, 503: STORE_UNAVAILABLE, 507: STORAGE_FULL, **TECH,
        },
    ),
    Operation(
        printers.drain_printer,
        "post", "/v1/printers/{name}/drain", "drainPrinter",
        "Pause a printer and move its waiting jobs to its pool (tech)", "printers", "tech",
        answers={
            200: Answer("the printer (paused) and the ids of the jobs moved", DrainOut),
            404: PRINTER_NOT_FOUND, 503: STORE_UNAVAILABLE, 507: STORAGE_FULL, **TECH,
        },
    ),
    Operation(
        printers.identify_printer,
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
            400: problem("`malformed-json`: the body is not JSON"),
            404: PRINTER_NOT_FOUND,
            408: problem("`request-timeout`: the body did not arrive within the time limit"),
            409: problem("`identify-unsupported`: the printer has no Identify-Printer"),
            413: problem("`payload-too-large`: the body is over 64 KiB"),
            415: problem("`unsupported-media-type`: a body that is not application/json"),
            422: problem("`invalid-request`: a bad `how` (`errors`)"),
            502: problem("`printer-error`: the printer failed or did not answer"),
            **TECH,
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
            404: PRINTER_NOT_FOUND,
            422: problem("`invalid-request`: `base` is not an http(s) URL with a host (no "
                          "user, query or fragment), or an unknown query parameter (`errors`); "
                          "`sticker-base-loopback`: the base found is loopback (127.0.0.1), "
                          "which phones cannot reach: set `[release] public_url` or pass "
                          "`base`"),
            503: problem("`render-failed`: the render workers could not draw it now",
                          "Retry-After"),
            **TECH,
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
            404: PRINTER_NOT_FOUND,
            422: problem("`invalid-request`: a body was sent (this request takes none)"),
            **TECH,
        },
    ),
    Operation(
        event.get_event,
        "get", "/v1/event", "getEvent", "The event's mode: live or rehearsal (viewer or tech)",
        "operations", "view",
        answers={200: Answer("the mode, since when, the rehearsal's jobs", EventOut),
                 503: STORE_UNAVAILABLE, **VIEW},
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
            409: problem("`already-in-rehearsal`: `mode` is `rehearsal`"),
            422: problem("`invalid-request`: a body was sent (this request takes none)"),
            503: STORE_UNAVAILABLE, 507: STORAGE_FULL, **TECH,
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
            409: problem("`not-in-rehearsal`: `mode` is `live`"),
            422: problem("`invalid-request`: a body was sent (this request takes none)"),
            503: STORE_UNAVAILABLE, 507: STORAGE_FULL, **TECH,
        },
    ),
    Operation(
        printers.dead_letter,
        "get", "/v1/dead-letter", "deadLetter", "DEAD jobs, oldest first (viewer or tech)", "jobs",
        "view", query=("limit", "cursor"),
        answers={
            200: Answer("a page of DEAD jobs with their `dead_reason`", DeadLetterOut),
            422: problem("`invalid-request`: a bad or unknown query parameter (`errors`)"),
            503: STORE_UNAVAILABLE, **VIEW,
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
        answers={200: Answer("the certificate served", ApplianceTlsOut), **TECH},
    ),
    Operation(
        printers.stats,
        "get", "/v1/stats", "getStats",
        "Jobs by state, dead letters by reason, printers in short (viewer or tech)", "operations",
        "view",
        description="What the status page and `edgeprint stats` show; read at the request.",
        answers={200: Answer("the numbers", StatsOut), 503: STORE_UNAVAILABLE, **VIEW},
    ),
    Operation(
        printers.webhook_deliveries,
        "get", "/v1/webhooks/deliveries", "webhookDeliveries",
        "Webhook deliveries parked as failed, oldest first (tech)", "operations", "tech",
        query=("delivery_state", "limit", "cursor"),
        description=(
            "Events a receiver did not take (2xx) within its `max_delivery_s`; they are not "
            "retried. Delivered events are not listed."
        ),
        answers={
            200: Answer("a page of failed deliveries", WebhookDeliveriesOut),
            422: problem("`invalid-request`: a bad or unknown query parameter (`errors`)"),
            503: STORE_UNAVAILABLE, **TECH,
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
        answers={200: Answer("every configured token", TokensOut), **TECH},
    ),
    Operation(
        tokens.this_token,
        "get", "/v1/token", "thisToken",
        "The token this request carries: its name, role and expiry", "operations", "read",
        description="What the status page asks to know whether it may offer actions.",
        answers={200: Answer("this token", TokenOut), **READ},
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
            422: problem("`invalid-request`: a bad or unknown query parameter (`errors`)"),
            503: STORE_UNAVAILABLE, **TECH,
        },
    ),
)
# fmt: on
