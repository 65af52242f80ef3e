"""The job store: SQLite, the only truth (DESIGN §1, §6)."""

from edgeprint.store.db import Store
from edgeprint.store.jobs import JobRecord

__all__ = ["JobRecord", "Store"]
