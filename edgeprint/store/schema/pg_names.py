"""PostgreSQL's advisory lock classes, notification channel and version table (fixed names:
appliances in the field and the migrations agree on them)."""

from __future__ import annotations

# Advisory locks are keyed (class, hashtext(current_schema())): one edgeprint store per
# schema, so several stores may share a database in different schemas (the tests do).
#: Class of the advisory lock held while migrating.
MIGRATION_LOCK = 0x6564_7001
#: Class of the advisory lock an appliance holds on its writer connection while it uses the
#: store: exclusive without ``[store] shared`` (one appliance per store), shared with it.
WRITER_LOCK = 0x6564_7002
#: Class of the advisory lock a shared appliance holds on its writer connection, keyed by
#: its ``[cluster] appliance_id`` too: two appliances with one id would renew each other's
#: leases, so the second is refused.
APPLIANCE_LOCK = 0x6564_7004

#: The notification channel of a store: this prefix and the schema's name.
CHANNEL_PREFIX = "edgeprint:"

#: Class of the advisory lock a transaction takes before it writes a webhook_outbox row.
OUTBOX_LOCK = 0x6564_7003

VERSION_TABLE = "CREATE TABLE IF NOT EXISTS schema_version (version integer NOT NULL)"
