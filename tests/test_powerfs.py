"""The power-cut filesystem's model: what survives a cut is exactly what was made durable.

Each test writes through a real FUSE mount (testbed/powerfs.py), cuts, and reads what the
remounted folder holds. The appliance-level runs are in tests/test_powercut.py.
"""

from __future__ import annotations

import errno
import os
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from testbed.powerfs_control import PowerFs, fsync_dir
from tests.polling import eventually_sync
from tests.powerfs_fixtures import powerfs as powerfs


def _write(path: Path, data: bytes, *, sync: bool, flags: int = os.O_CREAT | os.O_WRONLY) -> None:
    fd = os.open(path, flags, 0o644)
    try:
        os.write(fd, data)
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)


def test_unsynced_data_of_a_durable_name_is_gone(powerfs: PowerFs) -> None:
    """Name durable (folder fsync'ed), data never fsync'ed: an empty file after the cut."""
    m = powerfs.mount
    _write(m / "a", b"hello", sync=False)
    fsync_dir(m)
    assert powerfs.stats()["pending_bytes"] == 5
    powerfs.cut()
    assert (m / "a").read_bytes() == b""


def test_fsynced_file_without_folder_fsync_loses_its_name(powerfs: PowerFs) -> None:
    m = powerfs.mount
    _write(m / "kept", b"k", sync=True)
    fsync_dir(m)
    _write(m / "lost", b"data", sync=True)
    assert powerfs.stats()["pending_entries"] == 1
    powerfs.cut()
    assert sorted(os.listdir(m)) == ["kept"]
    assert (m / "kept").read_bytes() == b"k"


def test_only_the_synced_prefix_survives(powerfs: PowerFs) -> None:
    m = powerfs.mount
    _write(m / "log", b"first;", sync=True)
    fsync_dir(m)
    _write(m / "log", b"second", sync=False, flags=os.O_WRONLY | os.O_APPEND)
    assert (m / "log").read_bytes() == b"first;second"  # live: the page cache
    powerfs.cut()
    assert (m / "log").read_bytes() == b"first;"


def test_rename_is_durable_only_after_the_folder_fsync(powerfs: PowerFs) -> None:
    """The spool's protocol: temp file, fsync, rename, fsync folder."""
    m = powerfs.mount
    _write(m / "doc", b"old", sync=True)
    fsync_dir(m)
    _write(m / "doc.tmp", b"new", sync=True)
    os.rename(m / "doc.tmp", m / "doc")
    powerfs.cut()
    assert sorted(os.listdir(m)) == ["doc"]
    assert (m / "doc").read_bytes() == b"old"
    _write(m / "doc.tmp", b"new", sync=True)
    os.rename(m / "doc.tmp", m / "doc")
    fsync_dir(m)
    powerfs.cut()
    assert sorted(os.listdir(m)) == ["doc"]
    assert (m / "doc").read_bytes() == b"new"


def test_unlink_and_truncate_are_pending(powerfs: PowerFs) -> None:
    m = powerfs.mount
    _write(m / "gone", b"still here", sync=True)
    _write(m / "short", b"0123456789", sync=True)
    fsync_dir(m)
    os.unlink(m / "gone")
    os.truncate(m / "short", 3)
    powerfs.cut()
    assert (m / "gone").read_bytes() == b"still here"
    assert (m / "short").read_bytes() == b"0123456789"
    os.truncate(m / "short", 3)
    with open(m / "short", "rb+") as f:
        os.fsync(f.fileno())
    os.unlink(m / "gone")
    fsync_dir(m)
    powerfs.cut()
    assert sorted(os.listdir(m)) == ["short"]
    assert (m / "short").read_bytes() == b"012"


def test_a_new_folder_needs_its_parent_fsynced(powerfs: PowerFs) -> None:
    m = powerfs.mount
    (m / "spool").mkdir()
    _write(m / "spool" / "x", b"x", sync=True)
    fsync_dir(m / "spool")
    powerfs.cut()
    assert os.listdir(m) == []
    (m / "spool").mkdir()
    _write(m / "spool" / "x", b"x", sync=True)
    fsync_dir(m / "spool")
    fsync_dir(m)
    powerfs.cut()
    assert (m / "spool" / "x").read_bytes() == b"x"


def test_half_durable_move_between_folders_keeps_both_names(powerfs: PowerFs) -> None:
    m = powerfs.mount
    (m / "a").mkdir()
    (m / "b").mkdir()
    _write(m / "a" / "f", b"f", sync=True)
    fsync_dir(m / "a")
    fsync_dir(m)
    os.rename(m / "a" / "f", m / "b" / "f")
    fsync_dir(m / "b")
    powerfs.cut()
    assert (m / "a" / "f").read_bytes() == b"f"
    assert (m / "b" / "f").read_bytes() == b"f"


_WRITER = """
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("pragma journal_mode=wal")
db.execute("pragma synchronous=full")
db.execute("create table if not exists t(i integer primary key, pad blob)")
i = db.execute("select count(*) from t").fetchone()[0]
while True:
    db.execute("insert into t values(?, randomblob(3000))", (i,))
    print(i, flush=True)  # acknowledged: committed with synchronous=FULL
    i += 1
"""


def _lines_at_least(path: Path, n: int) -> Callable[[], bool]:
    return lambda: len(path.read_bytes().splitlines()) >= n


def test_sqlite_wal_keeps_every_acknowledged_commit(powerfs: PowerFs, tmp_path: Path) -> None:
    """SQLite in WAL mode, synchronous=FULL, cut 5 times mid-write: no commit lost."""
    db = powerfs.mount / "t.db"
    for cut in range(5):
        out = tmp_path / f"writer{cut}.out"
        with open(out, "wb") as f:
            writer = subprocess.Popen([sys.executable, "-c", _WRITER, str(db)], stdout=f)
        try:
            eventually_sync(_lines_at_least(out, 40 * (cut + 1)), "commits")
            powerfs.cut([writer.pid])
        finally:
            writer.kill()
            writer.wait(timeout=10)
        acked = out.read_bytes().splitlines()
        last = int(acked[-1]) if acked else -1
        con = sqlite3.connect(db)
        try:
            assert con.execute("pragma integrity_check").fetchall() == [("ok",)]
            count = con.execute("select count(*) from t").fetchone()[0]
        finally:
            con.close()
        assert count >= last + 1, (cut, count, last)
    assert powerfs.cuts == 5


def test_fault_modes(powerfs: PowerFs) -> None:
    m = powerfs.mount
    _write(m / "f", b"durable", sync=True)
    fsync_dir(m)
    powerfs.set_mode("erofs")
    for act in (
        lambda: _write(m / "new", b"x", sync=False),
        lambda: _write(m / "f", b"x", sync=False, flags=os.O_WRONLY),
        lambda: os.rename(m / "f", m / "g"),
        lambda: os.unlink(m / "f"),
        lambda: os.mkdir(m / "d"),
    ):
        with pytest.raises(OSError, match="Read-only file system") as e:
            act()
        assert e.value.errno == errno.EROFS
    assert (m / "f").read_bytes() == b"durable"
    powerfs.set_mode("eio")
    fd = os.open(m / "f", os.O_WRONLY)
    try:
        with pytest.raises(OSError, match="Input/output error") as e:
            os.write(fd, b"x")
        assert e.value.errno == errno.EIO
    finally:
        os.close(fd)
    assert powerfs.set_mode("ok")["injected_errors"] == 6


def test_a_failed_fsync_drops_the_pending_data(powerfs: PowerFs) -> None:
    """fsync-eio: the write-back error loses the data; a later fsync does not bring it back."""
    m = powerfs.mount
    _write(m / "f", b"durable", sync=True)
    fsync_dir(m)
    powerfs.set_mode("fsync-eio")
    fd = os.open(m / "f", os.O_WRONLY | os.O_APPEND)
    try:
        os.write(fd, b"+lost")
        with pytest.raises(OSError, match="Input/output error") as e:
            os.fsync(fd)
        assert e.value.errno == errno.EIO
        powerfs.set_mode("ok")
        os.fsync(fd)
    finally:
        os.close(fd)
    assert (m / "f").read_bytes() == b"durable+lost"
    powerfs.cut()
    assert (m / "f").read_bytes() == b"durable"


def test_hard_link_then_unlink_of_the_temporary(powerfs: PowerFs) -> None:
    """release.key's protocol: private temp file, fsync, link in place, unlink, fsync folder."""
    m = powerfs.mount
    _write(m / ".key.tmp", b"secret", sync=True)
    os.link(m / ".key.tmp", m / "key")
    os.unlink(m / ".key.tmp")
    assert os.stat(m / "key").st_nlink == 1
    powerfs.cut()
    assert os.listdir(m) == []
    _write(m / ".key.tmp", b"secret", sync=True)
    os.link(m / ".key.tmp", m / "key")
    os.unlink(m / ".key.tmp")
    fsync_dir(m)
    powerfs.cut()
    assert os.listdir(m) == ["key"]
    assert (m / "key").read_bytes() == b"secret"
