"""CUPS as a client of edgeprint's IPP queues: a private cupsd (testbed/cups_rig.py) with
driverless queues (``lpadmin -m everywhere``) pointing at edgeprint, printing with ``lp``.

Needs cupsd, lp, lpadmin (cups-daemon, cups-client) and CUPS's PDF filters (cups-filters:
``lp`` of a PDF on an everywhere queue goes through pdftopdf).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from edgeprint.ipp.names import Operation, Tag
from edgeprint.ipp.values import attr
from testbed.cups_rig import Cupsd, CupsError, cups_tools, first
from testbed.pdfs import make_pdf
from testbed.proc import ServeProcess
from testbed.rig import Rig, free_ports
from tests.conftest import KIOSK_TOKEN, to_toml
from tests.polling import eventually
from tests.printing import Client, appliance, assert_each_printed_once, rig_config
from tests.rig_fixtures import in_ci
from tests.tls_rig import tls_appliance


def _need_cups() -> None:
    try:
        cups_tools()
    except CupsError as exc:
        why = str(exc)
    else:
        if Path("/usr/lib/cups/filter/pdftopdf").exists():
            return
        why = "CUPS's pdftopdf filter not found: apt-get install cups-filters"
    if in_ci():
        pytest.fail(why, pytrace=False)
    pytest.skip(why)


@pytest.fixture
def cups() -> Any:
    """A private cupsd, stopped after the test. Its state lives outside pytest's temporary
    tree: its backends run as user lp and must read its spool, and a pytest session started
    meanwhile (another test run on this machine) makes /tmp/pytest-of-<user> private again."""
    _need_cups()
    root = Path(tempfile.mkdtemp(prefix="edgeprint-cups-"))
    try:
        root.chmod(0o755)
        cupsd = Cupsd(root / "cups")
        cupsd.start()
        try:
            yield cupsd
        finally:
            cupsd.stop()
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _run(cupsd: Cupsd, *argv: str) -> str:
    done = subprocess.run(
        [argv[0], "-h", cupsd.server, *argv[1:]],
        capture_output=True, text=True, timeout=60, check=False,
        env={**os.environ, "CUPS_SERVER": cupsd.server},
    )  # fmt: skip
    assert done.returncode == 0, (argv, done.stdout, done.stderr, cupsd.tail())
    return done.stdout


async def _jobs(client: Client) -> list[dict[str, Any]]:
    headers = {"Authorization": f"Bearer {KIOSK_TOKEN}"}
    async with client.http.get(f"{client.url}/v1/jobs?limit=50", headers=headers) as r:
        assert r.status == 200
        jobs: list[dict[str, Any]] = (await r.json())["jobs"]
        return jobs


async def add_everywhere_queue(cupsd: Cupsd, name: str, uri: str) -> None:
    """``lpadmin -m everywhere``, then wait until cupsd has made the PPD from the queue's
    attributes (it does so in the background: a job queued before fails in pdftopdf)."""
    _run(cupsd, "lpadmin", "-p", name, "-E", "-v", uri, "-m", "everywhere")
    uri = f"ipp://127.0.0.1:{cupsd.port}/printers/{name}"
    wanted = [attr("requested-attributes", Tag.KEYWORD, "printer-make-and-model")]

    async def made() -> bool | None:
        resp = cupsd.ipp(f"/printers/{name}", Operation.GET_PRINTER_ATTRIBUTES, uri, wanted)
        # "Local Raw Printer" until the PPD is there, then "<model> - IPP Everywhere"
        return (
            True if str(first(resp, "printer-make-and-model")).endswith("IPP Everywhere") else None
        )

    await eventually(made, f"the PPD of {name}", timeout_s=30, every_s=0.05)


@pytest.fixture
async def edgeprint(printers: Rig, tmp_path: Path) -> AsyncIterator[tuple[int, Client]]:
    """An appliance in front of the rig printers; printer-02's queue holds by default."""
    cfg = rig_config(tmp_path / "data", printers)
    cfg["ipp"] = {"hold_queues": ["printer-02"], "advertise": False}
    async with appliance(cfg) as (run, client):
        yield run.port, client


@pytest.mark.slow
async def test_lp_on_a_driverless_queue_prints_once(
    cups: Cupsd, edgeprint: tuple[int, Client], printers: Rig, tmp_path: Path
) -> None:
    """lpadmin -m everywhere against the pool queue, then lp of a PDF: one edgeprint job, printed exactly once, and CUPS sees its job completed."""
    port, client = edgeprint
    await add_everywhere_queue(cups, "edge", f"ipp://127.0.0.1:{port}/ipp/print/lobby")
    doc = tmp_path / "badge.pdf"
    doc.write_bytes(make_pdf("cups client"))
    doc.chmod(0o644)
    _run(cups, "lp", "-d", "edge", str(doc))

    async def done() -> list[dict[str, Any]] | None:
        jobs = await _jobs(client)
        return jobs if jobs and all(j["state"] == "DONE" for j in jobs) else None

    jobs = await eventually(done, "edgeprint job DONE", timeout_s=30, every_s=0.05)
    assert len(jobs) == 1
    assert (jobs[0]["owner"], jobs[0]["pool"]) == (os.environ.get("USER", "root"), "lobby")
    assert_each_printed_once(printers, [jobs[0]["id"]])

    async def cups_completed() -> bool | None:
        return True if [j["state"] for j in cups.jobs()] == ["completed"] else None

    await eventually(cups_completed, "CUPS job completed", timeout_s=30, every_s=0.05)


@pytest.mark.slow
async def test_lp_over_ipps_on_a_driverless_queue_prints_once(
    cups: Cupsd, printers: Rig, tmp_path: Path
) -> None:
    """tls = "self-signed": lpadmin -v ipps://…/ipp/print/lobby -m everywhere (CUPS trusts the certificate on first use) and lp of a PDF: one edgeprint job, printed exactly once on the printer behind it, and CUPS sees its job completed."""
    cfg = rig_config(tmp_path / "data", printers)
    cfg["ipp"] = {"advertise": False}
    async with tls_appliance(cfg, tmp_path) as (run, client, _):
        uri = f"ipps://127.0.0.1:{run.port}/ipp/print/lobby"
        await add_everywhere_queue(cups, "edge-tls", uri)
        assert _run(cups, "lpstat", "-v", "edge-tls").split()[-1] == uri
        doc = tmp_path / "badge.pdf"
        doc.write_bytes(make_pdf("cups over ipps"))
        doc.chmod(0o644)
        _run(cups, "lp", "-d", "edge-tls", str(doc))

        async def done() -> list[dict[str, Any]] | None:
            jobs = await _jobs(client)
            return jobs if jobs and all(j["state"] == "DONE" for j in jobs) else None

        jobs = await eventually(done, "edgeprint job DONE", timeout_s=30, every_s=0.05)
        assert len(jobs) == 1
        assert jobs[0]["pool"] == "lobby"
        assert_each_printed_once(printers, [jobs[0]["id"]])

        async def cups_completed() -> bool | None:
            return True if [j["state"] for j in cups.jobs()] == ["completed"] else None

        await eventually(cups_completed, "CUPS job completed", timeout_s=30, every_s=0.05)


@pytest.mark.slow
async def test_lp_to_a_hold_queue_prints_once_after_an_api_release(
    cups: Cupsd, edgeprint: tuple[int, Client], printers: Rig, tmp_path: Path
) -> None:
    """lp to a queue in [ipp] hold_queues stores a HELD edgeprint job that nothing prints; POST /v1/jobs/{id}/release prints it exactly once."""
    port, client = edgeprint
    await add_everywhere_queue(cups, "held", f"ipp://127.0.0.1:{port}/ipp/print/printer-02")
    doc = tmp_path / "held.pdf"
    doc.write_bytes(make_pdf("cups held"))
    doc.chmod(0o644)
    _run(cups, "lp", "-d", "held", str(doc))

    async def held() -> dict[str, Any] | None:
        jobs = await _jobs(client)
        return jobs[0] if [j["state"] for j in jobs] == ["HELD"] else None

    job = await eventually(held, "edgeprint job HELD", timeout_s=30, every_s=0.05)
    assert printers.printed("printer-02") == []
    status, body = await client.post(f"/v1/jobs/{job['id']}/release")
    assert status == 200, body

    async def printed() -> bool | None:
        return True if (await client.job(job["id"]))["state"] == "DONE" else None

    await eventually(printed, "released job DONE", timeout_s=30, every_s=0.05)
    assert_each_printed_once(printers, [job["id"]])


#: Why CUPS 2.4.2 does not resend by itself when edgeprint dies at some instants (DESIGN
#: §11): a broken connection while its ``ipp`` backend sends (the Create-Job unanswered, or
#: the document not yet all written) is IPP_STATUS_ERROR_INTERNAL to libcups
#: (cups/request.c 943, 1177), which backend/ipp.c maps to CUPS_BACKEND_STOP (lines 1959,
#: 2263-2264): cupsd stops the queue and keeps the job, unprinted, until ``cupsenable``.
CUPS_STOPS = (
    "CUPS 2.4.2's ipp backend exits 'stop printer' on a connection broken while it sends "
    "(backend/ipp.c 1959, 2263): the job waits in the stopped CUPS queue until cupsenable"
)
#: Where edgeprint is SIGKILLed while CUPS sends (edgeprint/faults.py), and the size of the
#: PDF: killed with the first 64 KiB of a 12 MB document read, CUPS is still writing; of a
#: 100 kB one, the rest already sits in the loopback socket buffers: CUPS wrote its last byte.
STOPPING_INSTANTS = [
    pytest.param("ipp_create_job", 3_000_000, id="create-job-unanswered"),
    pytest.param("ipp_during_document", 12_000_000, id="cups-still-writing"),
]
RESENT_INSTANTS = [
    pytest.param("ipp_during_document", 100_000, id="last-byte-buffered"),
    pytest.param("ipp_after_document", 3_000_000, id="last-byte-received-nothing-stored"),
    pytest.param("ipp_after_store", 3_000_000, id="stored-unanswered"),
]


class CupsStoppedItsQueue(AssertionError):
    """CUPS stopped its queue instead of finishing (or resending) the job."""


_XFAIL_STOPS = pytest.mark.xfail(raises=CupsStoppedItsQueue, strict=True, reason=CUPS_STOPS)


def _printer_state(cupsd: Cupsd, name: str) -> int:
    uri = f"ipp://127.0.0.1:{cupsd.port}/printers/{name}"
    wanted = [attr("requested-attributes", Tag.KEYWORD, "printer-state")]
    state = first(cupsd.ipp(f"/printers/{name}", Operation.GET_PRINTER_ATTRIBUTES, uri, wanted),
                  "printer-state")  # fmt: skip
    assert isinstance(state, int)
    return state


async def _crash_while_cups_sends(
    cups: Cupsd, printers: Rig, tmp_path: Path, point: str, size: int, raw: bool = True
) -> ServeProcess:
    """lp of a ``size``-byte PDF through a driverless queue to an edgeprint armed to die at
    ``point``; returns edgeprint restarted (same port, same store) after it died there.

    ``raw``: ``lp -o raw``, CUPS passes the file itself to its ipp backend (no pdftopdf,
    which fails now and then on a large padded PDF); it goes as application/octet-stream.
    Else the backend reads pdftopdf's output from a pipe, as for an everyday ``lp``."""
    cfg = rig_config(tmp_path / "data", printers)
    cfg["server"]["port"] = free_ports(1)[0]
    config = tmp_path / "edgeprint.toml"
    config.write_text(to_toml(cfg))
    log = tmp_path / "edgeprint.log"
    serve = ServeProcess(config, log, env={"EDGEPRINT_CRASH_AT": point}).start()
    try:
        await add_everywhere_queue(cups, "edge", f"ipp://127.0.0.1:{serve.port}/ipp/print/lobby")
        doc = tmp_path / "big.pdf"
        doc.write_bytes(make_pdf("cups kill", pad_to=size))
        doc.chmod(0o644)
        _run(cups, "lp", "-d", "edge", *(("-o", "raw") if raw else ()), str(doc))
        try:
            died = serve.wait_exit(60)
        except subprocess.TimeoutExpired:
            raise AssertionError(
                f"edgeprint did not reach {point}\nCUPS: {cups.jobs()}\n{cups.tail(30)}\n"
                f"edgeprint:\n{serve.tail(30)}"
            ) from None
        assert died == -signal.SIGKILL, serve.tail()
    finally:
        serve.kill()
    return ServeProcess(config, log).start()


async def _cups_outcome(cups: Cupsd) -> str:
    """'completed' (or aborted/canceled) once CUPS's job ends, 'stopped' if CUPS stops the
    queue instead."""

    async def outcome() -> str | None:
        states = [j["state"] for j in cups.jobs()]
        if states and states[0] in ("completed", "aborted", "canceled"):
            return str(states[0])
        return "stopped" if _printer_state(cups, "edge") == 5 else None

    return await eventually(
        outcome, "CUPS job finished or queue stopped", timeout_s=90, every_s=0.05
    )


async def _edgeprint_jobs_done(serve: ServeProcess) -> list[dict[str, Any]]:
    async with aiohttp.ClientSession() as http:
        client = Client(http, serve.url)

        async def settled() -> list[dict[str, Any]] | None:
            jobs = await _jobs(client)
            return jobs if jobs and all(j["state"] == "DONE" for j in jobs) else None

        return await eventually(settled, "edgeprint job DONE", timeout_s=30, every_s=0.05)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("point", "size"),
    [*(pytest.param(*p.values, id=p.id, marks=_XFAIL_STOPS) for p in STOPPING_INSTANTS),
     *RESENT_INSTANTS],
)  # fmt: skip
async def test_kill_9_while_cups_sends_prints_once_after_restart(
    cups: Cupsd, printers: Rig, tmp_path: Path, point: str, size: int
) -> None:
    """edgeprint SIGKILLed at each instant of CUPS's send (Create-Job unanswered, document half-sent, last byte in, stored but unanswered), then restarted: CUPS finishes (resending when nothing was stored) and the job prints exactly once, never twice, never lost."""
    serve = await _crash_while_cups_sends(cups, printers, tmp_path, point, size)
    try:
        outcome = await _cups_outcome(cups)
        if outcome == "stopped":
            raise CupsStoppedItsQueue(f"{cups.jobs()}\n{cups.tail(20)}")
        assert outcome == "completed", f"{outcome}\n{cups.tail(40)}\nedgeprint:\n{serve.tail(20)}"
        jobs = await _edgeprint_jobs_done(serve)
        assert len(jobs) == 1, jobs
        assert_each_printed_once(printers, [jobs[0]["id"]])
    finally:
        serve.kill()


@pytest.mark.slow
async def test_kill_9_after_the_last_byte_of_an_everyday_lp_prints_once(
    cups: Cupsd, printers: Rig, tmp_path: Path
) -> None:
    """An everyday lp (through pdftopdf, the backend reading a pipe): edgeprint SIGKILLed with the whole document received and nothing stored, then restarted; CUPS resends and the job prints exactly once."""
    serve = await _crash_while_cups_sends(
        cups, printers, tmp_path, "ipp_after_document", 100_000, raw=False
    )
    try:
        assert await _cups_outcome(cups) == "completed", cups.tail(40)
        jobs = await _edgeprint_jobs_done(serve)
        assert len(jobs) == 1, jobs
        assert_each_printed_once(printers, [jobs[0]["id"]])
    finally:
        serve.kill()


@pytest.mark.slow
@pytest.mark.parametrize(("point", "size"), STOPPING_INSTANTS)
async def test_where_cups_stops_its_queue_cupsenable_prints_once(
    cups: Cupsd, printers: Rig, tmp_path: Path, point: str, size: int
) -> None:
    """Where CUPS 2.4.2 stops its queue after edgeprint died (see CUPS_STOPS), nothing is stored or printed and CUPS keeps the job; cupsenable then prints it exactly once."""
    serve = await _crash_while_cups_sends(cups, printers, tmp_path, point, size)
    try:
        assert await _cups_outcome(cups) == "stopped"
        assert [j["state"] for j in cups.jobs()] == ["pending"]
        async with aiohttp.ClientSession() as http:
            assert await _jobs(Client(http, serve.url)) == []
        assert all(printers.printed(p.name) == [] for p in printers)
        _run(cups, "cupsenable", "edge")
        assert await _cups_outcome(cups) == "completed"
        jobs = await _edgeprint_jobs_done(serve)
        assert len(jobs) == 1, jobs
        assert_each_printed_once(printers, [jobs[0]["id"]])
    finally:
        serve.kill()
