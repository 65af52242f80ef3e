"""A real label printer for tests: LPrint (Debian package ``lprint``) driving a recorded socket.

LPrint is a PAPPL printer application: an IPP Everywhere printer that takes
PWG raster, Apple raster, PNG and JPEG — no PDF — and turns each page into the
label printer's own language (ZPL for a Zebra driver). Its device here is
``socket://127.0.0.1:9100`` in a private network namespace where a listener
records the bytes a real Zebra would have received: the ground truth. See
tests/lprint_ns.py for the namespace (LPrint 1.1 cannot be told to listen on
loopback only, so it gets a loopback of its own) and why it runs as nobody.

    rig = LPrintRig(tmp_path / "lprint")
    rig.start()
    await print_job(rig.printer_uri, data, "image/pwg-raster", unix_socket=rig.socket_path)
    rig.wait_labels(1)              # [b"...^XA...^XZ..."]
    rig.zebra("head-open")          # the Zebra answers LPrint's status queries so ("ok")
    rig.stop()

Processes are stopped by the pids the rig recorded, checked against their
command lines first; nothing is killed by name.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from testbed.rig import RigError, _pid_is, _read_int, _tail
from tests.lprint_ns import ZEBRA_FAULTS, ZEBRA_FILE
from tests.polling import eventually_sync

HERE = Path(__file__).resolve().parent
PRINTER_URI = "ipp://localhost/ipp/print"
DEFAULT_DRIVER = "zpl_4inch-203dpi-dt"
DEFAULT_MEDIA = "oe_4x3-label_4x3in"
NOBODY = 65534


class LPrintRig:
    """One LPrint server with one label printer whose device bytes are recorded under ``root``."""

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        driver: str = DEFAULT_DRIVER,
        media: str = DEFAULT_MEDIA,
        ready_timeout: float = 30.0,
    ) -> None:
        self.root = Path(root).absolute()
        self.driver = driver
        self.media = media
        self.ready_timeout = ready_timeout
        self.printer_uri = PRINTER_URI
        self._helper: subprocess.Popen[bytes] | None = None
        self.state: Path | None = None

    @staticmethod
    def missing() -> str | None:
        """Why this machine cannot run the rig, or None."""
        if shutil.which("lprint") is None:
            return "lprint not found: install the Debian package lprint"
        if shutil.which("unshare") is None:
            return "unshare not found: install the Debian package util-linux"
        if os.geteuid() != 0:
            return "the LPrint rig needs root (a private network namespace; LPrint as nobody)"
        return None

    @property
    def socket_path(self) -> str:
        return (self.root / "ready").read_text().strip()

    @property
    def log(self) -> Path:
        """LPrint's log (while it runs in its own folder; copied to the rig's folder at stop)."""
        return (self.state or self.root) / "lprint.log"

    def start(self) -> None:
        """Start LPrint in its namespace; return once the printer is added (RigError if not)."""
        why = self.missing()
        if why is not None:
            raise RigError(why)
        if self.root.exists():
            shutil.rmtree(self.root)
        self.root.mkdir(parents=True)
        # LPrint's own folder (state, spool, log, socket): short, in /tmp, for nobody.
        self.state = Path(tempfile.mkdtemp(prefix="edgeprint-lprint-"))
        os.chown(self.state, NOBODY, NOBODY)
        (self.root / "state").write_text(f"{self.state}\n")
        with open(self.root / "helper.log", "wb") as out:
            self._helper = subprocess.Popen(
                ["unshare", "--net", sys.executable, str(HERE / "lprint_ns.py"),
                 str(self.root), str(self.state), self.driver, self.media],
                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip
        (self.root / "helper.pid").write_text(f"{self._helper.pid}\n")
        deadline = time.monotonic() + self.ready_timeout
        while not (self.root / "ready").exists():
            if self._helper.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RigError(
                    f"LPrint did not start (helper {self._helper.returncode}):\n"
                    f"{_tail(self.root / 'helper.log')}\n{_tail(self.log)}"
                )
            time.sleep(0.05)

    def zebra(self, fault: str) -> None:
        """What the Zebra answers LPrint's status queries from now on: ``ok``, ``head-open``,
        ``media-out``, ``ribbon-out`` or ``paused`` (tests/lprint_ns.py ZEBRA_FAULTS). LPrint
        asks when it is asked for its printer's attributes while idle (at most once a
        second: PAPPL 1.3's ipp_get_printer_attributes)."""
        if fault not in ZEBRA_FAULTS:
            raise ValueError(f"zebra fault must be one of {', '.join(ZEBRA_FAULTS)}, not {fault!r}")
        tmp = self.root / f".{ZEBRA_FILE}.part"
        tmp.write_text(f"{fault}\n")
        tmp.rename(self.root / ZEBRA_FILE)

    def received(self) -> list[bytes]:
        """What the label printer received, one entry per connection, oldest first."""
        return [p.read_bytes() for p in sorted((self.root / "device").glob("[0-9]*.bin"))]

    def wait_received(self, n: int, timeout: float = 20.0) -> list[bytes]:
        """Wait (bounded) until ``n`` connections of any kind have closed; their bytes."""
        return self._wait(self.received, n, "connection(s)", timeout)

    def labels(self) -> list[bytes]:
        """The connections that carried label data (ZPL ``^XA``); LPrint also opens the
        device for status queries alone (``~HQES``)."""
        return [z for z in self.received() if b"^XA" in z]

    def wait_labels(self, n: int, timeout: float = 20.0) -> list[bytes]:
        """Wait (bounded) until ``n`` connections with label data have closed; their bytes."""
        return self._wait(self.labels, n, "label connection(s)", timeout)

    def _wait(
        self, look: Callable[[], list[bytes]], n: int, what: str, timeout: float
    ) -> list[bytes]:
        """``look()`` once it holds ``n`` entries (bounded by ``timeout``)."""
        got: list[bytes] = []

        def enough() -> bool:
            got[:] = look()
            return len(got) >= n

        def why() -> str:
            return f"{n} {what} at the label printer (it has {len(got)}); log:\n{_tail(self.log)}"

        eventually_sync(enough, why, timeout_s=timeout, every_s=0.05)
        return got

    def stop(self) -> None:
        """SIGTERM the helper (it stops LPrint); SIGKILL what is left, by recorded pid."""
        helper = self._helper.pid if self._helper else _read_int(self.root / "helper.pid")
        if helper is not None and _pid_is(helper, "lprint_ns.py"):
            os.kill(helper, signal.SIGTERM)
        if self._helper is not None:
            try:
                self._helper.wait(10)
            except subprocess.TimeoutExpired:
                self._helper.kill()
                self._helper.wait(5)
        server = _read_int(self.root / "lprint.pid")
        if server is not None and _pid_is(server, "lprint server"):
            with contextlib.suppress(ProcessLookupError):
                os.kill(server, signal.SIGKILL)
        if self.state is not None:  # a copy of the log stays in the rig's folder
            with contextlib.suppress(OSError):
                shutil.copyfile(self.state / "lprint.log", self.root / "lprint.log")
            shutil.rmtree(self.state, ignore_errors=True)
            self.state = None

    def __enter__(self) -> LPrintRig:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
