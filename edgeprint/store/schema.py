"""Schema and migrations. ``PRAGMA user_version`` is the applied migration count.

Each entry of :data:`MIGRATIONS` is a list of statements applied in one
``BEGIN IMMEDIATE`` transaction together with the new ``user_version``. Never
edit a released migration: append a new one.

The ``job_events`` rows are written by triggers, so every state change and
its event row are one statement in one transaction by construction, and the
table refuses UPDATE and DELETE (append-only).
"""

from __future__ import annotations

from edgeprint.states import ALL_STATES

_STATES_SQL = ", ".join(f"'{s.value}'" for s in ALL_STATES)

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

SCHEMA_VERSION = len(MIGRATIONS)
