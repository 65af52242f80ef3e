"""PostgreSQL schema and migrations: the same tables as :mod:`edgeprint.store.schema.sqlite`.

``schema_version`` (one row) is the applied migration count, like SQLite's
``PRAGMA user_version``. Each entry of :data:`MIGRATIONS` is applied in one
transaction together with the new version, under an advisory lock so that two
appliances starting at once do not both migrate. Never edit a released
migration: append a new one (and the SQLite one beside it).

Migration 1 is SQLite's migrations 1-7 as they leave the schema: the columns
of ``jobs`` are in the order of :class:`~edgeprint.store.jobs.JobRecord`, the
events and the webhook outbox are written by PL/pgSQL triggers in the same
statement as the change, and ``job_events`` refuses UPDATE and DELETE.
Differences in types only: SQLite's REAL is ``double precision``, INTEGER is
``bigint``, AUTOINCREMENT is an identity column. One table more: ``documents``
(the job documents in the database, see :mod:`edgeprint.store.documents`).
"""

from __future__ import annotations

from edgeprint.copies import CopyState
from edgeprint.store.schema import postgres_first
from edgeprint.store.schema.pg_names import OUTBOX_LOCK

_COPY_STATES_NOW_SQL = ", ".join(f"'{s.value}'" for s in CopyState)

MIGRATIONS: list[list[str]] = list(postgres_first.FIRST)

MIGRATIONS.append(
    # printer leases (issue 15 phase 2; SQLite's migration 9): which appliance drives a
    # printer; every write of its worker is fenced by (owner, epoch).
    [
        """
        CREATE TABLE printer_leases (
            printer     text PRIMARY KEY,
            owner       text NOT NULL,
            epoch       bigint NOT NULL CHECK (epoch >= 1),
            expires_at  double precision NOT NULL
        )
        """,
    ]
)

MIGRATIONS.append(
    # webhook_outbox.seq from one sequence only: the identity's default drew a value before
    # the commit-order trigger drew its own, so seqs went 2, 4, 6 (harmless gaps, but the
    # outbox's numbers should be SQLite's). The trigger now owns a sequence of its own.
    [
        "CREATE SEQUENCE webhook_outbox_commit_seq OWNED BY webhook_outbox.seq",
        """
        SELECT setval('webhook_outbox_commit_seq',
                      COALESCE((SELECT max(seq) FROM webhook_outbox), 0) + 1, false)
        """,
        "ALTER TABLE webhook_outbox ALTER COLUMN seq DROP IDENTITY",
        f"""
        CREATE OR REPLACE FUNCTION webhook_outbox_in_commit_order() RETURNS trigger
        LANGUAGE plpgsql AS $$
        BEGIN
            PERFORM pg_advisory_xact_lock({OUTBOX_LOCK}, hashtext(current_schema()));
            NEW.seq := nextval('webhook_outbox_commit_seq');
            RETURN NEW;
        END
        $$
        """,
    ]
)

MIGRATIONS.append(
    # issue 22 (SQLite's migration 10): printer epochs and the evidence model
    [
        "ALTER TABLE copies DROP CONSTRAINT copies_state_check",
        "ALTER TABLE copies ADD CONSTRAINT copies_state_check "
        f"CHECK (state IN ({_COPY_STATES_NOW_SQL}))",
        "ALTER TABLE copies ADD COLUMN epoch bigint",
        "ALTER TABLE copies ADD COLUMN settled_by text",
        "ALTER TABLE copies ADD COLUMN job_uuid text",
        "ALTER TABLE copies ADD COLUMN created_dt text",
        "ALTER TABLE copies ADD COLUMN written_at double precision",
        "ALTER TABLE copies ADD COLUMN sheets_completed bigint",
        "ALTER TABLE jobs ADD COLUMN settled_by text",
        "ALTER TABLE jobs ADD COLUMN pages_printed bigint",
        "ALTER TABLE jobs ADD COLUMN from_page bigint",
        """
        CREATE TABLE printer_epochs (
            printer             text PRIMARY KEY,
            epoch               bigint NOT NULL CHECK (epoch >= 1),
            began_at            double precision NOT NULL,
            cause               text NOT NULL,
            up_time_s           bigint,
            seen_at             double precision NOT NULL,
            boot_id             text NOT NULL,
            boot_s              double precision NOT NULL,
            printer_uuid        text,
            config_change_time  bigint,
            config_change_dt    text
        )
        """,
        """
        CREATE TABLE printer_traits (
            printer     text PRIMARY KEY,
            traits      text NOT NULL,
            updated_at  double precision NOT NULL
        )
        """,
    ]
)

MIGRATIONS.append(
    # issue 23 (stock): the sizes of a job's pages (hundredths of a millimetre, short and
    # long edge, smallest and largest over its pages; NULL: not known) and why a released
    # job waits (no printer of its target has fitting stock ready)
    [
        "ALTER TABLE jobs ADD COLUMN page_short_min bigint",
        "ALTER TABLE jobs ADD COLUMN page_short_max bigint",
        "ALTER TABLE jobs ADD COLUMN page_long_min bigint",
        "ALTER TABLE jobs ADD COLUMN page_long_max bigint",
        "ALTER TABLE jobs ADD COLUMN waiting_reason text",
        # 1: its first page is wider than tall (how its size is said: a 4×3 in badge)
        "ALTER TABLE jobs ADD COLUMN page_landscape bigint",
    ]
)

MIGRATIONS.append(
    # issue 23 (preflight): rehearsal jobs and the event mode
    [
        "ALTER TABLE jobs ADD COLUMN rehearsal bigint NOT NULL DEFAULT 0",
        """
        CREATE TABLE event_mode (
            id           bigint PRIMARY KEY CHECK (id = 1),
            mode         text   NOT NULL CHECK (mode IN ('live', 'rehearsal')),
            since        double precision,
            actor        text   NOT NULL,
            config_mode  text
        )
        """,
        "INSERT INTO event_mode (id, mode, since, actor) VALUES (1, 'live', NULL, 'install')",
    ]
)

MIGRATIONS.append(
    # issue 23 (supplies; SQLite's printer_rolls): each label printer's roll (runway)
    [
        """
        CREATE TABLE printer_rolls (
            printer     text PRIMARY KEY,
            printed     bigint NOT NULL CHECK (printed >= 0),
            changed_at  double precision,
            media       text,
            empty       smallint NOT NULL CHECK (empty IN (0, 1)),
            updated_at  double precision NOT NULL
        )
        """,
    ]
)

MIGRATIONS.append(
    # issue 23 (zpl; SQLite's the same): the format a job's document was accepted in
    [
        "ALTER TABLE jobs ADD COLUMN document_format text NOT NULL DEFAULT 'application/pdf'",
    ]
)

MIGRATIONS.append(
    # issue 24 (reprints; SQLite's the same): the original a reprint was made from
    [
        "ALTER TABLE jobs ADD COLUMN reprint_of text",
        "CREATE INDEX jobs_reprints ON jobs (reprint_of, seq) WHERE reprint_of IS NOT NULL",
    ]
)

MIGRATIONS.append(
    # issue 24 (SQLite's the same): owners' release credentials, the store's lookup key,
    # wrong credentials per client address
    [
        """
        CREATE TABLE owner_credentials (
            owner       text NOT NULL,
            kind        text NOT NULL CHECK (kind IN ('code', 'card')),
            lookup      text NOT NULL UNIQUE,
            hash        text NOT NULL,
            actor       text NOT NULL,
            updated_at  double precision NOT NULL,
            PRIMARY KEY (owner, kind)
        )
        """,
        """
        CREATE TABLE release_key (
            id          bigint PRIMARY KEY CHECK (id = 1),
            key         text NOT NULL,
            created_at  double precision NOT NULL
        )
        """,
        """
        CREATE TABLE release_attempts (
            address       text PRIMARY KEY,
            failures      bigint NOT NULL CHECK (failures >= 0),
            locked_until  double precision,
            last_failure_at  double precision,  -- when the latest try was counted
            previous_failure_at  double precision  -- the one before it
        )
        """,
    ]
)

MIGRATIONS.append(
    # issue 24 (titles; SQLite's the same): what a person knows a job by
    [
        "ALTER TABLE jobs ADD COLUMN title text",
    ]
)

MIGRATIONS.append(
    # issue 26 (who did what; SQLite's the same): the audit trail
    [
        """
        CREATE TABLE audit (
            id           bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
            at           double precision NOT NULL,
            actor        text NOT NULL,
            actor_kind   text NOT NULL
                CHECK (actor_kind IN ('token', 'ipp-user', 'owner', 'system')),
            source       text,
            action       text NOT NULL,
            target_kind  text NOT NULL,
            target       text NOT NULL,
            outcome      text NOT NULL CHECK (outcome IN ('done', 'conflict', 'refused')),
            detail       text NOT NULL DEFAULT ''
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
            id  integer PRIMARY KEY CHECK (id = 1),
            at  double precision NOT NULL
        )
        """,
    ]
)

MIGRATIONS.append(
    # issue 27 (clocks that jump; SQLite's the same): the run clock, shared by every appliance
    # on this store (each adopts the row when it is ahead), and jobs' run-clock ages
    [
        """
        CREATE TABLE store_clock (
            id     bigint PRIMARY KEY CHECK (id = 1),
            run_s  double precision NOT NULL
        )
        """,
        "INSERT INTO store_clock (id, run_s) VALUES (1, extract(epoch FROM clock_timestamp()))",
        "ALTER TABLE jobs ADD COLUMN created_run double precision",
        "ALTER TABLE jobs ADD COLUMN finished_run double precision",
        "UPDATE jobs SET created_run = created_at, finished_run = finished_at",
        "CREATE INDEX jobs_held_run ON jobs (created_run) WHERE state = 'HELD'",
    ]
)

MIGRATIONS.append(
    # issue 27 (SQLite's the same): a released job's wait on the run clock
    [
        "ALTER TABLE jobs ADD COLUMN released_run double precision",
        "UPDATE jobs SET released_run = released_at",
    ]
)

SCHEMA_VERSION = len(MIGRATIONS)
