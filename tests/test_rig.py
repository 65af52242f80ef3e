"""The printer rig against real ippeveprinter processes, driven with pyipp 0.17.2
and (for the injected job-level and paper faults) edgeprint's own IppClient.

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
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from pyipp import IPP
from pyipp.enums import IppJobState, IppOperation, IppPrinterState
from pyipp.exceptions import IPPConnectionError

from edgeprint import errors
from edgeprint.evidence import (
    JOB_ABORTED,
    JOB_CANCELED,
    JOB_COMPLETED,
    JOB_PROCESSING,
    JOB_TERMINAL,
    PrinterJob,
)
from edgeprint.printers.ipp import IppClient, PrinterStatus
from testbed import rig as rig_module
from testbed.pdfs import make_pages_pdf, make_pdf
from testbed.rig import Rig, RigError, fault_line
from tests import rig_fixtures
from tests.polling import eventually
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

    async def state() -> IppJobState | None:
        resp = await ipp.execute(
            IppOperation.GET_JOB_ATTRIBUTES,
            {"operation-attributes-tag": {"job-id": job_id, "requested-attributes": ["job-state"]}},
        )
        now = IppJobState(resp["jobs"][0]["job-state"])
        return now if now in states else None

    return await eventually(state, f"job {job_id} in {states}", timeout_s=within)


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


async def test_lean_engine_writes_the_full_engines_ground_truth_line(tmp_path: Path) -> None:
    """The lean print engine logs what the full one logs: id, name, user, pages, copies, bytes."""
    require_ippeveprinter()
    pdf = make_pages_pdf(3)
    lines = {}
    for engine in ("full", "lean"):
        with Rig(tmp_path / engine, engine=engine) as rig:
            rig.start(1)
            async with IPP(rig["printer-01"].uri, request_timeout=5) as ipp:
                job_id = await print_job(ipp, "tab\there", pdf)
                assert await wait_job_state(ipp, job_id, TERMINAL) == IppJobState.COMPLETED
            (line,) = rig.printed("printer-01")
            lines[engine] = (line.job_id, line.job_name, line.user, line.pages, line.copies,
                             line.bytes)  # fmt: skip
    assert lines["lean"] == lines["full"] == (job_id, "tab here", "rig-test", 3, 1, len(pdf))


def test_lean_engine_refuses_a_speed(tmp_path: Path) -> None:
    """The lean engine prints in no time, so a rig asking it for a speed is refused."""
    with pytest.raises(ValueError, match="lean engine prints in no time"):
        Rig(tmp_path / "rig", engine="lean", seconds_per_page=0.5)
    with pytest.raises(ValueError, match="engine must be one of"):
        Rig(tmp_path / "rig", engine="fast")


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
    """``python -m testbed.rig``: the printers outlive the start command; stop ends them."""
    require_ippeveprinter()
    d = tmp_path / "cli-rig"

    def rig_cli(*args: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "testbed.rig", *args],
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


# --- job-level faults and paper, as edgeprint's own IPP client sees them ---------------
#
# These use edgeprint.printers.ipp.IppClient (what the dispatcher uses): job-state,
# job-state-reasons and job-state-message of PrinterJob, printer-state and
# printer-state-reasons (without "none") of PrinterStatus.

IDLE, PROCESSING = 3, 4  # printer-state


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


def client(rig: Rig, name: str, http: aiohttp.ClientSession) -> IppClient:
    return IppClient(rig[name].uri, http, request_timeout_s=2.0, upload_timeout_s=5.0)


async def send(c: IppClient, job_name: str) -> int:
    made = await c.print_job(job_name, "rig-test", make_pdf(job_name), "application/pdf")
    return made.job_id


async def job(c: IppClient, job_id: int) -> PrinterJob:
    found = await c.get_job_attributes(job_id)
    assert found is not None, f"the printer does not know job {job_id}"
    return found


async def wait_job(
    c: IppClient, job_id: int, states: frozenset[int] | set[int], within: float = 10.0
) -> PrinterJob:
    """Poll Get-Job-Attributes until job-state is one of ``states`` (bounded)."""

    async def found() -> PrinterJob | None:
        j = await job(c, job_id)
        return j if j.state in states else None

    return await eventually(found, f"job {job_id} in {states}", timeout_s=within)


async def wait_printer(
    c: IppClient, reason: str, within: float = 10.0, *, state: int | None = None
) -> PrinterStatus:
    """Poll Get-Printer-Attributes until ``reason`` is in printer-state-reasons (bounded)."""

    async def status() -> PrinterStatus | None:
        st = await c.get_printer_attributes()
        return st if reason in st.reasons and (state is None or st.state == state) else None

    return await eventually(status, f"{reason} (state {state})", timeout_s=within)


async def stays_processing(c: IppClient, job_id: int, seconds: float) -> None:
    """Watch the job for ``seconds``: it must be processing at every look."""
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        j = await job(c, job_id)
        assert (j.state, j.reasons) == (JOB_PROCESSING, ("job-printing",)), j
        await asyncio.sleep(0.05)


async def assert_unreachable(uri: str) -> None:
    """A fresh connection (no pooled keep-alive socket) is refused: the printer is gone."""
    async with aiohttp.ClientSession() as fresh:
        with pytest.raises(errors.PrinterUnreachable):
            await IppClient(uri, fresh, request_timeout_s=2.0).get_printer_attributes()


def names(rig: Rig, name: str) -> list[str]:
    return [x.job_name for x in rig.printed(name)]


@pytest.mark.parametrize(
    ("args", "kwargs", "line"),
    [
        (("hold", "media-jam"), {}, "hold media-jam"),
        (("hold", "media-jam,cover-open"), {}, "hold media-jam,cover-open"),
        (("abort",), {"once": True}, "once abort"),
        (
            ("abort", "toner-empty"),
            {"match": "edgeprint-abc"},
            "match=edgeprint-abc abort toner-empty",
        ),
        (("slow", "1.50"), {"once": True, "match": "x"}, "once match=x slow 1.5"),
        (("slow", "0"), {}, "slow 0"),
        (("die-before",), {}, "die-before"),
        (("die-before", "2"), {}, "die-before 2"),
        (("die-after",), {"once": True}, "once die-after"),
    ],
)
def test_fault_line_format(args: tuple[str, ...], kwargs: dict[str, Any], line: str) -> None:
    assert fault_line(*args, **kwargs) == line


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        (("jam",), {}),  # unknown mode
        (("hold",), {}),  # hold needs a reason
        (("hold", "paper-jam"), {}),  # not a reason ippeveprinter knows
        (("abort", "media-jam", "extra"), {}),
        (("slow",), {}),
        (("slow", "soon"), {}),
        (("slow", "-1"), {}),
        (("die-after", "now"), {}),
        (("die-after", "1", "2"), {}),
        (("slow", "inf"), {}),
        (("abort",), {"match": ""}),
        (("abort",), {"match": "two words"}),
        (("abort",), {"match": 'a"b'}),
    ],
)
def test_fault_line_refuses_what_the_print_command_would_not_understand(
    args: tuple[str, ...], kwargs: dict[str, Any]
) -> None:
    with pytest.raises(ValueError):  # noqa: PT011 - any ValueError; the wording is no contract
        fault_line(*args, **kwargs)


async def test_abort_fault_aborts_every_job_and_prints_nothing(
    printers: Rig, http: aiohttp.ClientSession
) -> None:
    """abort REASON: aborted-by-system with the fault's message, REASON-report left on
    the printer, nothing printed; the next job that prints clears REASON."""
    c = client(printers, "printer-01", http)
    printers.fault("printer-01", "abort", "media-jam")
    for n in (1, 2):  # without once, every job is hit
        j = await wait_job(c, await send(c, f"abort-{n} {marker()}"), JOB_TERMINAL)
        assert (j.state, j.reasons) == (JOB_ABORTED, ("aborted-by-system",))
        assert j.message == "job aborted by injected fault (media-jam)"
    st = await c.get_printer_attributes()
    assert (st.state, st.reasons) == (IDLE, ("media-jam-report",))
    assert printers.printed("printer-01") == []
    assert printers.received("printer-01") == 2  # they did reach the printer
    assert printers.current_fault("printer-01") == "abort media-jam"

    printers.clear_fault("printer-01")
    ok = f"after-abort {marker()}"
    j = await wait_job(c, await send(c, ok), JOB_TERMINAL)
    assert (j.state, j.reasons) == (JOB_COMPLETED, ("job-completed-successfully",))
    assert (await c.get_printer_attributes()).reasons == ()
    assert names(printers, "printer-01") == [ok]


async def test_hold_fault_keeps_the_job_processing_until_cleared(
    printers: Rig, http: aiohttp.ClientSession
) -> None:
    """hold REASON: printer processing with REASON-warning, job processing (job-printing),
    the printer busy for other jobs; after clear_fault the job completes and prints once."""
    c = client(printers, "printer-01", http)
    printers.fault("printer-01", "hold", "media-jam")
    held = f"held {marker()}"
    job_id = await send(c, held)
    st = await wait_printer(c, "media-jam-warning")
    assert (st.state, st.reasons) == (PROCESSING, ("media-jam-warning",))
    await stays_processing(c, job_id, 0.5)
    with pytest.raises(errors.PrinterBusy):  # ippeveprinter has no queue
        await send(c, f"second {marker()}")
    assert printers.printed("printer-01") == []

    printers.clear_fault("printer-01")
    j = await wait_job(c, job_id, JOB_TERMINAL)
    assert j.state == JOB_COMPLETED
    st = await c.get_printer_attributes()
    assert (st.state, st.reasons) == (IDLE, ())
    assert names(printers, "printer-01") == [held]


async def test_job_canceled_during_hold_ends_canceled_and_unprinted_once_released(
    printers: Rig, http: aiohttp.ClientSession
) -> None:
    c = client(printers, "printer-01", http)
    printers.fault("printer-01", "hold", "cover-open")
    job_id = await send(c, f"cancel-me {marker()}")
    await wait_printer(c, "cover-open-warning")
    assert await c.cancel_job(job_id) is True
    j = await job(c, job_id)  # Cancel-Job answered OK, but the jammed printer cannot stop
    assert (j.state, j.reasons) == (JOB_PROCESSING, ("processing-to-stop-point",))
    printers.clear_fault("printer-01")
    assert (await wait_job(c, job_id, JOB_TERMINAL)).state == JOB_CANCELED
    assert printers.printed("printer-01") == []


async def test_slow_fault_adds_seconds_to_the_job(
    printers: Rig, http: aiohttp.ClientSession
) -> None:
    c = client(printers, "printer-01", http)
    printers.fault("printer-01", "slow", "0.6", once=True)
    started = time.monotonic()
    job_id = await send(c, f"slow {marker()}")
    await wait_job(c, job_id, {JOB_PROCESSING})
    assert (await wait_job(c, job_id, JOB_TERMINAL)).state == JOB_COMPLETED
    assert time.monotonic() - started >= 0.6
    assert len(printers.printed("printer-01")) == 1


async def test_once_fault_hits_only_the_next_job(
    printers: Rig, http: aiohttp.ClientSession
) -> None:
    c = client(printers, "printer-01", http)
    printers.fault("printer-01", "abort", once=True)
    first, second = f"first {marker()}", f"second {marker()}"
    assert (await wait_job(c, await send(c, first), JOB_TERMINAL)).state == JOB_ABORTED
    assert printers.current_fault("printer-01") is None  # used up
    assert (await wait_job(c, await send(c, second), JOB_TERMINAL)).state == JOB_COMPLETED
    assert names(printers, "printer-01") == [second]
    assert (await c.get_printer_attributes()).reasons == ()  # abort without REASON


async def test_match_fault_poisons_one_job_name_on_every_printer(
    printers: Rig, http: aiohttp.ClientSession
) -> None:
    """abort match=ID on every printer: the job whose name holds ID fails wherever it
    goes (a poison job); other jobs print on the same printers meanwhile."""
    poison_id = uuid.uuid4().hex
    for p in printers:
        printers.fault(p.name, "abort", match=poison_id)
    for p in printers:
        c = client(printers, p.name, http)
        before, after = f"edgeprint-{uuid.uuid4().hex}", f"edgeprint-{uuid.uuid4().hex}"
        assert (await wait_job(c, await send(c, before), JOB_TERMINAL)).state == JOB_COMPLETED
        j = await wait_job(c, await send(c, f"edgeprint-{poison_id}"), JOB_TERMINAL)
        assert (j.state, j.reasons) == (JOB_ABORTED, ("aborted-by-system",))
        assert (await wait_job(c, await send(c, after), JOB_TERMINAL)).state == JOB_COMPLETED
        assert names(printers, p.name) == [before, after]
        assert printers.current_fault(p.name) == f"match={poison_id} abort"  # stays


async def test_once_match_fault_waits_for_a_matching_job(
    printers: Rig, http: aiohttp.ClientSession
) -> None:
    """Jobs that do not match print and do not use up a ``once`` fault."""
    c = client(printers, "printer-02", http)
    printers.fault("printer-02", "abort", once=True, match="poison")
    other, poison, again = f"badge {marker()}", f"poison {marker()}", f"poison {marker()}"
    assert (await wait_job(c, await send(c, other), JOB_TERMINAL)).state == JOB_COMPLETED
    assert printers.current_fault("printer-02") == "once match=poison abort"
    assert (await wait_job(c, await send(c, poison), JOB_TERMINAL)).state == JOB_ABORTED
    assert printers.current_fault("printer-02") is None
    assert (await wait_job(c, await send(c, again), JOB_TERMINAL)).state == JOB_COMPLETED
    assert names(printers, "printer-02") == [other, again]


@pytest.mark.slow
async def test_die_after_prints_then_kills_the_printer(
    printers: Rig, http: aiohttp.ClientSession
) -> None:
    """die-after: the paper came out (prints.log, once) but the printer died before it
    reported the job completed; after a restart it knows nothing about the job."""
    p = printers["printer-01"]
    c = client(printers, "printer-01", http)
    printers.fault("printer-01", "die-after", once=True)
    name = f"edgeprint-{uuid.uuid4().hex}"
    job_id = await send(c, name)
    printers.wait_state("printer-01", "dead", timeout=10)
    assert not rig_module._pid_is(p.pid, "ippeveprinter")
    await assert_unreachable(p.uri)
    assert names(printers, "printer-01") == [name]
    assert printers.current_fault("printer-01") is None

    printers.restart("printer-01")
    assert (await c.get_jobs())[0] == []  # outcome unknown to the printer: only prints.log knows
    assert await c.get_job_attributes(job_id) is None
    assert names(printers, "printer-01") == [name]  # still once


@pytest.mark.slow
async def test_die_before_kills_the_printer_and_prints_nothing(
    printers: Rig, http: aiohttp.ClientSession
) -> None:
    """die-before: the printer process is SIGKILLed while the job is processing and
    nothing is printed; without once the fault survives a restart and strikes again."""
    c = client(printers, "printer-02", http)
    printers.fault("printer-02", "die-before")
    for _ in range(2):
        await send(c, f"edgeprint-{uuid.uuid4().hex}")
        printers.wait_state("printer-02", "dead", timeout=10)
        await assert_unreachable(printers["printer-02"].uri)
        printers.restart("printer-02")
    assert printers.printed("printer-02") == []
    assert printers.received("printer-02") == 2

    printers.clear_fault("printer-02")
    ok = f"edgeprint-{uuid.uuid4().hex}"
    assert (await wait_job(c, await send(c, ok), JOB_TERMINAL)).state == JOB_COMPLETED
    assert names(printers, "printer-02") == [ok]
    assert printers.state("printer-01") == "running"  # the other printer never noticed


async def test_media_empty_holds_jobs_until_paper_is_loaded(
    printers: Rig, http: aiohttp.ClientSession
) -> None:
    """Paper out: media-empty-report while idle; a job sent then stays processing with
    media-empty-warning and media-needed-warning, unprinted, until paper is loaded."""
    c = client(printers, "printer-01", http)
    printers.media("printer-01", "empty")
    st = await c.get_printer_attributes()
    assert (st.state, st.reasons) == (IDLE, ("media-empty-report",))
    name = f"no-paper {marker()}"
    job_id = await send(c, name)
    st = await wait_printer(c, "media-needed-warning")
    assert (st.state, st.reasons) == (PROCESSING, ("media-empty-warning", "media-needed-warning"))
    await stays_processing(c, job_id, 0.5)
    assert printers.printed("printer-01") == []
    assert (await client(printers, "printer-02", http).get_printer_attributes()).reasons == ()

    printers.media("printer-01", "loaded")
    assert (await wait_job(c, job_id, JOB_TERMINAL)).state == JOB_COMPLETED
    st = await c.get_printer_attributes()
    assert (st.state, st.reasons) == (IDLE, ())
    assert names(printers, "printer-01") == [name]


async def test_media_low_is_reported_and_does_not_stop_printing(
    printers: Rig, http: aiohttp.ClientSession
) -> None:
    c = client(printers, "printer-02", http)
    printers.media("printer-02", "low")
    assert (await c.get_printer_attributes()).reasons == ("media-low-report",)
    assert (await wait_job(c, await send(c, marker()), JOB_TERMINAL)).state == JOB_COMPLETED
    assert len(printers.printed("printer-02")) == 1
    printers.media("printer-02", "loaded")
    assert (await c.get_printer_attributes()).reasons == ()


def test_command_line_fault_clear_fault_and_media(tmp_path: Path) -> None:
    """``python -m testbed.rig fault|clear-fault|media``, and FAULT in ``status``."""
    require_ippeveprinter()
    d = tmp_path / "cli-rig"

    def rig_cli(*args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [sys.executable, "-m", "testbed.rig", *args],
            cwd=PROJECT_ROOT,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert (done.returncode == 0) == ok, done
        return done

    rig = Rig(d)
    rig.start(1)
    try:
        out = rig_cli(
            "fault", str(d), "printer-01", "--once", "--match", "poison", "abort", "media-jam"
        )
        assert out.stdout == "printer-01 fault: once match=poison abort media-jam\n"
        assert rig.current_fault("printer-01") == "once match=poison abort media-jam"
        assert (
            rig_cli("status", str(d))
            .stdout.splitlines()[1]
            .endswith("  once match=poison abort media-jam")
        )
        bad = rig_cli("fault", str(d), "printer-01", "hold", "paper-jam", ok=False)
        assert "unknown printer-state-reasons ['paper-jam']" in bad.stderr
        assert rig.current_fault("printer-01") == "once match=poison abort media-jam"  # kept
        rig_cli("clear-fault", str(d), "printer-01")
        assert rig.current_fault("printer-01") is None
        assert rig_cli("status", str(d)).stdout.splitlines()[1].endswith("  -")

        async def reasons() -> tuple[str, ...]:
            async with aiohttp.ClientSession() as session:
                st = await client(rig, "printer-01", session).get_printer_attributes()
            return st.reasons

        assert (
            rig_cli("media", str(d), "printer-01", "empty").stdout == "printer-01 media empty: ok\n"
        )
        assert asyncio.run(reasons()) == ("media-empty-report",)
        rig_cli("media", str(d), "printer-01", "loaded")
        assert asyncio.run(reasons()) == ()
    finally:
        rig.stop()
