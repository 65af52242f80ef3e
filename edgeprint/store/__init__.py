"""The job store, the only truth (DESIGN §1, §6): SQLite by default, or PostgreSQL.

:class:`Store` is the SQLite engine; :mod:`edgeprint.store.interface` is what
both engines offer; :func:`edgeprint.store.backends.from_config` picks one.
"""

from edgeprint.records import JobRecord
from edgeprint.store.db import Store

__all__ = ["JobRecord", "Store"]
