"""Renditions through the cache: rendered once, read back on a retry, never kept half."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from edgeprint.documents import rendition
from edgeprint.documents.cache import RenditionCache
from edgeprint.documents.capabilities import Media, Resolution
from edgeprint.documents.decode import decode_pwg
from edgeprint.documents.ladder import Choice
from edgeprint.documents.render import RenderPool
from testbed import pdfs

A4 = Media("iso_a4_210x297mm", 21000, 29700)
PWG = Choice("image/pwg-raster", "sgray_8", Resolution(100, 100), A4)


@pytest.fixture
async def pool() -> AsyncIterator[RenderPool]:
    p = RenderPool(workers=1)
    await p.start()
    try:
        yield p
    finally:
        await p.close()


def _doc(tmp_path: Path, pages: int = 3) -> tuple[str, str]:
    data = pdfs.make_a4_pdf(pages)
    path = tmp_path / "doc.pdf"
    path.write_bytes(data)
    return str(path), hashlib.sha256(data).hexdigest()


async def _read(
    pool: RenderPool, cache: RenditionCache, path: str, sha: str, choice: Choice
) -> bytes:
    facts = await pool.facts(path)
    return b"".join([c async for c in rendition.stream(pool, cache, path, sha, choice, facts)])


async def test_second_stream_comes_from_the_cache(pool: RenderPool, tmp_path: Path) -> None:
    """The first stream renders and keeps the rendition; a retry reads the same bytes back without rendering."""
    path, sha = _doc(tmp_path)
    cache = RenditionCache(tmp_path / "renditions", max_bytes=50 << 20)
    first = await _read(pool, cache, path, sha, PWG)
    assert pool.pages_rendered == 3
    assert len(decode_pwg(first)) == 3
    k = rendition.key(sha, PWG)
    assert k is not None
    cached = cache.get(k)
    assert cached is not None
    assert cached.read_bytes() == first
    again = await _read(pool, cache, path, sha, PWG)
    assert again == first
    assert pool.pages_rendered == 3  # nothing rendered the second time
    other = await _read(
        pool, cache, path, sha, Choice("image/urf", "sgray_8", Resolution(100, 100), A4)
    )
    assert other[:7] == b"UNIRAST"
    assert pool.pages_rendered == 6


async def test_a_stream_left_early_keeps_nothing(pool: RenderPool, tmp_path: Path) -> None:
    """A sender that stops after the first page (printer gone) leaves no rendition and no temporary file."""
    path, sha = _doc(tmp_path)
    cache = RenditionCache(tmp_path / "renditions", max_bytes=50 << 20)
    facts = await pool.facts(path)
    chunks = rendition.stream(pool, cache, path, sha, PWG, facts)
    assert await anext(chunks) == b"RaS2"
    await anext(chunks)
    await chunks.aclose()  # type: ignore[attr-defined]
    k = rendition.key(sha, PWG)
    assert k is not None
    assert cache.get(k) is None
    assert list((tmp_path / "renditions").rglob("*")) in ([], [tmp_path / "renditions" / sha])
    assert not list((tmp_path / "renditions").rglob(".tmp-*"))


async def test_jpeg_is_not_cached(pool: RenderPool, tmp_path: Path) -> None:
    """JPEG (one job per page) streams from the renderer every time and leaves the cache empty."""
    path, sha = _doc(tmp_path, pages=1)
    cache = RenditionCache(tmp_path / "renditions", max_bytes=50 << 20)
    jpeg = Choice("image/jpeg", "sgray_8", Resolution(100, 100), A4)
    assert rendition.key(sha, jpeg) is None
    first = await _read(pool, cache, path, sha, jpeg)
    assert first[:2] == b"\xff\xd8"
    await _read(pool, cache, path, sha, jpeg)
    assert pool.pages_rendered == 2
    assert cache.total_bytes == 0
