"""A staged document is a context manager (edgeprint/spool.py): it discards itself unless a job
committed it, so no failure path leaves a file in spool/tmp (issue 28)."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgeprint.spool import Spool

JOB = "0123456789abcdef0123456789abcdef"


class _Refused(Exception):
    """An error raised inside a block, for the test to see come out unchanged."""


def _spool(tmp_path: Path) -> Spool:
    spool = Spool(tmp_path / "data")
    spool.prepare()
    return spool


def test_an_exception_inside_the_block_discards_the_document(tmp_path: Path) -> None:
    """A block that raises after writing leaves nothing in spool/tmp, and the error is the
    caller's unchanged."""
    spool = _spool(tmp_path)
    seen: list[list[Path]] = []

    def receive() -> None:
        with spool.stage() as staged:
            staged.write(b"%PDF-1.4 half a document")
            seen.append(list(spool.tmp_dir.iterdir()))
            raise _Refused("refused")

    with pytest.raises(_Refused, match="refused"):
        receive()
    assert len(seen[0]) == 1  # it was there while the block ran
    assert list(spool.tmp_dir.iterdir()) == []


def test_a_block_that_ends_without_commit_discards_the_document(tmp_path: Path) -> None:
    """Leaving the block normally without a commit (a replayed submission) discards too."""
    spool = _spool(tmp_path)
    with spool.stage() as staged:
        staged.write(b"%PDF-1.4 not needed")
    assert not staged.committed
    assert list(spool.tmp_dir.iterdir()) == []


async def test_a_committed_document_is_kept(tmp_path: Path) -> None:
    """A document committed inside the block is the job's document after it; spool/tmp is
    empty."""
    spool = _spool(tmp_path)
    async with spool.stage() as staged:
        staged.write(b"%PDF-1.4 kept")
        path = await staged.commit(JOB)
    assert staged.committed
    assert path == spool.path_for(JOB)
    assert path.read_bytes() == b"%PDF-1.4 kept"
    assert list(spool.tmp_dir.iterdir()) == []


def test_filling_discards_only_on_an_error(tmp_path: Path) -> None:
    """A reader's block (filling) keeps the document staged when it ends well, for the
    caller to commit, and discards it when it raises."""
    spool = _spool(tmp_path)
    kept = spool.stage()
    with kept.filling():
        kept.write(b"%PDF-1.4 for later")
    assert kept.tmp_path.exists()
    with kept:  # the later owner: nothing committed, so discarded
        pass
    assert list(spool.tmp_dir.iterdir()) == []
    dropped = spool.stage()

    def read() -> None:
        with dropped.filling():
            dropped.write(b"%PDF-1.4 cut short")
            raise _Refused("the client went away")

    with pytest.raises(_Refused, match="went away"):
        read()
    assert list(spool.tmp_dir.iterdir()) == []
