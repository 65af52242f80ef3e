"""Compressed request bodies are refused (415), never inflated: no zip bombs on the loop."""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Callable
from typing import Any

import pytest

from tests.conftest import KIOSK_TOKEN

PROBLEM = "urn:edgeprint:problem:"
#: 8 MiB of zeros, gzip'ed to ~8 KiB: what a bomb would inflate a thousandfold.
BOMB = gzip.compress(b"\0" * (8 * 1024 * 1024), compresslevel=9)


@pytest.mark.parametrize(
    ("method", "path", "encoding", "body"),
    [
        pytest.param("POST", "/v1/jobs", "gzip", BOMB, id="submit-gzip-bomb"),
        pytest.param("POST", "/v1/jobs", "deflate", zlib.compress(b"{}"), id="submit-deflate"),
        pytest.param(
            "POST", "/v1/jobs/{held}/release", "br", b"\x0b\x00\x80{}\x03", id="release-br"
        ),
        pytest.param("POST", "/v1/jobs/{held}/cancel", "GZIP", BOMB, id="cancel-gzip-uppercase"),
        pytest.param("GET", "/v1/no-such-route", "gzip", BOMB, id="unknown-route-gzip"),
        pytest.param("POST", "/healthz", "x-custom", b"x", id="healthz-unknown-encoding"),
    ],
)
async def test_compressed_body_is_refused_and_changes_nothing(
    make_appliance: Callable[..., Any], method: str, path: str, encoding: str, body: bytes
) -> None:
    async with make_appliance() as app:
        held = await app.submit({"owner": "ann", "printer": "printer-03"}, key="enc-key-held")
        held_id = (await held.json())["id"]
        before = app.snapshot()
        resp = await app.http.request(
            method,
            app.url + path.format(held=held_id),
            data=body,
            headers={
                "Authorization": f"Bearer {KIOSK_TOKEN}",
                "Content-Encoding": encoding,
                "Content-Type": "application/json",
                "Idempotency-Key": "enc-key-0001",
            },
        )
        problem = await resp.json(content_type=None)
        assert (resp.status, problem["type"]) == (415, PROBLEM + "unsupported-media-type")
        assert f"Content-Encoding {encoding.lower()!r} is not accepted" in problem["detail"]
        assert app.snapshot() == before
        assert (await app.get(f"/v1/jobs/{held_id}")).status == 200
