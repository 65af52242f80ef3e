"""Resources: start-up, memory and store size with 20 printers and 100,000 jobs.

Start-ups on an empty store (spawn → /readyz, VmRSS); a sample of jobs through the API
and the store layer, cloned with plain SQL up to ``--jobs`` (the clones have no document
on disk); bytes per job and per table (dbstat); start-ups on the full store, then
listings, metrics, the dead-letter queue and printed jobs, VmRSS after each.

    .venv/bin/python -m bench.resources_bench [--quick]
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import secrets
import sqlite3
import sys
import time
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import aiohttp

from bench.harness import (
    BenchError,
    Kiosk,
    Run,
    Stand,
    Tech,
    figures_markdown,
    ms,
    parser,
    proc_status,
    seed,
)
from bench.harness import row as _row
from edgeprint.config import Config
from edgeprint.copies import CopyAction, CopyState
from edgeprint.server import DB_FILE
from edgeprint.states import Action
from edgeprint.store import Store
from edgeprint.store.copies import Copies
from edgeprint.store.jobs import GUARD_ON_PRINTER, Jobs
from edgeprint.store.schema.sqlite import SCHEMA_VERSION

PRINTERS = 20
POOLS = ("hall-a", "hall-b", "hall-c", "hall-d")
#: Sample jobs through the real API, by path.
SAMPLE = {"printed": 80, "released": 60, "cancelled": 20, "held": 20, "expired": 10, "dead": 10}
SAMPLE_QUICK = {"printed": 40, "released": 30, "cancelled": 10, "held": 10, "expired": 5, "dead": 5}
#: Final states of the stored jobs (weights), the clones' mix.
MIX = {"DONE": 0.89, "CANCELLED": 0.04, "EXPIRED": 0.05, "DEAD": 0.01, "HELD": 0.01}
DEAD_REASONS = ("attempts_exhausted", "poison", "outcome_unknown")
HISTORY_DAYS = 30
HELD_WINDOW_S = 12 * 3600.0
OWNERS = 2000
NAMED_SHARE = 0.25
#: Clones per transaction.
CLONE_BATCH = 10_000
#: Load on the full store.
LIST_PAGES = 20
LIST_LIMIT = 500
REPEAT_CALLS = 20
LOAD_CONCURRENCY = 8
#: Upper bounds (s).
SETTLE_TIMEOUT_S = 30.0
RATE_LIMIT = "100000/second"


async def starts(stand: Stand, http: aiohttp.ClientSession, n: int) -> list[dict[str, float]]:
    """``n`` start-ups (each stopped with SIGTERM): ms from spawn to ready, VmRSS at ready."""
    out: list[dict[str, float]] = []
    for _ in range(n):
        out.append(await start(stand, http))
        stand.stop_appliance()
    return out


async def start(stand: Stand, http: aiohttp.ClientSession) -> dict[str, float]:
    t0 = time.time()
    t_ready, _ = await stand.spawn(http)
    return {"ready_ms": round((t_ready - t0) * 1000.0, 1), **proc_status(stand.pid)}


def target(rng: random.Random, printers: Sequence[str]) -> dict[str, Any]:
    """A job's metadata target: a quarter named for a printer, the rest for its pool."""
    if rng.random() < NAMED_SHARE:
        return {"printer": rng.choice(printers)}
    return {"pool": rng.choice(POOLS)}


# --- 2. the store -------------------------------------------------------------------


async def sample(
    app: Stand, http: aiohttp.ClientSession, sizes: dict[str, int], rng: random.Random
) -> dict[str, Any]:
    """Real jobs through the API (see module doc); ids by path and the HELD cut time."""
    kiosk = Kiosk(http, app.url)
    tech = Tech(http, app.url)
    printers = [p.name for p in app.rig]
    ids: dict[str, list[str]] = {k: [] for k in sizes}
    sem = asyncio.Semaphore(LOAD_CONCURRENCY)

    async def one(path: str, i: int) -> None:
        meta = {"owner": f"guest{rng.randrange(OWNERS):05d}", **target(rng, printers)}
        if rng.random() < 0.1:
            meta["copies"] = 2
        async with sem:
            job_id = await kiosk.submit(f"sample-{path}-{i:04d}", hold=path != "printed", **meta)
            if path == "released":
                await kiosk.release(job_id)
            elif path == "cancelled":
                await tech.post(f"/v1/jobs/{job_id}/cancel")
        ids[path].append(job_id)

    # expired first, so that a created_at cut after them takes none of the others
    for i in range(sizes["expired"]):
        await one("expired", i)
    cut = time.time()  # after their 201s, before any other submit: created_at < cut for them only
    tasks = []
    for path, count in sizes.items():
        if path != "expired":
            tasks += [one(path, i) for i in range(count)]
    await asyncio.gather(*tasks)
    await kiosk.wait_settled(SETTLE_TIMEOUT_S)
    return {"ids": ids, "cut": cut}


async def store_layer(data_dir: Path, ids: dict[str, list[str]], cut: float) -> dict[str, int]:
    """EXPIRED and DEAD jobs written by the project's store layer (the appliance stopped)."""
    db = data_dir / DB_FILE
    with contextlib.closing(sqlite3.connect(db)) as conn:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version != SCHEMA_VERSION:
        raise BenchError(
            f"the store has schema {version}, this tree's edgeprint {SCHEMA_VERSION}: "
            "the tree changed under the benchmark; run it again"
        )
    store = Store(db)
    await store.open()
    try:
        jobs = Jobs(store)
        now = time.time()
        expired = await jobs.expire_held(cut, now=now)
        dead = 0
        for k, job_id in enumerate(ids["dead"]):
            job = await jobs.get(job_id)
            assert job is not None
            now = time.time()
            released = await jobs.transition(
                job_id, Action.RELEASE, now=now, actor="kiosk-1", sets={"released_at": now}
            )
            assert released is not None
            printer = job.printer or _pool_printer(job.pool)
            claimed = await jobs.claim_next(printer, job.pool, now=now, actor=f"printer:{printer}")
            if claimed is None or claimed.id != job_id:
                raise BenchError(f"store layer: {job_id} was not claimed ({claimed})")
            copy = await Copies(store).open(
                job_id=job_id,
                claim=claimed.claims,
                printer=printer,
                state=CopyState.SENDING,
                operation="Print-Job",
                document_format="application/pdf",
                document_bytes=claimed.document_bytes,
                impressions_expected=None,
                printer_up_s=None,
                epoch=None,
                now=now,
            )
            assert copy is not None
            await Copies(store).change(
                copy.id,
                CopyAction.LOST,
                now=now,
                actor=f"printer:{printer}",
                sets={"printer_job_id": 1 + k, "outcome": "resources bench"},
            )
            reason = DEAD_REASONS[k % len(DEAD_REASONS)]
            now = time.time()
            out = await jobs.transition(
                job_id,
                Action.FAIL,
                now=now,
                actor=f"printer:{printer}",
                reason=reason,
                sets={
                    "last_error": f"{reason} (resources bench)",
                    "dead_reason": reason,
                    "finished_at": now,
                },
                guard=GUARD_ON_PRINTER,
                guard_params=(printer, claimed.claims),
            )
            dead += out is not None
    finally:
        await store.close()
    return {"expired": len(expired), "dead": dead}


_POOL_PRINTERS: dict[str, str] = {}


def _pool_printer(pool: str | None) -> str:
    """The first printer of ``pool`` (set by :func:`run` from the config)."""
    if pool is None or pool not in _POOL_PRINTERS:
        raise BenchError(f"no printer for pool {pool!r}")
    return _POOL_PRINTERS[pool]


def _is_time(col: str) -> bool:
    return col.endswith("_at") or col in ("not_before", "pin_locked_until")


def clone(data_dir: Path, total: int, rng: random.Random) -> dict[str, Any]:
    """Fill the store up to ``total`` jobs with clones of the jobs in it (see module doc)."""
    t_start = time.perf_counter()
    conn = sqlite3.connect(data_dir / DB_FILE, isolation_level=None)
    conn.row_factory = sqlite3.Row
    try:
        conn.execute("PRAGMA synchronous=OFF")
        cols = [str(r[1]) for r in conn.execute("PRAGMA table_info(jobs)") if r[1] != "seq"]
        templates: dict[str, list[tuple[dict[str, Any], list[sqlite3.Row]]]] = {}
        for row in conn.execute("SELECT * FROM jobs ORDER BY seq").fetchall():
            r = {c: row[c] for c in cols}
            evs = conn.execute(
                "SELECT at, to_state, actor, reason, correlation_id FROM job_events "
                "WHERE job_id = ? ORDER BY seq",
                (r["id"],),
            ).fetchall()
            templates.setdefault(str(r["state"]), []).append((r, evs))
        existing = sum(len(v) for v in templates.values())
        missing = [s for s in MIX if s not in templates]
        if missing:
            raise BenchError(f"no template job in state(s) {missing}")
        n = max(0, total - existing)
        now = time.time()
        states = rng.choices(list(MIX), list(MIX.values()), k=n)
        plan = sorted(
            (
                now
                - (
                    rng.uniform(60.0, HELD_WINDOW_S)
                    if s == "HELD"
                    else rng.uniform(3600.0, HISTORY_DAYS * 86400.0)
                ),
                s,
            )
            for s in states
        )
        retention = Config().retention.document_retention_s
        placeholders = ", ".join("?" for _ in cols)
        insert = f"INSERT INTO jobs ({', '.join(cols)}) VALUES ({placeholders})"
        step = (
            "UPDATE jobs SET state = ?, updated_at = ?, actor = ?, reason = ?, "
            "correlation_id = ? WHERE id = ?"
        )
        final = (
            "UPDATE jobs SET updated_at = ?, actor = ?, reason = ?, correlation_id = ? WHERE id = ?"
        )
        idx = {c: i for i, c in enumerate(cols)}
        for b in range(0, n, CLONE_BATCH):
            inserts: list[list[Any]] = []
            steps: dict[int, list[tuple[Any, ...]]] = {}
            finals: list[tuple[Any, ...]] = []
            for k, (created, state) in enumerate(plan[b : b + CLONE_BATCH], start=b):
                tmpl, evs = rng.choice(templates[state])
                delta = created - float(tmpl["created_at"])
                cids: dict[str | None, str | None] = {None: None}

                def cid(c: str | None, cids: dict[str | None, str | None] = cids) -> str | None:
                    if c not in cids:
                        cids[c] = secrets.token_hex(max(1, len(c or "") // 2))[: len(c or "")]
                    return cids[c]

                values = [tmpl[c] for c in cols]
                for c in cols:
                    if _is_time(c) and isinstance(tmpl[c], int | float) and tmpl[c] > 1e9:
                        values[idx[c]] = float(tmpl[c]) + delta
                job_id = uuid.uuid4().hex
                values[idx["id"]] = job_id
                values[idx["idempotency_key"]] = f"kiosk-{k:07d}-{secrets.token_hex(3)}"
                values[idx["request_sha256"]] = secrets.token_hex(32)
                values[idx["document_sha256"]] = secrets.token_hex(32)
                values[idx["owner"]] = f"guest{rng.randrange(OWNERS):05d}"
                fin = values[idx["finished_at"]]
                terminal = state in ("DONE", "CANCELLED", "EXPIRED")
                if terminal and fin is not None and fin < now - retention:
                    values[idx["document_deleted_at"]] = fin + retention + rng.uniform(0, 60)
                final_row = (
                    values[idx["updated_at"]],
                    values[idx["actor"]],
                    values[idx["reason"]],
                    cid(values[idx["correlation_id"]]),
                    job_id,
                )
                first = evs[0]
                values[idx["state"]] = first["to_state"]
                values[idx["updated_at"]] = float(first["at"]) + delta
                values[idx["actor"]] = first["actor"]
                values[idx["reason"]] = first["reason"]
                values[idx["correlation_id"]] = cid(first["correlation_id"])
                inserts.append(values)
                for i, e in enumerate(evs[1:], start=1):
                    steps.setdefault(i, []).append(
                        (
                            e["to_state"],
                            float(e["at"]) + delta,
                            e["actor"],
                            e["reason"],
                            cid(e["correlation_id"]),
                            job_id,
                        )
                    )
                finals.append(final_row)
            conn.execute("BEGIN IMMEDIATE")
            conn.executemany(insert, inserts)
            for i in sorted(steps):
                conn.executemany(step, steps[i])
            conn.executemany(final, finals)
            conn.execute("COMMIT")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    return {
        "templates": {s: len(v) for s, v in templates.items()},
        "clones": n,
        "clone_s": round(time.perf_counter() - t_start, 2),
    }


def store_size(data_dir: Path) -> dict[str, Any]:
    """Bytes of the SQLite files, per table with its indexes (dbstat), and row counts."""
    db = data_dir / DB_FILE
    files = {
        p.name: p.stat().st_size
        for p in (db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm"))
        if p.exists()
    }
    with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
        owner = {
            str(n): str(t) for n, t in conn.execute("SELECT name, tbl_name FROM sqlite_master")
        }
        per_table: Counter[str] = Counter()
        for name, size in conn.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name"):
            per_table[owner.get(str(name), str(name))] += int(size)
        jobs = int(conn.execute("SELECT count(*) FROM jobs").fetchone()[0])
        events = int(conn.execute("SELECT count(*) FROM job_events").fetchone()[0])
    return {
        "files": files,
        "sqlite_bytes": files.get(DB_FILE, 0) + files.get(DB_FILE + "-wal", 0),
        "per_table_bytes": dict(per_table),
        "jobs": jobs,
        "events": events,
    }


# --- 4. load on the full store ------------------------------------------------------


async def load(
    app: Stand, http: aiohttp.ClientSession, n_jobs: int, rng: random.Random
) -> dict[str, Any]:
    """Listing, metrics, printers, dead letters, submits + releases; RSS after each step."""
    tech = Tech(http, app.url)
    kiosk = Kiosk(http, app.url)
    steps: list[dict[str, Any]] = [{"step": "ready", **proc_status(app.pid), "took_ms": 0.0}]

    async def timed(name: str, coro: Any) -> None:
        t = time.perf_counter()
        await coro
        steps.append({"step": name, **proc_status(app.pid), "took_ms": ms(time.perf_counter() - t)})

    async def listing() -> None:
        cursor: str | None = None
        for _ in range(LIST_PAGES):
            q = f"/v1/jobs?limit={LIST_LIMIT}" + (f"&cursor={cursor}" if cursor else "")
            body = await tech.get(q)
            cursor = body.get("next_cursor")
            if not cursor:
                break

    async def filtered() -> None:
        for q in (
            "state=DONE",
            "state=HELD",
            "state=DEAD",
            "owner=guest00042",
            "printer=printer-07",
            "state=CANCELLED&owner=guest01234",
        ):
            await tech.get(f"/v1/jobs?{q}&limit=100")

    async def repeat(path: str) -> None:
        for _ in range(REPEAT_CALLS):
            await tech.get(path)

    async def dead_letters() -> None:
        cursor: str | None = None
        while True:
            body = await tech.get(
                "/v1/dead-letter?limit=500" + (f"&cursor={cursor}" if cursor else "")
            )
            cursor = body.get("next_cursor")
            if not cursor:
                return

    async def submits() -> None:
        printers = [p.name for p in app.rig]
        sem = asyncio.Semaphore(LOAD_CONCURRENCY)

        async def one(i: int) -> None:
            async with sem:
                meta = {"owner": f"guest{rng.randrange(OWNERS):05d}", **target(rng, printers)}
                job_id = await kiosk.submit(f"load-{i:05d}", hold=True, **meta)
                await kiosk.release(job_id)

        await asyncio.gather(*(one(i) for i in range(n_jobs)))
        await kiosk.wait_settled(SETTLE_TIMEOUT_S)

    await timed(f"list {LIST_PAGES} pages × {LIST_LIMIT}", listing())
    await timed("filtered listings ×6", filtered())
    await timed(f"/metrics ×{REPEAT_CALLS}", repeat("/metrics"))
    await timed(f"/v1/printers ×{REPEAT_CALLS}", repeat("/v1/printers"))
    await timed("dead-letter queue, all pages", dead_letters())
    await timed(f"{n_jobs} submits + releases, printed", submits())
    return {"steps": steps, "hwm_mib": proc_status(app.pid).get("VmHWM")}


# --- the run ------------------------------------------------------------------------


@dataclass
class Plan:
    jobs: int
    starts: int
    load_jobs: int
    sample: dict[str, int]
    seed: int


async def run(stand: Stand, plan: Plan) -> dict[str, Any]:
    rng = random.Random(plan.seed)
    for i, p in enumerate(stand.rig):
        _POOL_PRINTERS.setdefault(POOLS[i % len(POOLS)], p.name)
    out: dict[str, Any] = {}
    timeout = aiohttp.ClientTimeout(total=60)
    async with aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=LOAD_CONCURRENCY + 4), timeout=timeout
    ) as http:
        t = time.perf_counter()
        stand.use_data("empty")
        out["empty_first_start"] = (await starts(stand, http, 1))[0]
        out["empty_starts"] = await starts(stand, http, plan.starts)
        out["empty_phase_s"] = round(time.perf_counter() - t, 2)
        print(f"bench: empty store: {out['empty_starts']}", file=sys.stderr)

        t = time.perf_counter()
        stand.use_data("data")
        await stand.spawn(http)
        picked = await sample(stand, http, plan.sample, rng)
        stand.stop_appliance()
        out["sample"] = {k: len(v) for k, v in picked["ids"].items()}
        out["store_layer"] = await store_layer(stand.data_dir, picked["ids"], picked["cut"])
        out["sample_phase_s"] = round(time.perf_counter() - t, 2)
        out["clone"] = clone(stand.data_dir, plan.jobs, rng)
        print(f"bench: store filled: {out['clone']}", file=sys.stderr)
        out["size"] = store_size(stand.data_dir)

        t = time.perf_counter()
        out["full_starts"] = await starts(stand, http, plan.starts - 1)
        out["full_starts"].append(await start(stand, http))
        print(f"bench: full store: {out['full_starts']}", file=sys.stderr)
        out["load"] = await load(stand, http, plan.load_jobs, rng)
        stand.stop_appliance()
        out["full_phase_s"] = round(time.perf_counter() - t, 2)
    return out


# --- output -------------------------------------------------------------------------


def table_rows(r: dict[str, Any], plan: Plan) -> list[dict[str, Any]]:
    size = r["size"]
    jobs = size["jobs"]
    pt = size["per_table_bytes"]
    n_full = len(r["full_starts"])
    n_empty = len(r["empty_starts"])
    steps = {s["step"]: s for s in r["load"]["steps"]}
    rows = [
        _row(
            "start-up → /readyz 200, empty store",
            "ms",
            [s["ready_ms"] for s in r["empty_starts"]],
            f"{n_empty} starts, {PRINTERS} printers; spawn → 200, 5 ms poll",
        ),
        _row(
            f"start-up → /readyz 200, {jobs:,} jobs",
            "ms",
            [s["ready_ms"] for s in r["full_starts"]],
            f"{n_full} starts, {PRINTERS} printers",
        ),
        _row(
            "VmRSS at ready, empty store",
            "MiB",
            [s["VmRSS"] for s in r["empty_starts"]],
            f"{n_empty} starts",
        ),
        _row(
            f"VmRSS at ready, {jobs:,} jobs",
            "MiB",
            [s["VmRSS"] for s in r["full_starts"]],
            f"{n_full} starts",
        ),
    ]
    for name, s in steps.items():
        if name == "ready":
            continue
        rows.append(
            _row(f"VmRSS after {name}", "MiB", [s["VmRSS"]], f"took {s['took_ms']} ms; cumulative")
        )
    rows += [
        _row("VmHWM (peak RSS) after the load", "MiB", [r["load"]["hwm_mib"]]),
        _row(
            "store: sqlite + wal per job",
            "bytes/job",
            [size["sqlite_bytes"] / jobs],
            f"{size['sqlite_bytes'] / 2**20:.1f} MiB for {jobs:,} jobs, WAL checkpointed",
        ),
        _row(
            "  jobs table + its indexes per job",
            "bytes/job",
            [(pt.get("jobs", 0)) / jobs],
            "dbstat",
        ),
        _row(
            "  job_events table + its index per job",
            "bytes/job",
            [pt.get("job_events", 0) / jobs],
            f"{size['events'] / jobs:.2f} events per job; dbstat",
        ),
        _row(
            "  per event row (job_events + index)",
            "bytes/event",
            [pt.get("job_events", 0) / max(1, size["events"])],
            "dbstat",
        ),
        _row(
            f"fill {r['clone']['clones']:,} cloned jobs",
            "s",
            [r["clone"]["clone_s"]],
            "plain SQL, triggers write the events",
        ),
    ]
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    ap = parser("resources", __doc__, "20,000 jobs, 2 starts (~20 s)")
    ap.add_argument("--jobs", type=int, default=None, help="stored jobs, default 100000")
    ap.add_argument("--starts", type=int, default=None, help="start-ups each, default 3 (2)")
    ap.add_argument("--load-jobs", type=int, default=None, help="submits+releases, 300 (100)")
    ap.add_argument("--seed", type=int, default=None, help="random seed (default: random)")
    args = ap.parse_args(argv)
    plan = Plan(
        jobs=args.jobs if args.jobs is not None else (20_000 if args.quick else 100_000),
        starts=args.starts if args.starts is not None else (2 if args.quick else 3),
        load_jobs=args.load_jobs if args.load_jobs is not None else (100 if args.quick else 300),
        sample=dict(SAMPLE_QUICK if args.quick else SAMPLE),
        seed=seed(args.seed),
    )
    if not (1_000 <= plan.jobs <= 2_000_000 and 1 <= plan.starts <= 20 and plan.load_jobs >= 0):
        print("bench: --jobs 1000–2000000, --starts 1–20, --load-jobs ≥ 0", file=sys.stderr)
        return 2
    with Run("resources", args, snapshot=True) as bench:
        stand = bench.stand("stand", PRINTERS, pools=POOLS, server={"rate_limit": RATE_LIMIT})
        out = bench.attempt("run", lambda: asyncio.run(run(stand.start(serve=False), plan)))
        bench.keep |= bool(bench.failures)
    rows = table_rows(out, plan) if out is not None else []
    return bench.finish(
        figures_markdown(rows),
        settings=asdict(plan),
        table=rows,
        raw=out,
        work_folder=str(bench.work) if bench.keep else None,
    )


if __name__ == "__main__":
    sys.exit(main())
