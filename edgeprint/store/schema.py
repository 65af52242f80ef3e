"""Schema and migrations. ``PRAGMA user_version`` is the applied migration count.

Each entry of :data:`MIGRATIONS` is a list of statements applied in one
``BEGIN IMMEDIATE`` transaction together with the new ``user_version``. Never
edit a released migration: append a new one.

The ``job_events`` rows are written by triggers, so every state change and
its event row are one statement in one transaction by construction, and the
table refuses UPDATE and DELETE (append-only).
"""

from __future__ import annotations

from edgeprint.copies import CopyState
from edgeprint.states import ALL_STATES

_STATES_SQL = ", ".join(f"'{s.value}'" for s in ALL_STATES)
_COPY_STATES_SQL = ", ".join(f"'{s.value}'" for s in CopyState)

_EVENT_COLUMNS = "job_id, at, from_state, to_state, actor, reason, correlation_id"

MIGRATIONS: list[list[str]] = [
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

MIGRATIONS.append(
    # 2: the printer boundary (DESIGN §3)
    [
        # NULL: no document sent for this claim; 'sending': the document may be at
        # printed_on; 'truncated': the upload is known to have broken off.
        """ALTER TABLE jobs ADD COLUMN upload TEXT
           CHECK (upload IS NULL OR upload IN ('sending', 'truncated'))""",
        "ALTER TABLE jobs ADD COLUMN cancel_requested INTEGER NOT NULL DEFAULT 0",
        # copies printed from a truncated upload (recorded and counted, DESIGN §3.7)
        "ALTER TABLE jobs ADD COLUMN truncated_copies INTEGER NOT NULL DEFAULT 0",
        # printer copies already recorded as truncated, "<job-id>@<time-at-creation>,…"
        "ALTER TABLE jobs ADD COLUMN discounted_copies TEXT NOT NULL DEFAULT ''",
        # retention: when the document of a terminal job was deleted
        "ALTER TABLE jobs ADD COLUMN document_deleted_at REAL",
        "CREATE INDEX jobs_printing ON jobs (printed_on) WHERE state = 'PRINTING'",
    ]
)

MIGRATIONS.append(
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
        # printer gets new work again, any live copy is cancelled (DESIGN §3.6).
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

MIGRATIONS.append(
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

MIGRATIONS.append(
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

SCHEMA_VERSION = len(MIGRATIONS)
