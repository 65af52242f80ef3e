"""The load generator of :mod:`bench.api_bench`: its own process, so its CPU is not the server's.

JSON lines: a command per line on stdin, a result per line on stdout; the bearer token
in ``BENCH_TOKEN``; https URLs with ``cafile``, the one certificate trusted (a pinning
kiosk's view of a self-signed appliance). ``submit`` (``n`` multipart uploads of distinct
~``doc_bytes`` PDFs over ``concurrency`` connections; the ids answered 201), ``release``
(POST each URL once), ``burst`` (``n`` connections POST one URL at once). Each result: wall
time, rate, p50/p99 latency (ms), own CPU per response, statuses, transport errors.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import secrets
import ssl
import sys
import time
from collections import Counter
from typing import Any

import aiohttp

from bench.harness import percentile
from testbed.pdfs import make_pdf

_PLACEHOLDER = b"0" * 16
_BOUNDARY = "edgeprint-bench-" + secrets.token_hex(8)
_NONCE = secrets.token_hex(4)
#: Serial of the next upload (unique across commands: keys and PDFs never repeat).
_SERIAL = itertools.count()
AUTH = {"Authorization": f"Bearer {os.environ.get('BENCH_TOKEN', '')}"}


def bodies(doc_bytes: int, metadata: dict[str, Any]) -> tuple[bytes, bytes]:
    """A multipart body around a PDF of ``doc_bytes``, split where a 16-digit serial goes:
    every body is a distinct, valid PDF of the same size for one concatenation each."""
    pdf = make_pdf(f"edgeprint bench {_PLACEHOLDER.decode()}", pad_to=doc_bytes)
    at = pdf.index(_PLACEHOLDER)
    head = (
        f"--{_BOUNDARY}\r\n"
        'Content-Disposition: form-data; name="metadata"\r\n'
        "Content-Type: application/json\r\n\r\n"
        f"{json.dumps(metadata)}\r\n"
        f"--{_BOUNDARY}\r\n"
        'Content-Disposition: form-data; name="document"; filename="badge.pdf"\r\n'
        "Content-Type: application/pdf\r\n\r\n"
    ).encode()
    return head + pdf[:at], pdf[at + len(_PLACEHOLDER) :] + f"\r\n--{_BOUNDARY}--\r\n".encode()


async def drive(cmd: dict[str, Any]) -> dict[str, Any]:
    """Send the command's requests (see the module docstring); its result."""
    op, n = cmd["op"], int(cmd.get("n") or len(cmd["urls"]))
    concurrency = n if op == "burst" else min(n, int(cmd["concurrency"]))
    if op == "submit":
        before, after = bodies(int(cmd["doc_bytes"]), cmd["metadata"])
        content_type = {"Content-Type": f"multipart/form-data; boundary={_BOUNDARY}"}
    latencies: list[float] = []
    statuses: Counter[str] = Counter()
    errors: Counter[str] = Counter()
    ids: list[str] = []
    issued = 0
    gate = asyncio.Event()

    async def loop(http: aiohttp.ClientSession) -> None:
        nonlocal issued
        await gate.wait()
        while issued < n and time.perf_counter() < deadline:
            i = issued
            issued += 1
            body = None
            headers = AUTH
            if op == "submit":
                serial = next(_SERIAL)
                body = b"".join((before, b"%016d" % serial, after))
                key = {"Idempotency-Key": f"bench-{_NONCE}-{serial}"}
                headers = {**AUTH, **content_type, **key}
            url = cmd["urls"][i] if op == "release" else cmd["url"]
            start = time.perf_counter()
            try:
                async with http.post(url, data=body, headers=headers) as resp:
                    payload = await resp.read()
            except (aiohttp.ClientError, TimeoutError, OSError) as exc:
                errors[type(exc).__name__] += 1
                continue
            latencies.append((time.perf_counter() - start) * 1000.0)
            statuses[str(resp.status)] += 1
            if op == "submit" and resp.status == 201:
                ids.append(json.loads(payload)["id"])
            if op == "burst":
                return

    cafile = cmd.get("cafile")
    trust = ssl.create_default_context(cafile=cafile) if cafile else True
    connector = aiohttp.TCPConnector(limit=concurrency, ssl=trust)
    timeout = aiohttp.ClientTimeout(total=float(cmd["max_seconds"]))
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as http:
        tasks = [asyncio.create_task(loop(http)) for _ in range(concurrency)]
        await asyncio.sleep(0)  # every task is now waiting at the gate
        cpu0 = time.process_time()
        t0 = time.perf_counter()
        deadline = t0 + float(cmd["max_seconds"])
        gate.set()
        await asyncio.gather(*tasks)
        wall = time.perf_counter() - t0
    cpu = time.process_time() - cpu0
    return {
        "responses": len(latencies),
        "wall_s": wall,
        "rate_per_s": len(latencies) / wall,
        "p50_ms": percentile(latencies, 50),
        "p99_ms": percentile(latencies, 99),
        # the load generator's own CPU: over TLS it encrypts too, on the same cores
        "client_cpu_us_per_req": cpu / len(latencies) * 1e6 if latencies else None,
        "statuses": dict(sorted(statuses.items())),
        "errors": dict(errors),
        "ids": ids,
    }


async def serve_commands() -> None:
    """Run commands from stdin until end of input."""
    loop = asyncio.get_running_loop()
    while line := await loop.run_in_executor(None, sys.stdin.readline):
        try:
            out = await drive(json.loads(line))
        except Exception as exc:  # reported to the parent, which fails the run
            out = {"failed": f"{type(exc).__name__}: {exc}"}
        sys.stdout.write(json.dumps(out) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    asyncio.run(serve_commands())
