"""Which store backend a config asks for: the SQLite file (default) or PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from edgeprint.config import StoreConfig
from edgeprint.store import db, interface


def from_config(
    config: StoreConfig,
    sqlite_path: Path,
    *,
    appliance_id: str | None = None,
    on_commit: Callable[[int], object] | None = None,
) -> interface.Store:
    """The (unopened) store of ``config``: PostgreSQL at ``url``, else SQLite at ``sqlite_path``;
    ``appliance_id`` (a shared store's ``[cluster] appliance_id``) is held by this store
    alone while it is open; ``on_commit`` hears the statement count of every committed group
    commit."""
    if config.url is None:
        return db.Store(
            sqlite_path,
            synchronous=config.synchronous,
            busy_timeout_ms=config.busy_timeout_ms,
            max_batch=config.max_batch,
            on_commit=on_commit,
        )
    from edgeprint.store import postgres  # psycopg is imported only when it is used

    return postgres.PostgresStore(
        config.url,
        max_batch=config.max_batch,
        readers=config.readers,
        connect_timeout_s=config.connect_timeout_s,
        query_timeout_s=config.query_timeout_s,
        exclusive=not config.shared,
        appliance_id=appliance_id if config.shared else None,
        on_commit=on_commit,
    )


async def write_probe(store: interface.Store) -> None:
    """A write that changes nothing, through the writer: ``/readyz`` asks whether one goes
    through now. Raises errors.StoreError."""
    await store.write("SELECT 1")
