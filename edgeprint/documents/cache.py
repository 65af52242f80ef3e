"""Renditions on disk, so a retry or a failover to an identical printer does not render again.

A rendition is keyed by (document SHA-256, format, resolution, colour space,
media size): the media is part of the key because the raster is drawn on it.
A page's preview PNG (:class:`PreviewKey`: SHA-256, page, width) lives beside them.
Files live under the directory the caller gives (``data_dir/renditions``) as
``<sha256>/<format>_<dpi>dpi_<colour space>_<W>x<H>.<ext>``; the cache holds at
most ``max_bytes``, evicting the least recently used renditions (use is the
file's mtime, so the order survives a restart), and :meth:`sweep` removes a
document's renditions when the document is deleted.

Writing goes to a hidden temporary file renamed into place on :meth:`Writer.commit`,
so a reader never sees half a rendition and a crash leaves only a temporary file,
removed when the cache is next opened. A rendition larger than the whole cache is
not kept (the stream it tees goes on regardless).

The methods do file I/O: call them from a worker thread in async code.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_EXT = {"image/pwg-raster": "pwg", "image/urf": "urf", "image/jpeg": "jpg"}
_TMP_PREFIX = ".tmp-"


@dataclass(frozen=True)
class RenditionKey:
    """What makes two renditions the same bytes."""

    document_sha256: str
    format: str  # image/pwg-raster, image/urf, image/jpeg
    dpi: int
    color_space: str  # sgray_8, black_1, srgb_8
    media_hmm: tuple[int, int]  # media width, height in hundredths of mm

    def __post_init__(self) -> None:
        if not _SHA256.match(self.document_sha256):
            raise ValueError(f"not a lower-case hex SHA-256: {self.document_sha256!r}")
        if self.format not in _EXT:
            raise ValueError(f"no renditions in {self.format!r}")
        if not re.match(r"^[a-z0-9_]+$", self.color_space) or self.dpi <= 0:
            raise ValueError(f"bad colour space or resolution: {self.color_space!r}, {self.dpi}")

    @property
    def relative_path(self) -> Path:
        w, h = self.media_hmm
        name = f"{_EXT[self.format]}_{self.dpi}dpi_{self.color_space}_{w}x{h}.{_EXT[self.format]}"
        return Path(self.document_sha256) / name


@dataclass(frozen=True)
class PreviewKey:
    """A page of a document drawn as a PNG ``width`` pixels wide (GET …/preview.png).

    Kept beside the document's renditions (same folder), so a preview is evicted with
    them by size and removed with them when the document is deleted.
    """

    document_sha256: str
    page: int  # 1-based
    width: int  # pixels

    def __post_init__(self) -> None:
        if not _SHA256.match(self.document_sha256):
            raise ValueError(f"not a lower-case hex SHA-256: {self.document_sha256!r}")
        if self.page < 1 or self.width < 1:
            raise ValueError(f"bad page or width: {self.page}, {self.width}")

    @property
    def relative_path(self) -> Path:
        return Path(self.document_sha256) / f"preview_p{self.page}_w{self.width}.png"


#: What the cache keeps: a printer's rendition or a page's preview.
Key = RenditionKey | PreviewKey


class RenditionCache:
    """Renditions under ``root``, at most ``max_bytes`` of them (LRU eviction)."""

    def __init__(self, root: str | os.PathLike[str], max_bytes: int) -> None:
        if max_bytes < 0:
            raise ValueError("max_bytes must be >= 0")
        self.root = Path(root)
        self.max_bytes = max_bytes
        self.root.mkdir(parents=True, exist_ok=True)
        # path → (size, last use); rebuilt from the directory, the truth.
        self._index: dict[Path, tuple[int, float]] = {}
        for path in self.root.glob("*/*"):
            if path.name.startswith(_TMP_PREFIX):
                path.unlink(missing_ok=True)  # left by a crash mid-write
            elif path.is_file():
                st = path.stat()
                self._index[path] = (st.st_size, st.st_mtime)
        self._last = max((used for _, used in self._index.values()), default=0.0)
        #: Lookups answered from the cache, and those that were not (since it was opened).
        self.hits = 0
        self.misses = 0
        self._evict(0)

    def _now(self) -> float:
        """Wall-clock time of a use, strictly increasing (two uses in one tick stay ordered)."""
        self._last = max(time.time(), self._last + 1e-6)
        return self._last

    @property
    def total_bytes(self) -> int:
        return sum(size for size, _ in self._index.values())

    def __len__(self) -> int:
        return len(self._index)

    def get(self, key: Key) -> Path | None:
        """The rendition's file, marked as just used; None when not cached."""
        path = self.root / key.relative_path
        if path not in self._index:
            self.misses += 1
            return None
        now = self._now()
        try:
            os.utime(path, (now, now))
        except FileNotFoundError:  # removed behind our back
            del self._index[path]
            self.misses += 1
            return None
        self._index[path] = (self._index[path][0], now)
        self.hits += 1
        return path

    def writer(self, key: Key) -> Writer:
        """A writer for the rendition: write() chunks, then commit(); aborted on error."""
        return Writer(self, key)

    def sweep(self, document_sha256: str) -> int:
        """Remove every rendition of a document (it was deleted); the bytes freed."""
        if not _SHA256.match(document_sha256):
            raise ValueError(f"not a lower-case hex SHA-256: {document_sha256!r}")
        folder = self.root / document_sha256
        freed = 0
        for path in list(self._index):
            if path.parent == folder:
                freed += self._index.pop(path)[0]
                path.unlink(missing_ok=True)
        if folder.is_dir():
            for leftover in folder.iterdir():  # temporary files of a write in progress
                leftover.unlink(missing_ok=True)
            folder.rmdir()
        return freed

    def _admit(self, tmp: Path, key: Key, size: int) -> Path | None:
        if size > self.max_bytes:
            tmp.unlink(missing_ok=True)
            return None
        path = self.root / key.relative_path
        self._index.pop(path, None)
        self._evict(size)
        tmp.replace(path)
        now = self._now()
        os.utime(path, (now, now))
        self._index[path] = (size, now)
        return path

    def _evict(self, incoming: int) -> None:
        """Remove least recently used renditions until ``incoming`` more bytes fit."""
        total = self.total_bytes
        for path, (size, _) in sorted(self._index.items(), key=lambda kv: kv[1][1]):
            if total + incoming <= self.max_bytes:
                break
            path.unlink(missing_ok=True)
            del self._index[path]
            total -= size
            if path.parent.is_dir() and not any(path.parent.iterdir()):
                path.parent.rmdir()


class Writer:
    """Streams one rendition into the cache; see :meth:`RenditionCache.writer`."""

    def __init__(self, cache: RenditionCache, key: Key) -> None:
        self._cache = cache
        self._key = key
        folder = cache.root / key.document_sha256
        folder.mkdir(exist_ok=True)
        self._tmp = folder / f"{_TMP_PREFIX}{os.getpid()}-{id(self):x}"
        self._file = open(self._tmp, "wb")  # noqa: SIM115 - closed by commit/abort
        self.size = 0
        self._over = False
        self._done = False

    def write(self, chunk: bytes) -> None:
        """Add a chunk; past the cache's size the rest is not kept (commit then keeps nothing)."""
        if self._over:
            return
        self.size += len(chunk)
        if self.size > self._cache.max_bytes:
            self._over = True
            return
        self._file.write(chunk)

    def commit(self) -> Path | None:
        """Put the rendition in place (evicting others); None when it was too large to keep."""
        if self._over:
            self.abort()
            return None
        # On disk before the rename: after a power cut a rendition is whole or absent,
        # never a named file of garbage that would be printed.
        self._file.flush()
        os.fsync(self._file.fileno())
        self._file.close()
        self._done = True
        return self._cache._admit(self._tmp, self._key, self.size)

    def abort(self) -> None:
        """Drop what was written."""
        self._file.close()
        self._tmp.unlink(missing_ok=True)
        self._done = True

    def abort_unless_committed(self) -> None:
        """Drop what was written unless commit() or abort() already ran (for ``finally``)."""
        if not self._done:
            self.abort()

    def __enter__(self) -> Writer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.abort_unless_committed()  # an error, or no commit: keep nothing
