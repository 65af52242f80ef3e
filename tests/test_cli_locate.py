"""The CLI finds the appliance and its token by itself (issue 25 item 1).

The search order is tested in memory on a temporary folder (the installed config's path is
a module list, pointed there); the rest against a real appliance on loopback, the CLI run
as a real process where the environment and the current directory are the point.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from edgeprint import cli
from edgeprint.cli import credentials, locate
from edgeprint.cli.credentials import Token
from edgeprint.cli.errors import UsageError
from edgeprint.config import load_config
from edgeprint.server import running
from tests.conftest import TECH_TOKEN, Appliance, config_dict, to_toml

TOKEN_LINE_PREFIX = "  tech token (tech-1): "
#: The checkout the CLI under test is imported from (a subprocess runs in another folder).
ROOT = Path(__file__).resolve().parents[1]


def _closed_port() -> int:
    """A loopback port nobody listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def _config(folder: Path, port: int, host: str = "127.0.0.1") -> Path:
    """A config in ``folder`` whose [server] is ``host``:``port``."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "config.toml"
    path.write_text(to_toml(config_dict(folder / "data", host=host, port=port)))
    return path


def _token_file(folder: Path, token: str = TECH_TOKEN) -> Path:
    path = folder / "tech.token"
    path.write_text(token + "\n")
    path.chmod(0o600)
    return path


def _env(**extra: str) -> dict[str, str]:
    """This process's environment without any EDGEPRINT_ variable, plus ``extra``."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("EDGEPRINT_")}
    return {**base, **extra}


def _edgeprint(
    *argv: str, env: dict[str, str], cwd: Path, prefix: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    """``python -m edgeprint ARGV`` as a real process (the worktree on its path)."""
    pythonpath = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    return subprocess.run(
        [*prefix, sys.executable, "-m", "edgeprint", *argv],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
        env={**env, "PYTHONPATH": pythonpath},
        cwd=cwd,
    )


@pytest.fixture
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The installed config's folder, in a temporary folder; the current directory is an
    empty one beside it and no EDGEPRINT_ variable is set."""
    etc = tmp_path / "etc" / "edgeprint"
    monkeypatch.setattr(
        locate, "CONFIG_CANDIDATES", [etc / "config.toml", Path(".quickstart/config.toml")]
    )
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    for name in list(os.environ):
        if name.startswith("EDGEPRINT_"):
            monkeypatch.delenv(name)
    return etc


# --- the search order, in memory ------------------------------------------------------------


def test_search_order_flags_then_environment_then_configs_found(
    installed: Path, tmp_path: Path
) -> None:
    """Each source is used when every source before it is absent."""
    _config(installed, 1001, host="0.0.0.0")
    _config(Path(".quickstart"), 1002)
    env_config = _config(tmp_path / "env", 1003, host="::")
    flag_config = _config(tmp_path / "flag", 1004, host="192.0.2.7")
    env = {"EDGEPRINT_URL": "http://127.0.0.1:1005/", "EDGEPRINT_CONFIG": str(env_config)}

    where = locate.locate("http://127.0.0.1:1006", None, env)
    assert (where.url, where.origin, where.config) == ("http://127.0.0.1:1006", "from --url", None)
    where = locate.locate(None, str(flag_config), env)
    assert (where.url, where.origin) == ("http://192.0.2.7:1004", f"from {flag_config}")
    assert where.config == flag_config
    where = locate.locate(None, None, env)
    assert (where.url, where.origin) == ("http://127.0.0.1:1005", "from $EDGEPRINT_URL")
    del env["EDGEPRINT_URL"]
    where = locate.locate(None, None, env)
    assert where.url == "http://[::1]:1003"
    assert where.origin == f"from {env_config} ($EDGEPRINT_CONFIG)"
    where = locate.locate(None, None, {})
    assert (where.url, where.origin) == ("http://127.0.0.1:1001", f"from {installed}/config.toml")
    (installed / "config.toml").unlink()
    where = locate.locate(None, None, {})
    assert (where.url, where.origin) == ("http://127.0.0.1:1002", "from .quickstart/config.toml")
    assert where.config == Path(".quickstart/config.toml")
    shutil.rmtree(".quickstart")
    where = locate.locate(None, None, {})
    assert (where.url, where.origin, where.is_default) == (locate.DEFAULT_URL, "the default", True)


def test_a_bind_address_is_reached_where_it_works_from_this_box() -> None:
    """0.0.0.0 → 127.0.0.1, :: → ::1, a LAN address or a name → itself."""
    assert [locate.reach_host(h) for h in ("0.0.0.0", "::", "192.0.2.7", "box.local")] == [
        "127.0.0.1",
        "::1",
        "192.0.2.7",
        "box.local",
    ]


def test_a_config_with_port_0_names_the_file_and_what_to_pass(installed: Path) -> None:
    """Port 0 (a free port at each start) cannot be found from the file: say so."""
    path = _config(installed, 0)
    with pytest.raises(UsageError) as caught:
        locate.locate(None, None, {})
    assert str(caught.value) == (
        f"{path} names no port ([server] port = 0: a free port is picked at each start): "
        "pass --url http://HOST:PORT with the port in the log's 'listening on' line"
    )


def test_a_config_that_is_a_folder_or_not_toml_is_refused(installed: Path) -> None:
    (installed / "config.toml").mkdir(parents=True)
    with pytest.raises(UsageError, match=r"cannot read .*config\.toml: Is a directory"):
        locate.locate(None, None, {})
    bad = Path("bad.toml")
    bad.write_text("[server\n")
    with pytest.raises(UsageError, match=r"bad\.toml is not a valid config .*pass --url"):
        locate.locate(None, "bad.toml", {})
    with pytest.raises(UsageError, match=r"missing\.toml: no such file"):
        locate.locate(None, "missing.toml", {})


def test_token_precedence(installed: Path, tmp_path: Path) -> None:
    """--token, --token-file, $EDGEPRINT_TOKEN, $EDGEPRINT_TOKEN_FILE, then tech.token beside
    the config the URL came from, and only then."""
    _config(installed, 1001)
    beside = _token_file(installed, "from-beside-the-config")
    flag_file = _token_file(tmp_path, "from-the-flag-file")
    env_file = tmp_path / "env.token"
    env_file.write_text("from-the-env-file\n")
    env = {"EDGEPRINT_TOKEN": "from-the-env", "EDGEPRINT_TOKEN_FILE": str(env_file)}
    where = locate.locate(None, None, {})

    def value(flag: str | None, file_flag: str | None, env: dict[str, str]) -> object:
        token = credentials.bearer_token(flag, file_flag, where, env)
        return None if token is None else (token.value, token.source)

    assert value("from-the-flag", str(flag_file), env) == ("from-the-flag", "--token")
    assert value(None, str(flag_file), env) == ("from-the-flag-file", str(flag_file))
    assert value(None, None, env) == ("from-the-env", "$EDGEPRINT_TOKEN")
    del env["EDGEPRINT_TOKEN"]
    assert value(None, None, env) == ("from-the-env-file", str(env_file))
    assert value(None, None, {}) == ("from-beside-the-config", str(beside))
    # A URL given by hand gets the token file of the config naming the same appliance only.
    by_hand = locate.locate("http://localhost:1001", None, {})
    assert credentials.bearer_token(None, None, by_hand, {}) == (
        Token("from-beside-the-config", str(beside))
    )
    elsewhere = locate.locate("http://127.0.0.1:1009", None, {})
    assert credentials.bearer_token(None, None, elsewhere, {}) is None


# --- against a real appliance -------------------------------------------------------------


async def test_no_flags_reach_the_appliance_of_edgeprint_config_with_its_token_file(
    app: Appliance, tmp_path: Path
) -> None:
    """$EDGEPRINT_CONFIG alone: the URL from its [server] (0.0.0.0 → loopback), the token
    from tech.token beside it; no --url, no token anywhere on the command line."""
    folder = tmp_path / "box"
    path = _config(folder, app.running.port, host="0.0.0.0")
    _token_file(folder)
    proc = await asyncio.to_thread(
        _edgeprint, "printers", env=_env(EDGEPRINT_CONFIG=str(path)), cwd=tmp_path
    )
    assert (proc.returncode, proc.stderr) == (0, "")
    assert "printer-01" in proc.stdout
    assert TECH_TOKEN not in proc.stdout


async def test_no_flags_reach_the_quick_start_from_its_folder(
    app: Appliance, installed: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """In the checkout after the quick start: .quickstart/config.toml and its tech.token."""
    _config(Path(".quickstart"), app.running.port)
    _token_file(Path(".quickstart"))
    code = await asyncio.to_thread(cli.main, ["status"])
    out = capsys.readouterr()
    assert (code, out.err) == (0, "")
    assert f"edgeprint at {app.url}" in out.out


@pytest.mark.parametrize(
    ("source", "origin"),
    [
        pytest.param("env-url", "from $EDGEPRINT_URL", id="env-url"),
        pytest.param("env-config", "from {path} ($EDGEPRINT_CONFIG)", id="env-config"),
        pytest.param("flag-config", "from {path}", id="flag-config"),
    ],
)
def test_refused_connection_names_the_url_its_source_and_what_to_try(
    tmp_path: Path, source: str, origin: str
) -> None:
    """Nothing listening: exit 3, one line with the URL, where it came from, what to try."""
    port = _closed_port()
    path = _config(tmp_path / "box", port)
    env = _env(EDGEPRINT_TOKEN=TECH_TOKEN)
    argv = ["status"]
    if source == "env-url":
        env["EDGEPRINT_URL"] = f"http://127.0.0.1:{port}"
    elif source == "env-config":
        env["EDGEPRINT_CONFIG"] = str(path)
    else:
        argv += ["--config", str(path)]
    proc = _edgeprint(*argv, env=env, cwd=tmp_path)
    assert proc.returncode == 3
    assert proc.stderr == (
        f"edgeprint: cannot connect to http://127.0.0.1:{port} ({origin.format(path=path)}): "
        "Connection refused; is the appliance running? systemctl status edgeprint; "
        "or pass --url or --config\n"
    )


def test_refused_at_the_default_says_it_is_the_default(
    installed: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"http://127.0.0.1:{_closed_port()}"
    monkeypatch.setattr(locate, "DEFAULT_URL", url)
    assert cli.main(["status", "--token", TECH_TOKEN]) == 3
    assert f"cannot connect to {url} (the default): Connection refused" in capsys.readouterr().err


async def test_unknown_token_at_the_default_hints_at_another_appliance(
    app: Appliance,
    installed: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """No config found and a 401 from the default address: maybe not this box's appliance."""
    monkeypatch.setattr(locate, "DEFAULT_URL", app.url)
    secret = "not-this-appliances-token-0123"
    code = await asyncio.to_thread(cli.main, ["status", "--token", secret])
    err = capsys.readouterr().err
    assert code == 1
    assert err == (
        "edgeprint: 401 Unauthorized: unknown bearer token "
        f"({app.url} is the default address, used as no config was found: it may be another "
        "appliance than yours, or the token from --token is the wrong one; pass --config PATH "
        "or --url URL)\n"
    )
    assert secret not in err


async def test_url_and_config_that_disagree_the_flag_wins_and_says_so(
    app: Appliance, tmp_path: Path
) -> None:
    """--url and --config both: --url is used, one line on stderr says so; when they agree,
    nothing is said and the config's token file is used."""
    elsewhere = _config(tmp_path / "other", _closed_port())
    proc = await asyncio.to_thread(
        _edgeprint,
        "printers",
        "--url",
        app.url,
        "--config",
        str(elsewhere),
        env=_env(EDGEPRINT_TOKEN=TECH_TOKEN),
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    other = load_config(elsewhere).server.port
    assert proc.stderr == (
        f"edgeprint: --url {app.url} and --config {elsewhere} (http://127.0.0.1:{other}) "
        "disagree: using --url\n"
    )
    assert "printer-01" in proc.stdout
    same = _config(tmp_path / "same", app.running.port)
    _token_file(same.parent)
    proc = await asyncio.to_thread(
        _edgeprint, "printers", "--url", app.url, "--config", str(same), env=_env(), cwd=tmp_path
    )
    assert (proc.returncode, proc.stderr) == (0, "")


# --- token files that cannot be used ------------------------------------------------------

SECRET = "s3cret-never-shown"


@pytest.mark.parametrize(
    ("content", "says"),
    [
        pytest.param(None, "does not exist", id="missing"),
        pytest.param("dir", "is not a regular file", id="directory"),
        pytest.param(b"", "is empty: put the tech token in it, on one line", id="empty"),
        pytest.param(b" \n\n", "is empty: put the tech token in it, on one line", id="blank"),
        pytest.param(
            SECRET.encode() + b"\x00\n",
            "does not hold one token: a token is one line of printable characters, no spaces "
            "or control characters",
            id="nul",
        ),
        pytest.param(
            f"{SECRET} {SECRET}\n".encode(),
            "does not hold one token: a token is one line of printable characters, no spaces "
            "or control characters",
            id="space",
        ),
        pytest.param(
            b"\xff\xfe" + SECRET.encode(),
            "does not hold a token: it is not plain ASCII text",
            id="binary",
        ),
        pytest.param(b"x" * 9000, "is too big for a token (over 8192 bytes)", id="huge"),
    ],
)
@pytest.mark.parametrize("how", ["flag", "env"])
def test_a_bad_token_file_is_exit_2_naming_it_never_its_content(
    tmp_path: Path, content: bytes | str | None, says: str, how: str
) -> None:
    """Exit 2 before any request: the message names the file and what is wrong with it."""
    path = tmp_path / "tech.token"
    if content == "dir":
        path.mkdir()
    elif isinstance(content, bytes):
        path.write_bytes(content)
    named_by = "--token-file" if how == "flag" else "$EDGEPRINT_TOKEN_FILE"
    env = _env(EDGEPRINT_URL=f"http://127.0.0.1:{_closed_port()}")
    argv = ["status"]
    if how == "flag":
        argv += ["--token-file", str(path)]
    else:
        env["EDGEPRINT_TOKEN_FILE"] = str(path)
    proc = _edgeprint(*argv, env=env, cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr == f"edgeprint: the token file {path} ({named_by}) {says}\n"
    assert SECRET not in proc.stdout + proc.stderr


def _without_root_powers() -> tuple[str, ...]:
    """A prefix that takes root's power to read any file away (chmod 000 stops root only
    then); nothing for another user."""
    if os.geteuid() != 0:
        return ()
    prefix = ("setpriv", "--bounding-set=-dac_override,-dac_read_search")
    if shutil.which("setpriv") is None or subprocess.run([*prefix, "true"], check=False).returncode:
        pytest.skip("setpriv (util-linux) and CAP_SETPCAP are needed to drop CAP_DAC_OVERRIDE")
    return prefix


def test_unreadable_token_file_and_config_say_what_to_do(tmp_path: Path) -> None:
    """A token file or a config the user cannot read (0600/0640 root's): sudo, or another."""
    prefix = _without_root_powers()
    token = _token_file(tmp_path, SECRET)
    token.chmod(0)
    env = _env(EDGEPRINT_URL=f"http://127.0.0.1:{_closed_port()}")
    proc = _edgeprint("status", "--token-file", str(token), env=env, cwd=tmp_path, prefix=prefix)
    assert proc.returncode == 2
    assert proc.stderr == (
        f"edgeprint: cannot read the token file {token} (--token-file): permission denied "
        "(it is root's: run with sudo, or give a token file you can read)\n"
    )
    path = _config(tmp_path / "etc", 1001)
    path.chmod(0)
    proc = _edgeprint("status", env=_env(EDGEPRINT_CONFIG=str(path)), cwd=tmp_path, prefix=prefix)
    assert proc.returncode == 2
    assert proc.stderr == (
        f"edgeprint: cannot read {path}: permission denied (it is for root and the edgeprint "
        "group): run the command with sudo, or pass --url http://HOST:PORT and a token\n"
    )


async def test_no_token_anywhere_says_where_it_looked(app: Appliance, installed: Path) -> None:
    _config(installed, app.running.port)
    api = cli.client.connect(cli.parser.parse_args(["status"]))
    with pytest.raises(UsageError) as caught:
        await asyncio.to_thread(api.call, "GET", "/v1/printers")
    assert str(caught.value) == (
        f"no token for {app.url} (from {installed}/config.toml): give --token-file PATH, or "
        "set $EDGEPRINT_TOKEN_FILE or $EDGEPRINT_TOKEN, to a tech token (edgeprint token new "
        f"--role tech) ({installed}/tech.token is not there: edgeprint setup writes it)"
    )


# --- edgeprint setup writes the token file ---------------------------------------------------


async def test_setup_writes_a_root_only_token_file_the_cli_then_uses(tmp_path: Path) -> None:
    """setup → tech.token beside the config (0600, root's when root), said in its output; the
    appliance started from that config answers `edgeprint status --config` with no token."""
    path = tmp_path / "etc" / "config.toml"
    port = _closed_port()
    proc = await asyncio.to_thread(
        _edgeprint,
        "setup",
        "--config",
        str(path),
        "--printer",
        "front-1=ipp://127.0.0.1:1/ipp/print",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--data-dir",
        str(tmp_path / "data"),
        env=_env(),
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    token_path = path.parent / "tech.token"
    [tech] = [
        line.removeprefix(TOKEN_LINE_PREFIX)
        for line in proc.stdout.splitlines()
        if line.startswith(TOKEN_LINE_PREFIX)
    ]
    assert token_path.read_text() == tech + "\n"
    info = token_path.stat()
    assert stat.S_IMODE(info.st_mode) == 0o600
    assert info.st_uid == os.geteuid()
    assert f"The tech token is also in {token_path} (readable by root only)" in proc.stdout
    async with running(load_config(path)):
        proc = await asyncio.to_thread(
            _edgeprint, "status", "--config", str(path), env=_env(), cwd=tmp_path
        )
    assert (proc.returncode, proc.stderr) == (0, "")  # over https, pinned to setup's tls.crt
    assert f"edgeprint at https://127.0.0.1:{port}" in proc.stdout
    assert "front-1" in proc.stdout


def test_setup_no_token_file_writes_none(tmp_path: Path) -> None:
    path = tmp_path / "etc" / "config.toml"
    proc = _edgeprint(
        "setup",
        "--config",
        str(path),
        "--printer",
        "front-1=ipp://127.0.0.1:1/ipp/print",
        "--host",
        "127.0.0.1",
        "--no-token-file",
        "--data-dir",
        str(tmp_path / "data"),
        env=_env(),
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in path.parent.iterdir()) == ["config.toml", "tls.crt", "tls.key"]
    assert "tech.token" not in proc.stdout
