"""GET /v1/jobs/{id}/preview.png (issue 24 part 5) against a real appliance (SQLite, HTTP).

The page is drawn by the real render pool (PDFium in a worker process) and decoded
here with Pillow; the cache's own hit and miss counts prove a second look is not drawn
again; bad queries store nothing; retention makes it 410.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from typing import Any

import aiohttp
from PIL import Image

from testbed.pdfs import make_pdf
from tests.conftest import TECH_TOKEN, Appliance

PROBLEM = "urn:edgeprint:problem:"
ZPL_BADGE = b"^XA^FO50,50^A0N,40,40^FDAda Lovelace^FS^XZ"


async def _held_job(app: Appliance, pages: int = 2, key: str = "preview-0001") -> dict[str, Any]:
    resp = await app.submit({"owner": "ann", "pool": "lobby"}, make_pdf("preview", pages=pages),
                            key=key)  # fmt: skip
    assert resp.status == 201, await resp.text()
    body: dict[str, Any] = await resp.json()
    return body


def _renditions(app: Appliance) -> list[str]:
    root = app.data_dir / "renditions"
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


async def test_preview_is_a_png_of_the_width_asked_and_drawn_once(
    make_appliance: Callable[..., Any],
) -> None:
    async with make_appliance() as app:
        job = await _held_job(app)
        cache = app.running.service.renditions
        assert cache is not None
        hits, misses = cache.hits, cache.misses
        resp = await app.get(f"/v1/jobs/{job['id']}/preview.png?page=2&width=240")
        assert resp.status == 200, await resp.text()
        assert resp.content_type == "image/png"
        first = await resp.read()
        img = Image.open(io.BytesIO(first))
        assert img.format == "PNG"
        # the test PDF's pages are 4x3 in: 240 px wide is 180 px high
        assert img.size == (240, 180)
        assert resp.headers["Cache-Control"].startswith("private, max-age=")
        sha = (await app.running.service.get(job["id"])).document_sha256
        tag = resp.headers["ETag"]
        assert tag == f'"{sha[:32]}-p2-w240"'  # fmt: skip
        assert (cache.hits, cache.misses) == (hits, misses + 1)
        assert _renditions(app) == [f"{sha}/preview_p2_w240.png"]

        again = await app.get(f"/v1/jobs/{job['id']}/preview.png?page=2&width=240")
        assert again.status == 200
        assert await again.read() == first
        assert again.headers["ETag"] == tag
        assert (cache.hits, cache.misses) == (hits + 1, misses + 1)  # from the cache

        # the page is really drawn: page 1 differs from page 2, and has ink on white
        one = await app.get(f"/v1/jobs/{job['id']}/preview.png")
        assert one.status == 200
        page1 = Image.open(io.BytesIO(await one.read())).convert("L")
        assert page1.size == (300, 225)  # the defaults: page 1, 300 px
        assert page1.getextrema() == (page1.getextrema()[0], 255)
        assert page1.getextrema()[0] < 128  # the text's ink
        assert await one.read() != first

        # If-None-Match with the tag: 304, no body
        async with app.http.get(
            f"{app.url}/v1/jobs/{job['id']}/preview.png?page=2&width=240",
            headers=app.headers(**{"If-None-Match": tag}),
        ) as cond:
            assert cond.status == 304
            assert await cond.read() == b""


async def test_bad_width_or_page_is_422_and_nothing_is_stored(
    make_appliance: Callable[..., Any],
) -> None:
    async with make_appliance() as app:
        job = await _held_job(app, pages=2)
        before = app.snapshot()
        cache = app.running.service.renditions
        assert cache is not None
        misses = cache.misses
        for query, loc in [
            ("width=49", "query.width"),
            ("width=1201", "query.width"),
            ("width=abc", "query.width"),
            ("page=0", "query.page"),
            ("page=3", "query.page"),  # a 2-page document
            ("page=1&size=3", "query.size"),
        ]:
            resp = await app.get(f"/v1/jobs/{job['id']}/preview.png?{query}")
            problem = await resp.json(content_type=None)
            assert (resp.status, problem["type"]) == (422, PROBLEM + "invalid-request"), query
            assert [e["loc"] for e in problem["errors"]] == [loc], query
        assert app.snapshot() == before
        assert _renditions(app) == []
        assert cache.misses == misses  # nothing was even looked up

        resp = await app.get(f"/v1/jobs/{'0' * 32}/preview.png")
        problem = await resp.json(content_type=None)
        assert (resp.status, problem["type"]) == (404, PROBLEM + "job-not-found")


async def test_a_zpl_job_has_no_preview(make_appliance: Callable[..., Any]) -> None:
    async with make_appliance() as app:
        form = aiohttp.FormData()
        form.add_field("metadata", json.dumps({"owner": "ann", "pool": "lobby"}),
                       content_type="application/json")  # fmt: skip
        form.add_field("document", ZPL_BADGE, content_type="application/vnd.zebra-zpl",
                       filename="badge.zpl")  # fmt: skip
        async with app.http.post(
            f"{app.url}/v1/jobs", data=form, headers=app.headers(**{"Idempotency-Key": "zpl-0001"})
        ) as r:
            assert r.status == 201, await r.text()
            job = await r.json()
        resp = await app.get(f"/v1/jobs/{job['id']}/preview.png")
        problem = await resp.json(content_type=None)
        assert (resp.status, problem["type"]) == (415, PROBLEM + "unsupported-media-type")
        assert "application/vnd.zebra-zpl" in problem["detail"]
        assert _renditions(app) == []


async def test_preview_after_retention_is_410_document_gone(
    make_appliance: Callable[..., Any],
) -> None:
    async with make_appliance(sections={"retention": {"document_retention_s": 0}}) as app:
        job = await _held_job(app, pages=1)
        resp = await app.get(f"/v1/jobs/{job['id']}/preview.png?width=100")
        assert resp.status == 200
        assert _renditions(app) != []
        cancel = await app.post(f"/v1/jobs/{job['id']}/cancel", token=TECH_TOKEN)
        assert cancel.status == 200, await cancel.text()
        _, deleted = await app.running.service.upkeep.housekeeping()
        assert deleted == 1
        assert _renditions(app) == []  # the cached preview went with the document
        before = app.snapshot()
        resp = await app.get(f"/v1/jobs/{job['id']}/preview.png?width=100")
        problem = await resp.json(content_type=None)
        assert (resp.status, problem["type"]) == (410, PROBLEM + "document-gone")
        assert problem["job_id"] == job["id"]
        assert app.snapshot() == before
        assert _renditions(app) == []
        assert f"{job['id']}.pdf" not in app.snapshot()["spool"]
