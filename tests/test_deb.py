"""The Debian package (make deb): lintian-clean, installs, runs as its user, removes, purges.

These tests install the package on this machine (as root; CI runs as root) and leave it
clean: every test purges what it installed, and the user and group go with the purge. The
README's Install block is taken from README.md and run as written (issue 25), and after a
purge nothing of the package is left anywhere it could have written (``_leftovers``).
"""

from __future__ import annotations

import asyncio
import contextlib
import glob
import grp
import os
import pwd
import re
import shutil
import ssl
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest

from testbed.pdfs import make_pdf
from testbed.proc import ServeProcess
from testbed.rig import Rig, free_ports
from tests.polling import eventually, eventually_sync
from tests.printing import assert_each_printed_once
from tests.rig_fixtures import in_ci
from tests.test_readme_blocks import install_block

pytestmark = pytest.mark.slow

ROOT = Path(__file__).parent.parent
PACKAGE = "edgeprint"
CONFIG = Path("/etc/edgeprint/config.toml")
DATA = Path("/var/lib/edgeprint")
CACHE = Path("/var/cache/edgeprint")
DOC = Path("/usr/share/doc/edgeprint")
UNIT = Path("/lib/systemd/system/edgeprint.service")
BINARY = Path("/usr/bin/edgeprint")
#: The single file itself; BINARY is the wrapper that runs it with SHIV_ROOT in the cache.
PROGRAM = Path("/usr/lib/edgeprint/edgeprint")
SHIV_CACHE = CACHE / "shiv"
README = ROOT / "README.md"
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
    """``argv`` with this environment minus any SHIV_ROOT (the package's wrapper decides)."""
    base = {k: v for k, v in os.environ.items() if k != "SHIV_ROOT"}
    return subprocess.run(
        argv,
        capture_output=True,
        text=True,
        check=False,
        timeout=LOCK_WAIT_S + 60,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        env={**base, "DEBIAN_FRONTEND": "noninteractive", **(env or {})},
    )


def _dpkg(*args: str) -> subprocess.CompletedProcess[str]:
    """dpkg ARGS, waiting for the dpkg lock while another install holds it."""

    def unlocked() -> subprocess.CompletedProcess[str] | None:
        out = _run(["dpkg", *args])
        return None if "lock" in out.stderr else out

    # another dpkg/apt run holds the lock: nothing to poll but the lock, so dpkg itself
    what = f"the dpkg lock (dpkg {' '.join(args)})"
    return eventually_sync(unlocked, what, timeout_s=LOCK_WAIT_S, every_s=1.0)


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
        ["bash", "scripts/build_deb.sh"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
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
    mode = oct(stat.S_IMODE(st.st_mode))
    return (mode, pwd.getpwuid(st.st_uid).pw_name, grp.getgrgid(st.st_gid).gr_name)


def _unit_environment() -> list[str]:
    """The unit's ``Environment=`` assignments (NAME=VALUE), as systemd gives them."""
    return [
        line.removeprefix("Environment=").strip()
        for line in UNIT.read_text().splitlines()
        if line.startswith("Environment=")
    ]


def _as_service_user(*argv: str) -> subprocess.CompletedProcess[str]:
    """The installed command run as the unit runs it: user edgeprint, the unit's environment."""
    return _run(
        [
            "runuser",
            "-u",
            "edgeprint",
            "--",
            "env",
            *_unit_environment(),
            "PATH=/usr/bin:/bin",
            str(BINARY),
            *argv,
        ],
        cwd="/",
    )


#: Temporary folders of the suite's own fixtures (a CUPS scheduler, a PostgreSQL cluster),
#: which another test run on the machine may make or remove while this one runs.
_SUITES_OWN = ("/tmp/edgeprint-cups-", "/tmp/edgeprint-pg-")


def _leftovers() -> set[str]:
    """Everything of edgeprint's on this machine outside what dpkg tracks: every place the
    package, its maintainer scripts, systemd, the service or a run of the CLI as root could
    have written. Compared before install and after purge."""
    found: set[str] = set()
    for path in (
        CONFIG.parent,
        DATA,
        CACHE,
        DOC,
        UNIT,
        BINARY,
        PROGRAM.parent,
        Path("/run/edgeprint"),
        Path("/var/log/edgeprint"),
    ):
        if path.exists() or path.is_symlink():
            found.add(str(path))
    for home in {Path.home(), Path("/root"), Path("/var/lib/edgeprint")}:
        shiv = home / ".shiv"
        found.update(str(p) for p in shiv.glob("*edgeprint*"))
        if shiv.exists() and not any(shiv.iterdir()):
            found.add(f"{shiv} (empty)")
    for pattern in (
        "/etc/systemd/system/**/edgeprint*",
        "/var/lib/systemd/**/edgeprint*",
        "/tmp/edgeprint*",
        "/var/tmp/edgeprint*",
        "/var/cache/edgeprint*",
    ):
        found.update(p for p in glob.glob(pattern, recursive=True) if not p.startswith(_SUITES_OWN))
    found.update(f"user {n}" for n in ("edgeprint",) if _user_exists())
    with contextlib.suppress(KeyError):
        grp.getgrnam("edgeprint")
        found.add("group edgeprint")
    return found


def test_package_metadata(deb: Path) -> None:
    """The package depends on python3 3.11 and adduser, ships the config as a conffile, and
    is the file, and about the size, the README's Install section names."""
    fields = _run(["dpkg-deb", "-f", str(deb), "Package", "Version", "Depends", "Architecture"])
    assert "Package: edgeprint" in fields.stdout
    assert "Depends: python3 (>= 3.11), python3 (<< 3.12), adduser" in fields.stdout
    assert deb.name == f"edgeprint_{_field(deb, 'Version')}_{_field(deb, 'Architecture')}.deb"
    assert deb.parent == ROOT / "dist"  # where the Install block looks for it
    assert f"apt install ./dist/{deb.name}" in install_block()  # the install block works as written
    assert _run(["dpkg-deb", "-I", str(deb), "conffiles"]).stdout == f"{CONFIG}\n"
    listing = _run(["dpkg-deb", "-c", str(deb)]).stdout
    for path in (
        BINARY,
        PROGRAM,
        UNIT,
        CONFIG,
        DOC / "copyright",
        DOC / "changelog.Debian.gz",
        DOC / "README.md",
        DOC / "RUNBOOK.md",
        DOC / "examples/config.example.toml",
    ):
        assert f".{path}\n" in listing, path
    # "about N MB" in the README: within 15 % of the file make deb built
    [stated] = re.findall(r"\.deb` \(about (\d+(?:\.\d+)?) MB", README.read_text())
    built_mb = deb.stat().st_size / 1e6
    assert abs(float(stated) - built_mb) <= 0.15 * built_mb, (
        f"README says about {stated} MB, the package is {built_mb:.1f} MB"
    )


def _field(deb: Path, name: str) -> str:
    return _run(["dpkg-deb", "-f", str(deb), name]).stdout.strip()


def _unpacked_here() -> list[Path]:
    """The single file's unpacked builds in the package's cache."""
    return sorted(p for p in SHIV_CACHE.glob("edgeprint_*") if p.is_dir())


def test_install_reinstall_remove_purge(deb: Path) -> None:
    """apt installs it with its dependencies; nothing is enabled; the service user reads the
    config; root's runs unpack into the package's cache, not ~/.shiv; a second install
    keeps the edited config; remove deletes the cache and says what it keeps; purge removes
    the rest, the user and the group, and leaves nothing behind."""
    before = _leftovers()
    try:
        # 1. apt installs the file make deb left in dist/
        out = _apt_get("install", str(deb))
        assert out.returncode == 0, out.stdout + out.stderr
        assert _mode_owner(BINARY) == ("0o755", "root", "root")
        assert _mode_owner(PROGRAM) == ("0o755", "root", "root")
        assert _mode_owner(CONFIG) == ("0o640", "root", "edgeprint")
        assert _mode_owner(DATA) == ("0o750", "edgeprint", "edgeprint")
        assert _mode_owner(CACHE) == ("0o750", "edgeprint", "edgeprint")
        assert _mode_owner(SHIV_CACHE) == ("0o750", "edgeprint", "edgeprint")
        user = pwd.getpwnam("edgeprint")
        assert user.pw_uid < 1000
        assert user.pw_shell == "/usr/sbin/nologin"
        assert (DOC / "README.md").is_file()  # the unit's Documentation=
        assert "Documentation=file:///usr/share/doc/edgeprint/README.md" in UNIT.read_text()
        assert "SHIV_ROOT=/var/cache/edgeprint/shiv" in _unit_environment()
        assert not glob.glob("/etc/systemd/system/*.wants/edgeprint.service")  # not enabled

        # 2. the config as the service user; the unit as systemd would load it
        checked = _as_service_user("check-config", str(CONFIG))
        assert checked.returncode == 0, checked.stderr
        assert checked.stdout.startswith("ok: 0 printer(s)")
        assert checked.stderr.startswith("warning: no printers and no tokens")
        [unpacked] = _unpacked_here()  # the service user unpacked it in the cache

        # 2b. edgeprint setup, as root, replaces the unconfigured file (no --force), keeping
        # its group, and unpacks nothing new anywhere
        setup = _run(
            [
                str(BINARY),
                "setup",
                "--printer",
                "desk=ipp://127.0.0.1:1/ipp/print",
                "--host",
                "127.0.0.1",
            ]
        )
        assert setup.returncode == 0, setup.stderr
        assert "Next: systemctl enable --now edgeprint" in setup.stdout
        assert _mode_owner(CONFIG) == ("0o640", "root", "edgeprint")
        for pair in ("tls.crt", "tls.key"):  # the service reads them, nobody else
            assert _mode_owner(CONFIG.parent / pair) == ("0o600", "edgeprint", "edgeprint")
        checked = _as_service_user("check-config", str(CONFIG))
        assert checked.returncode == 0, checked.stderr
        assert checked.stdout.startswith("ok: 1 printer(s), 0 pool(s), 2 token(s)")
        assert "data_dir" not in checked.stderr  # the service user can write /var/lib/edgeprint
        verify = _run(["systemd-analyze", "verify", str(UNIT)])
        assert verify.returncode == 0, verify.stderr
        version = _run([str(BINARY), "--version"])
        assert version.stdout.startswith("edgeprint ")
        assert _unpacked_here() == [unpacked]
        new = _leftovers() - before
        assert not [p for p in new if ".shiv" in p], new  # root's runs used the package's cache
        assert {str(CACHE), str(DATA), str(CONFIG.parent), "user edgeprint"} <= new

        # 3. installed twice: the edited config and its mode stay, the user is the same
        edited = CONFIG.read_text() + "# edited by a technician\n"
        CONFIG.write_text(edited)
        again = _dpkg("--install", str(deb))
        assert again.returncode == 0, again.stderr
        assert CONFIG.read_text() == edited
        assert _mode_owner(CONFIG) == ("0o640", "root", "edgeprint")
        assert pwd.getpwnam("edgeprint").pw_uid == user.pw_uid
        assert _unpacked_here() == [unpacked]  # the same build: its unpacked copy is kept
        # an upgrade: the older builds' unpacked folders (and those of packages that unpacked
        # straight into /var/cache/edgeprint) are deleted, this build's is kept
        stale = [SHIV_CACHE / "edgeprint_0ld", CACHE / "edgeprint_0ld"]
        for old in stale:
            (old / "site-packages").mkdir(parents=True)
        upgraded = _dpkg("--install", str(deb))
        assert upgraded.returncode == 0, upgraded.stderr
        assert not [old for old in stale if old.exists()]
        assert _unpacked_here() == [unpacked]

        # 4. remove: the program and its unpacked cache go; config, data and user stay, named
        (DATA / "kept").write_text("x")
        removed = _dpkg("--remove", PACKAGE)
        assert removed.returncode == 0, removed.stderr
        said = removed.stdout + removed.stderr
        assert re.search(r"edgeprint: removed /var/cache/edgeprint \(\d+(\.\d+)?M,", said), said
        assert re.search(
            r"kept /etc/edgeprint \(config, token digests and the TLS key kiosks pin, "
            r"\d+(\.\d+)?K\)",
            said,
        )
        assert re.search(r"/var/lib/edgeprint \(jobs and documents, \d+(\.\d+)?K\)", said), said
        assert "the user and group edgeprint. apt purge edgeprint removes them." in said
        assert not BINARY.exists()
        assert not PROGRAM.exists()
        assert not UNIT.exists()
        assert not CACHE.exists()
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
        assert _leftovers() == before
    finally:
        _purge()


def _curl_pinned(url: str, pin: str, token: str) -> subprocess.CompletedProcess[str]:
    head = ["curl", "-sS", "--insecure", "--pinnedpubkey", pin, "-o", "/dev/null"]
    return _run([*head, "-w", "%{http_code}", "-H", f"Authorization: Bearer {token}", url])


def _appliance_tls() -> ssl.SSLContext:
    """Trust exactly the certificate setup made for the installed appliance."""
    return ssl.create_default_context(cafile=str(CONFIG.parent / "tls.crt"))


async def _print_badges(url: str, token: str, keys: list[str]) -> list[str]:
    """Submit printable badges with ``token``; their ids once every one is DONE."""
    connector = aiohttp.TCPConnector(ssl=_appliance_tls())
    async with aiohttp.ClientSession(connector=connector) as http:
        headers = {"Authorization": f"Bearer {token}"}
        ids = []
        for key in keys:
            form = aiohttp.FormData()
            form.add_field(
                "metadata",
                '{"owner":"ada","pool":"lobby","hold":false}',
                content_type="application/json",
            )
            form.add_field(
                "document", make_pdf(key), content_type="application/pdf", filename="badge.pdf"
            )
            async with http.post(
                f"{url}/v1/jobs", data=form, headers={**headers, "Idempotency-Key": key}
            ) as r:
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


def _install_commands() -> list[str]:
    """The README's Install block, one command a line, comments cut."""
    lines = [line.split("  #")[0].strip() for line in install_block().splitlines()]
    return [line for line in lines if line]


def test_readme_install_block_prints_badges_and_purge_leaves_nothing(
    deb: Path, tmp_path: Path, printers: Rig
) -> None:
    """The README's Install block as written — apt install ./dist/…, edgeprint setup (with
    this test's printers as flags), systemctl enable --now (without systemd as PID 1: enable,
    then the unit's ExecStartPre and ExecStart as its user, with its Environment=) — prints
    badges exactly once; the CLI run as root leaves no ~/.shiv; apt remove names what it
    keeps; purge names the jobs it deletes and leaves nothing of edgeprint anywhere."""
    install, setup_cmd, enable = _install_commands()
    assert install.startswith("apt install ./dist/edgeprint_")
    assert setup_cmd == "edgeprint setup"
    assert enable == "systemctl enable --now edgeprint"
    before = _leftovers()
    apt_conf = tmp_path / "apt.conf"  # wait for a dpkg lock another install holds
    apt_conf.write_text(f'DPkg::Lock::Timeout "{LOCK_WAIT_S}";\n')
    try:
        # 1. as pasted, in the clone that built the package
        out = _run(["bash", "-c", install], env={"APT_CONFIG": str(apt_conf)}, cwd=str(ROOT))
        assert out.returncode == 0, out.stdout + out.stderr
        assert _installed()

        # 2. as pasted, plus the printers (not on a LAN here: flags the README names)
        [port] = free_ports(1)
        args = [f"--printer={p.name}={p.uri}" for p in printers]
        flags = [*args, "--pool", "lobby", "--host", "127.0.0.1", "--port", str(port)]
        setup = _run(["bash", "-c", f"{setup_cmd} {' '.join(flags)}"])
        assert setup.returncode == 0, setup.stderr
        [kiosk] = re.findall(r"^  kiosk token \(kiosk-1\): (\S+)$", setup.stdout, re.M)
        [tech] = re.findall(r"^  tech token \(tech-1\): (\S+)$", setup.stdout, re.M)
        [pin] = re.findall(r"^  public key pin: +(sha256//\S+)$", setup.stdout, re.M)

        # 3. systemctl enable --now: as pasted when systemd runs this machine; else enable,
        # and the unit's ExecStartPre, then its ExecStart, as its user; it serves TLS only
        url = f"https://127.0.0.1:{port}"
        unit = UNIT.read_text()
        pre = unit.split("ExecStartPre=")[1].split("\n")[0].split()
        start = unit.split("ExecStart=")[1].split("\n")[0].split()
        assert pre[:2] == [str(BINARY), "check-config"]
        assert start == [str(BINARY), "serve", "--config", str(CONFIG)]
        server: ServeProcess | None = None
        if Path("/run/systemd/system").is_dir():
            enabled = _run(["bash", "-c", enable])
            assert enabled.returncode == 0, enabled.stderr
            asyncio.run(_ready(url))
        else:
            enabled = _run(["bash", "-c", enable.replace(" --now", "")])
            assert enabled.returncode == 0, enabled.stderr
            assert glob.glob("/etc/systemd/system/*.wants/edgeprint.service")
            checked = _as_service_user(*pre[1:])
            assert checked.returncode == 0, checked.stderr
            server = ServeProcess(
                CONFIG,
                tmp_path / "serve.log",
                # setpriv execs (runuser would stand between the signal and the appliance)
                command=[
                    "setpriv",
                    "--reuid=edgeprint",
                    "--regid=edgeprint",
                    "--init-groups",
                    "env",
                    *_unit_environment(),
                    str(BINARY),
                ],
            )
            server.start()
        try:
            ids = asyncio.run(_print_badges(url, kiosk, ["badge-0001", "badge-0002"]))
            # a kiosk's curl pins the key setup printed; another key is refused (exit 90)
            pinned = _curl_pinned(f"{url}/v1/jobs/{ids[0]}", pin, kiosk)
            assert (pinned.returncode, pinned.stdout) == (0, "200"), pinned.stderr
            other = "sha256//" + "A" * 43 + "="
            refused = _curl_pinned(f"{url}/v1/jobs/{ids[0]}", other, kiosk)
            assert refused.returncode == 90, refused.stderr
            # the technician CLI on the box, as root, with no flags: the URL from
            # /etc/edgeprint/config.toml, the token from the tech.token setup wrote beside it
            assert _mode_owner(CONFIG.parent / "tech.token") == ("0o600", "root", "root")
            bare = {k: v for k, v in os.environ.items() if not k.startswith("EDGEPRINT_")}
            status = subprocess.run(
                [str(BINARY), "status"],
                capture_output=True,
                text=True,
                check=False,
                timeout=60,
                cwd="/",
                stdin=subprocess.DEVNULL,
                env=bare,
            )
            assert status.returncode == 0, status.stderr
            assert "DONE 2" in status.stdout
            assert url in status.stdout, status.stdout
            with_token = _run([str(BINARY), "--url", url, "status"], env={"EDGEPRINT_TOKEN": tech})
            assert with_token.returncode == 0, with_token.stderr
        finally:
            if server is not None:
                assert server.terminate() == 0
            else:
                _run(["systemctl", "disable", "--now", "edgeprint"])
        assert_each_printed_once(printers, ids)
        assert _mode_owner(DATA / "edgeprint.sqlite3")[1] == "edgeprint"
        assert _unpacked_here(), "nothing unpacked in /var/cache/edgeprint/shiv"
        assert not [p for p in _leftovers() - before if ".shiv" in p]

        # apt remove: the unpacked program goes; what stays is named, with its size
        removed = _apt_get("remove", PACKAGE)
        assert removed.returncode == 0, removed.stdout + removed.stderr
        said = removed.stdout + removed.stderr
        assert "edgeprint: removed /var/cache/edgeprint (" in said, said
        assert "/var/lib/edgeprint (2 job(s) and their documents, " in said, said
        assert not CACHE.exists()

        purged = _apt_get("purge", PACKAGE)
        assert purged.returncode == 0, purged.stdout + purged.stderr
        assert (
            "edgeprint: purge removes /var/lib/edgeprint: the job store with 2 job(s) "
            "and their documents"
        ) in purged.stdout + purged.stderr
        assert _leftovers() == before
    finally:
        _purge()


async def _ready(url: str) -> None:
    """The service systemd started answers /readyz."""

    async def ready() -> bool:
        try:
            ssl_ = _appliance_tls()
            async with aiohttp.ClientSession() as http, http.get(f"{url}/readyz", ssl=ssl_) as r:
                return r.status == 200
        except aiohttp.ClientError:
            return False

    await eventually(ready, f"{url}/readyz", timeout_s=30)
