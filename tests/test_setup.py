"""`edgeprint setup` writes a config that works; it refuses what it must, and shows tokens once."""

from __future__ import annotations

import asyncio
import hashlib
import os
import pty
import re
import shutil
import ssl
import stat
import subprocess
import sys
import tomllib
import uuid
from pathlib import Path
from typing import Any

import aiohttp
from zeroconf import Zeroconf

from edgeprint import certificates, setup
from edgeprint.config import load_config
from testbed.pdfs import make_pdf
from testbed.proc import ServeProcess
from testbed.rig import Rig
from tests.conftest import to_toml
from tests.mdns import advertise, port_of
from tests.polling import eventually
from tests.printing import FAST_DISPATCH, assert_each_printed_once

TOKEN_LINE = re.compile(r"^  (kiosk|tech) token \((kiosk-1|tech-1)\): (\S+)$", re.M)


def _setup(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "edgeprint", "setup", *args],
        capture_output=True, text=True, timeout=60, check=False,
        input=stdin if stdin is not None else "",
    )  # fmt: skip


def _tokens(stdout: str) -> dict[str, str]:
    return {role: secret for role, _, secret in TOKEN_LINE.findall(stdout)}


def test_setup_with_flags_writes_a_config_that_prints(tmp_path: Path, printers: Rig) -> None:
    """--printer/--pool/--host write a valid 0640 config whose printed tokens work: a job
    submitted with the kiosk token prints once on a rig printer."""
    path = tmp_path / "etc" / "config.toml"
    args = [f"--printer=front-{p.name}={p.uri}" for p in printers]
    out = _setup("--config", str(path), *args, "--pool", "lobby", "--host", "127.0.0.1",
                 "--port", "0", "--data-dir", str(tmp_path / "data"))  # fmt: skip

    assert out.returncode == 0, out.stderr
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    cfg = load_config(path)
    assert [(p.name, p.uri, p.pool) for p in cfg.printers] == [
        (f"front-{p.name}", p.uri, "lobby") for p in printers
    ]
    tokens = _tokens(out.stdout)
    assert set(tokens) == {"kiosk", "tech"}
    assert {(t.name, t.role, t.sha256) for t in cfg.tokens} == {
        ("kiosk-1", "kiosk", hashlib.sha256(tokens["kiosk"].encode()).hexdigest()),
        ("tech-1", "tech", hashlib.sha256(tokens["tech"].encode()).hexdigest()),
    }
    for secret in tokens.values():  # shown once, on stdout only, never stored
        assert out.stdout.count(secret) == 1
        assert secret not in out.stderr
        assert secret not in path.read_text()
    assert "only programs on this machine can reach it, no kiosk can" in out.stdout
    assert f"Next: edgeprint serve --config {path}" in out.stdout
    # not at a path the CLI looks in: it is told to name it (fresh-user finding 13)
    assert (
        f"the edgeprint command finds them when given this config (edgeprint status --config "
        f"{path}), not by itself (it looks in /etc/edgeprint/config.toml, "
        ".quickstart/config.toml)." in out.stdout
    )
    assert "sudo edgeprint status" not in out.stdout
    cert = certificates.load(path.parent / "tls.crt", path.parent / "tls.key")
    assert (
        "  the README's pinning examples read them as:\n"
        "    export EDGEPRINT_URL=https://127.0.0.1:0 EDGEPRINT_HOST=127.0.0.1:0\n"
        f"    export EDGEPRINT_PIN='{cert.pin}'\n"
        f"    export EDGEPRINT_FINGERPRINT='{cert.fingerprint}'\n"
    ) in out.stdout

    # the config as written, with fast dispatch for the test, prints a job
    data = tomllib.loads(path.read_text())
    data["dispatch"] = FAST_DISPATCH
    run_cfg = tmp_path / "run.toml"
    run_cfg.write_text(to_toml(data))
    shutil.copy(path.parent / "tls.crt", tmp_path / "tls.crt")  # the pair setup made, beside
    shutil.copy(path.parent / "tls.key", tmp_path / "tls.key")  # the config it is read from
    server = ServeProcess(run_cfg, tmp_path / "serve.log")
    with server.start():
        assert server.url.startswith("https://")
        job_id = asyncio.run(_print_one(server.url, tokens["kiosk"], tmp_path / "tls.crt"))
        assert server.terminate() == 0
    assert_each_printed_once(printers, [job_id])


async def _print_one(url: str, token: str, cert_file: Path) -> str:
    headers = {"Authorization": f"Bearer {token}", "Idempotency-Key": "setup-0001"}
    form = aiohttp.FormData()
    form.add_field("metadata", '{"owner":"ann","pool":"lobby","hold":false}',
                   content_type="application/json")  # fmt: skip
    form.add_field("document", make_pdf(), content_type="application/pdf", filename="b.pdf")
    pinned = ssl.create_default_context(cafile=str(cert_file))  # the appliance's own, only
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=pinned)) as http:
        async with http.post(f"{url}/v1/jobs", data=form, headers=headers) as r:
            job: dict[str, Any] = await r.json()
            assert r.status == 201, job

        async def done() -> bool:
            nonlocal job
            async with http.get(f"{url}/v1/jobs/{job['id']}", headers=headers) as r:
                job = await r.json()
            return job["state"] == "DONE"

        await eventually(done, lambda: f"the job printed: {job}", timeout_s=30)
        return str(job["id"])


def test_setup_says_the_cli_finds_the_installed_config_by_itself() -> None:
    from edgeprint.cli.setup import _found

    assert _found(Path("/etc/edgeprint/config.toml")) == (
        "the edgeprint command on this box finds the appliance and this token by itself "
        "(sudo edgeprint status)."
    )


def test_setup_refuses_to_replace_a_config_in_use(tmp_path: Path) -> None:
    """An existing config with printers or tokens is kept unless --force; --force replaces it."""
    path = tmp_path / "config.toml"
    first = _setup("--config", str(path), "--printer", "a=ipp://127.0.0.1:1/ipp/print",
                   "--host", "127.0.0.1", "--data-dir", str(tmp_path))  # fmt: skip
    assert first.returncode == 0, first.stderr
    before = path.read_bytes()

    again = _setup("--config", str(path), "--printer", "b=ipp://127.0.0.1:1/ipp/print",
                   "--host", "127.0.0.1")  # fmt: skip

    assert again.returncode == 2
    assert again.stderr == (
        f"edgeprint setup: {path} is already configured (1 printer(s), 2 token(s)); nothing "
        "written. --force replaces it (its tokens stop working)\n"
    )
    assert path.read_bytes() == before
    assert _tokens(again.stdout) == {}

    forced = _setup("--config", str(path), "--printer", "b=ipp://127.0.0.1:1/ipp/print",
                    "--host", "127.0.0.1", "--force")  # fmt: skip
    assert forced.returncode == 0, forced.stderr
    assert [p.name for p in load_config(path).printers] == ["b"]


def test_setup_replaces_the_packaged_unconfigured_file(tmp_path: Path) -> None:
    """The package's placeholder config (no printers, no tokens) is replaced without --force."""
    path = tmp_path / "config.toml"
    path.write_text((Path(__file__).parent.parent / "packaging/deb/config.toml").read_text())
    out = _setup("--config", str(path), "--printer", "a=ipp://127.0.0.1:1/ipp/print",
                 "--host", "127.0.0.1")  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert len(load_config(path).tokens) == 2


def test_setup_refuses_an_invalid_existing_file_without_force(tmp_path: Path) -> None:
    """A file that is not a valid config is not replaced without --force (it may be a typo)."""
    path = tmp_path / "config.toml"
    path.write_text("[server\n")
    out = _setup("--config", str(path), "--printer", "a=ipp://127.0.0.1:1/ipp/print")
    assert out.returncode == 2
    assert f"{path} exists and is not a valid config; nothing written" in out.stderr
    assert path.read_text() == "[server\n"


def test_setup_warns_about_a_printer_that_does_not_answer(tmp_path: Path) -> None:
    """A printer that does not answer is written with a warning naming it and why."""
    path = tmp_path / "config.toml"
    out = _setup("--config", str(path), "--printer", "gone=ipp://127.0.0.1:1/ipp/print",
                 "--host", "127.0.0.1")  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert (
        "warning: printer gone (ipp://127.0.0.1:1/ipp/print) does not answer: cannot connect"
    ) in out.stderr
    assert "written anyway" in out.stderr
    assert [p.name for p in load_config(path).printers] == ["gone"]


def test_setup_bad_input_writes_nothing(tmp_path: Path) -> None:
    """Bad printers, names, URIs, hosts and no printers at all: exit 2, a clear message, no file."""
    path = tmp_path / "config.toml"
    cases = [
        (["--printer", "lobby"], "'lobby': write NAME=URI"),
        (["--printer", "Lobby 1=ipp://127.0.0.1/ipp/print"], "'Lobby 1': a name is 1-40"),
        (["--printer", "a=ftp://127.0.0.1/x"], "printers[0].uri: String should match pattern"),
        (["--printer", "a=ipp://127.0.0.1:1/x", "--printer", "a=ipp://127.0.0.1:2/x"],
         "printers[1].name: duplicate value (also printers[0].name)"),
        (["--printer", "a=ipp://127.0.0.1:1/x", "--host", "203.0.113.99"],
         "--host: 203.0.113.99 is not an address of this machine (its addresses: "),
        (["--printer", "a=ipp://127.0.0.1:1/x", "--host", "printhost"],
         "--host: 'printhost' is not an IP address"),
        ([], "no printers; nothing written. Give --printer NAME=URI"),
    ]  # fmt: skip
    for args, message in cases:
        out = _setup("--config", str(path), *args)
        assert out.returncode == 2, (args, out.stderr)
        assert message in out.stderr, (args, out.stderr)
        assert not path.exists(), args
        assert "token" not in out.stdout, args


def test_setup_discovered_uses_the_advertised_printers(
    tmp_path: Path, advertiser: Zeroconf, printers: Rig
) -> None:
    """--discovered writes every printer that DNS-SD finds, named after its instance."""
    tag = uuid.uuid4().hex[:6]
    for p in printers:
        advertise(advertiser, "_ipp._tcp", f"Hall {p.name} {tag}", port_of(p.uri), rp="ipp/print")
    path = tmp_path / "config.toml"
    out = _setup("--config", str(path), "--discovered", "--timeout", "2", "--pool", "hall",
                 "--interface", "127.0.0.1",
                 "--host", "127.0.0.1")  # fmt: skip
    assert out.returncode == 0, out.stderr
    ours = {p.name: p for p in load_config(path).printers if tag in p.name}
    assert {n: (p.uri, p.pool) for n, p in ours.items()} == {
        f"hall-{p.name}-{tag}": (p.uri, "hall") for p in printers
    }


def test_choose_host_prefers_the_address_that_reaches_the_printers() -> None:
    """The default host is this machine's address on the printers' route, never loopback when
    there is a LAN address, and the note says who can reach it."""
    addresses = setup.local_addresses()
    lan = [a for a in addresses if not a.ip.startswith("127.")]
    chosen = setup.choose_host(["ipp://127.0.0.1:631/ipp/print"], addresses)
    assert chosen == (lan[0].ip if lan else "127.0.0.1")
    if lan:
        note = setup.host_note(lan[0].ip, 8631, addresses)
        assert note.startswith(f"The API listens on https://{lan[0].ip}:8631: kiosks and "
                               f"technicians on {lan[0].network} ({lan[0].interface})")  # fmt: skip
    assert "every interface" in setup.host_note("0.0.0.0", 8631, addresses)
    assert setup.check_host("0.0.0.0", addresses) is None


def test_setup_in_a_terminal_asks_which_printers(tmp_path: Path, printers: Rig) -> None:
    """In a terminal, setup lists what discovery found and takes the technician's answers
    (here: none found, one printer added by URI, its name)."""
    path = tmp_path / "config.toml"
    p = printers["printer-01"]
    controller, terminal = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "edgeprint", "setup", "--config", str(path), "--timeout", "0.2",
         "--host", "127.0.0.1", "--interface", "127.0.0.1"],
        stdin=terminal, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    os.close(terminal)
    os.write(controller, f"{p.uri}\ndesk-1\n\n".encode())
    try:
        stdout, stderr = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()  # no leaked process or pipes for the tests after this one
        stdout, stderr = proc.communicate()
        raise AssertionError(f"setup did not finish: {stdout.decode()} {stderr.decode()}") from None
    finally:
        os.close(controller)
    assert proc.returncode == 0, stderr.decode()
    assert [(c.name, c.uri) for c in load_config(path).printers] == [("desk-1", p.uri)]
    assert "Add a printer by URI" in stdout.decode()
