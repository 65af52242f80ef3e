"""The rendition cache on a real directory: keys, LRU eviction by bytes, sweep, crash leftovers."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from edgeprint.documents.cache import RenditionCache, RenditionKey

DOC_A = hashlib.sha256(b"a").hexdigest()
DOC_B = hashlib.sha256(b"b").hexdigest()
LABEL = (10160, 7620)


def key(
    doc: str = DOC_A, fmt: str = "image/pwg-raster", dpi: int = 300, cs: str = "sgray_8"
) -> RenditionKey:
    return RenditionKey(doc, fmt, dpi, cs, LABEL)


def put(cache: RenditionCache, k: RenditionKey, data: bytes) -> Path | None:
    with cache.writer(k) as w:
        for i in range(0, len(data), 100):
            w.write(data[i : i + 100])
        return w.commit()


def test_round_trip_and_distinct_keys(tmp_path: Path) -> None:
    """A committed rendition is read back byte for byte; another resolution or format is another entry."""
    cache = RenditionCache(tmp_path / "renditions", max_bytes=10_000)
    path = put(cache, key(), b"R" * 1000)
    assert path is not None
    assert path.read_bytes() == b"R" * 1000
    assert path == tmp_path / "renditions" / DOC_A / "pwg_300dpi_sgray_8_10160x7620.pwg"
    assert cache.get(key()) == path
    assert cache.get(key(dpi=600)) is None
    assert cache.get(key(fmt="image/urf")) is None
    assert cache.total_bytes == 1000
    assert len(cache) == 1


def test_least_recently_used_is_evicted_first(tmp_path: Path) -> None:
    """Over max_bytes, the rendition used longest ago goes; a get counts as a use."""
    cache = RenditionCache(tmp_path, max_bytes=3000)
    first, second, third = key(dpi=300), key(dpi=600), key(dpi=203)
    put(cache, first, b"1" * 1200)
    put(cache, second, b"2" * 1200)
    assert cache.get(first) is not None  # first is now the most recent
    put(cache, third, b"3" * 1200)
    assert cache.get(second) is None
    assert not (tmp_path / second.relative_path).exists()
    assert cache.get(first) is not None
    assert cache.get(third) is not None
    assert cache.total_bytes == 2400


def test_too_large_is_not_kept_and_evicts_nothing(tmp_path: Path) -> None:
    """A rendition larger than the whole cache is dropped without evicting the others."""
    cache = RenditionCache(tmp_path, max_bytes=2000)
    put(cache, key(dpi=300), b"k" * 1500)
    assert put(cache, key(dpi=600), b"x" * 2500) is None
    assert cache.get(key(dpi=300)) is not None
    assert cache.get(key(dpi=600)) is None
    assert [p.name for p in (tmp_path / DOC_A).iterdir()] == ["pwg_300dpi_sgray_8_10160x7620.pwg"]


def test_failed_write_leaves_nothing(tmp_path: Path) -> None:
    """A render that fails mid-way (an exception in the with block) leaves no file and no entry."""
    cache = RenditionCache(tmp_path, max_bytes=10_000)

    def render_fails() -> None:
        with cache.writer(key()) as w:
            w.write(b"half a page")
            raise RuntimeError("render failed")

    with pytest.raises(RuntimeError):
        render_fails()
    assert cache.get(key()) is None
    assert list((tmp_path / DOC_A).iterdir()) == []


def test_sweep_removes_one_documents_renditions(tmp_path: Path) -> None:
    """Sweeping a deleted document removes its renditions and folder, and only those."""
    cache = RenditionCache(tmp_path, max_bytes=10_000)
    put(cache, key(DOC_A), b"a" * 100)
    put(cache, key(DOC_A, dpi=600), b"a" * 200)
    put(cache, key(DOC_B), b"b" * 300)
    assert cache.sweep(DOC_A) == 300
    assert not (tmp_path / DOC_A).exists()
    assert cache.get(key(DOC_B)) is not None
    assert cache.total_bytes == 300
    assert cache.sweep(DOC_A) == 0  # twice is harmless


def test_reopened_cache_keeps_order_and_drops_crash_leftovers(tmp_path: Path) -> None:
    """After a restart the cache knows its files, their use order, and removes half-written ones."""
    cache = RenditionCache(tmp_path, max_bytes=3000)
    put(cache, key(dpi=300), b"1" * 1000)
    put(cache, key(dpi=600), b"2" * 1000)
    cache.get(key(dpi=300))
    leftover = tmp_path / DOC_A / ".tmp-999-dead"
    leftover.write_bytes(b"half")  # a writer killed mid-rendition
    reopened = RenditionCache(tmp_path, max_bytes=3000)
    assert not leftover.exists()
    assert reopened.total_bytes == 2000
    put(reopened, key(dpi=203), b"3" * 1500)  # evicts the least recently used: 600 dpi
    assert reopened.get(key(dpi=600)) is None
    assert reopened.get(key(dpi=300)) is not None


def test_smaller_limit_on_reopen_evicts(tmp_path: Path) -> None:
    """Opening the cache with a smaller limit evicts down to it at once."""
    cache = RenditionCache(tmp_path, max_bytes=5000)
    for dpi in (100, 200, 300):
        put(cache, key(dpi=dpi), b"x" * 1000)
    assert RenditionCache(tmp_path, max_bytes=1500).total_bytes == 1000


@pytest.mark.parametrize(
    ("doc", "fmt", "dpi", "cs"),
    [
        ("../../etc", "image/pwg-raster", 300, "sgray_8"),
        (DOC_A.upper(), "image/pwg-raster", 300, "sgray_8"),
        (DOC_A, "application/pdf", 300, "sgray_8"),
        (DOC_A, "image/pwg-raster", 0, "sgray_8"),
        (DOC_A, "image/pwg-raster", 300, "../x"),
    ],
)
def test_bad_keys_are_refused(doc: str, fmt: str, dpi: int, cs: str) -> None:
    """A key that is not a hex SHA-256, a rendered format, a positive dpi and a plain colour space is refused."""
    with pytest.raises(ValueError, match=r"SHA-256|no renditions|bad colour space"):
        RenditionKey(doc, fmt, dpi, cs, LABEL)


def test_sweep_refuses_a_path(tmp_path: Path) -> None:
    """sweep() takes a SHA-256 only, never a path that could reach outside the cache."""
    cache = RenditionCache(tmp_path / "c", max_bytes=100)
    (tmp_path / "precious").write_text("keep")
    with pytest.raises(ValueError, match="SHA-256"):
        cache.sweep("../precious")
    assert (tmp_path / "precious").exists()


def test_file_removed_behind_the_cache(tmp_path: Path) -> None:
    """A rendition deleted by someone else reads as not cached, and is forgotten."""
    cache = RenditionCache(tmp_path, max_bytes=10_000)
    path = put(cache, key(), b"z" * 10)
    assert path is not None
    os.unlink(path)
    assert cache.get(key()) is None
    assert cache.total_bytes == 0
