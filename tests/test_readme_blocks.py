"""The README's quick start runs as pasted (issue 25, item 6).

The shell blocks are taken from README.md itself, not copied here, and run with bash in
a folder laid out as scripts/quickstart.sh lays out a clone (``.quickstart/`` with the
tokens, the badge, two real ippeveprinters in ``rig/``; ``.venv/bin/python`` and
``.venv/bin/edgeprint``), against a real appliance (``edgeprint serve`` as a child process)
with the quick start's config. Ground truth is the printers' own log. The Install block
runs in tests/test_deb.py, which installs the package.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import ssl
import struct
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from hashlib import sha256
from pathlib import Path
from typing import Any

import pytest

from testbed.pdfs import make_pdf
from testbed.proc import ServeProcess
from testbed.rig import Rig, free_ports
from tests.polling import eventually_sync
from tests.printing import assert_each_printed_once
from tests.rig_fixtures import require_ippeveprinter
from tests.test_status_page import require_chromium

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
#: The quick start's keys (README) and the printer its held job is released to.
BADGE_KEY, HELD_KEY, RELEASED_TO = "checkin-0001", "student-0001", "printer-02"
BLOCK_TIMEOUT_S = 60


def section(markdown: str, title_start: str) -> str:
    """The text of the ``## `` section whose title starts with ``title_start``."""
    m = re.search(rf"^## {re.escape(title_start)}.*?$(.*?)(?=^## |\Z)", markdown, re.M | re.S)
    assert m, f"README has no section '## {title_start}…'"
    return m.group(1)


def shell_blocks(text: str) -> list[str]:
    """The ```sh fenced blocks of ``text``, in order."""
    return re.findall(r"^```sh\n(.*?)^```$", text, re.M | re.S)


def quick_start_blocks() -> list[str]:
    return shell_blocks(section(README.read_text(), "Quick start"))


def install_block() -> str:
    [block] = shell_blocks(section(README.read_text(), "Install as a service"))
    return block


def test_blocks_are_found_and_hold_no_placeholder() -> None:
    """The quick start has its blocks (run the quick start, the curl examples, the
    screenshot, the printers), and no runnable line holds a ``<id>``-style placeholder,
    which a shell would take for a redirection."""
    blocks = quick_start_blocks()
    assert len(blocks) == 4, blocks
    assert "bash scripts/quickstart.sh" in blocks[0]
    assert "$API/v1/jobs" in blocks[1]
    assert "chromium" in blocks[2]
    assert "testbed.rig restart" in blocks[3]
    for block in [*blocks, install_block()]:
        for line in block.splitlines():
            code = line.split("  #")[0]
            assert not re.search(r"<[A-Za-z][^>]*>", code), f"placeholder in {line!r}"
            assert "JOB_ID" not in code, line


@dataclass
class QuickStart:
    """A folder laid out like a clone after scripts/quickstart.sh, its printers and appliance."""

    root: Path
    rig: Rig
    server: ServeProcess
    tokens: dict[str, str]

    def env(self) -> dict[str, str]:
        return {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.root),
            "PYTHONPATH": str(ROOT),
            "QUICKSTART_PORT": str(self.server.port),
        }

    def run(self, script: str) -> subprocess.CompletedProcess[str]:
        """``script`` with bash, as a person pastes it, but stopping at the first failure."""
        return subprocess.run(
            ["bash", "--noprofile", "--norc", "-e", "-o", "pipefail", "-c", script],
            cwd=self.root,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=BLOCK_TIMEOUT_S,
            check=False,
        )

    def api(self, path: str) -> Any:
        req = urllib.request.Request(
            f"{self.server.url}{path}",
            headers={"Authorization": f"Bearer {self.tokens['TECH_TOKEN']}"},
        )
        pinned = ssl.create_default_context(cafile=str(self.root / ".quickstart" / "tls.crt"))
        with urllib.request.urlopen(req, timeout=10, context=pinned) as r:
            return json.load(r)

    def job_by_key(self, key: str) -> dict[str, Any]:
        [job] = self.api(f"/v1/jobs?idempotency_key={key}")["jobs"]
        assert isinstance(job, dict)
        return job


def _token_entry(name: str, role: str, secret: str) -> str:
    digest = sha256(secret.encode()).hexdigest()
    return f'\n[[tokens]]\nname = "{name}"\nrole = "{role}"\nsha256 = "{digest}"\n'


@pytest.fixture(scope="module")
def quickstart(tmp_path_factory: pytest.TempPathFactory) -> Iterator[QuickStart]:
    """What scripts/quickstart.sh makes: printers, tokens, config, badge, the appliance."""
    require_ippeveprinter()
    root = tmp_path_factory.mktemp("clone")
    qs = root / ".quickstart"
    # .venv/bin/python and .venv/bin/edgeprint, this checkout's code (PYTHONPATH)
    venv_bin = root / ".venv" / "bin"
    venv_bin.mkdir(parents=True)
    (venv_bin / "python").symlink_to(sys.executable)
    (venv_bin / "edgeprint").write_text(f'#!/bin/sh\nexec {sys.executable} -m edgeprint "$@"\n')
    (venv_bin / "edgeprint").chmod(0o755)
    rig = Rig(qs / "rig")
    rig.start(2)
    try:
        tokens = {"KIOSK_TOKEN": secrets.token_urlsafe(32), "TECH_TOKEN": secrets.token_urlsafe(32)}
        (qs / "tokens.env").write_text("".join(f"{k}={v}\n" for k, v in tokens.items()))
        (qs / "data").mkdir()
        printers = "".join(
            f'\n[[printers]]\nname = "{p.name}"\nuri = "{p.uri}"\npool = "lobby"\n' for p in rig
        )
        # a port of its own, as quickstart.sh writes it: the README's CLI line finds the
        # appliance from this config and the tech.token beside it, with no flags
        [port] = free_ports(1)
        (qs / "tech.token").write_text(tokens["TECH_TOKEN"] + "\n")
        (qs / "tech.token").chmod(0o600)
        (qs / "config.toml").write_text(
            f"[server]\nhost = \"127.0.0.1\"\nport = {port}\ndata_dir = '{qs / 'data'}'\n"
            'tls = "self-signed"\n'  # serve makes .quickstart/tls.crt and tls.key at start
            + printers
            + _token_entry("kiosk-quickstart", "kiosk", tokens["KIOSK_TOKEN"])
            + _token_entry("tech-quickstart", "tech", tokens["TECH_TOKEN"])
        )
        (qs / "badge.pdf").write_bytes(make_pdf("Ada Lovelace"))
        server = ServeProcess(qs / "config.toml", root / "serve.log")
        with server.start():
            yield QuickStart(root, rig, server, tokens)
            server.terminate()
    finally:
        rig.stop()


def _done(qs: QuickStart, key: str) -> dict[str, Any] | None:
    job = qs.job_by_key(key)
    return job if job["state"] == "DONE" else None


def test_curl_examples_print_each_badge_once(quickstart: QuickStart) -> None:
    """The curl block as pasted: exit 0, both badges printed exactly once (the printers'
    log), the held one on the printer it was released to; the ids came back into the
    variables (no error from ``id_of``), and the CLI's status ran."""
    block = quick_start_blocks()[1]
    out = quickstart.run(block)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Traceback" not in out.stderr, out.stderr
    badge = quickstart.job_by_key(BADGE_KEY)
    held = quickstart.job_by_key(HELD_KEY)
    assert f"badge: job {badge['id']}" in out.stdout
    assert '"state": "RELEASED"' in out.stdout or '"state":"RELEASED"' in out.stdout
    assert "edgeprint at https://127.0.0.1:" in out.stdout  # edgeprint status, pinned
    assert f"open {quickstart.server.url}/#token=" in out.stdout
    for key in (BADGE_KEY, HELD_KEY):
        eventually_sync(partial(_done, quickstart, key), f"{key} DONE", timeout_s=30)
    assert quickstart.job_by_key(HELD_KEY)["printed_on"] == RELEASED_TO
    assert_each_printed_once(quickstart.rig, [badge["id"], held["id"]])


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def test_pasted_again_with_the_screenshot_nothing_prints_twice(
    quickstart: QuickStart, tmp_path: Path
) -> None:
    """The same block pasted a second time makes no new job (same keys) and the second
    release is refused with 409; then the Chromium line, as root too, writes a
    phone-sized screenshot of the page."""
    chromium = require_chromium()
    blocks = quick_start_blocks()
    before = quickstart.api("/v1/jobs?limit=100")["jobs"]
    shot = Path("/tmp/status-page.png")
    assert f"--screenshot={shot}" in blocks[2]
    shot.unlink(missing_ok=True)
    script = blocks[1] + "\n" + blocks[2].replace("chromium ", f"{chromium} ", 1)
    out = quickstart.run(script)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "urn:edgeprint:problem:state-conflict" in out.stdout  # the second release: 409
    after = quickstart.api("/v1/jobs?limit=100")["jobs"]
    assert sorted(j["id"] for j in after) == sorted(j["id"] for j in before)
    assert len(after) == 2
    assert _png_size(shot) == (390, 844)
    shot.unlink()


def test_printer_block_switches_printers_off_and_on(quickstart: QuickStart) -> None:
    """The printers block: each command works as pasted; ``kill`` and ``restart`` keep what
    a printer printed, and both printers answer again at the end."""
    printed = {p.name: len(quickstart.rig.printed(p.name)) for p in quickstart.rig}
    out = quickstart.run(quick_start_blocks()[3])
    assert out.returncode == 0, out.stdout + out.stderr
    assert "printer-01 restart: ok" in out.stdout
    assert {p.name: len(quickstart.rig.printed(p.name)) for p in quickstart.rig} == printed
    status = quickstart.run(".venv/bin/python -m testbed.rig status .quickstart/rig")
    rows = [line.split() for line in status.stdout.splitlines()[1:]]
    assert [(r[0], r[3]) for r in rows] == [("printer-01", "running"), ("printer-02", "running")]


def test_quickstart_script_prints_the_same_kind_of_examples() -> None:
    """scripts/quickstart.sh's printed examples keep the id in a variable too."""
    script = (ROOT / "scripts" / "quickstart.sh").read_text()
    assert "JOB_ID" not in script
    assert "| id_of)" in script
