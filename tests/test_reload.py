"""Live reload (SIGHUP, the unit's ExecReload): tokens and limits change at once; a config
that is invalid or changes what needs a restart is refused and the running one stays."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import signal
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from edgeprint.api.auth import token_digest
from edgeprint.config import parse_config
from edgeprint.reload import changed_keys, restart_keys
from testbed.pdfs import make_pdf
from testbed.proc import ServeProcess
from testbed.rig import Rig
from tests.conftest import KIOSK_TOKEN, TECH_TOKEN, config_dict, to_toml
from tests.polling import eventually, eventually_sync
from tests.printing import Client, assert_each_printed_once, rig_config

NEW_TOKEN = "kiosk-token-after-reload"


class Appliance:
    """A real appliance process with its config file, reloaded by SIGHUP, and its notify socket."""

    def __init__(self, tmp_path: Path, cfg: dict[str, Any]) -> None:
        self.cfg = cfg
        self.path = tmp_path / "config.toml"
        self.path.write_text(to_toml(cfg))
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(str(tmp_path / "notify.sock"))
        self.server = ServeProcess(
            self.path, tmp_path / "serve.log", env={"NOTIFY_SOCKET": str(tmp_path / "notify.sock")}
        )

    def reload(self, cfg: dict[str, Any] | str) -> dict[str, Any]:
        """Write ``cfg`` (a dict, or raw text), SIGHUP, and return the reload's log record once
        systemd has been told RELOADING=1 and then READY=1."""
        self.path.write_text(cfg if isinstance(cfg, str) else to_toml(cfg))
        offset = self.server.log_path.stat().st_size
        assert self.server.proc is not None
        self.server.proc.send_signal(signal.SIGHUP)
        messages = self._notified_until("READY=1", 10)
        assert messages[0].startswith("RELOADING=1\nMONOTONIC_USEC="), messages
        return self.event(offset, {"config_reloaded", "reload_refused"}, 10)

    def _notified_until(self, wanted: str, deadline_s: float) -> list[str]:
        got: list[str] = []
        end = time.monotonic() + deadline_s
        while time.monotonic() < end:
            self.sock.settimeout(max(0.01, end - time.monotonic()))
            try:
                message = self.sock.recv(4096).decode()
            except TimeoutError:
                break
            if message != "WATCHDOG=1":
                got.append(message)
            if message.startswith(wanted):
                return got
        raise AssertionError(f"no {wanted} in {deadline_s} s: {got}")

    def event(self, offset: int, events: set[str], deadline_s: float) -> dict[str, Any]:
        """The first log record after ``offset`` whose event is one of ``events``."""

        def found() -> dict[str, Any] | None:
            for line in self.server.log_path.read_bytes()[offset:].splitlines():
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue
                if isinstance(rec, dict) and rec.get("event") in events:
                    return rec
            return None

        return eventually_sync(
            found, lambda: f"{events} in the log:\n{self.server.tail()}", timeout_s=deadline_s
        )

    @contextlib.contextmanager
    def running(self) -> Iterator[Appliance]:
        """The process started and READY=1 received; killed and the socket closed after."""
        try:
            with self.server.start():
                self._notified_until("READY=1", 10)
                yield self
        finally:
            self.sock.close()


@pytest.fixture
def appliance(tmp_path: Path) -> Iterator[Appliance]:
    with Appliance(tmp_path, config_dict(tmp_path / "data")).running() as app:
        yield app


async def _status(url: str, token: str, path: str = "/v1/jobs") -> int:
    headers = {"Authorization": f"Bearer {token}"}
    async with aiohttp.ClientSession() as http, http.get(f"{url}{path}", headers=headers) as r:
        return r.status


async def _submit_status(url: str, token: str, key: str, doc: bytes) -> tuple[int, str]:
    form = aiohttp.FormData()
    form.add_field("metadata", '{"owner":"ann","pool":"lobby"}', content_type="application/json")
    form.add_field("document", doc, content_type="application/pdf", filename="b.pdf")
    headers = {"Authorization": f"Bearer {token}", "Idempotency-Key": key}
    async with (
        aiohttp.ClientSession() as http,
        http.post(f"{url}/v1/jobs", data=form, headers=headers) as r,
    ):
        body = await r.json()
        return r.status, str(body.get("type", ""))


def test_reload_replaces_tokens_at_once(appliance: Appliance) -> None:
    """After a reload a new token works and a removed one gets 401; systemd hears
    RELOADING=1 then READY=1."""
    url = appliance.server.url
    assert asyncio.run(_status(url, KIOSK_TOKEN)) == 200
    cfg = copy.deepcopy(appliance.cfg)
    cfg["tokens"] = [t for t in cfg["tokens"] if t["role"] != "kiosk"] + [
        {"name": "kiosk-2", "role": "kiosk", "sha256": token_digest(NEW_TOKEN)}
    ]

    rec = appliance.reload(cfg)

    assert rec["event"] == "config_reloaded"
    assert rec["keys"] == ["tokens"]
    assert asyncio.run(_status(url, NEW_TOKEN)) == 200
    assert asyncio.run(_status(url, KIOSK_TOKEN)) == 401
    assert NEW_TOKEN not in appliance.server.log_path.read_text()  # never logged


def test_reload_turns_the_metrics_token_on_at_once(appliance: Appliance) -> None:
    """``[metrics] token_required`` is live: after the reload /metrics needs a token."""
    url = appliance.server.url
    assert asyncio.run(_status(url, "", "/metrics")) == 200
    rec = appliance.reload({**appliance.cfg, "metrics": {"token_required": True}})
    assert rec["event"] == "config_reloaded"
    assert rec["keys"] == ["metrics.token_required"]
    assert asyncio.run(_status(url, "", "/metrics")) == 401
    assert asyncio.run(_status(url, TECH_TOKEN, "/metrics")) == 200


def test_reload_changes_limits_at_once(appliance: Appliance) -> None:
    """A lower max_document_bytes refuses the next upload with 413; a rate limit applies to
    the next requests."""
    url = appliance.server.url
    doc = make_pdf("limits", pad_to=4096)
    assert asyncio.run(_submit_status(url, KIOSK_TOKEN, "limit-0001", doc))[0] == 201
    cfg = copy.deepcopy(appliance.cfg)
    cfg["server"] = {**cfg["server"], "max_document_bytes": 1024, "rate_limit": "3/minute"}

    rec = appliance.reload(cfg)

    assert rec["keys"] == ["server.max_document_bytes", "server.rate_limit"]
    status, kind = asyncio.run(_submit_status(url, KIOSK_TOKEN, "limit-0002", doc))
    assert status == 413, kind
    statuses = [asyncio.run(_status(url, KIOSK_TOKEN)) for _ in range(4)]
    assert statuses[-1] == 429
    assert statuses.count(200) <= 3


def test_reload_refuses_an_invalid_config(appliance: Appliance) -> None:
    """A duplicate printer name is refused with check-config's message; the running config
    stays (the old token still works)."""
    cfg = copy.deepcopy(appliance.cfg)
    cfg["printers"].append(dict(cfg["printers"][0]))

    rec = appliance.reload(cfg)

    assert rec["event"] == "reload_refused"
    assert "printers[3].name: duplicate value (also printers[0].name)" in rec["detail"]
    assert asyncio.run(_status(appliance.server.url, KIOSK_TOKEN)) == 200
    broken = appliance.reload("[server\n")
    assert broken["event"] == "reload_refused"
    assert "(syntax)" in broken["detail"]
    assert asyncio.run(_status(appliance.server.url, KIOSK_TOKEN)) == 200


def test_reload_refuses_what_needs_a_restart(appliance: Appliance) -> None:
    """Changing dispatch settings or the port is refused naming the keys; nothing changes,
    not even the tokens of the same file."""
    cfg = copy.deepcopy(appliance.cfg)
    cfg["dispatch"] = {"max_attempts": 2}
    cfg["server"] = {**cfg["server"], "port": 1}
    cfg["tokens"] = [{"name": "kiosk-2", "role": "kiosk", "sha256": token_digest(NEW_TOKEN)}]

    rec = appliance.reload(cfg)

    assert rec["event"] == "reload_refused"
    assert rec["keys"] == ["dispatch.max_attempts", "server.port"]
    assert "systemctl restart edgeprint" in rec["message"]
    assert asyncio.run(_status(appliance.server.url, KIOSK_TOKEN)) == 200
    assert asyncio.run(_status(appliance.server.url, NEW_TOKEN)) == 401


def test_reload_adds_a_printer_that_prints_at_once(tmp_path: Path, printers: Rig) -> None:
    """A printer added by a reload is a target at once (422 before), gets its worker, prints a
    job released to it, and is listed by GET /v1/printers."""
    cfg = rig_config(tmp_path / "data", printers)
    cfg["server"]["port"] = 0
    full = copy.deepcopy(cfg)
    cfg["printers"] = cfg["printers"][:1]  # printer-01 only
    with Appliance(tmp_path, cfg).running() as app:
        url = app.server.url
        assert asyncio.run(_submit_to(url, "add-0001", "printer-02")) == (422, None)

        rec = app.reload(full)

        assert (rec["event"], rec["keys"]) == ("config_reloaded", ["printers"])
        status, job_id = asyncio.run(_submit_to(url, "add-0002", "printer-02"))
        assert status == 201
        done = asyncio.run(_wait_done(url, str(job_id)))
        assert done["printed_on"] == "printer-02"
        listed = asyncio.run(_printer_names(url))
        assert listed == ["printer-01", "printer-02"]
        assert app.server.terminate() == 0
    assert_each_printed_once(printers, [str(job_id)])


def test_reload_removes_a_printer_and_loses_no_job(tmp_path: Path, printers: Rig) -> None:
    """A printer removed by a reload finishes the job in hand; its waiting jobs move to its
    pool and print on the peer; it is no longer a target nor listed; nothing prints twice."""
    printers.set_speed("printer-02", 1.0)  # holds its job long enough to be caught
    cfg = rig_config(tmp_path / "data", printers)
    cfg["server"]["port"] = 0
    smaller = copy.deepcopy(cfg)
    smaller["printers"] = smaller["printers"][:1]
    with Appliance(tmp_path, cfg).running() as app:
        url = app.server.url
        asyncio.run(_until_printer(url, "printer-02", "reachable"))  # else admission avoids it
        aimed = [asyncio.run(_submit_to(url, f"aimed-{i:04d}", "printer-02")) for i in range(3)]
        assert [status for status, _ in aimed] == [201, 201, 201]
        asyncio.run(_until_printer(url, "printer-02", "printing_job"))

        rec = app.reload(smaller)

        assert (rec["event"], rec["keys"]) == ("config_reloaded", ["printers"])
        removed = app.event(0, {"printer_removed"}, 5)
        assert (removed["printer"], removed["moved"]) == ("printer-02", 2)
        assert asyncio.run(_submit_to(url, "aimed-late-0001", "printer-02")) == (422, None)
        assert asyncio.run(_printer_names(url)) == ["printer-01"]
        pooled = [asyncio.run(_submit_to(url, f"pooled-{i:04d}", None))[1] for i in range(3)]
        ids = [str(i) for _, i in aimed] + [str(i) for i in pooled]
        done = {j["id"]: j for j in asyncio.run(_wait_all_done(url, ids))}
        assert app.server.terminate() == 0
    assert done[ids[0]]["printed_on"] == "printer-02"  # the job in hand finished there
    assert {done[i]["printed_on"] for i in ids[1:]} == {"printer-01"}
    assert_each_printed_once(printers, ids)


def test_reload_changing_a_uri_reconciles_the_job_in_hand_there(
    tmp_path: Path, printers: Rig
) -> None:
    """A printer whose URI changes while it holds a job gets a new worker that reconciles
    the job at the new URI (here the same printer by another name) before sending
    anything: the job is printed once, and the next jobs print there too."""
    printers.set_speed("printer-02", 1.0)
    cfg = rig_config(tmp_path / "data", printers, pool=None)
    cfg["server"]["port"] = 0
    moved = copy.deepcopy(cfg)
    moved["printers"][1]["uri"] = printers["printer-02"].uri.replace("127.0.0.1", "localhost")
    with Appliance(tmp_path, cfg).running() as app:
        url = app.server.url
        status, first = asyncio.run(_submit_to(url, "moving-0001", "printer-02"))
        assert status == 201
        asyncio.run(_until_printer(url, "printer-02", "printing_job"))

        rec = app.reload(moved)

        assert (rec["event"], rec["keys"]) == ("config_reloaded", ["printers"])
        assert app.event(0, {"printer_reconfigured"}, 5)["printer"] == "printer-02"
        status, second = asyncio.run(_submit_to(url, "moving-0002", "printer-02"))
        assert status == 201
        ids = [str(first), str(second)]
        done = asyncio.run(_wait_all_done(url, ids))
        assert app.server.terminate() == 0
        log = app.server.log_path.read_text()
    assert {j["printed_on"] for j in done} == {"printer-02"}
    assert '"event": "job_reconciled"' in log  # the job in hand, at the new URI
    assert_each_printed_once(printers, ids)


def test_reload_removing_a_printer_without_pool_finishes_its_job_and_keeps_the_rest(
    tmp_path: Path, printers: Rig
) -> None:
    """A removed printer without a pool finishes the job in hand and claims nothing more; the
    jobs still aimed at it stay RELEASED with a last_error saying why; nothing is lost or
    printed twice."""
    printers.set_speed("printer-02", 0.5)
    cfg = rig_config(tmp_path / "data", printers, pool=None)
    cfg["server"]["port"] = 0
    smaller = copy.deepcopy(cfg)
    smaller["printers"] = smaller["printers"][:1]
    with Appliance(tmp_path, cfg).running() as app:
        url = app.server.url
        aimed = [asyncio.run(_submit_to(url, f"alone-{i:04d}", "printer-02")) for i in range(3)]
        assert [status for status, _ in aimed] == [201, 201, 201]
        asyncio.run(_until_printer(url, "printer-02", "printing_job"))

        rec = app.reload(smaller)

        assert rec["event"] == "config_reloaded"
        removed = app.event(0, {"printer_removed"}, 5)
        assert (removed["printer"], removed["moved"], removed["waiting"]) == ("printer-02", 0, 2)
        ids = [str(i) for _, i in aimed]
        first = asyncio.run(_wait_all_done(url, ids[:1]))
        rest = [asyncio.run(_job(url, i)) for i in ids[1:]]
        assert app.server.terminate() == 0
    assert first[0]["printed_on"] == "printer-02"
    assert [j["state"] for j in rest] == ["RELEASED", "RELEASED"]
    assert all("was removed from the config" in j["last_error"] for j in rest)
    assert_each_printed_once(printers, ids[:1])


async def _until_printer(url: str, printer: str, field: str) -> None:
    """Poll GET /v1/printers until ``printer``'s ``field`` is truthy."""
    headers = {"Authorization": f"Bearer {TECH_TOKEN}"}
    async with aiohttp.ClientSession() as http:

        async def check() -> bool:
            async with http.get(f"{url}/v1/printers", headers=headers) as r:
                body = await r.json()
            return any(p["name"] == printer and p[field] for p in body["printers"])

        await eventually(check, f"{printer}'s {field}")


async def _wait_all_done(url: str, ids: list[str]) -> list[dict[str, Any]]:
    async with aiohttp.ClientSession() as http:
        return await Client(http, url).wait_states(ids, {"DONE"}, timeout_s=60)


async def _submit_to(url: str, key: str, printer: str | None) -> tuple[int, str | None]:
    async with aiohttp.ClientSession() as http:
        form = aiohttp.FormData()
        target = {"printer": printer} if printer else {"pool": "lobby"}
        form.add_field("metadata", json.dumps({"owner": "ann", **target, "hold": False}),
                       content_type="application/json")  # fmt: skip
        form.add_field("document", make_pdf(key), content_type="application/pdf", filename="b")
        headers = {"Authorization": f"Bearer {KIOSK_TOKEN}", "Idempotency-Key": key}
        async with http.post(f"{url}/v1/jobs", data=form, headers=headers) as r:
            body = await r.json()
            return r.status, body.get("id")


async def _wait_done(url: str, job_id: str) -> dict[str, Any]:
    async with aiohttp.ClientSession() as http:
        [job] = await Client(http, url).wait_states([job_id], {"DONE"}, timeout_s=30)
        return job


async def _printer_names(url: str) -> list[str]:
    headers = {"Authorization": f"Bearer {TECH_TOKEN}"}
    async with (
        aiohttp.ClientSession() as http,
        http.get(f"{url}/v1/printers", headers=headers) as r,
    ):
        body = await r.json()
        return sorted(p["name"] for p in body["printers"])


def test_live_and_restart_keys() -> None:
    """changed_keys names every dotted key that differs; restart_keys keeps the ones a reload
    cannot apply."""
    a = parse_config(config_dict(Path("/tmp/x")))
    data = config_dict(Path("/tmp/x"), max_document_pages=5, max_zpl_labels=5)
    data["dispatch"] = {"max_attempts": 9}
    data["release"] = {"max_pin_failures": 2}
    b = parse_config(data)
    assert changed_keys(a, b) == [
        "dispatch.max_attempts", "release.max_pin_failures", "server.max_document_pages",
        "server.max_zpl_labels",
    ]  # fmt: skip
    assert restart_keys(a, b) == ["dispatch.max_attempts"]
    assert changed_keys(a, a) == []
    grown = config_dict(Path("/tmp/x"))
    grown["printers"].append({"name": "printer-04", "uri": "ipp://127.0.0.1:4/ipp/print"})
    assert restart_keys(a, parse_config(grown)) == []  # added: live
    moved = config_dict(Path("/tmp/x"))
    moved["printers"][1]["uri"] = "ipp://127.0.0.1:9/ipp/print"
    moved["printers"].reverse()
    assert restart_keys(a, parse_config(moved)) == []  # changed: live
    fewer = config_dict(Path("/tmp/x"))
    fewer["printers"].pop(1)
    assert restart_keys(a, parse_config(fewer)) == []  # removed: live


@pytest.mark.slow
def test_reloads_during_a_run_lose_and_duplicate_nothing(tmp_path: Path, printers: Rig) -> None:
    """200 jobs print exactly once on real printers while the config is reloaded every
    tenth job (tokens rotated around the kiosk's, limits changed, one invalid file,
    printer-02 added to the pool, removed and added back)."""
    cfg = rig_config(tmp_path / "data", printers)
    cfg["server"]["port"] = 0
    cfg["printers"] = [{**p, "high_water": 500} for p in cfg["printers"]]  # 200 may wait
    full = copy.deepcopy(cfg)
    cfg["printers"] = cfg["printers"][:1]  # printer-01 alone until the 10th reload
    app = Appliance(tmp_path, cfg)
    variants: list[dict[str, Any] | str] = []
    for i in range(20):
        # printer-02 joins at the 10th reload, leaves at the 16th, comes back at the 18th
        v = copy.deepcopy(full if 9 <= i < 15 or i >= 17 else cfg)
        v["tokens"] = [*v["tokens"], {"name": f"extra-{i}", "role": "kiosk",
                                      "sha256": token_digest(f"extra-token-{i}")}]  # fmt: skip
        v["server"] = {**v["server"], "max_document_pages": 100 + i}
        variants.append(v)
    variants[7] = "[server\n"  # one invalid file: refused, the run goes on
    with app.running():
        ids, events = asyncio.run(_run_with_reloads(app, variants))
        assert app.server.terminate() == 0
    assert events.count("reload_refused") == 1
    assert events.count("config_reloaded") == 19
    assert_each_printed_once(printers, ids)
    assert printers.printed("printer-02")  # the printer added halfway took part


async def _run_with_reloads(
    app: Appliance, variants: list[dict[str, Any] | str]
) -> tuple[list[str], list[str]]:
    loop = asyncio.get_running_loop()
    events: list[str] = []
    ids: list[str] = []
    async with aiohttp.ClientSession() as http:
        kiosk = Client(http, app.server.url)
        for n in range(200):
            job = await kiosk.submit(f"reload-{n:04d}", pool="lobby", hold=False)
            ids.append(job["id"])
            if n % 10 == 9:  # a reload while earlier jobs print
                rec = await loop.run_in_executor(None, app.reload, variants[n // 10])
                events.append(rec["event"])
        await kiosk.wait_states(ids, {"DONE"}, timeout_s=120)
    return ids, events


async def _job(url: str, job_id: str) -> dict[str, Any]:
    """GET /v1/jobs/{id}."""
    headers = {"Authorization": f"Bearer {TECH_TOKEN}"}
    async with (
        aiohttp.ClientSession() as http,
        http.get(f"{url}/v1/jobs/{job_id}", headers=headers) as r,
    ):
        assert r.status == 200
        body: dict[str, Any] = await r.json()
        return body
