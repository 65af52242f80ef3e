"""The printer rig against real ippeveprinter processes, driven with pyipp 0.17.2.

These are boundary tests: they pin down what edgeprint will see from a real IPP
printer, and that the rig's ground truth (prints.log) counts what was printed.

pyipp pitfalls kept in mind here: it silently drops request attributes missing
from its tag map; any status >= 0x0200 raises IPPError (status-message lost);
one value parses to a scalar and several to a list; all transport failures
become IPPConnectionError.
"""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from pyipp import IPP
from pyipp.enums import IppJobState, IppOperation, IppPrinterState
from pyipp.exceptions import IPPConnectionError

from tests import rig as rig_module
from tests import rig_fixtures
from tests.pdfs import make_pdf
from tests.rig import Rig, RigError
from tests.rig_fixtures import require_ippeveprinter

PROJECT_ROOT = Path(__file__).resolve().parent.parent
TERMINAL = {IppJobState.CANCELED, IppJobState.ABORTED, IppJobState.COMPLETED}


def as_list(value: Any) -> list[Any]:
    """pyipp gives one value as a scalar and several as a list."""
    return value if isinstance(value, list) else [value]


def marker() -> str:
    return f"rigtest-{uuid.uuid4().hex[:12]}"


async def printer_attributes(uri: str, *names: str) -> dict[str, Any]:
    async with IPP(uri, request_timeout=5) as ipp:
        resp = await ipp.execute(
            IppOperation.GET_PRINTER_ATTRIBUTES,
            {"operation-attributes-tag": {"requested-attributes": list(names)}},
        )
    attrs: dict[str, Any] = resp["printers"][0]
    return attrs


async def print_job(ipp: IPP, job_name: str, pdf: bytes, user: str = "rig-test") -> int:
    resp = await ipp.execute(
        IppOperation.PRINT_JOB,
        {
            "operation-attributes-tag": {
                "requesting-user-name": user,
                "job-name": job_name,
                "document-format": "application/pdf",
            },
            "data": pdf,
        },
    )
    job_id: int = resp["jobs"][0]["job-id"]
    return job_id


async def wait_job_state(
    ipp: IPP, job_id: int, states: set[IppJobState], within: float = 15.0
) -> IppJobState:
    """Poll Get-Job-Attributes until job-state is one of ``states`` (bounded)."""
    deadline = time.monotonic() + within
    while True:
        resp = await ipp.execute(
            IppOperation.GET_JOB_ATTRIBUTES,
            {"operation-attributes-tag": {"job-id": job_id, "requested-attributes": ["job-state"]}},
        )
        state = IppJobState(resp["jobs"][0]["job-state"])
        if state in states:
            return state
        if time.monotonic() > deadline:
            raise AssertionError(f"job {job_id} still {state.name} after {within}s")
        await asyncio.sleep(0.02)


# --- the two boundary facts edgeprint builds on -------------------------------------


async def test_printers_answer_get_printer_attributes(printers: Rig) -> None:
    """Both printers are idle, have no queued job and support Create-Job."""
    assert [p.name for p in printers] == ["printer-01", "printer-02"]
    assert len({p.port for p in printers}) == 2
    for p in printers:
        attrs = await printer_attributes(
            p.uri, "printer-state", "queued-job-count", "operations-supported"
        )
        assert attrs["printer-state"] == IppPrinterState.IDLE
        assert attrs["queued-job-count"] == 0
        ops = as_list(attrs["operations-supported"])
        assert IppOperation.CREATE_JOB in ops
        assert IppOperation.PRINT_JOB in ops
        assert IppOperation.CANCEL_JOB in ops


async def test_print_job_shows_up_exactly_once_in_prints_log(printers: Rig) -> None:
    """One Print-Job → one ground-truth line on that printer, none elsewhere."""
    name = f"badge {marker()}"
    pdf = make_pdf("Ada Lovelace")
    async with IPP(printers["printer-01"].uri, request_timeout=5) as ipp:
        job_id = await print_job(ipp, name, pdf)
        assert await wait_job_state(ipp, job_id, TERMINAL) == IppJobState.COMPLETED
    lines = [x for x in printers.printed("printer-01") if x.job_name == name]
    assert len(lines) == 1
    line = lines[0]
    assert (line.job_id, line.user, line.pages, line.copies, line.bytes) == (
        job_id,
        "rig-test",
        1,
        1,
        len(pdf),
    )
    assert printers.printed("printer-02") == []
    assert printers.received("printer-01") == 1


# --- the rig's own behaviour: faults it injects ------------------------------------


@pytest.mark.slow
async def test_cancel_while_processing_prints_nothing(printers: Rig) -> None:
    """Cancel-Job on a processing job: OK, job ends canceled, nothing in prints.log."""
    printers.set_speed("printer-01", 1.0)
    async with IPP(printers["printer-01"].uri, request_timeout=5) as ipp:
        job_id = await print_job(ipp, f"badge {marker()}", make_pdf())
        await wait_job_state(ipp, job_id, {IppJobState.PROCESSING})
        await ipp.execute(IppOperation.CANCEL_JOB, {"operation-attributes-tag": {"job-id": job_id}})
        assert await wait_job_state(ipp, job_id, TERMINAL) == IppJobState.CANCELED
    assert printers.printed("printer-01") == []
    assert printers.received("printer-01") == 1


@pytest.mark.slow
async def test_kill_then_restart_is_a_fresh_printer_on_the_same_port(printers: Rig) -> None:
    """Power cycle: refused while dead; after restart same URI, empty history, ids from 1."""
    before = printers["printer-02"]
    first = f"badge {marker()}"
    async with IPP(before.uri, request_timeout=5) as ipp:
        assert await print_job(ipp, first, make_pdf()) == 1
        await wait_job_state(ipp, 1, TERMINAL)

    printers.kill("printer-02")
    assert printers.state("printer-02") == "dead"
    with pytest.raises(IPPConnectionError):
        await printer_attributes(before.uri, "printer-state")

    after = printers.restart("printer-02")
    assert (after.uri, printers.state("printer-02")) == (before.uri, "running")
    assert after.pid != before.pid
    second = f"badge {marker()}"
    async with IPP(after.uri, request_timeout=5) as ipp:
        resp = await ipp.execute(
            IppOperation.GET_JOBS,
            {
                "operation-attributes-tag": {
                    "which-jobs": "all",
                    "requested-attributes": ["job-id", "job-name"],
                }
            },
        )
        assert [j for j in resp["jobs"] if j] == []
        assert await print_job(ipp, second, make_pdf()) == 1  # job ids start again
        await wait_job_state(ipp, 1, TERMINAL)
    # Ground truth survives the power cycle: both documents came out, once each.
    assert [x.job_name for x in printers.printed("printer-02")] == [first, second]


@pytest.mark.slow
async def test_hung_printer_times_out_until_resumed(printers: Rig) -> None:
    """SIGSTOP: the request times out (IPPConnectionError); SIGCONT: it answers again."""
    uri = printers["printer-01"].uri
    printers.hang("printer-01")
    try:
        assert printers.state("printer-01") == "hung"
        started = time.monotonic()
        with pytest.raises(IPPConnectionError):
            async with IPP(uri, request_timeout=1) as ipp:
                await ipp.execute(
                    IppOperation.GET_PRINTER_ATTRIBUTES,
                    {"operation-attributes-tag": {"requested-attributes": ["printer-state"]}},
                )
        assert time.monotonic() - started >= 0.9
    finally:
        printers.resume("printer-01")
    attrs = await printer_attributes(uri, "printer-state")
    assert attrs["printer-state"] == IppPrinterState.IDLE


# --- start / stop contract -----------------------------------------------------------


def _free_port_pair() -> int:
    """A port P such that P and P+1 are free on both loopbacks."""
    for _ in range(50):
        port = rig_module.free_ports(1)[0]
        if port < 65535 and rig_module._port_free(port + 1):
            return port
    raise AssertionError("no two consecutive free ports")


def test_busy_port_is_refused_before_anything_starts(tmp_path: Path) -> None:
    require_ippeveprinter()
    port = _free_port_pair()
    with socket.socket() as s:
        s.bind(("127.0.0.1", port + 1))
        s.listen()
        with pytest.raises(RigError, match=rf"{port + 1}.*already in use"):
            Rig(tmp_path / "rig").start(2, base_port=port - 1)
    assert not (tmp_path / "rig" / "printer-01").exists()


def test_failed_start_stops_what_it_started_and_shows_the_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """printer-02 cannot bind its port: RigError with its log tail; printer-01 is stopped."""
    require_ippeveprinter()
    port = _free_port_pair()
    monkeypatch.setattr(rig_module, "_port_free", lambda port: True)  # get past the pre-check
    rig = Rig(tmp_path / "rig")
    with socket.socket() as s:
        s.bind(("127.0.0.1", port + 1))
        s.listen()
        with pytest.raises(RigError) as err:
            rig.start(2, base_port=port - 1)
    assert "printer-02" in str(err.value)
    assert "Address already in use" in str(err.value)  # from ippeveprinter's own log
    assert rig.state("printer-01") == "dead"
    assert rig.state("printer-02") == "dead"
    rig.stop()  # idempotent


def test_missing_ippeveprinter_skips_locally_but_fails_in_ci(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(rig_fixtures, "find_tool", lambda name: None)
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="cups-ipp-utils"):
        require_ippeveprinter()
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="not a skip"):
        require_ippeveprinter()


def test_command_line_start_status_count_stop(tmp_path: Path) -> None:
    """``python -m tests.rig``: the printers outlive the start command; stop ends them."""
    require_ippeveprinter()
    d = tmp_path / "cli-rig"

    def rig_cli(*args: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "tests.rig", *args],
            cwd=PROJECT_ROOT,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    try:
        out = rig_cli("start", str(d), "-n", "1")
        assert out.startswith("printer-01\tipp://127.0.0.1:")
        port = Rig(d)["printer-01"].port
        assert rig_module.probe(port)
        assert "running" in rig_cli("status", str(d))
        assert rig_cli("count", str(d)).splitlines() == ["printer-01 0", "total 0"]
        rig_cli("stop", str(d))
        assert Rig(d).state("printer-01") == "dead"
        assert not rig_module.probe(port, timeout=0.5)
    finally:
        Rig(d).stop()
