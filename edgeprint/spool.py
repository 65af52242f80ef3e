"""The document spool under ``data_dir/spool``: one file per job, durable before the job row.

A document is streamed into ``spool/tmp/<random>.part`` while its SHA-256 is
computed, then fsync'ed, renamed to ``spool/<job id>.pdf`` and the folder is
fsync'ed (DESIGN §6). File names never come from client input. One file per
job (not per content) lets retention delete a job's document without asking
whether another job shares it.

Room for jobs already accepted: ``min_free_bytes`` (``server.min_free_bytes``)
is kept free on data_dir's filesystem. A document is refused with
errors.StorageFull (HTTP 507) when staging starts below it, while it is being
written (checked once per ``_CHECK_EVERY`` bytes, not per chunk) and at commit
(after the last byte), so the state transitions of accepted jobs (SQLite, its
WAL) still find room. A real ENOSPC at any write point is errors.StorageFull
too; an unwritable filesystem (EROFS, EIO) is errors.StoreWriteFailed (503), told to
``on_disk_error`` (edgeprint.store.health). On every refusal the staged file is removed:
nothing half-written stays behind (a removal the disk refuses too is kept in
``leftovers`` and done by :meth:`Spool.sweep_leftovers` once the disk takes writes again).

A ``mirror`` (with PostgreSQL: :class:`edgeprint.store.documents.DbDocuments`)
gets each document once its file is durable, before commit returns; when the
mirror fails, the document is refused like a failed write.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import hashlib
import os
import secrets
import shutil
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import BinaryIO, Protocol, Self

from edgeprint import errors

_HEAD_BYTES = 1024
#: Free space is checked (one statvfs) each time this many more bytes were written.
_CHECK_EVERY = 1024 * 1024
_FULL_ERRNOS = (errno.ENOSPC, errno.EDQUOT)
_WHAT_TO_DO_FULL = (
    "nothing was stored; retry later with the same Idempotency-Key. A technician must "
    "free space on the appliance's data disk (finished jobs' documents are removed after "
    "retention.document_retention_s)"
)
_WHAT_TO_DO_UNAVAILABLE = (
    "nothing was stored; retry later with the same Idempotency-Key. If this persists a "
    "technician must check the appliance's data disk (read-only or failing) and restart it"
)


class Mirror(Protocol):
    """A second home for committed documents (the shared database)."""

    async def put(self, job_id: str, path: Path) -> None:
        """Store the file at ``path`` as ``job_id``'s document; raises errors.StoreError."""
        ...

    def discard(self, job_id: str) -> None:
        """Delete ``job_id``'s document soon (never raises)."""
        ...

    async def fetch(self, job_id: str, dest: Path) -> str:
        """Write ``job_id``'s document to ``dest`` (fsynced); its SHA-256 (hex).

        Raises errors.StoreError, OSError.
        """
        ...


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _make_dirs_durable(path: Path) -> None:
    """``mkdir -p path``, each new folder's parent fsync'ed after it is made: without that a
    power cut can take the spool folder, with every document in it, away (nothing else
    fsyncs data_dir when the store is PostgreSQL or the SQLite file already exists)."""
    missing: list[Path] = []
    while not path.is_dir():
        missing.append(path)
        path = path.parent
    for folder in reversed(missing):
        folder.mkdir(exist_ok=True)
        _fsync_dir(folder.parent)


def _os_error(exc: OSError) -> errors.StoreError:
    if exc.errno in _FULL_ERRNOS:
        return errors.StorageFull(
            f"the appliance's disk is full (no space left for the document); {_WHAT_TO_DO_FULL}"
        )
    return errors.StoreWriteFailed(
        f"the appliance cannot write the document ({exc.strerror or exc}); "
        f"{_WHAT_TO_DO_UNAVAILABLE}"
    )


def _unlink(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink()


class StagedDocument:
    """A document being received: bytes go to a temporary file, the digest is kept running.

    Use :meth:`write` per chunk, then :meth:`commit` (durable). It is a context manager
    that discards itself unless committed: ``with spool.stage() as staged:`` (or
    ``async with``) leaves nothing in ``spool/tmp`` whatever the block ends in. A reader
    that fills it for someone else to commit writes under :meth:`filling`.
    """

    def __init__(self, spool: Spool, tmp_path: Path, fh: BinaryIO) -> None:
        self._spool = spool
        self.tmp_path = tmp_path
        self._fh: BinaryIO | None = fh
        self._hash = hashlib.sha256()
        self.size = 0
        self.head = b""
        self._next_check = _CHECK_EVERY
        #: True once :meth:`commit` made it a job's document.
        self.committed = False

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        if not self.committed:
            self.discard()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self.__exit__()

    @contextlib.contextmanager
    def filling(self) -> Iterator[Self]:
        """A block that writes the document for a later owner: an exception inside it
        discards the document; otherwise it stays staged for whoever commits it."""
        try:
            yield self
        except BaseException:
            self.discard()
            raise

    @property
    def sha256(self) -> str:
        """Hex SHA-256 of the bytes written so far."""
        return self._hash.hexdigest()

    def write(self, chunk: bytes) -> None:
        """Append ``chunk``; raises errors.StorageFull / errors.StoreUnavailable.

        Every ``_CHECK_EVERY`` bytes the spool's free-space reserve is checked.
        On an error the staged file is removed (the document is discarded).
        """
        assert self._fh is not None, "document already committed or discarded"
        if len(self.head) < _HEAD_BYTES:
            self.head += chunk[: _HEAD_BYTES - len(self.head)]
        try:
            self._fh.write(chunk)
            self._hash.update(chunk)
            self.size += len(chunk)
            if self.size >= self._next_check:
                self._next_check = self.size + _CHECK_EVERY
                self._spool.check_room()
        except OSError as exc:
            self.discard()
            raise self._spool.disk_error(exc) from exc
        except errors.StoreError:
            self.discard()
            raise

    def contents(self) -> BinaryIO:
        """The bytes written so far, as a readable binary file positioned at 0.

        Call only once the whole document is written; raises
        errors.StoreUnavailable when the bytes cannot be flushed.
        """
        assert self._fh is not None, "document already committed or discarded"
        try:
            self._fh.flush()
            self._fh.seek(0)
        except OSError as exc:
            raise self._spool.disk_error(exc) from exc
        return self._fh

    def looks_like_pdf(self) -> bool:
        """True when the PDF header ``%PDF-`` is in the first 1024 bytes (ISO 32000-1 §7.5.2)."""
        return b"%PDF-" in self.head

    async def commit(self, job_id: str) -> Path:
        """Make the document durable as the document of ``job_id``; returns its path.

        Raises errors.StorageFull (also when the document would leave less
        than the spool's ``min_free_bytes`` free) or errors.StoreUnavailable;
        then neither the temporary file nor the job's document exists.
        """
        fh, self._fh = self._fh, None
        assert fh is not None, "document already committed or discarded"
        final = self._spool.path_for(job_id)
        try:
            await asyncio.to_thread(self._finish, fh, final)
        except (OSError, errors.StoreError) as exc:
            # Also after the rename (a failed directory fsync): the job id is new,
            # so whatever is at ``final`` is this half-made document.
            self._spool.unlink(self.tmp_path)
            self._spool.unlink(final)
            if isinstance(exc, OSError):
                raise self._spool.disk_error(exc) from exc
            raise
        if self._spool.mirror is not None:
            try:
                await self._spool.mirror.put(job_id, final)
            except errors.StoreError:
                _unlink(final)
                raise
        self.committed = True
        return final

    def _finish(self, fh: BinaryIO, final: Path) -> None:
        try:
            fh.flush()
            self._spool.check_room()  # with every byte of the document on the filesystem
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
        self._spool.unlink(self.tmp_path)


class Spool:
    """Documents of ``data_dir``: ``spool/<job id>.pdf``, staging in ``spool/tmp``.

    ``min_free_bytes``: free space to keep on the filesystem for jobs already
    accepted; a document that would leave less is refused (errors.StorageFull).
    """

    def __init__(
        self, data_dir: Path, *, min_free_bytes: int = 0, mirror: Mirror | None = None
    ) -> None:
        self.dir = data_dir / "spool"
        self.tmp_dir = self.dir / "tmp"
        self.min_free_bytes = min_free_bytes
        self.mirror = mirror
        #: Told ``(kind, reason)`` of every write the disk refused (edgeprint.store.health).
        self.on_disk_error: Callable[[str, str], object] | None = None
        #: Files whose removal the disk refused: removed once it takes writes again.
        self.leftovers: set[Path] = set()
        #: Jobs whose insert failed with the disk (its COMMIT may yet have been kept): their
        #: documents stay until the store tells (:meth:`sweep_leftovers`).
        self.unsure: set[str] = set()

    def disk_error(self, exc: OSError) -> errors.StoreError:
        """``exc`` as a StoreError, told to ``on_disk_error`` when it is the disk's."""
        err = _os_error(exc)
        kind = {errno.EROFS: "read-only", errno.EIO: "io"}.get(exc.errno or 0)
        if exc.errno in _FULL_ERRNOS:
            kind = "full"
        if kind is not None and self.on_disk_error is not None:
            self.on_disk_error(kind, f"{exc.strerror or exc} (spool)")
        return err

    def unlink(self, path: Path) -> None:
        """Remove ``path`` (missing is fine); a removal the disk refuses is kept for later."""
        try:
            path.unlink()
        except FileNotFoundError:
            self.leftovers.discard(path)
        except OSError:
            self.leftovers.add(path)
        else:
            self.leftovers.discard(path)

    def probe(self) -> None:
        """Write, fsync and remove a small file in ``spool/tmp`` (and fsync the folder): does
        the disk take writes? Raises errors.StoreError (told to ``on_disk_error``)."""
        path = self.tmp_dir / f".probe-{secrets.token_hex(6)}"
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                os.write(fd, b"probe\n")
                os.fsync(fd)
            finally:
                os.close(fd)
            path.unlink()
            _fsync_dir(self.tmp_dir)
        except OSError as exc:
            self.unlink(path)
            raise self.disk_error(exc) from exc

    async def sweep_leftovers(self, known: Callable[[set[str]], Awaitable[set[str]]]) -> None:
        """Once the disk takes writes again: remove what could not be removed, and the
        documents of :attr:`unsure` jobs the store does not have (``known`` answers which
        of these ids it has)."""
        for path in list(self.leftovers):
            self.unlink(path)
        unsure, self.unsure = self.unsure, set()
        if unsure:
            for job_id in unsure - await known(unsure):
                self.remove(job_id)

    def free_bytes(self) -> int:
        """Bytes an unprivileged writer may still use on the spool's filesystem."""
        st = os.statvfs(self.dir)
        return st.f_bavail * st.f_frsize

    def check_room(self) -> None:
        """Raise errors.StorageFull when less than ``min_free_bytes`` is free (one statvfs)."""
        if self.min_free_bytes <= 0:
            return
        try:
            free = self.free_bytes()
        except OSError as exc:
            raise self.disk_error(exc) from exc
        if free < self.min_free_bytes:
            raise errors.StorageFull(
                f"the appliance's disk is nearly full ({free // 1024} KiB free; "
                f"server.min_free_bytes keeps {self.min_free_bytes // 1024} KiB for jobs "
                f"already accepted); {_WHAT_TO_DO_FULL}"
            )

    def prepare(self) -> None:
        """Create the folders (durably: a folder's name is on disk only once its parent
        is fsync'ed) and remove partial uploads left by a crash."""
        _make_dirs_durable(self.tmp_dir)
        for leftover in self.tmp_dir.iterdir():
            with contextlib.suppress(OSError):
                leftover.unlink()

    def path_for(self, job_id: str) -> Path:
        """Where the document of job ``job_id`` (32 hex characters) lives."""
        if len(job_id) != 32 or any(c not in "0123456789abcdef" for c in job_id):
            raise ValueError("not a job id")
        return self.dir / f"{job_id}.pdf"

    async def local(self, job_id: str, sha256: str) -> Path:
        """The path of ``job_id``'s document, fetched from the mirror first when this spool
        lacks it (a job another appliance accepted): the file spool is then a cache.

        The fetched file is checked against ``sha256`` before it is renamed into place.
        Raises FileNotFoundError when the document is in neither place (or damaged in the
        mirror), OSError (EIO) when the mirror cannot be read now (try again later).
        """
        final = self.path_for(job_id)
        if self.mirror is None or await asyncio.to_thread(final.exists):
            return final
        tmp = self.tmp_dir / f"{job_id}.fetch-{secrets.token_hex(4)}"
        try:
            try:
                got = await self.mirror.fetch(job_id, tmp)
            except errors.StoreError as exc:
                raise OSError(errno.EIO, f"document not fetched from the database: {exc}") from exc
            if got != sha256:
                raise FileNotFoundError(
                    errno.ENOENT, "document missing or damaged in the database", str(final)
                )
            await asyncio.to_thread(os.replace, tmp, final)
            await asyncio.to_thread(_fsync_dir, self.dir)
        finally:
            await asyncio.to_thread(_unlink, tmp)
        return final

    async def duplicate(self, src_id: str, sha256: str, dest_id: str) -> Path:
        """Make ``dest_id``'s document the same bytes as ``src_id``'s (a reprint, issue 24);
        its path, durable (and in the mirror) when it returns.

        A hard link where the filesystem allows it: the bytes are stored once, yet each job
        still has its own file, so retention removes one without asking about the other.
        Else a copy. Raises FileNotFoundError when ``src_id``'s document is gone, OSError
        (EIO) when the mirror cannot be read now, errors.StoreError as :meth:`stage` does.
        """
        src = await self.local(src_id, sha256)
        final = self.path_for(dest_id)
        tmp = self.tmp_dir / f"{dest_id}.dup-{secrets.token_hex(4)}"
        try:
            await asyncio.to_thread(self._link_or_copy, src, tmp)
            await asyncio.to_thread(os.replace, tmp, final)
            await asyncio.to_thread(_fsync_dir, self.dir)
        except FileNotFoundError:
            raise
        except OSError as exc:
            self.unlink(final)
            raise self.disk_error(exc) from exc
        finally:
            _unlink(tmp)
        if self.mirror is not None:
            try:
                await self.mirror.put(dest_id, final)
            except errors.StoreError:
                _unlink(final)
                raise
        return final

    def _link_or_copy(self, src: Path, dest: Path) -> None:
        try:
            os.link(src, dest)
            return
        except FileNotFoundError:
            raise
        except OSError:
            pass  # no hard links here (another filesystem, a FAT stick): copy
        self.check_room()
        with open(src, "rb") as fin, open(dest, "xb") as fout:
            shutil.copyfileobj(fin, fout, 1024 * 1024)
            fout.flush()
            os.fsync(fout.fileno())

    def check_ready(self) -> None:
        """For /readyz: can a document be staged now? One statvfs, one empty file made and removed.

        Raises errors.StorageFull when less than ``min_free_bytes`` is free and
        errors.StoreUnavailable when no file can be made: read-only (ext4 makes
        itself read-only after an I/O error, which statvfs does not always
        show), failing, or out of inodes (errors.StorageFull).
        """
        self.check_room()
        probe = self.tmp_dir / f".ready-{secrets.token_hex(6)}"
        try:
            os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        except OSError as exc:
            raise self.disk_error(exc) from exc
        _unlink(probe)

    def stage(self) -> StagedDocument:
        """Open a new temporary file for an incoming document; raises errors.StoreError.

        errors.StorageFull at once when less than ``min_free_bytes`` is free.
        """
        self.check_room()
        tmp = self.tmp_dir / f"{secrets.token_hex(12)}.part"
        try:
            # read/write: the document is checked through this handle (no second open(),
            # which costs ~0.4 ms on some filesystems)
            fh = open(tmp, "x+b")  # noqa: SIM115 - closed by commit()/discard()
        except OSError as exc:
            raise self.disk_error(exc) from exc
        return StagedDocument(self, tmp, fh)

    def stored_ids(self) -> set[str]:
        """Job ids of every committed document file."""
        return {p.stem for p in self.dir.glob("*.pdf") if len(p.stem) == 32}

    def remove(self, job_id: str) -> None:
        """Delete a job's document (missing is fine), and soon its mirrored copy."""
        self.unlink(self.path_for(job_id))
        if self.mirror is not None:
            self.mirror.discard(job_id)
