"""Defects the power-cut filesystem found (issue 27 §1), each with the cut that shows it.

Every test writes through powerfs (testbed/powerfs.py): at a cut, file data and folder
entries that were never fsync'ed are gone, as after a real power loss.
"""

from __future__ import annotations

import datetime
import os
from pathlib import Path
from typing import Any

import pytest

from edgeprint import certificates, setup
from edgeprint.config import SELF_SIGNED_CERT, SELF_SIGNED_KEY
from edgeprint.spool import Spool
from testbed.powerfs_control import PowerFs, fsync_dir
from tests.powerfs_fixtures import powerfs as powerfs

NOW = datetime.datetime(2026, 12, 7, tzinfo=datetime.UTC)


def test_a_self_signed_pair_survives_a_cut(powerfs: PowerFs) -> None:
    """The pair made at first start (tls = "self-signed") is durable once made: before the
    fix its renames were never fsync'ed, and a cut took it (a new fingerprint for every
    kiosk that pinned the old one) — or took the certificate and left the key, and the
    appliance would not start."""
    m = powerfs.mount
    made = certificates.make_self_signed(m / SELF_SIGNED_CERT, m / SELF_SIGNED_KEY, ["127.0.0.1"])
    powerfs.cut()
    assert sorted(os.listdir(m)) == [SELF_SIGNED_CERT, SELF_SIGNED_KEY]
    loaded = certificates.load(m / SELF_SIGNED_CERT, m / SELF_SIGNED_KEY)
    assert loaded.fingerprint == made.fingerprint


def test_the_spool_folder_survives_a_cut(powerfs: PowerFs, tmp_path: Path) -> None:
    """spool/ and spool/tmp are made durably: before the fix nothing fsync'ed data_dir after
    making them (only SQLite's first WAL sync did, by chance; never with PostgreSQL), so a
    cut could take the spool folder and every document in it."""
    data = powerfs.mount / "data"
    data.mkdir()
    fsync_dir(powerfs.mount)
    Spool(data).prepare()
    powerfs.cut()
    assert (data / "spool" / "tmp").is_dir()


def test_setup_replaces_the_pair_as_one(powerfs: PowerFs, monkeypatch: pytest.MonkeyPatch) -> None:
    """``edgeprint setup --renew``: a cut between the key's and the certificate's renames
    keeps the old pair. Before the fix the new key was made durable alone first: after
    such a cut, a new key beside the old certificate, and no start."""
    m = powerfs.mount
    old = setup.prepare_certificate(m, ["127.0.0.1"], renew=False, now=NOW)
    setup.commit_certificate(old)
    new = setup.prepare_certificate(m, ["127.0.0.1"], renew=True, now=NOW)
    assert new.staged is not None
    real_replace = os.replace
    calls = 0

    def replace_then_cut(src: Any, dst: Any) -> None:
        nonlocal calls
        calls += 1
        if calls == 2:
            raise OSError("the power went")
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace_then_cut)
    with pytest.raises(OSError, match="the power went"):
        setup.commit_certificate(new)
    monkeypatch.undo()
    powerfs.cut()
    kept = certificates.load(m / SELF_SIGNED_CERT, m / SELF_SIGNED_KEY, now=NOW)
    assert kept.fingerprint == old.certificate.fingerprint
