"""The document spool under ``data_dir/spool``: one file per job, durable before the job row.

A document is streamed into ``spool/tmp/<random>.part`` while its SHA-256 is
computed, then fsync'ed, renamed to ``spool/<job id>.pdf`` and the folder is
fsync'ed (DESIGN §6). File names never come from client input. One file per
job (not per content) lets retention delete a job's document without asking
whether another job shares it.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import hashlib
import os
import secrets
from pathlib import Path
from typing import BinaryIO

from edgeprint import errors

_HEAD_BYTES = 1024


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _os_error(exc: OSError) -> errors.StoreError:
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return errors.StorageFull(f"no space left for documents: {exc.strerror}")
    return errors.StoreUnavailable(f"document spool error: {exc.strerror or exc}")


class StagedDocument:
    """A document being received: bytes go to a temporary file, the digest is kept running.

    Use :meth:`write` per chunk, then :meth:`commit` (durable) or :meth:`discard`.
    """

    def __init__(self, spool: Spool, tmp_path: Path, fh: BinaryIO) -> None:
        self._spool = spool
        self.tmp_path = tmp_path
        self._fh: BinaryIO | None = fh
        self._hash = hashlib.sha256()
        self.size = 0
        self.head = b""

    @property
    def sha256(self) -> str:
        """Hex SHA-256 of the bytes written so far."""
        return self._hash.hexdigest()

    def write(self, chunk: bytes) -> None:
        """Append ``chunk``; raises errors.StorageFull / errors.StoreUnavailable."""
        assert self._fh is not None, "document already committed or discarded"
        if len(self.head) < _HEAD_BYTES:
            self.head += chunk[: _HEAD_BYTES - len(self.head)]
        try:
            self._fh.write(chunk)
        except OSError as exc:
            raise _os_error(exc) from exc
        self._hash.update(chunk)
        self.size += len(chunk)

    def looks_like_pdf(self) -> bool:
        """True when the PDF header ``%PDF-`` is in the first 1024 bytes (ISO 32000-1 §7.5.2)."""
        return b"%PDF-" in self.head

    async def commit(self, job_id: str) -> Path:
        """Make the document durable as the document of ``job_id``; returns its path.

        Raises errors.StorageFull or errors.StoreUnavailable (the temporary
        file is removed in that case).
        """
        fh, self._fh = self._fh, None
        assert fh is not None, "document already committed or discarded"
        final = self._spool.path_for(job_id)
        try:
            await asyncio.to_thread(self._finish, fh, final)
        except OSError as exc:
            with contextlib.suppress(OSError):
                self.tmp_path.unlink()
            raise _os_error(exc) from exc
        return final

    def _finish(self, fh: BinaryIO, final: Path) -> None:
        try:
            fh.flush()
            os.fsync(fh.fileno())
        finally:
            fh.close()
        os.replace(self.tmp_path, final)
        _fsync_dir(final.parent)

    def discard(self) -> None:
        """Drop the temporary file (idempotent)."""
        fh, self._fh = self._fh, None
        if fh is not None:
            with contextlib.suppress(OSError):
                fh.close()
        with contextlib.suppress(FileNotFoundError):
            self.tmp_path.unlink()


class Spool:
    """Documents of ``data_dir``: ``spool/<sha256>.pdf``, staging in ``spool/tmp``."""

    def __init__(self, data_dir: Path) -> None:
        self.dir = data_dir / "spool"
        self.tmp_dir = self.dir / "tmp"

    def prepare(self) -> None:
        """Create the folders and remove partial uploads left by a crash."""
        self.tmp_dir.mkdir(parents=True, exist_ok=True)
        for leftover in self.tmp_dir.iterdir():
            with contextlib.suppress(OSError):
                leftover.unlink()

    def path_for(self, job_id: str) -> Path:
        """Where the document of job ``job_id`` (32 hex characters) lives."""
        if len(job_id) != 32 or any(c not in "0123456789abcdef" for c in job_id):
            raise ValueError("not a job id")
        return self.dir / f"{job_id}.pdf"

    def stage(self) -> StagedDocument:
        """Open a new temporary file for an incoming document; raises errors.StoreError."""
        tmp = self.tmp_dir / f"{secrets.token_hex(12)}.part"
        try:
            fh = open(tmp, "xb")  # noqa: SIM115 - closed by commit()/discard()
        except OSError as exc:
            raise _os_error(exc) from exc
        return StagedDocument(self, tmp, fh)

    def stored_ids(self) -> set[str]:
        """Job ids of every committed document file."""
        return {p.stem for p in self.dir.glob("*.pdf") if len(p.stem) == 32}

    def remove(self, job_id: str) -> None:
        """Delete a job's document (missing is fine)."""
        with contextlib.suppress(FileNotFoundError):
            self.path_for(job_id).unlink()
