"""SQLite's migrations 1-9, in order (:mod:`edgeprint.store.schema.sqlite` appends the rest).

Released migrations never change: their SQL text and order are what the databases in the
field have applied.
"""

from __future__ import annotations

from edgeprint.copies import LIVE_COPY_STATES
from edgeprint.states import ALL_STATES

_STATES_SQL = ", ".join(f"'{s.value}'" for s in ALL_STATES)
#: The copy states migration 5 knew (released migrations never change: this list is frozen;
#: migration 10 brings the CHECK up to :class:`CopyState`).
_COPY_STATES_V5 = (
    "creating",
    "created",
    "sending",
    "acknowledged",
    "cancelling",
    "printed",
    "incomplete",
    "document_error",
    "aborted",
    "cancelled",
    "cancelled_elsewhere",
    "vanished",
    "lost",
    "refused",
)
_COPY_STATES_SQL = ", ".join(f"'{s}'" for s in _COPY_STATES_V5)

_EVENT_COLUMNS = "job_id, at, from_state, to_state, actor, reason, correlation_id"

FIRST: list[list[str]] = [
    # 1: jobs + append-only events
    [
        f"""
        CREATE TABLE jobs (
            seq              INTEGER PRIMARY KEY AUTOINCREMENT,  -- acceptance order (FIFO)
            id               TEXT    NOT NULL UNIQUE,
            idempotency_key  TEXT    NOT NULL UNIQUE,
            request_sha256   TEXT    NOT NULL,                   -- metadata + document digest
            state            TEXT    NOT NULL CHECK (state IN ({_STATES_SQL})),
            owner            TEXT    NOT NULL,
            printer          TEXT,                               -- requested printer
            pool             TEXT,                               -- requested pool
            priority         INTEGER NOT NULL CHECK (priority BETWEEN 0 AND 1000),
            copies           INTEGER NOT NULL CHECK (copies BETWEEN 1 AND 99),
            document_sha256  TEXT    NOT NULL,
            document_bytes   INTEGER NOT NULL CHECK (document_bytes >= 0),
            attempts         INTEGER NOT NULL DEFAULT 0,
            not_before       REAL    NOT NULL DEFAULT 0,         -- unix seconds
            printed_on       TEXT,                               -- printer that holds/printed it
            printer_job_id   INTEGER,                            -- IPP job-id at printed_on
            last_error       TEXT,
            dead_reason      TEXT,
            created_at       REAL    NOT NULL,
            updated_at       REAL    NOT NULL,
            released_at      REAL,
            claimed_at       REAL,
            finished_at      REAL,
            token_name       TEXT    NOT NULL,
            correlation_id   TEXT,
            -- who made the last state change, and why: read by the event triggers
            actor            TEXT    NOT NULL,
            reason           TEXT
        )
        """,
        "CREATE INDEX jobs_by_state ON jobs (state, seq)",
        "CREATE INDEX jobs_by_owner ON jobs (owner, seq)",
        """CREATE INDEX jobs_ready_printer ON jobs (printer, priority, seq)
           WHERE state = 'RELEASED'""",
        """CREATE INDEX jobs_ready_pool ON jobs (pool, priority, seq)
           WHERE state = 'RELEASED'""",
        """
        CREATE TABLE job_events (
            seq             INTEGER PRIMARY KEY AUTOINCREMENT,
            job_id          TEXT NOT NULL,
            at              REAL NOT NULL,
            from_state      TEXT,
            to_state        TEXT NOT NULL,
            actor           TEXT NOT NULL,
            reason          TEXT,
            correlation_id  TEXT
        )
        """,
        "CREATE INDEX job_events_by_job ON job_events (job_id, seq)",
        f"""
        CREATE TRIGGER job_events_on_insert AFTER INSERT ON jobs
        BEGIN
            INSERT INTO job_events ({_EVENT_COLUMNS})
            VALUES (NEW.id, NEW.updated_at, NULL, NEW.state, NEW.actor, NEW.reason,
                    NEW.correlation_id);
        END
        """,
        f"""
        CREATE TRIGGER job_events_on_transition AFTER UPDATE OF state ON jobs
        WHEN OLD.state IS NOT NEW.state
        BEGIN
            INSERT INTO job_events ({_EVENT_COLUMNS})
            VALUES (NEW.id, NEW.updated_at, OLD.state, NEW.state, NEW.actor, NEW.reason,
                    NEW.correlation_id);
        END
        """,
        """
        CREATE TRIGGER job_events_no_update BEFORE UPDATE ON job_events
        BEGIN SELECT RAISE(ABORT, 'job_events is append-only'); END
        """,
        """
        CREATE TRIGGER job_events_no_delete BEFORE DELETE ON job_events
        BEGIN SELECT RAISE(ABORT, 'job_events is append-only'); END
        """,
    ],
]

FIRST.append(
    # 2: the printer boundary (DESIGN §3)
    [
        # NULL: no document sent for this claim; 'sending': the document may be at
        # printed_on; 'truncated': the upload is known to have broken off.
        """ALTER TABLE jobs ADD COLUMN upload TEXT
           CHECK (upload IS NULL OR upload IN ('sending', 'truncated'))""",
        "ALTER TABLE jobs ADD COLUMN cancel_requested INTEGER NOT NULL DEFAULT 0",
        # copies printed from a truncated upload (recorded and counted, docs/decisions/0019)
        "ALTER TABLE jobs ADD COLUMN truncated_copies INTEGER NOT NULL DEFAULT 0",
        # printer copies already recorded as truncated, "<job-id>@<time-at-creation>,…"
        "ALTER TABLE jobs ADD COLUMN discounted_copies TEXT NOT NULL DEFAULT ''",
        # retention: when the document of a terminal job was deleted
        "ALTER TABLE jobs ADD COLUMN document_deleted_at REAL",
        "CREATE INDEX jobs_printing ON jobs (printed_on) WHERE state = 'PRINTING'",
    ]
)

FIRST.append(
    # 3: printer health, failover and the dead-letter queue (DESIGN §4)
    [
        """
        CREATE TABLE printer_flags (
            name        TEXT PRIMARY KEY,
            paused      INTEGER NOT NULL DEFAULT 0,
            updated_at  REAL NOT NULL,
            actor       TEXT NOT NULL
        )
        """,
        # Jobs that left a printer while it may still hold a copy: before the
        # printer gets new work again, any live copy is cancelled (docs/decisions/0017).
        """
        CREATE TABLE fences (
            printer     TEXT NOT NULL,
            job_id      TEXT NOT NULL,
            created_at  REAL NOT NULL,
            PRIMARY KEY (printer, job_id)
        )
        """,
        # the last failure of a print attempt, to tell a bad job from a bad printer
        "ALTER TABLE jobs ADD COLUMN failure_sig TEXT",
        "ALTER TABLE jobs ADD COLUMN failure_printer TEXT",
        "CREATE INDEX jobs_dead ON jobs (seq) WHERE state = 'DEAD'",
        "CREATE INDEX jobs_held_age ON jobs (created_at) WHERE state = 'HELD'",
    ]
)

FIRST.append(
    # 4: hostile input (release PINs, page counts)
    [
        # scrypt hash of the release PIN (edgeprint.pins); NULL: no PIN
        "ALTER TABLE jobs ADD COLUMN release_pin_hash TEXT",
        # PIN attempts since the last lock or success, and the lock's end (unix seconds)
        "ALTER TABLE jobs ADD COLUMN pin_failures INTEGER NOT NULL DEFAULT 0",
        "ALTER TABLE jobs ADD COLUMN pin_locked_until REAL",
        # pages of the PDF as pypdf counted them at submission (NULL: before migration 4)
        "ALTER TABLE jobs ADD COLUMN document_pages INTEGER",
    ]
)

FIRST.append(
    # 5: copies, an explicit state machine for what each printer was handed (DESIGN §3).
    # Replaces jobs.upload, cancel_requested, truncated_copies, discounted_copies and the
    # fences table; what they said is carried over as copies.
    [
        "ALTER TABLE jobs ADD COLUMN claims INTEGER NOT NULL DEFAULT 0",
        f"""
        CREATE TABLE copies (
            id                     INTEGER PRIMARY KEY AUTOINCREMENT,
            job_id                 TEXT    NOT NULL,
            claim                  INTEGER NOT NULL,  -- jobs.claims when made
            printer                TEXT    NOT NULL,
            state                  TEXT    NOT NULL CHECK (state IN ({_COPY_STATES_SQL})),
            operation              TEXT    NOT NULL
                                   CHECK (operation IN ('Create-Job', 'Print-Job')),
            document_format        TEXT    NOT NULL,
            document_bytes         INTEGER NOT NULL CHECK (document_bytes >= 0),
            impressions_expected   INTEGER,           -- pages × copies
            printer_job_id         INTEGER,           -- IPP job-id
            created_s              INTEGER,           -- IPP time-at-creation
            printer_up_s           INTEGER,           -- printer-up-time before Create-Job
            sent_at                REAL,              -- the document started to leave
            acknowledged_at        REAL,              -- the printer answered the upload
            cancel_origin          TEXT CHECK (cancel_origin IN ('edgeprint', 'requested')),
            cancel_sent_at         REAL,
            job_state              INTEGER,           -- as last reported
            job_state_reasons      TEXT    NOT NULL DEFAULT '',
            k_octets               INTEGER,
            impressions_completed  INTEGER,
            outcome                TEXT,              -- why it settled, in words
            actor                  TEXT    NOT NULL,
            created_at             REAL    NOT NULL,
            updated_at             REAL    NOT NULL,
            settled_at             REAL
        )
        """,
        "CREATE INDEX copies_by_job ON copies (job_id, id)",
        """CREATE INDEX copies_open ON copies (printer, id)
           WHERE state IN ('creating', 'created', 'sending', 'acknowledged', 'cancelling')""",
        # what migration 2 and 3 stored becomes copies: a PRINTING job's printer job…
        """
        UPDATE jobs SET claims = 1 WHERE state = 'PRINTING'
        """,
        """
        INSERT INTO copies (job_id, claim, printer, state, operation, document_format,
                            document_bytes, printer_job_id, sent_at, cancel_origin, actor,
                            created_at, updated_at)
        SELECT id, 1, printed_on,
               CASE WHEN upload IS NULL AND printer_job_id IS NOT NULL THEN 'created'
                    WHEN upload IS NULL THEN 'creating'
                    WHEN cancel_requested = 1 THEN 'cancelling'
                    ELSE 'sending' END,
               'Create-Job', 'application/pdf', document_bytes, printer_job_id,
               CASE WHEN upload IS NULL THEN NULL ELSE updated_at END,
               CASE WHEN cancel_requested = 1 THEN 'requested' END,
               'migration', updated_at, updated_at
        FROM jobs WHERE state = 'PRINTING' AND printed_on IS NOT NULL
        """,
        # …and a fence (a printer that may still hold a copy of a job that left it)
        """
        INSERT INTO copies (job_id, claim, printer, state, operation, document_format,
                            document_bytes, sent_at, actor, created_at, updated_at)
        SELECT f.job_id, 0, f.printer, 'sending', 'Create-Job', 'application/pdf',
               COALESCE(j.document_bytes, 0), f.created_at, 'migration', f.created_at,
               f.created_at
        FROM fences f LEFT JOIN jobs j ON j.id = f.job_id
        """,
        "DROP TABLE fences",
        "ALTER TABLE jobs DROP COLUMN upload",
        "ALTER TABLE jobs DROP COLUMN cancel_requested",
        "ALTER TABLE jobs DROP COLUMN truncated_copies",
        "ALTER TABLE jobs DROP COLUMN discounted_copies",
    ]
)

FIRST.append(
    # webhooks (issue 17): an outbox row in the same transaction as the change it reports
    [
        # the event types some [[webhooks]] entry wants (rewritten at start-up): no rows
        # are written for events nobody subscribed to
        "CREATE TABLE webhook_subscriptions (event TEXT PRIMARY KEY)",
        """
        CREATE TABLE webhook_outbox (
            seq      INTEGER PRIMARY KEY AUTOINCREMENT,  -- delivery order
            id       TEXT NOT NULL UNIQUE,               -- webhook-id, the same on every attempt
            type     TEXT NOT NULL,                      -- job.done, printer.unhealthy, …
            at       REAL NOT NULL,                      -- unix seconds of the change
            job_id   TEXT,
            printer  TEXT,
            data     TEXT NOT NULL                       -- JSON object
        )
        """,
        "CREATE INDEX webhook_outbox_by_at ON webhook_outbox (at)",
        # per receiver URL: the last outbox seq delivered (or parked)
        """
        CREATE TABLE webhook_cursors (
            url         TEXT PRIMARY KEY,
            seq         INTEGER NOT NULL,
            updated_at  REAL NOT NULL
        )
        """,
        # deliveries given up after max_delivery_s
        """
        CREATE TABLE webhook_failures (
            seq               INTEGER PRIMARY KEY AUTOINCREMENT,
            url               TEXT NOT NULL,
            event_seq         INTEGER NOT NULL,
            event_id          TEXT NOT NULL,
            type              TEXT NOT NULL,
            job_id            TEXT,
            printer           TEXT,
            attempts          INTEGER NOT NULL,
            first_attempt_at  REAL NOT NULL,
            failed_at         REAL NOT NULL,
            last_error        TEXT NOT NULL,
            UNIQUE (url, event_id)
        )
        """,
        """
        CREATE TRIGGER webhook_outbox_on_job AFTER UPDATE OF state ON jobs
        WHEN OLD.state IS NOT NEW.state
             AND NEW.state IN ('DONE', 'DEAD', 'CANCELLED', 'EXPIRED')
             AND EXISTS (SELECT 1 FROM webhook_subscriptions
                         WHERE event = 'job.' || lower(NEW.state))
        BEGIN
            INSERT INTO webhook_outbox (id, type, at, job_id, printer, data)
            VALUES (
                'msg_' || lower(hex(randomblob(16))), 'job.' || lower(NEW.state),
                NEW.updated_at, NEW.id, coalesce(NEW.printed_on, NEW.printer),
                json_object(
                    'job_id', NEW.id, 'idempotency_key', NEW.idempotency_key,
                    'state', NEW.state, 'from_state', OLD.state, 'owner', NEW.owner,
                    'printer', NEW.printer, 'pool', NEW.pool, 'printed_on', NEW.printed_on,
                    'attempts', NEW.attempts, 'dead_reason', NEW.dead_reason,
                    'last_error', NEW.last_error, 'actor', NEW.actor, 'reason', NEW.reason,
                    'correlation_id', NEW.correlation_id
                )
            );
        END
        """,
    ]
)

FIRST.append(
    # ipps trust on first use (issue 13): the certificate each printer must present
    [
        """
        CREATE TABLE printer_pins (
            printer      TEXT PRIMARY KEY,
            fingerprint  TEXT NOT NULL,   -- sha256:<hex> of the DER certificate (no key material)
            pinned_at    REAL NOT NULL,
            actor        TEXT NOT NULL
        )
        """,
    ]
)

FIRST.append(
    # issue 15 phase 2: at most one live copy per claim of a job (as on PostgreSQL, where
    # several appliances write)
    [
        f"""CREATE UNIQUE INDEX copies_one_live ON copies (job_id, claim)
            WHERE state IN ({", ".join(f"'{s.value}'" for s in sorted(LIVE_COPY_STATES))})""",
    ]
)

FIRST.append(
    # printer leases (issue 15 phase 2): which appliance drives a printer, fenced by epoch.
    # With the SQLite file one appliance owns every printer and no row is written.
    [
        """
        CREATE TABLE printer_leases (
            printer     TEXT PRIMARY KEY,
            owner       TEXT NOT NULL,
            epoch       INTEGER NOT NULL CHECK (epoch >= 1),
            expires_at  REAL NOT NULL     -- the owner's wall clock + lease_s (for people)
        )
        """,
    ]
)
