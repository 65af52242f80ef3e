"""Durability: an accepted job survives kill -9 of the appliance (DESIGN §6)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import aiohttp

from testbed.pdfs import make_pdf
from testbed.proc import ServeProcess
from tests.conftest import KIOSK_TOKEN, config_dict, to_toml


async def _submit(http: aiohttp.ClientSession, url: str, key: str, doc: bytes) -> dict[str, str]:
    form = aiohttp.FormData()
    form.add_field("metadata", '{"owner": "ann", "pool": "lobby"}', content_type="application/json")
    form.add_field("document", doc, content_type="application/pdf", filename="b.pdf")
    headers = {"Authorization": f"Bearer {KIOSK_TOKEN}", "Idempotency-Key": key}
    async with http.post(f"{url}/v1/jobs", data=form, headers=headers) as resp:
        assert resp.status == 201, await resp.text()
        body: dict[str, str] = await resp.json()
        return body


async def test_job_and_document_survive_sigkill_right_after_201(tmp_path: Path) -> None:
    """SIGKILL right after each 201, restart: every job and its document are there, intact."""
    data_dir = tmp_path / "data"
    cfg = tmp_path / "config.toml"
    cfg.write_text(to_toml(config_dict(data_dir)))
    server = ServeProcess(cfg, tmp_path / "serve.log")
    accepted: list[tuple[dict[str, str], bytes]] = []
    async with aiohttp.ClientSession() as http:
        for round_ in range(3):
            with server.start():
                doc = make_pdf(f"round {round_}")
                accepted.append(
                    (await _submit(http, server.url, f"durable-{round_:03d}", doc), doc)
                )
                server.kill()
        with server.start():
            for job, doc in accepted:
                headers = {"Authorization": f"Bearer {KIOSK_TOKEN}"}
                async with http.get(f"{server.url}/v1/jobs/{job['id']}", headers=headers) as resp:
                    assert resp.status == 200
                    stored = await resp.json()
                assert stored["state"] == "HELD"
                assert stored["document"]["sha256"] == hashlib.sha256(doc).hexdigest()
                assert (data_dir / "spool" / f"{stored['id']}.pdf").read_bytes() == doc
            # the same key after the crash is still the same job
            form = aiohttp.FormData()
            form.add_field(
                "metadata", '{"owner": "ann", "pool": "lobby"}', content_type="application/json"
            )
            form.add_field("document", accepted[0][1], content_type="application/pdf", filename="b")
            headers = {"Authorization": f"Bearer {KIOSK_TOKEN}", "Idempotency-Key": "durable-000"}
            async with http.post(f"{server.url}/v1/jobs", data=form, headers=headers) as resp:
                assert resp.status == 200
                assert (await resp.json())["id"] == accepted[0][0]["id"]
            assert server.terminate() == 0


async def test_sigterm_exits_zero_and_logs_json(tmp_path: Path) -> None:
    """SIGTERM stops the appliance cleanly (exit 0); every log line is one JSON object."""
    cfg = tmp_path / "config.toml"
    cfg.write_text(to_toml(config_dict(tmp_path / "data")))
    server = ServeProcess(cfg, tmp_path / "serve.log").start()
    try:
        assert server.terminate() == 0
    finally:
        server.kill()
    import json

    events = [json.loads(line)["event"] for line in server.log_path.read_text().splitlines()]
    lifecycle = [e for e in events if e in ("ready", "stopping", "stopped")]
    assert lifecycle == ["ready", "stopping", "stopped"]
    assert events[-1] == "stopped"
