"""Roles that fit the people (issue 26): a viewer reads and never acts, tokens expire,
``GET /v1/tokens`` and ``edgeprint token list`` show last use without a secret, and
``[metrics] token_required``. Real appliances on loopback, real HTTP and IPP."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import sqlite3
from collections.abc import AsyncIterator, Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from edgeprint import cli, errors
from edgeprint.api import openapi
from edgeprint.api.auth import TokenAuth, token_digest
from edgeprint.api.refusals import RefusalLog
from edgeprint.config import parse_config
from edgeprint.config_checks import token_expiry
from edgeprint.ipp import codec
from edgeprint.ipp.names import Operation, Status, Tag
from edgeprint.ipp.values import attr
from edgeprint.reload import restart_keys
from edgeprint.server import DB_FILE
from testbed.pdfs import make_pdf
from tests.browser import js, open_status_page
from tests.cdp import browser
from tests.conftest import KIOSK_TOKEN, TECH_TOKEN, Appliance, config_dict, to_toml
from tests.ipp_client import IppQueue, status_message
from tests.polling import eventually

VIEWER_TOKEN = "viewer-token-for-tests"
STATION_TOKEN = "station-token-for-tests"
OLD_TOKEN = "expired-kiosk-token-for-tests"
PAST = "2026-01-31T09:00:00+01:00"
READ_ONLY = "role 'viewer' may not do this (a viewer only reads); it needs role "
#: What each route's row needs → the roles the 403 names (edgeprint.api.auth.roles_for).
NEEDS = {"kiosk": "'kiosk' or 'tech'", "tech": "'tech'", "station": "'kiosk', 'station' or 'tech'"}


def _tokens(**extra: Any) -> list[dict[str, Any]]:
    return [
        {"name": "kiosk-1", "role": "kiosk", "sha256": token_digest(KIOSK_TOKEN)},
        {"name": "tech-1", "role": "tech", "sha256": token_digest(TECH_TOKEN)},
        {"name": "wall-screen", "role": "viewer", "sha256": token_digest(VIEWER_TOKEN)},
        {
            "name": "desk-station",
            "role": "station",
            "sha256": token_digest(STATION_TOKEN),
            "printers": ["printer-01"],
        },
        {"name": "old-kiosk", "role": "kiosk", "sha256": token_digest(OLD_TOKEN), "expires": PAST},
    ]


@pytest.fixture
async def roles_app(make_appliance: Callable[..., Any]) -> AsyncIterator[Appliance]:
    async with make_appliance(sections={"tokens": _tokens(), "ipp": {"auth": "basic"}}) as a:
        yield a


def _stored(app: Appliance) -> dict[str, list[Any]]:
    """Every row of every table, and the spool's files: 'nothing changed' means this did not."""
    with sqlite3.connect(app.data_dir / DB_FILE) as db:
        names = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        out = {n: db.execute(f'SELECT * FROM "{n}"').fetchall() for n in sorted(names)}
    out["spool"] = sorted(p.name for p in (app.data_dir / "spool").rglob("*") if p.is_file())
    return out


def _basic(user: str, token: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{token}".encode()).decode()


async def _printers(app: Appliance) -> list[tuple[str, bool]]:
    body = await (await app.get("/v1/printers", token=TECH_TOKEN)).json()
    return [(p["name"], p["paused"]) for p in body["printers"]]


async def test_a_viewer_reads_every_read_route_and_acts_on_none(roles_app: Appliance) -> None:
    """Every operation of the OpenAPI document, with a viewer token: the reads it may make
    answer 200, every other call 403 naming the role and what it needs (IPP: HTTP 403 and
    client-error-not-authorized), and not one stored row or pause flag changes."""
    app = roles_app
    held = await (
        await app.submit({"owner": "ann", "printer": "printer-01"}, key="roles-held-1")
    ).json()
    assert held["state"] == "HELD"
    before, paused = _stored(app), await _printers(app)
    ipp_body = (
        IppQueue(app.http, app.url, "printer-01")
        .request(
            Operation.PRINT_JOB,
            attr("document-format", Tag.MIME_MEDIA_TYPE, "application/pdf"),
            data=make_pdf("viewer"),
        )
        .encode()
    )
    seen: list[str] = []
    for path, ops in openapi.document()["paths"].items():
        url = app.url + path.format(job_id=held["id"], name="printer-01", owner="ann", job="1")
        for method, op in ops.items():
            what = f"{method.upper()} {path}"
            seen.append(what)
            needs = op.get("x-edgeprint-role")
            if "ipp" in op["tags"] and method == "post":
                headers = {
                    "Authorization": _basic("wall-screen", VIEWER_TOKEN),
                    "Content-Type": "application/ipp",
                }
                async with app.http.post(url, data=ipp_body, headers=headers) as r:
                    assert r.status == 403, what
                    answer = codec.parse(await r.read())
                assert answer.status_code == Status.CLIENT_ERROR_NOT_AUTHORIZED, what
                assert status_message(answer) == READ_ONLY + NEEDS["kiosk"], what
                continue
            headers = app.headers(VIEWER_TOKEN)
            kwargs: dict[str, Any] = {} if method == "get" else {"json": {}}
            async with app.http.request(method, url, headers=headers, **kwargs) as r:
                status, body = r.status, await r.read()
                problem = await r.json() if r.content_type == "application/problem+json" else {}
            if method == "get" and needs in ("read", "view"):
                assert status == 200, (what, body[:300])
            elif needs is not None:
                assert status == 403, (what, body[:300])
                assert problem["type"] == "urn:edgeprint:problem:forbidden", what
                assert problem["detail"] == READ_ONLY + NEEDS[needs], what
            elif "release" in op["tags"] and method == "post":  # reads a station's token
                assert status == 403, (what, body[:300])
                assert problem["detail"] == READ_ONLY + NEEDS["station"], what
            elif method == "post":  # /upload: no token is read there; off in this config
                assert status == 404, (what, body[:300])
            else:
                assert status not in (401, 403), (what, status)
                assert status < 500, (what, status)
    assert len(seen) == sum(len(ops) for ops in openapi.document()["paths"].values())
    assert {"POST /v1/jobs", "POST /v1/printers/{name}/pause", "GET /v1/stats"} <= set(seen)
    assert _stored(app) == before
    assert await _printers(app) == paused


async def test_the_status_page_learns_a_viewer_is_read_only(roles_app: Appliance) -> None:
    """GET /v1/token tells the page the role; the page's style hides every action of a viewer
    (body.viewer) and its script says why (the read-only note)."""
    page = await (await roles_app.http.get(roles_app.url + "/")).text()
    assert 'body.viewer [data-action]:not([data-action$="-story"])' in page
    assert 'get("v1/token", token, ctl.signal)' in page
    me = await (await roles_app.get("/v1/token", token=VIEWER_TOKEN)).json()
    assert me == {
        "name": "wall-screen",
        "role": "viewer",
        "printers": [],
        "expires": None,
        "expired": False,
        "last_used": me["last_used"],
        "last_used_from": "127.0.0.1",
    }
    station = await roles_app.get("/v1/token", token=STATION_TOKEN)
    assert station.status == 403


async def test_an_expired_token_is_refused_with_its_date(roles_app: Appliance) -> None:
    """A token past its ``expires``: 401 problem+json naming it and the date, on the API, the
    release page and /metrics with a token; IPP Basic: client-error-not-authorized with that
    message; nothing stored."""
    app = roles_app
    before = _stored(app)
    expected = "token 'old-kiosk' expired at 2026-01-31T09:00:00+01:00"
    resp = await app.submit(token=OLD_TOKEN, key="roles-expired-1")
    problem = await resp.json()
    assert resp.status == 401
    assert problem["type"] == "urn:edgeprint:problem:unauthorized"
    assert problem["detail"] == expected
    assert resp.headers["WWW-Authenticate"] == 'Bearer realm="edgeprint"'
    look = await app.post("/release/printer-01/lookup", {"code": "123456"}, token=OLD_TOKEN)
    assert look.status == 401
    assert (await look.json())["detail"] == expected
    queue = IppQueue(app.http, app.url, "printer-01")
    body = queue.request(Operation.PRINT_JOB, data=make_pdf("expired")).encode()
    status, raw = await queue.post(body, Authorization=_basic("old-kiosk", OLD_TOKEN))
    assert status == 403
    answer = codec.parse(raw)
    assert answer.status_code == Status.CLIENT_ERROR_NOT_AUTHORIZED
    assert status_message(answer) == expected
    assert _stored(app) == before
    listed = await (await app.get("/v1/tokens", token=TECH_TOKEN)).json()
    old = next(t for t in listed["tokens"] if t["name"] == "old-kiosk")
    assert old["expired"] is True
    assert old["expires"] == "2026-01-31T08:00:00.000Z"
    assert old["last_used"] is None  # a refused token was not used


async def test_a_token_stops_working_when_it_expires_while_running(
    make_appliance: Callable[..., Any],
) -> None:
    """Expiry is read against the wall clock per request: the same token works, then is 401."""
    soon = datetime.now(UTC) + timedelta(seconds=1.5)
    tokens = [
        {
            "name": "brief",
            "role": "kiosk",
            "sha256": token_digest(KIOSK_TOKEN),
            "expires": soon.isoformat(),
        }
    ]
    async with make_appliance(sections={"tokens": tokens}) as app:
        assert (await app.get("/v1/jobs")).status == 200

        async def refused() -> dict[str, Any] | None:
            resp = await app.get("/v1/jobs")
            return await resp.json() if resp.status == 401 else None

        problem = await eventually(refused, "the token to expire", timeout_s=10)
        assert problem["detail"] == f"token 'brief' expired at {soon.isoformat()}"


def test_token_auth_checks_expiry_and_keeps_last_use_per_request() -> None:
    """TokenAuth with a clock: expiry is read at each call; a use is kept (time, address)
    when the token is known, even when its role is then refused; a refused expired one is not."""
    now = [1_000.0]
    cfg = parse_config(
        {
            "tokens": [
                {
                    "name": "k",
                    "role": "kiosk",
                    "sha256": token_digest("k-token"),
                    "expires": datetime.fromtimestamp(1_010, UTC).isoformat(),
                },
                {"name": "v", "role": "viewer", "sha256": token_digest("v-token")},
            ]
        }
    )
    auth = TokenAuth(list(cfg.tokens), clock=lambda: now[0])
    assert auth.authenticate("Bearer k-token", "kiosk", "10.0.0.7").name == "k"
    used = auth.last_use("k")
    assert used is not None
    assert (used.at, used.source) == (1_000.0, "10.0.0.7")
    with pytest.raises(errors.Forbidden) as refused:
        auth.authenticate("Bearer v-token", "kiosk", "10.0.0.8")
    assert str(refused.value) == READ_ONLY + NEEDS["kiosk"]
    assert auth.last_use("v") is not None
    now[0] = 1_010.0
    with pytest.raises(errors.TokenExpired) as expired:
        auth.authenticate("Bearer k-token", "kiosk", "10.0.0.9")
    assert str(expired.value) == "token 'k' expired at 1970-01-01T00:16:50+00:00"
    used = auth.last_use("k")
    assert used is not None
    assert used.source == "10.0.0.7"  # the refused request is not a use


async def test_token_list_shows_last_use_and_never_a_secret(
    roles_app: Appliance, capsys: pytest.CaptureFixture[str]
) -> None:
    """GET /v1/tokens (tech) after some requests: the last use and its address, null for an
    unused token with ``since``; no token or digest in the answer, nor in ``edgeprint token
    list``'s table or its --json; a viewer may not list them."""
    app = roles_app
    assert (await app.get("/v1/jobs", token=KIOSK_TOKEN)).status == 200
    assert (await app.get("/v1/stats", token=VIEWER_TOKEN)).status == 200
    resp = await app.get("/v1/tokens", token=TECH_TOKEN)
    raw = await resp.read()
    body = await resp.json()
    assert resp.status == 200
    by_name = {t["name"]: t for t in body["tokens"]}
    assert list(by_name) == ["kiosk-1", "tech-1", "wall-screen", "desk-station", "old-kiosk"]
    for name in ("kiosk-1", "wall-screen", "tech-1"):
        assert by_name[name]["last_used"] is not None, name
        assert by_name[name]["last_used_from"] == "127.0.0.1", name
    assert by_name["desk-station"] == {
        "name": "desk-station",
        "role": "station",
        "printers": ["printer-01"],
        "expires": None,
        "expired": False,
        "last_used": None,
        "last_used_from": None,
    }
    assert body["since"] <= by_name["kiosk-1"]["last_used"]
    secrets = [KIOSK_TOKEN, TECH_TOKEN, VIEWER_TOKEN, STATION_TOKEN, OLD_TOKEN]
    digests = [token_digest(s) for s in secrets]
    for secret in secrets + digests:
        assert secret.encode() not in raw
    assert (await app.get("/v1/tokens", token=VIEWER_TOKEN)).status == 403

    for extra in ([], ["--json"]):
        capsys.readouterr()
        argv = ["token", "list", "--url", app.url, "--token", TECH_TOKEN, *extra]
        assert await asyncio.to_thread(cli.main, argv) == 0
        out = capsys.readouterr().out
        for secret in secrets + digests:
            assert secret not in out
    table = [line.split() for line in (await _token_table(app, capsys))]
    assert table[0] == ["NAME", "ROLE", "PRINTERS", "EXPIRES", "LAST", "USE"]
    rows = {r[0]: r for r in table[1:]}
    assert rows["old-kiosk"][1:4] == ["kiosk", "-", "expired"]
    assert rows["desk-station"][1:4] == ["station", "printer-01", "never"]
    assert rows["desk-station"][4:6] == ["not", "since"]
    assert rows["kiosk-1"][-2:] == ["from", "127.0.0.1"]


async def _token_table(app: Appliance, capsys: pytest.CaptureFixture[str]) -> list[str]:
    capsys.readouterr()
    argv = ["token", "list", "--url", app.url, "--token", TECH_TOKEN]
    assert await asyncio.to_thread(cli.main, argv) == 0
    return capsys.readouterr().out.splitlines()


async def test_token_list_says_when_a_token_expires() -> None:
    """The table's EXPIRES column in words: days, hours, minutes, expired, never."""
    from edgeprint.cli.tokens import expiry

    now = datetime(2026, 12, 7, 12, 0, tzinfo=UTC)
    assert expiry(None, False, now) == "never"
    assert expiry("2026-12-10T13:00:00.000Z", False, now) == "expires in 3 days"
    assert expiry("2026-12-07T13:30:00.000Z", False, now) == "expires in 1 hour"
    assert expiry("2026-12-07T12:05:00.000Z", False, now) == "expires in 5 minutes"
    assert expiry("2026-12-01T00:00:00.000Z", True, now) == "expired"


async def test_metrics_may_require_a_token(make_appliance: Callable[..., Any]) -> None:
    """``[metrics] token_required = true``: /metrics is 401 without a token, 200 with a
    viewer's, kiosk's or tech's, 403 with a station's; without it no token is needed."""
    sections = {"tokens": _tokens(), "metrics": {"token_required": True}}
    async with make_appliance(sections=sections) as app:
        async with app.http.get(f"{app.url}/metrics") as r:
            assert r.status == 401
            assert (await r.json())["detail"] == (
                "missing bearer token (Authorization: Bearer <token>)"
            )
            assert r.headers["WWW-Authenticate"] == 'Bearer realm="edgeprint"'
        for token in (VIEWER_TOKEN, KIOSK_TOKEN, TECH_TOKEN):
            resp = await app.get("/metrics", token=token)
            assert resp.status == 200
            assert b"edgeprint_" in await resp.read()
        station = await app.get("/metrics", token=STATION_TOKEN)
        assert station.status == 403
        old = await app.get("/metrics", token=OLD_TOKEN)
        assert old.status == 401
    async with (
        make_appliance(sections={"tokens": _tokens()}) as app,
        app.http.get(f"{app.url}/metrics") as r,
    ):
        assert r.status == 200


def test_metrics_token_required_is_live_on_reload(tmp_path: Path) -> None:
    """A reload may turn ``[metrics] token_required`` on or off (read per request)."""
    old = parse_config(config_dict(tmp_path / "data"))
    new = parse_config({**config_dict(tmp_path / "data"), "metrics": {"token_required": True}})
    assert restart_keys(old, new) == []


def test_expires_without_an_offset_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``expires`` must carry its zone: a TOML local date-time is refused naming the key, and
    check-config exits 2 with that message."""
    cfg = config_dict(tmp_path / "data")
    path = tmp_path / "config.toml"
    path.write_text(
        to_toml({k: v for k, v in cfg.items() if k != "tokens"})
        + '\n[[tokens]]\nname = "kiosk-1"\nrole = "kiosk"\n'
        + f'sha256 = "{token_digest(KIOSK_TOKEN)}"\nexpires = 2026-12-24T18:00:00\n'
    )
    assert cli.main(["check-config", str(path)]) == 2
    assert capsys.readouterr().err.splitlines()[1] == (
        "  tokens[0].expires: 2026-12-24T18:00:00 has no offset: write the zone, e.g. "
        "2026-12-24T18:00:00Z or 2026-12-24T18:00:00+02:00"
    )


def test_check_config_lists_tokens_expired_and_expiring_within_a_week(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """check-config warns (exit 0) of an expired token and of one expiring within 7 days,
    each with its date; one expiring later, or never, is not mentioned."""
    now = datetime(2026, 12, 7, 12, 0, tzinfo=UTC)
    cfg = parse_config(
        {
            **config_dict(tmp_path / "data"),
            "tokens": [
                {
                    "name": "gone",
                    "role": "kiosk",
                    "sha256": token_digest("a"),
                    "expires": "2026-12-01T00:00:00Z",
                },
                {
                    "name": "soon",
                    "role": "viewer",
                    "sha256": token_digest("b"),
                    "expires": "2026-12-10T18:00:00+01:00",
                },
                {
                    "name": "later",
                    "role": "tech",
                    "sha256": token_digest("c"),
                    "expires": "2026-12-31T00:00:00Z",
                },
                {"name": "forever", "role": "tech", "sha256": token_digest("d")},
            ],
        }
    )
    assert token_expiry(cfg, now) == [
        "tokens[0].expires: 'gone' expired at 2026-12-01T00:00:00+00:00 and is refused; make "
        "a new one with: edgeprint token new --role kiosk --name gone",
        "tokens[1].expires: 'soon' expires at 2026-12-10T18:00:00+01:00, in 3 days; make a "
        "new one with: edgeprint token new --role viewer --name soon",
    ]
    path = tmp_path / "config.toml"
    path.write_text(
        to_toml(
            {
                **config_dict(tmp_path / "data"),
                "tokens": [
                    {
                        "name": "gone",
                        "role": "kiosk",
                        "sha256": token_digest("a"),
                        "expires": "2026-01-01T00:00:00Z",
                    },
                ],
            }
        )
    )
    assert cli.main(["check-config", str(path)]) == 0
    assert (
        "warning: tokens[0].expires: 'gone' expired at 2026-01-01T00:00:00+00:00 and is "
        "refused; make a new one with: edgeprint token new --role kiosk --name gone"
    ) in capsys.readouterr().err.splitlines()


#: The page's controls that act (a job's story opens and closes: reading, not acting).
_ACTIONS_SHOWN = (
    "Array.from(document.querySelectorAll('[data-action], input[data-select], #preflight-run'))"
    ".filter(function (e) { return e.getClientRects().length > 0 &&"
    " !/-story$/.test(e.getAttribute('data-action') || ''); })"
    ".map(function (e) { return e.getAttribute('data-action') || e.id; })"
)


async def test_the_status_page_shows_a_viewer_everything_and_no_action(
    chromium_path: str, roles_app: Appliance, tmp_path: Path
) -> None:
    """In headless chromium: with a viewer token the page shows the printers, the HELD and the
    DEAD job, says it is read-only, and not one action control is visible; with a tech token
    the same page offers them."""
    app = roles_app
    held = await (
        await app.submit({"owner": "ann", "printer": "printer-01"}, key="page-held-1")
    ).json()
    dead = await (
        await app.submit({"owner": "bo", "printer": "printer-03", "hold": False}, key="page-dead-1")
    ).json()
    claimed = await app.running.service.worker.claim_next("printer-03")
    assert claimed is not None
    assert (
        await app.running.service.outcomes.fail(claimed, "printer-03", "poison", "set up")
        is not None
    )
    async with browser(tmp_path) as page:
        await open_status_page(page, app.url, VIEWER_TOKEN)
        for job in (held, dead):
            await page.wait(f"!!document.querySelector('[data-job={js(job['id'])}]')")
        assert await page.eval("document.querySelectorAll('[data-printer]').length") >= 3
        assert await page.eval("document.body.getAttribute('data-role')") == "viewer"
        note = await page.eval("document.getElementById('read-only').textContent")
        assert note == (
            "Read-only: this is a viewer token (wall-screen), so the page shows no actions. "
            "A technician's token acts."
        )
        assert await page.eval(_ACTIONS_SHOWN) == []
        await page.goto(f"{app.url}/?as=tech#token={TECH_TOKEN}")
        await page.wait("document.body && document.body.getAttribute('data-role') === 'tech'")
        await page.wait(f"!!document.querySelector('[data-job={js(dead['id'])}]')")
        shown = await page.eval(_ACTIONS_SHOWN)
        assert {"pause", "drain", "release", "cancel", "replay"} <= set(shown), shown
        assert await page.eval("document.getElementById('read-only').hidden") is True


async def test_a_station_token_may_not_print_over_ipp(roles_app: Appliance) -> None:
    """IPP Basic auth with a station's name and token: known, but its role may not print:
    HTTP 403, client-error-not-authorized naming the role; nothing stored."""
    app = roles_app
    before = _stored(app)
    queue = IppQueue(app.http, app.url, "printer-01")
    body = queue.request(Operation.PRINT_JOB, data=make_pdf("station")).encode()
    status, raw = await queue.post(body, Authorization=_basic("desk-station", STATION_TOKEN))
    assert status == 403
    answer = codec.parse(raw)
    assert answer.status_code == Status.CLIENT_ERROR_NOT_AUTHORIZED
    assert (
        status_message(answer) == "role 'station' may not do this; it needs role " + NEEDS["kiosk"]
    )
    assert _stored(app) == before


async def test_a_refused_known_token_is_one_throttled_log_line_and_no_audit_row(
    roles_app: Appliance, caplog: pytest.LogCaptureFixture
) -> None:
    """Finding 6: a viewer's 403 and an expired token's 401 left no trace. Now one
    ``auth_refused`` line per token per 10 s (name, role, method, path, peer; never the
    secret), one for unknown tokens without a name, none without ``Authorization``; no
    audit row (a flood must not fill the table), nothing stored."""
    app = roles_app
    before = _stored(app)
    with caplog.at_level(logging.INFO, logger="edgeprint.api.refusals"):
        for _ in range(5):
            resp = await app.post("/v1/printers/printer-01/pause", {}, token=VIEWER_TOKEN)
            assert resp.status == 403
        for _ in range(3):
            assert (await app.get("/v1/jobs", token=OLD_TOKEN)).status == 401
            assert (await app.get("/v1/jobs", token="not-a-token-of-this-box")).status == 401
        async with app.http.get(f"{app.url}/v1/jobs") as r:  # no header: not logged
            assert r.status == 401
    lines = [r for r in caplog.records if getattr(r, "event", "") == "auth_refused"]
    assert [r.getMessage() for r in lines] == [
        "403: token 'wall-screen' (viewer) refused: POST /v1/printers/printer-01/pause from "
        f"127.0.0.1: {READ_ONLY}'tech'",
        "401: token 'old-kiosk' (kiosk) refused: GET /v1/jobs from 127.0.0.1: expired",
        "401: an unknown token refused: GET /v1/jobs from 127.0.0.1: unknown bearer token",
    ]
    first = lines[0].__dict__
    assert (first["token"], first["role"], first["method"], first["path"], first["peer"]) == (
        "wall-screen",
        "viewer",
        "POST",
        "/v1/printers/printer-01/pause",
        "127.0.0.1",
    )
    assert lines[2].__dict__["token"] is None
    for record in caplog.records:
        for secret in (VIEWER_TOKEN, OLD_TOKEN, "not-a-token-of-this-box"):
            assert secret not in str(record.__dict__)
    assert _stored(app) == before  # no audit row, nothing else


def test_refusal_lines_say_how_many_were_held_back() -> None:
    now = [100.0]
    refusals = RefusalLog(every_s=10.0, clock=lambda: now[0])
    exc = errors.Forbidden("viewer", "tech", ("tech",), token="wall-screen")
    with _captured() as records:
        for _ in range(4):
            refusals.refused(
                exc, "GET", "/v1/audit", "192.0.2.7", token="wall-screen", role="viewer"
            )
        now[0] += 10.0
        refusals.refused(exc, "GET", "/v1/audit", "192.0.2.7", token="wall-screen", role="viewer")
    assert [r.getMessage() for r in records] == [
        "403: token 'wall-screen' (viewer) refused: GET /v1/audit from 192.0.2.7: "
        "role 'viewer' may not do this (a viewer only reads); it needs role 'tech'",
        "403: token 'wall-screen' (viewer) refused: GET /v1/audit from 192.0.2.7: "
        "role 'viewer' may not do this (a viewer only reads); it needs role 'tech' "
        "(and 3 more held back)",
    ]
    assert records[1].__dict__["suppressed"] == 3


@contextlib.contextmanager
def _captured() -> Iterator[list[logging.LogRecord]]:
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append  # type: ignore[method-assign]
    logger = logging.getLogger("edgeprint.api.refusals")
    logger.addHandler(handler)
    old = logger.level
    logger.setLevel(logging.INFO)
    try:
        yield records
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old)
