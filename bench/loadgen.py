"""The load generator of :mod:`bench.api_bench`: its own process, driving one server.

JSON lines: a command per line on stdin, a result per line on stdout; the bearer token
in ``BENCH_TOKEN``. ``submit`` (``n`` multipart uploads of distinct ~``doc_bytes`` PDFs
over ``concurrency`` connections; the ids answered 201), ``release`` (POST each URL
once), ``burst`` (``n`` connections POST one URL at once), ``quit``. Each result: wall
time, rate, p50/p99/max latency (ms), statuses, transport errors, the client's CPU.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from testbed.pdfs import make_pdf

_PLACEHOLDER = "0" * 16
_BOUNDARY = "edgeprint-bench-" + secrets.token_hex(8)


def percentile(sorted_values: list[float], q: float) -> float:
    """The ``q``-quantile (0 ≤ q ≤ 1) of ascending values, linear interpolation; nan if empty."""
    if not sorted_values:
        return float("nan")
    pos = (len(sorted_values) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


class SubmissionBodies:
    """Multipart bodies for ``POST /v1/jobs``-style uploads; each has a distinct PDF.

    The PDF is built once with a fixed-width placeholder that is replaced by a
    counter, so every body is a valid PDF of the same size (``doc_bytes``,
    bytes) while costing the client only one concatenation per request.
    """

    content_type = f"multipart/form-data; boundary={_BOUNDARY}"

    def __init__(self, doc_bytes: int, metadata: dict[str, Any]) -> None:
        pdf = make_pdf(f"edgeprint bench {_PLACEHOLDER}", pad_to=doc_bytes)
        at = pdf.index(_PLACEHOLDER.encode())
        self.doc_bytes = len(pdf)
        head = (
            f"--{_BOUNDARY}\r\n"
            'Content-Disposition: form-data; name="metadata"\r\n'
            "Content-Type: application/json\r\n\r\n"
            f"{json.dumps(metadata)}\r\n"
            f"--{_BOUNDARY}\r\n"
            'Content-Disposition: form-data; name="document"; filename="badge.pdf"\r\n'
            "Content-Type: application/pdf\r\n\r\n"
        ).encode()
        self._before = head + pdf[:at]
        self._after = pdf[at + len(_PLACEHOLDER) :] + f"\r\n--{_BOUNDARY}--\r\n".encode()

    def body(self, serial: int) -> bytes:
        """The body whose PDF shows ``serial`` (0 ≤ serial < 10**16)."""
        return b"".join((self._before, b"%016d" % serial, self._after))


@dataclass
class _Tally:
    latencies_ms: list[float] = field(default_factory=list)
    statuses: Counter[str] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)
    ids: list[str] = field(default_factory=list)

    def result(self, wall_s: float, cpu_s: float, issued: int) -> dict[str, Any]:
        lat = sorted(self.latencies_ms)
        done = len(lat)
        return {
            "issued": issued,
            "responses": done,
            "wall_s": wall_s,
            "rate_per_s": done / wall_s if wall_s > 0 else float("nan"),
            "p50_ms": percentile(lat, 0.50),
            "p99_ms": percentile(lat, 0.99),
            "max_ms": lat[-1] if lat else float("nan"),
            "statuses": dict(sorted(self.statuses.items())),
            "errors": dict(sorted(self.errors.items())),
            "client_cpu_s": cpu_s,
        }


#: (url, body or None, headers) of request number i
Request = tuple[str, bytes | None, dict[str, str]]


async def _drive(
    session: aiohttp.ClientSession,
    make: Callable[[int], Request],
    n: int,
    concurrency: int,
    max_seconds: float,
    keep_id_on: int | None,
) -> dict[str, Any]:
    """Send ``n`` requests from ``concurrency`` loops; stop issuing after ``max_seconds``."""
    tally = _Tally()
    next_i = 0
    cpu0 = time.process_time()
    t0 = time.perf_counter()
    deadline = t0 + max_seconds

    async def loop() -> None:
        nonlocal next_i
        while next_i < n and time.perf_counter() < deadline:
            i = next_i
            next_i += 1
            url, body, headers = make(i)
            start = time.perf_counter()
            try:
                async with session.post(url, data=body, headers=headers) as resp:
                    payload = await resp.read()
                    status = resp.status
            except (aiohttp.ClientError, TimeoutError, OSError) as exc:
                tally.errors[type(exc).__name__] += 1
                continue
            tally.latencies_ms.append((time.perf_counter() - start) * 1000.0)
            tally.statuses[str(status)] += 1
            if status == keep_id_on:
                tally.ids.append(json.loads(payload)["id"])

    await asyncio.gather(*(loop() for _ in range(min(concurrency, n))))
    wall = time.perf_counter() - t0
    out = tally.result(wall, time.process_time() - cpu0, next_i)
    out["ids"] = tally.ids
    return out


class LoadGen:
    """State shared by the commands of one load-generator process."""

    def __init__(self, token: str) -> None:
        self.auth = f"Bearer {token}"
        self.serial = 0
        self.nonce = secrets.token_hex(4)
        self._bodies: dict[str, SubmissionBodies] = {}

    def _session(self, limit: int, timeout_s: float) -> aiohttp.ClientSession:
        return aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=limit),
            timeout=aiohttp.ClientTimeout(total=timeout_s),
        )

    async def submit(self, cmd: dict[str, Any]) -> dict[str, Any]:
        """The ``submit`` command (see the module docstring)."""
        meta = cmd["metadata"]
        key = json.dumps([cmd["doc_bytes"], meta], sort_keys=True)
        bodies = self._bodies.get(key)
        if bodies is None:
            bodies = self._bodies[key] = SubmissionBodies(int(cmd["doc_bytes"]), meta)
        url = str(cmd["url"])
        first = self.serial
        self.serial += int(cmd["n"])
        base = {"Authorization": self.auth, "Content-Type": bodies.content_type}

        def make(i: int) -> Request:
            serial = first + i
            headers = {**base, "Idempotency-Key": f"bench-{self.nonce}-{serial}"}
            return url, bodies.body(serial), headers

        async with self._session(int(cmd["concurrency"]), float(cmd["max_seconds"])) as s:
            out = await _drive(
                s, make, int(cmd["n"]), int(cmd["concurrency"]), float(cmd["max_seconds"]), 201
            )
        out["doc_bytes"] = bodies.doc_bytes
        return out

    async def release(self, cmd: dict[str, Any]) -> dict[str, Any]:
        """The ``release`` command (see the module docstring)."""
        urls: list[str] = list(cmd["urls"])
        headers = {"Authorization": self.auth}

        def make(i: int) -> Request:
            return urls[i], None, headers

        async with self._session(int(cmd["concurrency"]), float(cmd["max_seconds"])) as s:
            out = await _drive(
                s, make, len(urls), int(cmd["concurrency"]), float(cmd["max_seconds"]), None
            )
        del out["ids"]
        return out

    async def burst(self, cmd: dict[str, Any]) -> dict[str, Any]:
        """The ``burst`` command: ``n`` simultaneous POSTs of one URL, one connection each."""
        n = int(cmd["n"])
        url = str(cmd["url"])
        headers = {"Authorization": self.auth}
        tally = _Tally()
        gate = asyncio.Event()

        async def one(session: aiohttp.ClientSession) -> None:
            await gate.wait()
            start = time.perf_counter()
            try:
                async with session.post(url, headers=headers) as resp:
                    await resp.read()
                    status = resp.status
            except (aiohttp.ClientError, TimeoutError, OSError) as exc:
                tally.errors[type(exc).__name__] += 1
                return
            tally.latencies_ms.append((time.perf_counter() - start) * 1000.0)
            tally.statuses[str(status)] += 1

        async with self._session(n, float(cmd["max_seconds"])) as s:
            tasks = [asyncio.create_task(one(s)) for _ in range(n)]
            await asyncio.sleep(0)  # every task is now waiting at the gate
            cpu0 = time.process_time()
            t0 = time.perf_counter()
            gate.set()
            await asyncio.gather(*tasks)
            wall = time.perf_counter() - t0
        return tally.result(wall, time.process_time() - cpu0, n)


async def _serve_commands() -> None:
    gen = LoadGen(os.environ["BENCH_TOKEN"])
    loop = asyncio.get_running_loop()
    ops = {"submit": gen.submit, "release": gen.release, "burst": gen.burst}
    while True:
        line = await loop.run_in_executor(None, sys.stdin.readline)
        if not line:
            return
        cmd = json.loads(line)
        if cmd["op"] == "quit":
            return
        try:
            out = await ops[cmd["op"]](cmd)
        except Exception as exc:  # reported to the parent, which fails the run
            out = {"failed": f"{type(exc).__name__}: {exc}"}
        sys.stdout.write(json.dumps(out) + "\n")
        sys.stdout.flush()


def main() -> int:
    """Run commands from stdin until ``quit`` or end of input; returns the exit code."""
    asyncio.run(_serve_commands())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
