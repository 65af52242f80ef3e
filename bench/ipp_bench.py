"""IPP queues: Print-Job against ``POST /v1/jobs`` on the same server in the same run.

Throughput of ``--jobs`` ~``--doc-kib`` KiB submissions each way at ``--concurrency``
(printers refuse connections: nothing prints), alternating which goes first; and
release → printed of jobs held over IPP against jobs held over JSON on a real printer.

    .venv/bin/python -m bench.ipp_bench [--quick]
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import aiohttp

from bench.harness import Kiosk, Run, Stand, parser, printed_at
from edgeprint.ipp import codec
from edgeprint.ipp.names import Operation, Tag
from edgeprint.ipp.values import AttributeGroup, attr
from testbed.config import KIOSK_TOKEN, config_dict, to_toml
from testbed.pdfs import make_pdf
from testbed.proc import ServeProcess
from testbed.rig import Printed


def _config(data_dir: Path) -> dict[str, Any]:
    """The tests' config: printers 01 and 02 in pool lobby refuse connections (nothing prints)
    and hold every job (``high_water``)."""
    cfg = config_dict(data_dir)
    cfg["printers"] = [dict(p, high_water=100_000) for p in cfg["printers"] if p.get("pool")]
    return cfg


async def _drive(n: int, concurrency: int, send: Any) -> tuple[float, list[float], int]:
    """(wall seconds, latencies ms, failures) of ``n`` calls of ``send(i)``."""
    latencies: list[float] = []
    failures = 0
    queue: asyncio.Queue[int] = asyncio.Queue()
    for i in range(n):
        queue.put_nowait(i)

    async def worker() -> None:
        nonlocal failures
        while not queue.empty():
            i = queue.get_nowait()
            t0 = time.perf_counter()
            ok = await send(i)
            latencies.append((time.perf_counter() - t0) * 1000)
            failures += 0 if ok else 1

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return time.perf_counter() - start, sorted(latencies), failures


async def _round(
    url: str, docs: list[bytes], concurrency: int, ipp_first: bool, tag: str
) -> dict[str, Any]:
    uri = url.replace("http://", "ipp://") + "/ipp/print/lobby"
    headers = {"Authorization": f"Bearer {KIOSK_TOKEN}"}
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=concurrency)) as http:

        async def ipp(i: int) -> bool:
            body = codec.request(
                Operation.PRINT_JOB,
                i + 1,
                printer_uri=uri,
                attributes=[
                    attr("requesting-user-name", Tag.NAME, "bench"),
                    attr("document-format", Tag.MIME_MEDIA_TYPE, "application/pdf"),
                ],
                data=docs[i],
            ).encode()
            async with http.post(
                f"{url}/ipp/print/lobby", data=body, headers={"Content-Type": "application/ipp"}
            ) as r:
                raw = await r.read()
            return r.status == 200 and codec.parse(raw).status_code == 0

        async def json_api(i: int) -> bool:
            form = aiohttp.FormData()
            meta = {"owner": "bench", "pool": "lobby", "hold": False}
            form.add_field("metadata", json.dumps(meta), content_type="application/json")
            form.add_field("document", docs[i], content_type="application/pdf", filename="d.pdf")
            key = {"Idempotency-Key": f"bench-{tag}-{i:08d}"}
            async with http.post(f"{url}/v1/jobs", data=form, headers={**headers, **key}) as r:
                await r.read()
            return r.status == 201

        out: dict[str, Any] = {}
        order = [("ipp", ipp), ("json", json_api)]
        for name, send in order if ipp_first else reversed(order):
            wall, lat, failed = await _drive(len(docs), concurrency, send)
            out[name] = {
                "rate_per_s": len(docs) / wall,
                "p50_ms": statistics.median(lat),
                "p99_ms": lat[int(0.99 * (len(lat) - 1))],
                "failed": failed,
            }
        return out


async def _ipp_held(http: aiohttp.ClientSession, url: str, n: int) -> str:
    """An IPP Print-Job held (job-hold-until indefinite) on the lobby queue; its job id."""
    uri = url.replace("http://", "ipp://") + "/ipp/print/lobby"
    body = codec.request(
        Operation.PRINT_JOB,
        n,
        printer_uri=uri,
        attributes=[attr("requesting-user-name", Tag.NAME, "bench")],
        data=make_pdf(f"ipp {n}"),
    )
    body.groups.append(AttributeGroup(0x02, [attr("job-hold-until", Tag.KEYWORD, "indefinite")]))
    async with http.post(
        f"{url}/ipp/print/lobby", data=body.encode(), headers={"Content-Type": "application/ipp"}
    ) as r:
        answer = codec.parse(await r.read())
    return str(answer.value(0x02, "job-uuid")).removeprefix("urn:uuid:").replace("-", "")


async def _release_to_printed(run: Run, held: int) -> dict[str, list[float]]:
    """Seconds from the API release to the printer's log line, per origin (ipp / json)."""
    stand = run.stand("printed", 1).start()
    out: dict[str, list[float]] = {"ipp": [], "json": []}
    async with aiohttp.ClientSession() as http:
        kiosk = Kiosk(http, stand.url)
        for i in range(2 * held):
            origin = "ipp" if i % 2 == 0 else "json"
            if origin == "ipp":
                job_id = await _ipp_held(http, stand.url, i + 1)
            else:
                job_id = await kiosk.submit(f"held-{i:05d}", pool="lobby", hold=True)
            released = await kiosk.release(job_id)
            deadline = time.monotonic() + 30
            while not (line := _printed(stand, job_id)):
                if time.monotonic() > deadline:
                    raise TimeoutError(f"job {job_id} not printed within 30 s")
                await asyncio.sleep(0.005)
            out[origin].append(printed_at(line) - released)
    return out


def _printed(stand: Stand, job_id: str) -> Printed | None:
    return next((p for p in stand.rig.printed("printer-01") if job_id in p.job_name), None)


def main() -> int:
    ap = parser("ipp", __doc__, "300 jobs, 1 round")
    ap.add_argument("--jobs", type=int, default=1000)
    ap.add_argument("--concurrency", type=int, default=50)
    ap.add_argument("--doc-kib", type=int, default=30)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--held", type=int, default=30, help="held jobs of each origin to print")
    args = ap.parse_args()
    if args.quick:
        args.jobs, args.repeat, args.held = 300, 1, 10
    with Run("ipp", args) as run:
        config = run.work / "edgeprint.toml"
        config.write_text(to_toml(_config(run.work / "data")))
        serve = ServeProcess(config, run.work / "edgeprint.log").start()
        try:
            rounds = []
            for r in range(args.repeat):
                docs = [
                    make_pdf(f"bench {r} {i}", pad_to=args.doc_kib * 1024) for i in range(args.jobs)
                ]
                rounds.append(
                    asyncio.run(_round(serve.url, docs, args.concurrency, r % 2 == 0, str(r)))
                )
        finally:
            serve.kill()
        printed = asyncio.run(_release_to_printed(run, args.held))
    summary = {
        kind: {
            k: statistics.median(rd[kind][k] for rd in rounds)
            for k in ("rate_per_s", "p50_ms", "p99_ms")
        }
        for kind in ("ipp", "json")
    }
    failed = sum(rd[k]["failed"] for rd in rounds for k in ("ipp", "json"))
    ratio = summary["ipp"]["rate_per_s"] / summary["json"]["rate_per_s"]
    head = f"{args.jobs} jobs of {args.doc_kib} KiB at {args.concurrency}"
    lines = [f"| {head} | req/s | p50 ms | p99 ms |", "|---|---|---|---|"]
    for kind, label in (("ipp", "IPP Print-Job"), ("json", "POST /v1/jobs")):
        s = summary[kind]
        lines.append(f"| {label} | {s['rate_per_s']:.0f} | {s['p50_ms']:.1f} | {s['p99_ms']:.1f} |")
    p50 = {k: statistics.median(v) * 1000 for k, v in printed.items()}
    printed_ratio = p50["ipp"] / p50["json"]
    lines.append(
        f"\nIPP/JSON throughput: {ratio:.2f}x; failed requests: {failed}; "
        f"release → printed "
        f"p50: held over IPP {p50['ipp']:.1f} ms, over JSON {p50['json']:.1f} ms "
        f"({printed_ratio:.2f}x, {args.held} each)"
    )
    if failed or ratio < 0.8:
        run.failures.append(f"failed requests {failed}, IPP/JSON {ratio:.2f} (goal ≥ 0.8)")
    return run.finish(
        "\n".join(lines),
        settings=vars(args),
        summary=summary,
        ratio=ratio,
        failed=failed,
        rounds=rounds,
        release_to_printed_p50_ms=p50,
        release_to_printed_ratio=printed_ratio,
        release_to_printed_s=printed,
    )


if __name__ == "__main__":
    sys.exit(main())
