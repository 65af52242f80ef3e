"""The README's "Pinning the appliance's certificate" examples run as written (issue 26).

Each fenced block is taken from README.md itself and run against a real appliance serving
TLS on loopback, with the variables its first block names set to that appliance's values:
curl (``--pinnedpubkey``), Python (the standard library's ``ssl`` with a fingerprint check,
and ``aiohttp.Fingerprint``), Node (``tls``/``https``) and ipptool over ``ipps://`` work
with the right pin, and every pinning client refuses the appliance when given another
certificate's pin (curl: exit 90; Python and Node: an error, exit 1).
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from edgeprint import certificates
from edgeprint.config import parse_config
from edgeprint.server import running
from testbed.rig import find_tool
from tests.conftest import KIOSK_TOKEN, config_dict
from tests.test_readme_blocks import README, section

VARIABLES = ("EDGEPRINT_URL", "EDGEPRINT_HOST", "EDGEPRINT_PIN", "EDGEPRINT_FINGERPRINT")
TIMEOUT_S = 60


def blocks() -> list[tuple[str, str]]:
    """(language, code) of each fenced block of the section, in order."""
    text = section(README.read_text(), "Pinning the appliance's certificate")
    return re.findall(r"^```(\w+)\n(.*?)^```$", text, re.M | re.S)


def _of(language: str) -> list[str]:
    return [code for lang, code in blocks() if lang == language]


def test_the_section_has_each_example() -> None:
    """The variables, then curl, two Python, one Node and the CUPS/ipptool examples; the
    first block only sets the variables the others read."""
    found = blocks()
    assert [lang for lang, _ in found] == ["sh", "sh", "python", "python", "js", "sh"]
    names = re.findall(r"^export (\w+)=", found[0][1], re.M)
    assert names == [*VARIABLES, "KIOSK_TOKEN"]
    assert len(found[0][1].strip().splitlines()) == len(names)
    assert "--pinnedpubkey" in found[1][1]
    assert "getpeercert(binary_form=True)" in found[2][1]
    assert "aiohttp.Fingerprint" in found[3][1]
    assert "fingerprint256" in found[4][1]
    assert "lpadmin" in found[5][1]
    assert "ipptool" in found[5][1]


@dataclass
class Served:
    env: dict[str, str]
    wrong: dict[str, str]
    tmp: Path


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[Served]:
    etc = tmp_path / "etc"
    cert = certificates.make_self_signed(etc / "tls.crt", etc / "tls.key", ["127.0.0.1"])
    other = certificates.make_self_signed(etc / "o.crt", etc / "o.key", ["127.0.0.1"])
    data = config_dict(tmp_path / "data")
    data["server"].update(
        {"tls": "self-signed", "cert_file": str(cert.cert_file), "key_file": str(cert.key_file)}
    )
    async with running(parse_config(data)) as run:
        base = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(tmp_path / "home"),  # ipptool's trust on first use, fresh
            "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
            "KIOSK_TOKEN": KIOSK_TOKEN,
            "EDGEPRINT_URL": f"https://127.0.0.1:{run.port}",
            "EDGEPRINT_HOST": f"127.0.0.1:{run.port}",
        }
        (tmp_path / "home").mkdir()
        right = {"EDGEPRINT_PIN": cert.pin, "EDGEPRINT_FINGERPRINT": cert.fingerprint}
        wrong = {"EDGEPRINT_PIN": other.pin, "EDGEPRINT_FINGERPRINT": other.fingerprint}
        yield Served({**base, **right}, {**base, **wrong}, tmp_path)


async def _run(argv: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return await asyncio.to_thread(
        subprocess.run,
        argv,
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )


def _bash(script: str) -> list[str]:
    return ["bash", "--noprofile", "--norc", "-e", "-o", "pipefail", "-c", script]


async def test_curl_example_pins_the_key(served: Served) -> None:
    [_, curl, *_] = _of("sh")
    ok = await _run(_bash(curl), served.env, served.tmp)
    assert ok.returncode == 0, ok.stderr
    assert '"jobs":[]' in ok.stdout.replace(" ", ""), ok.stdout
    refused = await _run(_bash(curl), served.wrong, served.tmp)
    assert refused.returncode == 90, (refused.stdout, refused.stderr)
    assert refused.stdout == ""


@pytest.mark.parametrize(
    ("index", "refusal"),
    [
        (0, "ConnectionError: not the appliance: its certificate's SHA-256 is "),
        (1, "aiohttp.client_exceptions.ServerFingerprintMismatch"),
    ],
)
async def test_python_examples_check_the_fingerprint(
    served: Served, index: int, refusal: str
) -> None:
    code = _of("python")[index]
    ok = await _run([sys.executable, "-c", code], served.env, served.tmp)
    assert (ok.returncode, ok.stdout, ok.stderr) == (0, "200\n", "")
    refused = await _run([sys.executable, "-c", code], served.wrong, served.tmp)
    assert refused.returncode == 1
    assert refused.stdout == ""
    assert refusal in refused.stderr, refused.stderr


async def test_node_example_checks_the_fingerprint(served: Served) -> None:
    """The right fingerprint in openssl's form or in hexdigest's: 200; another: refused."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("node: apt-get install nodejs")
    [code] = _of("js")
    ok = await _run([node, "-e", code], served.env, served.tmp)
    assert (ok.returncode, ok.stdout, ok.stderr) == (0, "200\n", "")
    # as Python's hexdigest prints it: lower case, no colons (fresh-user finding 12)
    fingerprint = served.env["EDGEPRINT_FINGERPRINT"].replace(":", "").lower()
    lower = {**served.env, "EDGEPRINT_FINGERPRINT": fingerprint}
    ok = await _run([node, "-e", code], lower, served.tmp)
    assert (ok.returncode, ok.stdout, ok.stderr) == (0, "200\n", "")
    refused = await _run([node, "-e", code], served.wrong, served.tmp)
    assert refused.returncode == 1
    assert refused.stdout == ""
    assert refused.stderr.startswith("not the appliance: its certificate's SHA-256 is "), (
        refused.stderr
    )


async def test_ipptool_example_reaches_a_queue_over_ipps(served: Served) -> None:
    """The ipptool line as written (the lpadmin line needs a CUPS scheduler: the CUPS
    interop tests add queues over ipps://)."""
    if find_tool("ipptool") is None:
        pytest.skip("ipptool: apt-get install cups-ipp-utils")
    [line] = [x for x in _of("sh")[-1].splitlines() if x.startswith("ipptool ")]
    out = await _run(
        _bash(line.replace("ipptool -tv", "ipptool -T 10 -tv")), served.env, served.tmp
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "[PASS]" in out.stdout
    assert "[FAIL]" not in out.stdout
