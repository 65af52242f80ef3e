"""A throw-away PostgreSQL cluster (Debian's ``initdb``/``postgres``) for tests and benchmarks.

Made in a temporary directory and run by ``postgres`` itself on a free loopback port, as an
unprivileged user when run as root (PostgreSQL refuses root); stopped by its pid. Each
:meth:`PostgresCluster.url` is a new schema (``search_path`` in the URL), so users of one
cluster never see each other's rows and no database has to be created.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

#: The user that runs the cluster when run as root.
PG_USER = "nobody"
_DB = "edgeprint"


def find_pg_bin() -> Path | None:
    """The newest ``/usr/lib/postgresql/<major>/bin`` that has initdb, or None."""
    found = sorted(
        (Path(p).parent for p in glob.glob("/usr/lib/postgresql/*/bin/initdb")),
        key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0,
    )
    return found[-1] if found else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class PostgresCluster:
    """One ``postgres`` process over a fresh data directory; :meth:`url` for a fresh schema."""

    def __init__(self, pg_bin: Path, *, durable: bool = False) -> None:
        #: True: the server's default durability (fsync; benchmarks against SQLite's FULL).
        self.durable = durable
        self.pg_bin = pg_bin
        self.root = Path(tempfile.mkdtemp(prefix="edgeprint-pg-"))
        self.data = self.root / "data"
        self.port = _free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        self._as: dict[str, Any] = {}
        if os.geteuid() == 0:
            pw = pwd.getpwnam(PG_USER)
            self._as = {"user": pw.pw_uid, "group": pw.pw_gid, "extra_groups": []}
            os.chown(self.root, pw.pw_uid, pw.pw_gid)

    def _run(self, *args: str) -> None:
        subprocess.run(
            args, check=True, capture_output=True, cwd=self.root, timeout=120, **self._as
        )

    def start(self) -> None:
        """initdb, start ``postgres`` and wait (with a deadline) until it takes connections."""
        self._run(
            str(self.pg_bin / "initdb"), "-D", str(self.data), "-U", "edgeprint",
            "--auth=trust", "--encoding=UTF8", "--locale=C.UTF-8", "--no-sync",
        )  # fmt: skip
        self.launch()
        import psycopg

        with psycopg.connect(self._dsn("postgres"), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {_DB}")

    def launch(self) -> None:
        """Run ``postgres`` on the data directory and wait (with a deadline) for connections."""
        log = open(self.root / "postgres.log", "ab")  # noqa: SIM115 - the server's own log
        # Durability of the test cluster is not under test (SQLite's is, tests/test_durability.py):
        # fsync off keeps the suite fast on a busy machine.
        fast = [] if self.durable else ["-c", "fsync=off", "-c", "full_page_writes=off"]
        self.proc = subprocess.Popen(
            [
                str(self.pg_bin / "postgres"), "-D", str(self.data), "-p", str(self.port),
                "-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=",
                "-c", "max_connections=200", *fast,
            ],
            stdout=log, stderr=subprocess.STDOUT, cwd=self.root, **self._as,
        )  # fmt: skip
        log.close()
        import psycopg

        deadline = time.monotonic() + 60
        while True:
            try:
                with psycopg.connect(self._dsn("postgres"), connect_timeout=2):
                    return
            except psycopg.OperationalError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    text = (self.root / "postgres.log").read_text(errors="replace")
                    raise RuntimeError(f"postgres did not start:\n{text[-3000:]}") from None
                time.sleep(0.05)

    def halt(self) -> None:
        """Stop ``postgres`` (fast shutdown, by pid) and keep the data: :meth:`launch` again."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            self.proc.wait(timeout=30)

    def _dsn(self, db: str) -> str:
        return f"postgresql://edgeprint@127.0.0.1:{self.port}/{db}"

    def url(self) -> str:
        """The URL of a new, empty schema of the test database (search_path set in the URL)."""
        import psycopg

        schema = f"t_{uuid.uuid4().hex[:16]}"
        with psycopg.connect(self._dsn(_DB), autocommit=True) as conn:
            conn.execute(f"CREATE SCHEMA {schema}")
        return f"{self._dsn(_DB)}?options=-csearch_path%3D{schema}"

    def stop(self) -> None:
        """Fast shutdown (SIGINT) by pid, then remove the data directory."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.root, ignore_errors=True)
