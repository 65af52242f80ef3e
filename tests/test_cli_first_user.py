"""What a fresh technician met in the CLI, mended (issue 25 follow-up).

A URL typed by hand finds the token of the config naming the same appliance; a wrong URL is
said as such before any "no token"; something that is not edgeprint is named; a short id
from the status page is enough; the dead-letter advice fits each reason. Against a real
appliance on loopback (the CLI as a real process where its streams and exit code are the
point); the matching of URLs and the choice among ambiguous ids are pure logic, in memory.
"""

from __future__ import annotations

import asyncio
import http.server
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from edgeprint.cli import client, locate, short_ids
from edgeprint.cli.errors import ApiFailed
from tests.conftest import TECH_TOKEN, Appliance, config_dict, to_toml
from tests.test_cli_locate import _closed_port
from tests.test_resolve import dead_job

ROOT = Path(__file__).resolve().parents[1]
TRY = "is the appliance running? systemctl status edgeprint; or pass --url or --config"
NO_TOKEN = (
    "give --token-file PATH, or set $EDGEPRINT_TOKEN_FILE or $EDGEPRINT_TOKEN, to a tech token "
    "(edgeprint token new --role tech)"
)


def _config(folder: Path, port: int, host: str = "127.0.0.1", token: bool = True) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "config.toml"
    path.write_text(to_toml(config_dict(folder / "data", host=host, port=port)))
    if token:
        (folder / "tech.token").write_text(TECH_TOKEN + "\n")
        (folder / "tech.token").chmod(0o600)
    return path


def _edgeprint(*argv: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """``python -m edgeprint ARGV`` in ``cwd``, no EDGEPRINT_ variable but ``env``."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("EDGEPRINT_")}
    base["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), base.get("PYTHONPATH")) if p)
    return subprocess.run(
        [sys.executable, "-m", "edgeprint", *argv],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
        env={**base, **env},
        cwd=cwd,
    )


async def _run(*argv: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return await asyncio.to_thread(_edgeprint, *argv, cwd=cwd, **env)


@pytest.fixture
def nowhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No installed config (its path is in an empty temporary folder), in-process too."""
    etc = tmp_path / "etc-none" / "config.toml"
    monkeypatch.setattr(locate, "CONFIG_CANDIDATES", [etc, Path(".quickstart/config.toml")])
    return tmp_path


# --- item 1: a URL typed by hand uses the token of the config naming that appliance -------


def test_same_appliance_counts_the_names_of_this_machine_as_one() -> None:
    same = locate.same_appliance
    for a in ("http://localhost:8650", "http://[::1]:8650/", "http://0.0.0.0:8650"):
        assert same(a, "http://127.0.0.1:8650"), a
    assert same("http://LocalHost:80", "http://127.0.0.1")
    assert not same("http://127.0.0.1:8651", "http://127.0.0.1:8650")
    assert not same("https://127.0.0.1:8650", "http://127.0.0.1:8650")
    assert not same("http://192.0.2.7:8650", "http://127.0.0.1:8650")


def test_url_by_hand_finds_the_config_in_the_usual_order(
    nowhere: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--config, $EDGEPRINT_CONFIG, then the configs found: the first naming the same
    appliance lends its folder; the ones before it are remembered as others."""
    monkeypatch.chdir(nowhere)
    quick = _config(Path(".quickstart"), 8650)
    env_cfg = _config(nowhere / "env", 8651)
    where = locate.locate("http://localhost:8650", None, {"EDGEPRINT_CONFIG": str(env_cfg)})
    assert (where.config, where.note) == (quick, None)
    assert where.others == ((env_cfg, "http://127.0.0.1:8651"),)
    where = locate.locate(None, None, {"EDGEPRINT_URL": "http://[::1]:8650"})
    assert (where.url, where.source, where.config) == ("http://[::1]:8650", "$EDGEPRINT_URL", quick)
    # --config disagreeing: the note, and the config that agrees is still found
    where = locate.locate("http://127.0.0.1:8650", str(env_cfg), {})
    assert where.config == quick
    assert where.note == (
        f"--url http://127.0.0.1:8650 and --config {env_cfg} (http://127.0.0.1:8651) disagree: "
        "using --url"
    )


async def test_url_of_the_found_config_works_from_the_clone(app: Appliance, tmp_path: Path) -> None:
    """In the clone's folder (.quickstart/config.toml, its tech.token): --url with the
    config's own URL, spelt localhost or 127.0.0.1, and the RUNBOOK's export EDGEPRINT_URL."""
    _config(tmp_path / ".quickstart", app.running.port)
    port = app.running.port
    for argv, env in (
        (["--url", f"http://127.0.0.1:{port}"], {}),
        (["--url", f"http://localhost:{port}"], {}),
        ([], {"EDGEPRINT_URL": f"http://localhost:{port}"}),
    ):
        proc = await _run("status", *argv, cwd=tmp_path, **env)
        assert (proc.returncode, proc.stderr) == (0, ""), (argv, env)
        assert "printer-01" in proc.stdout
        assert TECH_TOKEN not in proc.stdout


async def test_no_token_names_the_url_and_whose_token_file_is_there(
    app: Appliance, tmp_path: Path
) -> None:
    """The quick start's token is for another appliance: not sent; the sentence says so."""
    other = _closed_port()
    _config(tmp_path / ".quickstart", other)
    before = app.snapshot()
    proc = await _run("status", "--url", app.url, cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr == (
        f"edgeprint: no token for {app.url} (from --url): {NO_TOKEN} (the tech.token beside "
        f".quickstart/config.toml is for http://127.0.0.1:{other})\n"
    )
    assert app.snapshot() == before


async def test_url_and_config_disagreeing_print_the_note_then_work_or_say_why(
    app: Appliance, tmp_path: Path
) -> None:
    """--config names another appliance: the note, then the token of the quick start that
    names this one is used; without such a config, the note then the exact no-token line."""
    other = _config(tmp_path / "other", _closed_port())
    note = (
        f"edgeprint: --url {app.url} and --config {other} "
        f"(http://127.0.0.1:{load_port(other)}) disagree: using --url\n"
    )
    proc = await _run("printers", "--url", app.url, "--config", str(other), cwd=tmp_path)
    assert (proc.returncode, proc.stderr) == (
        2,
        note
        + (
            f"edgeprint: no token for {app.url} (from --url): {NO_TOKEN} (the tech.token beside "
            f"{other} is for http://127.0.0.1:{load_port(other)})\n"
        ),
    )
    _config(tmp_path / ".quickstart", app.running.port)
    proc = await _run("printers", "--url", app.url, "--config", str(other), cwd=tmp_path)
    assert (proc.returncode, proc.stderr) == (0, note)
    assert "printer-01" in proc.stdout


def load_port(path: Path) -> int:
    from edgeprint.config import load_config

    return load_config(path).server.port


# --- item 2: a wrong URL is said before "no token" ------------------------------------------


def test_wrong_url_without_token_is_cannot_connect(nowhere: Path) -> None:
    port = _closed_port()
    proc = _edgeprint("status", "--url", f"http://127.0.0.1:{port}", cwd=nowhere)
    assert proc.returncode == 3
    assert proc.stderr == (
        f"edgeprint: cannot connect to http://127.0.0.1:{port} (from --url): Connection "
        f"refused; {TRY}\n"
    )


# --- item 4: something that is not edgeprint ------------------------------------------------


class _NotEdgeprint(http.server.BaseHTTPRequestHandler):
    """A web server that is not edgeprint: 404 text for /v1/…, 200 HTML for /healthz."""

    def do_GET(self) -> None:
        if self.path == "/healthz":
            body, status, ctype = b"<html>ok</html>", 200, "text/html"
        else:
            body, status, ctype = b"Not Found", 404, "text/plain"
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def stranger() -> Iterator[int]:
    """A plain-HTTP server on loopback that is not edgeprint; its port."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _NotEdgeprint)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def test_a_server_that_is_not_edgeprint_is_named(stranger: int, nowhere: Path) -> None:
    url = f"http://127.0.0.1:{stranger}"
    proc = _edgeprint("status", "--url", url, "--token", TECH_TOKEN, cwd=nowhere)
    assert proc.returncode == 3
    assert proc.stderr == (
        f"edgeprint: {url} (from --url): this does not look like an edgeprint appliance "
        "(404 Not Found for /v1/printers); check the URL and port\n"
    )
    # no token: the connection is tried first, and it is not edgeprint either
    proc = _edgeprint("jobs", "--url", url, cwd=nowhere)
    assert (proc.returncode, proc.stderr) == (
        3,
        f"edgeprint: {url} (from --url): this does not look like an edgeprint appliance "
        "(an answer that is not JSON for /healthz); check the URL and port\n",
    )


def test_https_to_a_plain_http_server_says_use_http(stranger: int, nowhere: Path) -> None:
    proc = _edgeprint(
        "status", "--url", f"https://127.0.0.1:{stranger}", "--token", TECH_TOKEN, cwd=nowhere
    )
    assert proc.returncode == 3
    assert proc.stderr == (
        f"edgeprint: https://127.0.0.1:{stranger} (from --url) answered plain HTTP: use http:// "
        f"(http://127.0.0.1:{stranger})\n"
    )


# --- item 5: short ids ----------------------------------------------------------------------


async def test_short_id_releases_and_cancels_the_one_job(app: Appliance, tmp_path: Path) -> None:
    """The 8 hex the status page shows: one line naming the full id, then the command."""
    held = [
        await (await app.submit({"owner": "ann", "pool": "lobby"}, key=f"short-id-{i:04d}")).json()
        for i in range(2)
    ]
    first, second = (j["id"] for j in held)
    proc = await _run(
        "release",
        first[:8],
        "--printer",
        "printer-01",
        cwd=tmp_path,
        EDGEPRINT_URL=app.url,
        EDGEPRINT_TOKEN=TECH_TOKEN,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == f"edgeprint: job {first[:8]}… = {first}\n"
    assert proc.stdout == f"released {first}: now RELEASED, for printer printer-01\n"
    proc = await _run(
        "cancel",
        second[:6].upper(),
        cwd=tmp_path,
        EDGEPRINT_URL=app.url,
        EDGEPRINT_TOKEN=TECH_TOKEN,
    )
    assert (proc.returncode, proc.stderr) == (0, f"edgeprint: job {second[:6]}… = {second}\n")
    assert proc.stdout == f"cancelled {second}: now CANCELLED\n"


async def test_a_short_id_that_matches_nothing_changes_nothing(
    app: Appliance, tmp_path: Path
) -> None:
    job = await dead_job(app, "short-id-dead-0001")
    unknown = next(p for p in ("abcdef12", "12345678") if not job["id"].startswith(p))
    before = app.snapshot()
    env = {"EDGEPRINT_URL": app.url, "EDGEPRINT_TOKEN": TECH_TOKEN}
    for argv in (
        ["release", unknown],
        ["cancel", unknown],
        ["replay", unknown],
        ["resolve", unknown, "--printed"],
        ["reprint", unknown, "--reason", "lost"],
    ):
        proc = await _run(*argv, cwd=tmp_path, **env)
        assert (proc.returncode, proc.stdout) == (1, ""), argv
        assert proc.stderr == f"edgeprint: no job starts with {unknown}\n", argv
    proc = await _run("resolve", job["id"][:5], "--printed", cwd=tmp_path, **env)
    assert proc.returncode == 2
    assert "a job id is 32 hex characters, or its first 6-31 (the status page shows 8)" in (
        proc.stderr
    )
    assert app.snapshot() == before
    proc = await _run("resolve", job["id"][:8], "--printed", cwd=tmp_path, **env)
    assert (proc.returncode, proc.stdout) == (0, f"resolved {job['id']}: printed, now DONE\n")


class _Listing(client.Api):
    """The API's GET /v1/jobs answer, given (the choice among matches is pure logic)."""

    def __init__(self, jobs: list[dict[str, Any]], next_cursor: str | None = None) -> None:
        super().__init__("http://127.0.0.1:1", TECH_TOKEN)
        self.body = {"jobs": jobs, "next_cursor": next_cursor}
        self.asked: list[dict[str, str] | None] = []

    def json(
        self, method: str, path: str, query: dict[str, str] | None = None, **_: Any
    ) -> tuple[bytes, Any]:
        self.asked.append(query)
        return b"", self.body


def test_several_matches_are_listed_up_to_ten_and_nothing_is_chosen() -> None:
    import argparse

    jobs = [{"id": f"78e6c9{i:02x}" + "0" * 24, "state": "HELD", "owner": "a\x1bb"} for i in (1, 2)]
    args = argparse.Namespace(job_id="78e6c9")
    api = _Listing(jobs)
    with pytest.raises(ApiFailed) as caught:
        short_ids.resolve(api, args)
    assert api.asked == [{"id_prefix": "78e6c9", "limit": "11"}]
    assert str(caught.value) == (
        "2 jobs start with 78e6c9: give more of the id\n"
        f"  {jobs[0]['id']}  HELD  a?b\n  {jobs[1]['id']}  HELD  a?b"
    )
    assert args.job_id == "78e6c9"
    many = [{"id": f"78e6c9{i:02x}" + "0" * 24, "state": "DONE", "owner": "x"} for i in range(11)]
    with pytest.raises(ApiFailed) as caught:
        short_ids.resolve(_Listing(many), args)
    lines = str(caught.value).splitlines()
    assert lines[0] == "more than 10 jobs start with 78e6c9: give more of the id"
    assert len(lines) == 11


# --- item 6: dead-letter advice per reason --------------------------------------------------


async def test_dead_letter_advice_fits_each_reason(app: Appliance, tmp_path: Path) -> None:
    """outcome_unknown: resolve, never replay; another reason: replay; both: both."""
    env = {"EDGEPRINT_URL": app.url, "EDGEPRINT_TOKEN": TECH_TOKEN}
    resolve_lines = (
        "outcome_unknown: it may have printed. Look at the printer's tray, then\n"
        "  edgeprint resolve JOB_ID --printed      (it came out: DONE)\n"
        "  edgeprint resolve JOB_ID --not-printed  (it did not: print it once more)\n"
        "  never replay these: a replay may print a second badge\n"
    )
    await dead_job(app, "advice-unknown-0001")
    proc = await _run("dead-letter", cwd=tmp_path, **env)
    assert proc.returncode == 0
    assert proc.stdout.endswith("\n\n" + resolve_lines)
    assert "edgeprint replay" not in proc.stdout
    await dead_job(app, "advice-poison-0001", reason="poison")
    proc = await _run("dead-letter", cwd=tmp_path, **env)
    assert proc.stdout.endswith(
        "\n\n" + resolve_lines + "\npoison: replay one (once; prints it again): "
        "edgeprint replay JOB_ID\n"
    )
