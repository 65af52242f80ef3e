"""The tests' PostgreSQL cluster (:mod:`testbed.pg`), and the store fixtures over both backends.

Registered from tests/conftest.py (``pytest_plugins``). The cluster is made
once per session and stopped by its pid at the end. Each test gets a schema
of its own (``search_path`` in the URL), so tests never see each other's rows.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from edgeprint.store import Store as SqliteStore
from edgeprint.store.interface import Store
from edgeprint.store.memory import MemoryStore
from testbed.pg import PostgresCluster as PostgresCluster
from testbed.pg import find_pg_bin
from tests.rig_fixtures import in_ci

#: Backends every conformance test runs on (memory: the service unit tests' store,
#: edgeprint.store.memory, held to the same conformance).
BACKENDS = ("sqlite", "postgresql", "memory")

#: The backends that outlive their process: a test of what survives a close or is shared by
#: two stores on one database takes ``only_durable`` (memory has neither).
DURABLE = ("sqlite", "postgresql")
only_durable = pytest.mark.parametrize("backend", DURABLE, indirect=True)


def require_postgresql() -> Path:
    """PostgreSQL's bin directory; skip (locally) or fail (in CI) when it is not installed."""
    pg_bin = find_pg_bin()
    if pg_bin is not None:
        return pg_bin
    why = "PostgreSQL not found: install the Debian package postgresql"
    if in_ci():
        pytest.fail(f"{why}; CI is set, so this is a failure, not a skip", pytrace=False)
    pytest.skip(f"{why}; set CI=1 to make this a failure")


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresCluster]:
    """The session's PostgreSQL cluster (started on first use)."""
    cluster = PostgresCluster(require_postgresql())
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def pg_url(postgres: PostgresCluster) -> str:
    """A PostgreSQL URL whose schema is new and empty."""
    return postgres.url()


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """The name of the backend a conformance test runs on (each test runs on each)."""
    name: str = request.param
    return name


def make_store(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> Store:
    """An unopened store of ``backend``: a SQLite file in ``tmp_path``, a fresh schema or
    an in-memory database."""
    if backend == "sqlite":
        return SqliteStore(tmp_path / "t.sqlite3")
    if backend == "memory":
        return MemoryStore()
    from edgeprint.store.postgres import PostgresStore

    cluster: PostgresCluster = request.getfixturevalue("postgres")
    return PostgresStore(cluster.url())


@pytest.fixture
async def store(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> AsyncIterator[Store]:
    """An open store of each backend in turn (tests that take it run twice)."""
    s = make_store(backend, tmp_path, request)
    await s.open()
    try:
        yield s
    finally:
        with contextlib.suppress(Exception):
            await s.close()
