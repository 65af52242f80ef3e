"""`edgeprint discover`: real printers advertised over multicast DNS on loopback are listed.

The test advertises real ippeveprinter printers (testbed/rig.py) with python-zeroconf on
127.0.0.1 (multicast switched on for ``lo`` when it is off: root), and runs the command
as a technician would, browsing only on 127.0.0.1.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

from zeroconf import Zeroconf

from edgeprint.cli.discover import nothing_found, render
from edgeprint.config import parse_config
from edgeprint.ipp_server.advertise import service_info
from edgeprint.printers.discover import FoundPrinter, config_name
from testbed.rig import Rig
from tests.conftest import config_dict
from tests.mdns import LOOPBACK, advertise, port_of


def _discover(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "edgeprint", "discover", "--interface", LOOPBACK, *args],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


def test_discover_lists_advertised_printers_with_their_attributes(
    advertiser: Zeroconf, printers: Rig
) -> None:
    """Each advertised printer is listed with its URI and what Get-Printer-Attributes says;
    one that does not answer is listed with the error."""
    tag = uuid.uuid4().hex[:8]
    for p in printers:
        advertise(advertiser, "_ipp._tcp", f"Lobby {p.name} {tag}", port_of(p.uri),
                   rp="ipp/print", ty="Rig Printer")  # fmt: skip
    advertise(advertiser, "_ipps._tcp", f"Gone {tag}", 1, rp="ipp/secure", ty="Old Laser")

    out = _discover("--json", "--timeout", "2")

    assert out.returncode == 0, out.stderr
    listed = [p for p in json.loads(out.stdout)["printers"] if tag in p["instance"]]
    by_name = {p["instance"]: p for p in listed}
    assert sorted(by_name) == sorted([f"Gone {tag}"] + [f"Lobby {p.name} {tag}" for p in printers])
    for p in printers:
        found = by_name[f"Lobby {p.name} {tag}"]
        assert found == {
            "instance": f"Lobby {p.name} {tag}",
            "service": "_ipp._tcp",
            "uri": p.uri,
            "make_and_model": f"edgeprint-rig {p.name}",
            "state": "idle",
            "state_reasons": [],
            "formats": ["application/octet-stream", "application/pdf"],
            "media_ready": found["media_ready"],
            "error": None,
        }
        assert found["media_ready"]  # ippeveprinter reports its loaded media
    gone = by_name[f"Gone {tag}"]
    assert gone["uri"] == "ipps://127.0.0.1:1/ipp/secure"
    assert gone["make_and_model"] == "Old Laser"  # from the TXT record
    assert gone["error"].startswith("Get-Printer-Attributes: cannot connect")


def test_discover_leaves_out_edgeprint_queues(advertiser: Zeroconf, printers: Rig) -> None:
    """A queue an edgeprint appliance advertises (its own DNS-SD record) is not a printer:
    discover does not list it, so setup never offers a box its own queues."""
    tag = uuid.uuid4().hex[:8]
    p = printers["printer-01"]
    advertise(advertiser, "_ipp._tcp", f"Real {tag}", port_of(p.uri), rp="ipp/print")
    queue = f"lobby-{tag}"
    cfg = parse_config(config_dict(Path("/tmp/unused")))
    advertiser.register_service(service_info(cfg, queue, LOOPBACK, port_of(p.uri), f"{tag}.local."))

    out = _discover("--json", "--timeout", "2")

    assert out.returncode == 0, out.stderr
    names = [x["instance"] for x in json.loads(out.stdout)["printers"]]
    assert f"Real {tag}" in names
    assert f"edgeprint {queue}" not in names


def test_discover_human_output_names_uri_model_and_state(
    advertiser: Zeroconf, printers: Rig
) -> None:
    """Without --json each printer is a block with its URI, model, state, formats and media."""
    tag = uuid.uuid4().hex[:8]
    p = printers["printer-01"]
    advertise(advertiser, "_ipp._tcp", f"Desk {tag}", port_of(p.uri),
               rp="ipp/print")  # fmt: skip

    out = _discover("--timeout", "2")

    assert out.returncode == 0, out.stderr
    block = out.stdout.split(f"Desk {tag}  (_ipp._tcp)\n")[1].split("\n\n")[0].splitlines()
    assert block[:4] == [
        f"  uri      {p.uri}",
        "  model    edgeprint-rig printer-01",
        "  state    idle",
        "  formats  application/octet-stream, application/pdf",
    ]
    assert block[4].startswith("  media    na_")
    assert out.stdout.rstrip().endswith("edgeprint setup --printer NAME=URI")


def test_discover_finding_nothing_says_what_to_check(lo_multicast: None) -> None:
    """With no printer advertised, discover exits 1 and says what to check and how to add one."""
    out = _discover("--json", "--timeout", "0.5")

    assert out.returncode == 1
    assert json.loads(out.stdout) == {"printers": []}
    assert out.stderr.strip() == nothing_found(0.5)
    assert "no IPP printer answered within 0.5 s" in out.stderr
    assert "edgeprint setup --printer NAME=ipp://ADDRESS/ipp/print" in out.stderr


def test_discover_rejects_a_bad_timeout() -> None:
    """--timeout must be a number of seconds above 0 and at most 120 (exit 2)."""
    for bad in ("0", "-1", "abc", "121"):
        out = _discover("--timeout", bad)
        assert out.returncode == 2, bad
        assert "--timeout" in out.stderr


def test_render_replaces_control_characters() -> None:
    """Names from the LAN cannot write control characters to the technician's terminal."""
    p = FoundPrinter(
        instance="Evil\x1b[2J", service="_ipp._tcp", uri="ipp://192.0.2.1:631/ipp/print",
        make_and_model="X\x07", state=None, state_reasons=[], formats=[], media_ready=[],
        error="Get-Printer-Attributes: cannot connect",
    )  # fmt: skip
    text = "\n".join(render([p]))
    assert "\x1b" not in text
    assert "\x07" not in text
    assert "Evil?[2J  (_ipp._tcp)" in text


def test_config_name_from_instance_names() -> None:
    """A DNS-SD instance name becomes a valid, unused [[printers]] name."""
    assert config_name("HP LaserJet Pro M404 (Lobby)") == "hp-laserjet-pro-m404-lobby"
    assert config_name("Café Drucker") == "cafe-drucker"
    assert config_name("***") == "printer"
    assert config_name("Lobby", taken=["lobby", "lobby-2"]) == "lobby-3"
    assert len(config_name("x" * 100)) <= 40
