"""Logs are JSON lines and never carry a bearer token."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from testbed.proc import ServeProcess
from tests.conftest import KIOSK_TOKEN, config_dict, to_toml


async def _raw(port: int, request: bytes) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(request)
    await writer.drain()
    data = await asyncio.wait_for(reader.read(), timeout=10)
    writer.close()
    return data


async def test_a_token_in_an_oversized_header_is_not_logged(tmp_path: Path) -> None:
    """aiohttp rejects an over-long Authorization header; the log says so without the token."""
    cfg = tmp_path / "config.toml"
    cfg.write_text(to_toml(config_dict(tmp_path / "data")))
    server = ServeProcess(cfg, tmp_path / "serve.log")
    with server.start():
        header = f"Authorization: Bearer {KIOSK_TOKEN}{'A' * 9000}\r\n".encode()
        answer = await _raw(server.port, b"GET /v1/jobs HTTP/1.1\r\nHost: x\r\n" + header + b"\r\n")
        assert answer.split(b" ", 2)[1] == b"400"
        ok = await _raw(
            server.port, b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        )
        assert ok.startswith(b"HTTP/1.1 200")
        assert server.terminate() == 0
    lines = server.log_path.read_text().splitlines()
    assert KIOSK_TOKEN not in "\n".join(lines)
    records = [json.loads(line) for line in lines]  # every line is one JSON object
    assert any(r.get("event") == "http_bad_request" for r in records)
