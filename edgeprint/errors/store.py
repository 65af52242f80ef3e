"""The store's errors: unavailable (and its transient kinds) and full."""

from __future__ import annotations

from edgeprint.errors.base import EdgeprintError


class StoreError(EdgeprintError):
    """The job store failed (I/O error, disk full, closed)."""


class StoreUnavailable(StoreError):
    """The store cannot take writes right now (closed, I/O error, locked)."""


class StoreTransient(StoreUnavailable):
    """A write failed for a reason that passes by itself (a lost database connection, a disk
    that refuses writes for a while): whoever must record something waits and tries again."""


class StoreReconnecting(StoreTransient):
    """The connection to the database server was lost; the store is reconnecting (PostgreSQL).

    Nothing of the failed call was kept, unless the connection broke during its COMMIT.
    """


class StoreWriteFailed(StoreTransient):
    """The data disk refused a write (read-only: EROFS, SQLITE_READONLY; an I/O error: EIO,
    SQLITE_IOERR): nothing of the failed write was kept; the store probes until the disk
    takes writes again (edgeprint.store.health)."""


class StorageFull(StoreError):
    """The disk holding ``data_dir`` is full; new work cannot be stored."""
