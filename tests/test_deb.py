"""The Debian package (make deb): lintian-clean, installs, runs as its user, removes, purges.

These tests install the package on this machine (as root; CI runs as root) and leave it
clean: every test purges what it installed, and the user and group go with the purge.
"""

from __future__ import annotations

import asyncio
import glob
import grp
import os
import pwd
import re
import shutil
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest

from testbed.pdfs import make_pdf
from testbed.proc import ServeProcess
from testbed.rig import Rig
from tests.polling import eventually
from tests.printing import assert_each_printed_once
from tests.rig_fixtures import in_ci

pytestmark = pytest.mark.slow

ROOT = Path(__file__).parent.parent
PACKAGE = "edgeprint"
CONFIG = Path("/etc/edgeprint/config.toml")
DATA = Path("/var/lib/edgeprint")
CACHE = Path("/var/cache/edgeprint")
DOC = Path("/usr/share/doc/edgeprint")
UNIT = Path("/lib/systemd/system/edgeprint.service")
BINARY = Path("/usr/bin/edgeprint")
#: dpkg/apt may be busy with another install on a shared machine: wait this long for its lock.
LOCK_WAIT_S = 300


def _skip_or_fail(why: str) -> None:
    if in_ci():
        pytest.fail(f"{why}; CI is set, so this is a failure, not a skip", pytrace=False)
    pytest.skip(why)


def _installed() -> bool:
    out = subprocess.run(
        ["dpkg-query", "-W", "-f=${Status}", PACKAGE], capture_output=True, text=True, check=False
    )
    return out.returncode == 0 and "not-installed" not in out.stdout


def _run(
    argv: list[str], env: dict[str, str] | None = None, cwd: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, capture_output=True, text=True, check=False, timeout=LOCK_WAIT_S + 60, cwd=cwd,
        env={**os.environ, "DEBIAN_FRONTEND": "noninteractive", **(env or {})},
    )  # fmt: skip


def _dpkg(*args: str) -> subprocess.CompletedProcess[str]:
    """dpkg ARGS, waiting for the dpkg lock while another install holds it."""
    deadline = time.monotonic() + LOCK_WAIT_S
    while True:
        out = _run(["dpkg", *args])
        if "lock" not in out.stderr or time.monotonic() > deadline:
            return out
        time.sleep(1)  # another dpkg/apt run holds the lock; nothing to poll but the lock


def _apt_get(*args: str) -> subprocess.CompletedProcess[str]:
    return _run(["apt-get", "-y", "-q", "-o", f"DPkg::Lock::Timeout={LOCK_WAIT_S}", *args])


def _purge() -> None:
    if _installed():
        out = _dpkg("--purge", PACKAGE)
        assert out.returncode == 0, out.stderr


@pytest.fixture(scope="module")
def deb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The .deb built by scripts/build_deb.sh (lintian must pass); the machine is purged after."""
    if os.geteuid() != 0:
        _skip_or_fail("installing a Debian package needs root")
    for tool in ("dpkg-deb", "apt-get", "runuser"):
        if shutil.which(tool) is None:
            _skip_or_fail(f"{tool} not found (apt-get install dpkg-dev apt util-linux)")
    if shutil.which("lintian") is None:
        _skip_or_fail("lintian not found (apt-get install lintian)")
    if _installed() or _user_exists():
        if not in_ci():
            pytest.skip(
                "edgeprint (or its user) is already on this machine; these tests would remove it"
            )
        _purge()  # left over by an interrupted run on the CI machine
    env = {**os.environ, "PY": sys.executable}
    build = subprocess.run(
        ["bash", "scripts/build_deb.sh"], cwd=ROOT, capture_output=True, text=True, env=env,
        timeout=600, check=False,
    )  # fmt: skip
    assert build.returncode == 0, build.stdout + build.stderr
    assert not [line for line in build.stdout.splitlines() if line.startswith("E: ")]
    [path] = (ROOT / "dist").glob("edgeprint_*.deb")
    yield path
    _purge()


def _user_exists() -> bool:
    try:
        pwd.getpwnam("edgeprint")
    except KeyError:
        return False
    return True


def _mode_owner(path: Path) -> tuple[str, str, str]:
    st = path.stat()
    return (oct(stat.S_IMODE(st.st_mode)), pwd.getpwuid(st.st_uid).pw_name,
            grp.getgrgid(st.st_gid).gr_name)  # fmt: skip


def _as_service_user(*argv: str) -> subprocess.CompletedProcess[str]:
    """The installed command run as the unit runs it: user edgeprint, SHIV_ROOT in the cache."""
    return _run(
        ["runuser", "-u", "edgeprint", "--", "env", "SHIV_ROOT=/var/cache/edgeprint",
         "PATH=/usr/bin:/bin", str(BINARY), *argv], cwd="/",
    )  # fmt: skip


def test_package_metadata(deb: Path) -> None:
    """The package depends on python3 3.11 and adduser, and ships the config as a conffile."""
    fields = _run(["dpkg-deb", "-f", str(deb), "Package", "Version", "Depends", "Architecture"])
    assert "Package: edgeprint" in fields.stdout
    assert "Depends: python3 (>= 3.11), python3 (<< 3.12), adduser" in fields.stdout
    assert deb.name == f"edgeprint_{_field(deb, 'Version')}_{_field(deb, 'Architecture')}.deb"
    readme = (ROOT / "README.md").read_text()
    assert f"apt install ./{deb.name}" in readme  # the install section works as written
    assert _run(["dpkg-deb", "-I", str(deb), "conffiles"]).stdout == f"{CONFIG}\n"
    listing = _run(["dpkg-deb", "-c", str(deb)]).stdout
    for path in (BINARY, UNIT, CONFIG, DOC / "copyright", DOC / "changelog.Debian.gz",
                 DOC / "README.md", DOC / "examples/config.example.toml"):  # fmt: skip
        assert f".{path}\n" in listing, path


def _field(deb: Path, name: str) -> str:
    return _run(["dpkg-deb", "-f", str(deb), name]).stdout.strip()


def test_install_reinstall_remove_purge(deb: Path, tmp_path: Path) -> None:
    """apt installs it with its dependencies; nothing is enabled; the service user reads the
    config; a second install keeps the edited config; remove keeps config and data; purge
    removes them, the user and the group."""
    try:
        # 1. as in the README: apt install ./edgeprint_….deb
        out = _apt_get("install", str(deb))
        assert out.returncode == 0, out.stdout + out.stderr
        assert _mode_owner(BINARY) == ("0o755", "root", "root")
        assert _mode_owner(CONFIG) == ("0o640", "root", "edgeprint")
        assert _mode_owner(DATA) == ("0o750", "edgeprint", "edgeprint")
        assert _mode_owner(CACHE) == ("0o750", "edgeprint", "edgeprint")
        user = pwd.getpwnam("edgeprint")
        assert user.pw_uid < 1000
        assert user.pw_shell == "/usr/sbin/nologin"
        assert (DOC / "README.md").is_file()  # the unit's Documentation=
        assert "Documentation=file:///usr/share/doc/edgeprint/README.md" in UNIT.read_text()
        assert not glob.glob("/etc/systemd/system/*.wants/edgeprint.service")  # not enabled

        # 2. the config as the service user; the unit as systemd would load it
        checked = _as_service_user("check-config", str(CONFIG))
        assert checked.returncode == 0, checked.stderr
        assert checked.stdout.startswith("ok: 0 printer(s)")
        assert checked.stderr.startswith("warning: no printers and no tokens")
        root_env = {"SHIV_ROOT": str(tmp_path / "shiv")}

        # 2b. edgeprint setup replaces the unconfigured file (no --force), keeping its group
        setup = _run([str(BINARY), "setup", "--printer", "desk=ipp://127.0.0.1:1/ipp/print",
                      "--host", "127.0.0.1"], env=root_env)  # fmt: skip
        assert setup.returncode == 0, setup.stderr
        assert "Next: systemctl enable --now edgeprint" in setup.stdout
        assert _mode_owner(CONFIG) == ("0o640", "root", "edgeprint")
        checked = _as_service_user("check-config", str(CONFIG))
        assert checked.returncode == 0, checked.stderr
        assert checked.stdout.startswith("ok: 1 printer(s), 0 pool(s), 2 token(s)")
        assert "data_dir" not in checked.stderr  # the service user can write /var/lib/edgeprint
        verify = _run(["systemd-analyze", "verify", str(UNIT)])
        assert verify.returncode == 0, verify.stderr
        version = _run([str(BINARY), "--version"], env=root_env)
        assert version.stdout.startswith("edgeprint ")

        # 3. installed twice: the edited config and its mode stay, the user is the same
        edited = CONFIG.read_text() + "# edited by a technician\n"
        CONFIG.write_text(edited)
        again = _dpkg("--install", str(deb))
        assert again.returncode == 0, again.stderr
        assert CONFIG.read_text() == edited
        assert _mode_owner(CONFIG) == ("0o640", "root", "edgeprint")
        assert pwd.getpwnam("edgeprint").pw_uid == user.pw_uid

        # 4. remove: the program goes, config, data and user stay
        (DATA / "kept").write_text("x")
        removed = _dpkg("--remove", PACKAGE)
        assert removed.returncode == 0, removed.stderr
        assert not BINARY.exists()
        assert not UNIT.exists()
        assert CONFIG.read_text() == edited
        assert (DATA / "kept").exists()
        assert _user_exists()

        # 5. purge: nothing left
        purged = _dpkg("--purge", PACKAGE)
        assert purged.returncode == 0, purged.stderr
        for gone in (CONFIG.parent, DATA, CACHE, DOC):
            assert not gone.exists(), gone
        assert not _user_exists()
        with pytest.raises(KeyError):
            grp.getgrnam("edgeprint")
        assert not glob.glob("/etc/systemd/system/**/edgeprint.service", recursive=True)
    finally:
        _purge()


async def _print_badges(url: str, token: str, keys: list[str]) -> list[str]:
    """Submit printable badges with ``token``; their ids once every one is DONE."""
    async with aiohttp.ClientSession() as http:
        headers = {"Authorization": f"Bearer {token}"}
        ids = []
        for key in keys:
            form = aiohttp.FormData()
            form.add_field("metadata", '{"owner":"ada","pool":"lobby","hold":false}',
                           content_type="application/json")  # fmt: skip
            form.add_field("document", make_pdf(key), content_type="application/pdf",
                           filename="badge.pdf")  # fmt: skip
            async with http.post(f"{url}/v1/jobs", data=form,
                                 headers={**headers, "Idempotency-Key": key}) as r:  # fmt: skip
                body = await r.json()
                assert r.status == 201, body
                ids.append(body["id"])
        states: list[str] = []

        async def all_done() -> bool:
            states[:] = []
            for job_id in ids:
                async with http.get(f"{url}/v1/jobs/{job_id}", headers=headers) as r:
                    states.append((await r.json())["state"])
            return set(states) == {"DONE"}

        await eventually(all_done, lambda: f"every job printed: {states}", timeout_s=30)
        return ids


def test_readme_commands_print_a_badge_and_purge_names_the_jobs(
    deb: Path, tmp_path: Path, printers: Rig
) -> None:
    """The README's commands — apt install, edgeprint setup, then the unit's ExecStartPre and
    ExecStart as its user — print badges exactly once; purge then names the jobs it deletes."""
    try:
        # dpkg -i, then apt-get -f install for anything it depends on
        out = _dpkg("--install", str(deb))
        if out.returncode != 0:
            fixed = _apt_get("-f", "install")
            assert fixed.returncode == 0, fixed.stdout + fixed.stderr
        assert _installed()
        args = [f"--printer={p.name}={p.uri}" for p in printers]
        setup = _run([str(BINARY), "setup", *args, "--pool", "lobby", "--host", "127.0.0.1",
                      "--port", "0"], env={"SHIV_ROOT": str(tmp_path / "shiv")})  # fmt: skip
        assert setup.returncode == 0, setup.stderr
        [kiosk] = re.findall(r"^  kiosk token \(kiosk-1\): (\S+)$", setup.stdout, re.M)

        # the unit, without systemd as PID 1: its ExecStartPre, then its ExecStart, as its user
        unit = UNIT.read_text()
        pre = unit.split("ExecStartPre=")[1].split("\n")[0].split()
        start = unit.split("ExecStart=")[1].split("\n")[0].split()
        assert pre[:2] == [str(BINARY), "check-config"]
        assert start == [str(BINARY), "serve", "--config", str(CONFIG)]
        checked = _as_service_user(*pre[1:])
        assert checked.returncode == 0, checked.stderr
        server = ServeProcess(
            CONFIG, tmp_path / "serve.log",
            # setpriv execs (runuser would stand between the signal and the appliance)
            command=["setpriv", "--reuid=edgeprint", "--regid=edgeprint", "--init-groups",
                     "env", "SHIV_ROOT=/var/cache/edgeprint", str(BINARY)],
        )  # fmt: skip
        with server.start():
            ids = asyncio.run(_print_badges(server.url, kiosk, ["badge-0001", "badge-0002"]))
            assert server.terminate() == 0
        assert_each_printed_once(printers, ids)
        assert _mode_owner(DATA / "edgeprint.sqlite3")[1] == "edgeprint"

        purged = _dpkg("--purge", PACKAGE)
        assert purged.returncode == 0, purged.stderr
        assert (
            "edgeprint: purge removes /var/lib/edgeprint: the job store with 2 job(s) "
            "and their documents"
        ) in purged.stderr
        assert not DATA.exists()
    finally:
        _purge()
