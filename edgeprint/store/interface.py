"""What the query modules ask of a store: the interface both backends implement.

The query modules (jobs, copies, outbox, stats) hold one SQL text per
statement, written with ``?`` placeholders in the subset of SQL that SQLite
and PostgreSQL share; a backend translates what it must once, at prepare time
(:mod:`edgeprint.store.postgres` turns ``?`` into its own placeholder).

Both backends give the same guarantees: a write is durable when it returns;
the statements of one :meth:`Store.write_many` apply all or none; a statement
that fails fails only its caller; the rows of ``RETURNING`` come back with the
write; a read sees every write that returned before it started.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Literal, Protocol

Params = tuple[Any, ...]

#: The name of a backend's SQL dialect, for the few statements whose text must differ.
Dialect = Literal["sqlite", "postgresql"]


class Row(Protocol):
    """One result row: by position (``row[0]``), by column name (``row["state"]``), iterable."""

    def __getitem__(self, key: int | str, /) -> Any: ...

    def __iter__(self) -> Iterator[Any]: ...

    def __len__(self) -> int: ...

    def keys(self) -> list[str]: ...


Rows = Sequence[Row]


class Store(Protocol):
    """A job store: open it, read and write SQL, close it.

    Every method raises :class:`edgeprint.errors.StoreError` (StorageFull when
    nothing could be stored for lack of space, else StoreUnavailable).
    """

    @property
    def dialect(self) -> Dialect:
        """Which SQL dialect the store speaks."""
        ...

    async def open(self) -> None:
        """Connect and apply pending migrations; raises errors.StoreUnavailable."""
        ...

    async def close(self) -> None:
        """Finish queued writes and disconnect."""
        ...

    async def read(self, sql: str, params: Params = ()) -> Rows:
        """Run one read-only statement."""
        ...

    async def write(self, sql: str, params: Params = ()) -> Rows:
        """Run one statement; its rows once it is durable."""
        ...

    async def write_many(self, statements: list[tuple[str, Params]]) -> Sequence[Rows]:
        """Run the statements all or none; each one's rows once they are durable."""
        ...
