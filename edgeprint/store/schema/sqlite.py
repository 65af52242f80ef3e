"""Schema and migrations. ``PRAGMA user_version`` is the applied migration count.

Each entry of :data:`MIGRATIONS` is a list of statements applied in one
``BEGIN IMMEDIATE`` transaction together with the new ``user_version``. Never
edit a released migration: append a new one.

The ``job_events`` rows are written by triggers, so every state change and
its event row are one statement in one transaction by construction, and the
table refuses UPDATE and DELETE (append-only).
"""

from __future__ import annotations

from edgeprint.copies import LIVE_COPY_STATES, CopyState
from edgeprint.store.schema import sqlite_first

_COPY_STATES_NOW_SQL = ", ".join(f"'{s.value}'" for s in CopyState)

MIGRATIONS: list[list[str]] = list(sqlite_first.FIRST)

#: The columns of ``copies`` up to migration 9 (what migration 10 carries over).
_COPY_COLUMNS_V9 = (
    "id, job_id, claim, printer, state, operation, document_format, document_bytes, "
    "impressions_expected, printer_job_id, created_s, printer_up_s, sent_at, acknowledged_at, "
    "cancel_origin, cancel_sent_at, job_state, job_state_reasons, k_octets, "
    "impressions_completed, outcome, actor, created_at, updated_at, settled_at"
)
_LIVE_COPIES_SQL = ", ".join(f"'{s.value}'" for s in sorted(LIVE_COPY_STATES))

MIGRATIONS.append(
    # issue 22: printer epochs and the evidence model. Copies gain the states partial and
    # unverified (SQLite changes a CHECK by rebuilding the table), the epoch they were made
    # in, the evidence that settled them and what survives a printer's restart; jobs the
    # evidence that settled them and the pages that came out; each printer its epoch and
    # its learnt traits.
    [
        f"""
        CREATE TABLE copies_v10 (
            id                     INTEGER PRIMARY KEY AUTOINCREMENT,
            job_id                 TEXT    NOT NULL,
            claim                  INTEGER NOT NULL,
            printer                TEXT    NOT NULL,
            state                  TEXT    NOT NULL CHECK (state IN ({_COPY_STATES_NOW_SQL})),
            operation              TEXT    NOT NULL
                                   CHECK (operation IN ('Create-Job', 'Print-Job')),
            document_format        TEXT    NOT NULL,
            document_bytes         INTEGER NOT NULL CHECK (document_bytes >= 0),
            impressions_expected   INTEGER,
            printer_job_id         INTEGER,
            created_s              INTEGER,
            printer_up_s           INTEGER,
            sent_at                REAL,
            acknowledged_at        REAL,
            cancel_origin          TEXT CHECK (cancel_origin IN ('edgeprint', 'requested')),
            cancel_sent_at         REAL,
            job_state              INTEGER,
            job_state_reasons      TEXT    NOT NULL DEFAULT '',
            k_octets               INTEGER,
            impressions_completed  INTEGER,
            outcome                TEXT,
            actor                  TEXT    NOT NULL,
            created_at             REAL    NOT NULL,
            updated_at             REAL    NOT NULL,
            settled_at             REAL,
            epoch                  INTEGER,           -- the printer's epoch when made
            settled_by             TEXT,              -- evidence.Evidence that settled it
            job_uuid               TEXT,              -- IPP job-uuid
            created_dt             TEXT,              -- IPP date-time-at-creation
            written_at             REAL,              -- the whole upload request was handed over
            sheets_completed       INTEGER            -- IPP job-media-sheets-completed
        )
        """,
        f"INSERT INTO copies_v10 ({_COPY_COLUMNS_V9}) SELECT {_COPY_COLUMNS_V9} FROM copies",
        "DROP TABLE copies",
        "ALTER TABLE copies_v10 RENAME TO copies",
        "CREATE INDEX copies_by_job ON copies (job_id, id)",
        f"CREATE INDEX copies_open ON copies (printer, id) WHERE state IN ({_LIVE_COPIES_SQL})",
        f"""CREATE UNIQUE INDEX copies_one_live ON copies (job_id, claim)
            WHERE state IN ({_LIVE_COPIES_SQL})""",
        "ALTER TABLE jobs ADD COLUMN settled_by TEXT",
        "ALTER TABLE jobs ADD COLUMN pages_printed INTEGER",
        "ALTER TABLE jobs ADD COLUMN from_page INTEGER",  # print only the rest, from this page
        """
        CREATE TABLE printer_epochs (
            printer             TEXT PRIMARY KEY,
            epoch               INTEGER NOT NULL CHECK (epoch >= 1),
            began_at            REAL    NOT NULL,
            cause               TEXT    NOT NULL,
            up_time_s           INTEGER,          -- printer-up-time at the last reading
            seen_at             REAL    NOT NULL, -- wall clock of that reading
            boot_id             TEXT    NOT NULL, -- the box's boot then
            boot_s              REAL    NOT NULL, -- CLOCK_BOOTTIME then
            printer_uuid        TEXT,
            config_change_time  INTEGER,
            config_change_dt    TEXT              -- printer-config-change-date-time
        )
        """,
        """
        CREATE TABLE printer_traits (
            printer     TEXT PRIMARY KEY,
            traits      TEXT NOT NULL,   -- JSON: personality.Traits.as_json()
            updated_at  REAL NOT NULL
        )
        """,
    ]
)

MIGRATIONS.append(
    # issue 23 (stock): the sizes of a job's pages (hundredths of a millimetre, short and
    # long edge, smallest and largest over its pages; NULL: not known) and why a released
    # job waits (no printer of its target has fitting stock ready)
    [
        "ALTER TABLE jobs ADD COLUMN page_short_min INTEGER",
        "ALTER TABLE jobs ADD COLUMN page_short_max INTEGER",
        "ALTER TABLE jobs ADD COLUMN page_long_min INTEGER",
        "ALTER TABLE jobs ADD COLUMN page_long_max INTEGER",
        "ALTER TABLE jobs ADD COLUMN waiting_reason TEXT",
        # 1: its first page is wider than tall (how its size is said: a 4×3 in badge)
        "ALTER TABLE jobs ADD COLUMN page_landscape INTEGER",
    ]
)

MIGRATIONS.append(
    # issue 23 (preflight): rehearsal. A job made while the event is in rehearsal says so for
    # ever (``rehearsal``, set by the INSERT from ``event_mode`` in the same statement); the
    # one-row ``event_mode`` holds the mode, since when, who set it, and the config's
    # ``[event] mode`` last applied (the config acts only when that value changes).
    [
        "ALTER TABLE jobs ADD COLUMN rehearsal INTEGER NOT NULL DEFAULT 0",
        """
        CREATE TABLE event_mode (
            id           INTEGER PRIMARY KEY CHECK (id = 1),
            mode         TEXT    NOT NULL CHECK (mode IN ('live', 'rehearsal')),
            since        REAL,              -- unix seconds; NULL: live since the store began
            actor        TEXT    NOT NULL,
            config_mode  TEXT               -- the [event] mode last applied at a start
        )
        """,
        "INSERT INTO event_mode (id, mode, since, actor) VALUES (1, 'live', NULL, 'install')",
    ]
)

MIGRATIONS.append(
    # issue 23 (supplies): each label printer's roll, counted since it was changed (runway)
    [
        """
        CREATE TABLE printer_rolls (
            printer     TEXT PRIMARY KEY,
            printed     INTEGER NOT NULL CHECK (printed >= 0), -- labels since the change
            changed_at  REAL,             -- when the roll was changed; NULL: not seen yet
            media       TEXT,             -- JSON list: the media-ready last seen
            empty       INTEGER NOT NULL CHECK (empty IN (0, 1)), -- said media-empty last
            updated_at  REAL NOT NULL
        )
        """,
    ]
)

MIGRATIONS.append(
    # issue 23 (zpl): the format a job's document was accepted in. A raw label language
    # (ZPL) is sent unchanged, and only printers that take it may claim the job.
    [
        "ALTER TABLE jobs ADD COLUMN document_format TEXT NOT NULL DEFAULT 'application/pdf'",
    ]
)

MIGRATIONS.append(
    # issue 24 (reprints): a reprint is a new job made from a DONE one, on purpose; it names
    # its original (the original's ``reprints`` are the jobs naming it: the index below).
    # Counting them is how ``[release] max_reprints`` is held, in the insert's own statement.
    [
        "ALTER TABLE jobs ADD COLUMN reprint_of TEXT",
        "CREATE INDEX jobs_reprints ON jobs (reprint_of, seq) WHERE reprint_of IS NOT NULL",
    ]
)

MIGRATIONS.append(
    # issue 24 (release where you stand): owners' release codes and cards, stored only as
    # hashes. ``lookup`` is HMAC-SHA256 under ``release_key`` (one random key per store),
    # so a credential alone finds its one row (codes and cards are one namespace, unique
    # across owners); ``hash`` is the salted scrypt that verifies it (edgeprint.pins).
    # ``release_attempts``: wrong credentials per client address, counted before the check.
    [
        """
        CREATE TABLE owner_credentials (
            owner       TEXT NOT NULL,
            kind        TEXT NOT NULL CHECK (kind IN ('code', 'card')),
            lookup      TEXT NOT NULL UNIQUE,
            hash        TEXT NOT NULL,
            actor       TEXT NOT NULL,
            updated_at  REAL NOT NULL,
            PRIMARY KEY (owner, kind)
        )
        """,
        """
        CREATE TABLE release_key (
            id          INTEGER PRIMARY KEY CHECK (id = 1),
            key         TEXT NOT NULL,      -- hex of 32 random bytes
            created_at  REAL NOT NULL
        )
        """,
        """
        CREATE TABLE release_attempts (
            address       TEXT PRIMARY KEY,
            failures      INTEGER NOT NULL CHECK (failures >= 0),
            locked_until  REAL,
            last_failure_at  REAL,  -- when the latest try was counted
            previous_failure_at  REAL  -- the one before it
        )
        """,
    ]
)

MIGRATIONS.append(
    # issue 24 (titles): what a person knows a job by on the release page: given with the
    # submission, else the PDF's /Title, an IPP job-name or an uploaded file's name; NULL:
    # none. A reprint keeps its original's.
    [
        "ALTER TABLE jobs ADD COLUMN title TEXT",
    ]
)

MIGRATIONS.append(
    # issue 26 (who did what): the audit trail, one row per action asked for
    # (edgeprint.store.audit).
    # ``actor_kind``: token (a bearer token's name), ipp-user (IPP Basic user or
    # requesting-user-name), owner (whose code, card or PIN was used), system (a signal).
    [
        """
        CREATE TABLE audit (
            id           INTEGER PRIMARY KEY AUTOINCREMENT,
            at           REAL NOT NULL,
            actor        TEXT NOT NULL,
            actor_kind   TEXT NOT NULL
                CHECK (actor_kind IN ('token', 'ipp-user', 'owner', 'system')),
            source       TEXT,             -- the peer address (no proxy header); NULL: none
            action       TEXT NOT NULL,
            target_kind  TEXT NOT NULL,    -- job, printer, owner, pool, jobs, event, config
            target       TEXT NOT NULL,
            outcome      TEXT NOT NULL CHECK (outcome IN ('done', 'conflict', 'refused')),
            detail       TEXT NOT NULL DEFAULT ''
        )
        """,
        "CREATE INDEX audit_at ON audit (at)",
    ]
)

MIGRATIONS.append(
    # issue 27 (a disk that stops taking writes): one row the store-health probe rewrites
    # while writes fail, to see when the disk takes them again (edgeprint.store.health).
    [
        """
        CREATE TABLE store_probe (
            id  INTEGER PRIMARY KEY CHECK (id = 1),
            at  REAL NOT NULL
        )
        """,
    ]
)

MIGRATIONS.append(
    # issue 27 (clocks that jump): the run clock (edgeprint.clock), seconds the appliance was
    # running, which no wall-clock step moves. Seeded with the unix time now, so every stored
    # ``not_before`` stays meaningful; jobs' ages for the hold TTL and retention are counted
    # on it from ``created_run``/``finished_run`` (their wall-clock times stay for people).
    [
        """
        CREATE TABLE store_clock (
            id     INTEGER PRIMARY KEY CHECK (id = 1),
            run_s  REAL NOT NULL
        )
        """,
        "INSERT INTO store_clock (id, run_s) VALUES (1, (julianday('now') - 2440587.5) * 86400.0)",
        "ALTER TABLE jobs ADD COLUMN created_run REAL",
        "ALTER TABLE jobs ADD COLUMN finished_run REAL",
        "UPDATE jobs SET created_run = created_at, finished_run = finished_at",
        "CREATE INDEX jobs_held_run ON jobs (created_run) WHERE state = 'HELD'",
    ]
)

MIGRATIONS.append(
    # issue 27: how long a released job has waited, on the run clock (the oldest-waiting age
    # and release-to-completed; a wall-clock step showed as waiting time)
    [
        "ALTER TABLE jobs ADD COLUMN released_run REAL",
        "UPDATE jobs SET released_run = released_at",
    ]
)

SCHEMA_VERSION = len(MIGRATIONS)
