"""Technician commands of ``edgeprint`` against a real appliance on loopback.

The CLI is synchronous (urllib): in-process calls run in a thread so the
appliance's event loop keeps serving; a few run ``python -m edgeprint`` as a
real process to check the entry point, the environment and exit codes.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from edgeprint import cli
from testbed.rig import Rig
from tests.conftest import KIOSK_TOKEN, TECH_TOKEN, Appliance, config_dict, to_toml
from tests.polling import eventually
from tests.printing import Client, appliance, rig_config


async def run_cli(
    capsys: pytest.CaptureFixture[str], *argv: str, token: str | None = TECH_TOKEN
) -> tuple[int, str, str]:
    """``edgeprint ARGV`` in a thread; (exit code, stdout, stderr)."""
    args = [*argv] if token is None else [*argv, "--token", token]
    capsys.readouterr()
    code = await asyncio.to_thread(cli.main, args)
    out = capsys.readouterr()
    return code, out.out, out.err


async def _dead_job(app: Appliance, key: str, owner: str = "ann") -> dict[str, Any]:
    """A job parked DEAD the way a worker parks a poison job (printer-03 is unreachable here)."""
    job = await (
        await app.submit({"owner": owner, "printer": "printer-03", "hold": False}, key=key)
    ).json()
    claimed = await app.running.service.worker.claim_next("printer-03")
    assert claimed is not None
    assert claimed.id == job["id"]
    assert (
        await app.running.service.outcomes.fail(claimed, "printer-03", "poison", "bad PDF")
        is not None
    )
    return job


def _closed_port() -> int:
    """A loopback port nobody listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def _width_ok(text: str) -> None:
    too_wide = [line for line in text.splitlines() if len(line) > cli.render.WIDTH]
    assert not too_wide, f"lines wider than {cli.render.WIDTH}: {too_wide}"


# --- against the in-process appliance (printers unreachable) -------------------------------


async def test_status_one_screen(app: Appliance, capsys: pytest.CaptureFixture[str]) -> None:
    """status: every printer, the pool, job counts by state (from /v1/stats) and the dead letter."""
    dead = await _dead_job(app, "dead-key-0001")
    await app.submit(key="held-key-0001")
    code, out, err = await run_cli(capsys, "status", "--url", app.url)
    assert (code, err) == (0, "")
    for name in ("printer-01", "printer-02", "printer-03", "lobby"):
        assert name in out
    assert "HELD 1" in out
    assert "DEAD 1" in out
    assert "DONE 0" in out
    assert "DEAD LETTER  1 job(s)" in out
    assert dead["id"] in out
    assert "poison" in out
    assert TECH_TOKEN not in out
    _width_ok(out)


async def test_status_json_is_the_api_answers(
    app: Appliance, capsys: pytest.CaptureFixture[str]
) -> None:
    """status --json combines /v1/printers, /v1/dead-letter and the counts, unchanged."""
    await _dead_job(app, "dead-key-0002")
    code, out, _ = await run_cli(capsys, "--json", "status", "--url", app.url)
    assert code == 0
    body = json.loads(out)
    api = await (await app.get("/v1/printers", token=TECH_TOKEN)).json()
    # (sorted: a printer's first probe may fall between the two answers, and moves it first)
    assert sorted(p["name"] for p in body["printers"]) == sorted(p["name"] for p in api["printers"])
    assert body["pools"] == api["pools"]
    assert body["jobs_by_state"]["DEAD"] == 1
    assert body["dead_letter"]["count"] == 1
    assert body["dead_letter"]["jobs"][0]["dead_reason"] == "poison"


async def test_printers_lists_every_field(
    app: Appliance, capsys: pytest.CaptureFixture[str]
) -> None:
    """printers: each printer with its URI and state; --json is GET /v1/printers as-is."""
    code, out, _ = await run_cli(capsys, "printers", "--url", app.url)
    assert code == 0
    for p in app.config.printers:
        assert f"{p.name}  {p.uri}" in out
    _width_ok(out)
    code, out, _ = await run_cli(capsys, "printers", "--url", app.url, "--json")
    assert code == 0
    assert set(json.loads(out)) == {"printers", "pools", "waiting_for_stock"}


async def test_jobs_filters_and_paging(app: Appliance, capsys: pytest.CaptureFixture[str]) -> None:
    """jobs --state/--owner/--limit pass through; a full page says how to get the next."""
    dead = await _dead_job(app, "dead-key-0003", owner="bob")
    held = [
        await (
            await app.submit({"owner": "ann", "pool": "lobby", "title": f"Ann badge {i}"},
                             key=f"held-key-{i:04d}")
        ).json()
        for i in range(3)
    ]  # fmt: skip
    code, out, _ = await run_cli(capsys, "jobs", "--url", app.url, "--state", "dead")
    assert code == 0
    assert dead["id"] in out
    assert all(j["id"] not in out for j in held)
    code, out, _ = await run_cli(capsys, "jobs", "--url", app.url, "--owner", "ann", "--limit", "2")
    assert code == 0
    assert [j["id"] in out for j in held] == [False, True, True]  # newest first
    assert "more: add --cursor " in out
    cursor = out.rsplit("--cursor ", 1)[1].strip()
    code, out, _ = await run_cli(
        capsys, "jobs", "--url", app.url, "--owner", "ann", "--limit", "2", "--cursor", cursor
    )
    assert code == 0
    assert held[0]["id"] in out
    assert "TITLE" in out
    assert "Ann badge 0" in out  # issue 24: the job's title
    _width_ok(out)
    # a kiosk token may list jobs
    code, _, _ = await run_cli(capsys, "jobs", "--url", app.url, token=KIOSK_TOKEN)
    assert code == 0


async def test_dead_letter_and_replay_once(
    app: Appliance, capsys: pytest.CaptureFixture[str]
) -> None:
    """dead-letter lists the job with its reason; replay sends it back once; again is exit 1."""
    dead = await _dead_job(app, "dead-key-0004")
    code, out, _ = await run_cli(capsys, "dead-letter", "--url", app.url)
    assert code == 0
    assert "dead-letter queue: 1 job(s)" in out
    assert dead["id"] in out
    assert "poison" in out
    assert "bad PDF" in out
    _width_ok(out)
    code, out, _ = await run_cli(capsys, "replay", dead["id"], "--url", app.url)
    assert code == 0
    assert f"replayed {dead['id']}: now RELEASED, waiting for printer-03" in out
    code, out, err = await run_cli(capsys, "replay", dead["id"], "--url", app.url)
    assert code == 1
    assert out == ""
    assert "409 Conflict" in err
    assert "RELEASED" in err
    # --json: the problem document as-is on stdout, the detail on stderr
    code, out, err = await run_cli(capsys, "replay", dead["id"], "--url", app.url, "--json")
    assert code == 1
    assert json.loads(out)["type"] == "urn:edgeprint:problem:state-conflict"


async def test_pause_and_resume(app: Appliance, capsys: pytest.CaptureFixture[str]) -> None:
    """pause/resume flip the stored flag; an unknown printer is exit 1 with the 404 detail."""
    code, out, _ = await run_cli(capsys, "pause", "printer-01", "--url", app.url)
    assert (code, out.split(";")[0]) == (0, "printer-01: paused")
    body = await (await app.get("/v1/printers", token=TECH_TOKEN)).json()
    assert {p["name"]: p["paused"] for p in body["printers"]}["printer-01"] is True
    code, out, _ = await run_cli(capsys, "resume", "printer-01", "--url", app.url)
    assert (code, out.split(";")[0]) == (0, "printer-01: not paused (takes work)")
    body = await (await app.get("/v1/printers", token=TECH_TOKEN)).json()
    assert {p["name"]: p["paused"] for p in body["printers"]}["printer-01"] is False
    code, _, err = await run_cli(capsys, "pause", "printer-99", "--url", app.url)
    assert code == 1
    assert "404" in err
    assert "printer-99" in err


async def test_auth_errors_are_exit_1_and_never_show_the_token(
    app: Appliance, capsys: pytest.CaptureFixture[str]
) -> None:
    """Unknown token: 401 with the appliance's detail; kiosk token on a tech command: 403."""
    secret = "not-a-real-token-0123456789"
    code, out, err = await run_cli(capsys, "status", "--url", app.url, token=secret)
    assert code == 1
    assert "401 Unauthorized: unknown bearer token" in err
    assert secret not in out + err
    code, _, err = await run_cli(capsys, "dead-letter", "--url", app.url, token=KIOSK_TOKEN)
    assert code == 1
    assert "403 Forbidden" in err
    assert "tech" in err
    assert KIOSK_TOKEN not in err


async def test_url_from_config(
    app: Appliance, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--config PATH takes host and port from [server]; a wildcard host means loopback."""
    data = config_dict(tmp_path / "other")
    data["server"].update(host="0.0.0.0", port=app.running.port)
    path = tmp_path / "config.toml"
    path.write_text(to_toml(data))
    code, out, err = await run_cli(capsys, "printers", "--config", str(path))
    assert (code, err) == (0, "")
    assert "printer-01" in out
    data["server"]["port"] = 0
    path.write_text(to_toml(data))
    code, _, err = await run_cli(capsys, "printers", "--config", str(path))
    assert code == 2
    assert "pass --url" in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        pytest.param(["jobs", "--limit", "0"], "an integer from 1 to 500", id="limit"),
        pytest.param(["jobs", "--state", "LOST"], "one of HELD", id="state"),
        pytest.param(["replay", "not-a-job"], "a job id is 32 hex characters, or its first 6-31", id="job-id"),
        pytest.param(["pause", "Printer 1"], "a printer name", id="printer-name"),
        pytest.param(["status", "--url", "ftp://h:1"], "give http://HOST:PORT", id="scheme"),
        pytest.param(["status", "--url", "http://u:p@h:1"], "no user or password", id="userinfo"),
        pytest.param(["status", "--url", "http://h:99999"], "bad --url", id="port"),
        pytest.param(["status", "--url", "x", "--config", "y"], "bad --url", id="both"),
        pytest.param(["explode"], "invalid choice", id="command"),
        pytest.param(["printers", "trust"], "printers trust: name the printer: edgeprint printers trust PRINTER", id="trust-no-printer"),
        pytest.param(["status", "--token", "two words"], "characters a token cannot", id="token"),
    ],
)  # fmt: skip
def test_bad_usage_is_exit_2(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    """Bad arguments exit 2 before any request, and say what is wrong."""
    assert cli.main([*argv]) == 2
    assert message in capsys.readouterr().err


async def test_missing_token_is_exit_2(
    app: Appliance, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """No --token and no $EDGEPRINT_TOKEN, at an appliance that answers: exit 2 naming the
    variable (nothing listening is exit 3: tests/test_cli_first_user.py)."""
    monkeypatch.delenv(cli.client.TOKEN_ENV, raising=False)
    assert await asyncio.to_thread(cli.main, ["status", "--url", app.url]) == 2
    assert "EDGEPRINT_TOKEN" in capsys.readouterr().err


def _edgeprint(*argv: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("EDGEPRINT_")}
    return subprocess.run(
        [sys.executable, "-m", "edgeprint", *argv],
        capture_output=True, text=True, timeout=30, check=False, env={**base, **env},
    )  # fmt: skip


def test_cannot_connect_is_exit_3_and_names_the_url() -> None:
    """Nothing listening: exit 3, the URL in the message (a real process, token from env)."""
    url = f"http://127.0.0.1:{_closed_port()}"
    proc = _edgeprint("status", env={"EDGEPRINT_TOKEN": TECH_TOKEN, "EDGEPRINT_URL": url})
    assert proc.returncode == 3, proc.stderr
    assert f"cannot connect to {url}" in proc.stderr
    assert TECH_TOKEN not in proc.stderr + proc.stdout


async def test_real_process_with_token_from_env(app: Appliance) -> None:
    """``python -m edgeprint printers`` with $EDGEPRINT_TOKEN and $EDGEPRINT_URL works."""
    proc = await asyncio.to_thread(
        _edgeprint, "printers", env={"EDGEPRINT_TOKEN": TECH_TOKEN, "EDGEPRINT_URL": app.url}
    )
    assert proc.returncode == 0, proc.stderr
    assert "printer-01" in proc.stdout


@pytest.fixture
async def redirecting_server() -> AsyncIterator[tuple[str, list[str | None]]]:
    """A loopback server whose every path redirects to /elsewhere; records Authorization."""
    seen: list[str | None] = []

    async def handler(request: web.Request) -> web.StreamResponse:
        seen.append(request.headers.get("Authorization"))
        if request.path == "/elsewhere":
            return web.json_response({"printers": [], "pools": []})
        raise web.HTTPFound("/elsewhere")

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        yield f"http://127.0.0.1:{port}", seen
    finally:
        await runner.cleanup()


async def test_redirects_are_not_followed(
    redirecting_server: tuple[str, list[str | None]], capsys: pytest.CaptureFixture[str]
) -> None:
    """A redirect is exit 1: the token is never carried to another URL."""
    url, seen = redirecting_server
    code, _, err = await run_cli(capsys, "printers", "--url", url)
    assert code == 1
    assert "redirect" in err
    assert len(seen) == 1


def test_terminal_control_characters_are_neutralised() -> None:
    """Text from printers (state messages, errors) cannot move the cursor or recolour."""
    assert cli.render.clean("eve\u009b31m") == "eve?31m"
    assert cli.render.clean("a\x1b[2Jb") == "a?[2Jb"


# --- on two real printers -----------------------------------------------------------------


async def _tech_get(kiosk: Client, path: str) -> Any:
    headers = {"Authorization": f"Bearer {TECH_TOKEN}"}
    async with kiosk.http.get(f"{kiosk.url}{path}", headers=headers) as r:
        assert r.status == 200
        return await r.json()


async def busy_floor(rig: Rig, kiosk: Client, deadline_s: float = 30.0) -> dict[str, Any]:
    """A check-in floor mid-event on the rig's two printers (config: max_attempts = 1).

    printer-01 prints a long job with two more waiting for it; printer-02 is out of
    paper (unhealthy); three jobs are DONE, one HELD, and one is DEAD
    (attempts_exhausted, owner with markup in it). Returns the interesting ids.
    """
    poisoned = await kiosk.submit("floor-dead-01", printer="printer-01", owner="<b>mallory</b>")
    rig.fault("printer-01", "abort", match=poisoned["id"])
    status, _ = await kiosk.post(f"/v1/jobs/{poisoned['id']}/release")
    assert status == 200
    await kiosk.wait_states([poisoned["id"]], {"DEAD"}, timeout_s=deadline_s)
    rig.clear_fault("printer-01")
    done = [await kiosk.submit(f"floor-done-{i:02d}", pool="lobby", hold=False) for i in range(3)]
    await kiosk.wait_states([j["id"] for j in done], {"DONE"}, timeout_s=deadline_s)
    rig.media("printer-02", "empty")

    async def printer_02_unhealthy() -> bool:
        body = await _tech_get(kiosk, "/v1/printers")
        return not {p["name"]: p["healthy"] for p in body["printers"]}["printer-02"]

    await eventually(printer_02_unhealthy, "printer-02 unhealthy", timeout_s=deadline_s)
    rig.set_speed("printer-01", 120.0)
    slow = [
        await kiosk.submit(f"floor-slow-{i:02d}", printer="printer-01", hold=False)
        for i in range(3)
    ]
    await kiosk.wait_states([slow[0]["id"]], {"PRINTING"}, timeout_s=deadline_s)
    held = await kiosk.submit("floor-held-01", pool="lobby")
    return {"dead": poisoned["id"], "printing": slow[0]["id"], "held": held["id"]}


def floor_config(tmp_path: Path, rig: Rig) -> dict[str, Any]:
    cfg = rig_config(tmp_path / "data", rig, max_attempts=1)
    cfg["server"]["shutdown_grace_s"] = 1.0  # a 120 s job is in hand when the test ends
    cfg["dispatch"]["request_timeout_s"] = 1.0  # the grace must cover one IPP request
    return cfg


async def test_status_on_two_real_printers(
    tmp_path: Path, printers: Rig, capsys: pytest.CaptureFixture[str]
) -> None:
    """On the rig: a healthy printing printer, an unhealthy one with its reason, counts, dead."""
    async with appliance(floor_config(tmp_path, printers)) as (_, kiosk):
        ids = await busy_floor(printers, kiosk)
        code, out, err = await run_cli(capsys, "status", "--url", kiosk.url)
    assert (code, err) == (0, "")
    print(out)  # shown with -s: the report's sample
    rows = {line.split()[0]: line.split() for line in out.splitlines() if line[:8] == "printer-"}
    assert rows["printer-01"][:3] == ["printer-01", "lobby", "ok"]
    assert rows["printer-01"][-1] == ids["printing"][:8]
    assert rows["printer-02"][:3] == ["printer-02", "lobby", "UNHEALTHY"]
    assert "media-empty" in out
    for text in ("HELD 1", "RELEASED 2", "PRINTING 1", "DONE 3", "DEAD 1"):
        assert text in out
    assert ids["dead"] in out
    assert "attempts_exhausted" in out
    _width_ok(out)


async def test_drain_moves_waiting_jobs_to_the_pool(
    tmp_path: Path, printers: Rig, capsys: pytest.CaptureFixture[str]
) -> None:
    """drain: a busy printer's waiting jobs go to its pool, and a peer prints them."""
    printers.set_speed("printer-01", 120.0)  # printer-01 holds its first job for the test
    async with appliance(floor_config(tmp_path, printers)) as (_, kiosk):
        busy = await kiosk.submit("drain-0001", printer="printer-01", hold=False)
        await kiosk.wait_states([busy["id"]], {"PRINTING"})
        waiting = await kiosk.submit("drain-0002", printer="printer-01", hold=False)
        assert (waiting["state"], waiting["printer"]) == ("RELEASED", "printer-01")
        code, out, err = await run_cli(capsys, "drain", "printer-01", "--url", kiosk.url)
        assert (code, err) == (0, "")
        assert out.startswith("printer-01: paused; health ok; 0 job(s) waiting for it by name")
        assert "moved 1 waiting job(s) to pool lobby" in out
        assert f"  {waiting['id']}" in out
        [done] = await kiosk.wait_states([waiting["id"]], {"DONE"})
        assert (await kiosk.job(busy["id"]))["state"] == "PRINTING"
    assert done["printed_on"] == "printer-02"


async def test_a_refusal_hint_follows_the_server(
    make_appliance: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """Finding 8: the CLI added "(this needs a tech token; …)" to a 403 whose detail says a
    kiosk is enough, and "does not know it" to an EXPIRED token's 401."""
    from tests.test_roles import OLD_TOKEN, VIEWER_TOKEN, _tokens

    async with make_appliance(sections={"tokens": _tokens()}) as app:
        job = await (await app.submit({"owner": "ann", "pool": "lobby"}, key="hint-0001")).json()
        code, out, err = await run_cli(
            capsys, "release", job["id"], "--url", app.url, token=VIEWER_TOKEN
        )
        assert code == 1
        assert err.strip() == (
            "edgeprint: 403 Forbidden: role 'viewer' may not do this (a viewer only reads); "
            "it needs "
            "role 'kiosk' or 'tech' (use a token of a role it names; the token from --token "
            "is not one)"
        )
        code, out, err = await run_cli(capsys, "jobs", "--url", app.url, token=OLD_TOKEN)
        assert code == 1
        assert err.strip() == (
            "edgeprint: 401 Unauthorized: token 'old-kiosk' expired at "
            "2026-01-31T09:00:00+01:00 (the "
            "token from --token has expired: ask the technician for a new one)"
        )
        assert VIEWER_TOKEN not in out + err
        assert OLD_TOKEN not in out + err
