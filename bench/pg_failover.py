"""``bench.pg_bench --only failover``: the Patroni primary fails over under load (issue 27 §2).

Each round makes a fresh Patroni pair (testbed/patroni.py, strict synchronous mode) and two
appliances on it, runs submissions, releases and prints (testbed/failover_load.py), and
either SIGKILLs the primary's host or cuts it off the network; the host comes back rebooted.
Reported from the client side: the write-unavailability window (first failed write → first
success), Patroni's takeover (fault → the other node primary), lost and duplicated jobs.
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from bench.harness import BenchError, Run, row
from testbed.failover_load import appliances, run_failover
from testbed.patroni import PatroniCluster, find_patroni
from testbed.rig import Rig

KINDS = ("kill", "cut")


async def _round(work: Path, kind: str) -> dict[str, Any]:
    rig = Rig(work / "rig")
    rig.start(2)
    cluster: PatroniCluster | None = None
    procs = []
    try:
        cluster = PatroniCluster(netns=kind == "cut", durable=True)
        cluster.start()
        first = cluster.wait_primary()
        if kind == "cut" and first.name != "pg1":  # the node in the namespace leads
            cluster.kill(first)
            cluster.wait_primary(not_=first)
            cluster.start_node(first)
            cluster.wait_sync_standby()
        url = cluster.url()
        procs = appliances(cluster, url, rig, work)
        for proc in procs:
            proc.start()
        run = await run_failover(cluster, procs, url, rig, kind)
    except (RuntimeError, TimeoutError, OSError) as exc:
        raise BenchError(f"{kind}: {exc}") from exc
    finally:
        for proc in procs:
            proc.kill()
        if cluster is not None:
            cluster.stop()
        rig.stop()
    print(run.summary(), flush=True)
    return {
        "kind": kind,
        "takeover_s": round(run.takeover_s, 2),
        "back_s": round(run.back_s, 2),
        "write_unavailable_s": round(run.unavailable_s, 2),
        "slowest_answer_s": round(run.slowest_s, 2),
        "acknowledged": len(run.submitted),
        "released": len(run.released),
        "failed_answers": {f"{s} {t}": n for (s, t), n in run.statuses.items()},
        "reinits": run.reinits,
        "lost": len(run.lost),
        "duplicates": len(run.duplicates),
        "strangers": len(run.strangers),
    }


def failover_phase(run: Run, kills: int) -> dict[str, Any] | None:
    """``kills`` rounds of each kind; None when Patroni or etcd is not installed."""
    if find_patroni() is None:
        run.failures.append("failover: patroni and etcd-server are not installed (Debian)")
        return None
    samples = []
    for kind in KINDS:
        for i in range(kills):
            work = run.work / f"failover-{kind}-{i}"
            work.mkdir()
            sample = run.attempt_async(f"failover {kind} {i}", _round(work, kind))
            if sample is not None:
                samples.append(sample)
    if not samples:
        return None
    windows = [s["write_unavailable_s"] for s in samples]
    out = {
        "samples": samples,
        "kills": len(samples),
        "unavailable_p50_s": round(statistics.median(windows), 1),
        "unavailable_max_s": round(max(windows), 1),
        "lost": sum(s["lost"] for s in samples),
        "duplicates": sum(s["duplicates"] for s in samples),
    }
    if out["lost"] or out["duplicates"] or any(s["strangers"] for s in samples):
        run.failures.append(f"failover: lost {out['lost']}, duplicates {out['duplicates']}")
    return out


def failover_rows(result: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for kind, what in (
        ("kill", "SIGKILL of the primary's host"),
        ("cut", "the primary's host cut off the network"),
    ):
        got = [s for s in result["samples"] if s["kind"] == kind]
        if not got:
            continue
        note = f"{len(got)} rounds; strict synchronous Patroni pair, ttl 8 s"
        rows += [
            row(
                f"failover ({what}): write unavailable, client side",
                "s",
                [s["write_unavailable_s"] for s in got],
                note,
            ),
            row(
                f"failover ({what}): takeover, fault → the replica primary",
                "s",
                [s["takeover_s"] for s in got],
                "Patroni's REST API",
            ),
            row(
                f"failover ({what}): slowest answer",
                "s",
                [s["slowest_answer_s"] for s in got],
                "client timeout 15 s, query 3 s",
            ),
        ]
    rows.append(
        row(
            "failover: lost / duplicated jobs",
            "jobs",
            [result["lost"] + result["duplicates"]],
            "printers' logs",
        )
    )
    return rows


def failover_line(result: dict[str, Any]) -> str:
    return (
        f"failover: {result['kills']} kills, write unavailable p50 "
        f"{result['unavailable_p50_s']:g} s max {result['unavailable_max_s']:g} s, "
        f"lost {result['lost']}, duplicates {result['duplicates']}"
    )
