"""A private CUPS scheduler on loopback, the baseline edgeprint is compared with.

:class:`Cupsd` runs ``cupsd -f`` with its whole state in one folder and ``Listen
127.0.0.1:PORT`` only (the system CUPS is never touched); CUPS's defaults otherwise
(``DirtyCleanInterval`` 30 s unless given). Queues are raw, a class is a pool. IPP
messages go through edgeprint's own codec. Backends outlive a SIGKILLed cupsd and are
found by their ``CUPS_SERVERROOT`` environment, never by name. Needs the Debian
packages cups-daemon and cups-client.
"""

from __future__ import annotations

import contextlib
import http.client
import os
import signal
import subprocess
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from edgeprint.errors import IppParseError
from edgeprint.ipp import codec
from edgeprint.ipp.codec import IppMessage
from edgeprint.ipp.names import GroupTag, Operation, Status, Tag
from edgeprint.ipp.values import Attribute, AttributeGroup, attr
from testbed.rig import find_tool, free_ports

#: tool → Debian package that ships it.
CUPS_PACKAGES = {
    "cupsd": "cups-daemon",
    "lpadmin": "cups-client",
    "cupsenable": "cups-client",
    "cupsaccept": "cups-client",
    "lp": "cups-client",
}
READY_TIMEOUT_S = 20.0
STOP_TIMEOUT_S = 10.0
POLL_S = 0.02
COMMAND_TIMEOUT_S = 30.0


class CupsError(RuntimeError):
    """The private cupsd could not be started, configured or stopped."""


def cups_tools(names: Iterable[str] = CUPS_PACKAGES) -> dict[str, str]:
    """Paths of the CUPS tools; CupsError naming the apt packages when any is missing."""
    found: dict[str, str] = {}
    missing: list[str] = []
    for name in names:
        path = find_tool(name)
        if path is None:
            missing.append(name)
        else:
            found[name] = path
    if missing:
        pkgs = sorted({CUPS_PACKAGES.get(n, n) for n in missing})
        raise CupsError(
            f"{', '.join(missing)} not found: the CUPS baseline needs the Debian packages "
            f"cups-daemon and cups-client (apt-get install --no-install-recommends "
            f"{' '.join(pkgs)})"
        )
    return found


# --- IPP over HTTP, with edgeprint's codec --------------------------------------------

CUPS_GET_PRINTERS = 0x4002
JOB_STATES = {3: "pending", 4: "held", 5: "processing", 6: "stopped", 7: "canceled",
              8: "aborted", 9: "completed"}  # fmt: skip


def ipp_request(
    operation: int,
    printer_uri: str | None,
    attrs: Iterable[Attribute] = (),
    job_attrs: Iterable[Attribute] = (),
    data: bytes = b"",
) -> bytes:
    """An IPP/1.1 request: charset, language, ``printer-uri``, ``attrs``; a job group."""
    msg = codec.request(operation, 1, printer_uri=printer_uri, attributes=attrs, version=(1, 1))
    if job_attrs:
        msg.groups.append(AttributeGroup(GroupTag.JOB, list(job_attrs)))
    msg.data = data
    return msg.encode()


def first(msg: IppMessage, name: str) -> object:
    """The first value of ``name`` in any group of ``msg`` (None when absent)."""
    for g in msg.groups:
        a = g.get(name)
        if a is not None:
            return a.value
    return None


# --- processes ------------------------------------------------------------------------


def proc_alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    state = stat[stat.rfind(")") + 2 :][:1]
    return state not in ("Z", "X", "")


def _environ_has(pid: int, marker: bytes) -> bool:
    try:
        env = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return False
    return marker in env.split(b"\0")


class Cupsd:
    """One private cupsd whose whole state lives in ``root`` (see the module docstring)."""

    def __init__(
        self,
        root: str | os.PathLike[str],
        port: int | None = None,
        *,
        dirty_clean_interval: int | None = None,
    ) -> None:
        """``dirty_clean_interval``: cupsd.conf DirtyCleanInterval in seconds (None: CUPS's
        default, 30; 0 writes job and queue state as soon as possible)."""
        self.root = Path(root).absolute()
        self.port = port or 0
        self.dirty_clean_interval = dirty_clean_interval
        self.tools = cups_tools()
        self.proc: subprocess.Popen[bytes] | None = None
        self._configured = False

    # --- paths and addresses ---

    @property
    def etc(self) -> Path:
        return self.root / "etc"

    @property
    def spool(self) -> Path:
        return self.root / "spool"

    @property
    def log_dir(self) -> Path:
        return self.root / "log"

    @property
    def server(self) -> str:
        """``host:port`` for ``lpadmin -h`` and ``CUPS_SERVER``."""
        return f"127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def uri_class(self, name: str) -> str:
        """The ``ipp://`` printer-uri of a class (what goes inside IPP requests)."""
        return f"ipp://127.0.0.1:{self.port}/classes/{name}"

    # --- configuration ---

    def _configure(self) -> None:
        if not self.port:
            self.port = free_ports(1)[0]
        for d in (self.etc / "ppd", self.spool / "tmp", self.root / "state", self.root / "cache"):
            d.mkdir(parents=True, exist_ok=True)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        # cupsd runs backends as user lp: they must reach the spooled documents.
        self.root.chmod(0o755)
        for d in self.root.parents:
            if not d.stat().st_mode & 0o001:
                raise CupsError(
                    f"{d} is not searchable by others: cupsd's backends (user lp) could not "
                    f"read the spool under {self.root} (chmod o+x {d})"
                )
        r = self.root
        (self.etc / "cups-files.conf").write_text(
            f"ServerRoot {self.etc}\n"
            f"RequestRoot {self.spool}\n"
            f"TempDir {self.spool / 'tmp'}\n"
            f"StateDir {r / 'state'}\n"
            f"CacheDir {r / 'cache'}\n"
            "ServerBin /usr/lib/cups\n"
            "DataDir /usr/share/cups\n"
            f"AccessLog {self.log_dir / 'access_log'}\n"
            f"ErrorLog {self.log_dir / 'error_log'}\n"
            f"PageLog {self.log_dir / 'page_log'}\n"
            f"Printcap {r / 'printcap'}\n"
            "SystemGroup root\nUser lp\nGroup lp\nFileDevice No\n"
        )
        (self.etc / "cupsd.conf").write_text(
            "LogLevel info\n"
            f"Listen 127.0.0.1:{self.port}\n"
            "Browsing No\nWebInterface No\nDefaultAuthType None\n"
            "MaxJobs 0\nPreserveJobHistory Yes\n"
            + (
                f"DirtyCleanInterval {self.dirty_clean_interval}\n"
                if self.dirty_clean_interval is not None
                else ""
            )
            + "<Location />\n  Order allow,deny\n  Allow 127.0.0.1\n</Location>\n"
            "<Policy default>\n"
            "  JobPrivateAccess all\n  JobPrivateValues none\n"
            "  SubscriptionPrivateAccess all\n  SubscriptionPrivateValues none\n"
            "  <Limit All>\n    Order deny,allow\n  </Limit>\n"
            "</Policy>\n"
        )
        check = subprocess.run(
            [self.tools["cupsd"], "-t", *self._conf_args()],
            capture_output=True,
            text=True,
            timeout=COMMAND_TIMEOUT_S,
            check=False,
        )
        if check.returncode != 0:
            raise CupsError(f"cupsd rejected the generated configuration:\n{check.stderr}")
        self._configured = True

    def _conf_args(self) -> list[str]:
        return ["-c", str(self.etc / "cupsd.conf"), "-s", str(self.etc / "cups-files.conf")]

    # --- life cycle ---

    def start(self) -> Cupsd:
        """Start cupsd in the foreground (``-f``) and wait until it answers IPP."""
        if self.running():
            raise CupsError(f"cupsd already running for {self.root}")
        if not self._configured:
            self._configure()
        out = open(self.log_dir / "cupsd.out", "ab")  # noqa: SIM115 - owned by the child
        try:
            self.proc = subprocess.Popen(
                [self.tools["cupsd"], "-f", *self._conf_args()],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        finally:
            out.close()
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            if self._answers():
                return self
            if self.proc.poll() is not None:
                raise CupsError(f"cupsd exited {self.proc.returncode}:\n{self.tail()}")
            time.sleep(POLL_S)  # polling for a condition (IPP answer), bounded
        self.kill()
        raise CupsError(f"cupsd did not answer in {READY_TIMEOUT_S:g} s:\n{self.tail()}")

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def _answers(self) -> bool:
        try:
            resp = self.ipp("/", CUPS_GET_PRINTERS, None, timeout=1.0)
        except (OSError, http.client.HTTPException, CupsError, IppParseError):
            return False
        # not-found: CUPS is up but has no queues yet
        return resp.status_code in (Status.SUCCESSFUL_OK, Status.CLIENT_ERROR_NOT_FOUND)

    def ipp(
        self,
        path: str,
        operation: int,
        printer_uri: str | None,
        attrs: Iterable[Attribute] = (),
        timeout: float = 5.0,
    ) -> IppMessage:
        """A synchronous IPP request to ``path`` on this cupsd."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            body = ipp_request(operation, printer_uri, attrs)
            conn.request("POST", path, body, {"Content-Type": "application/ipp"})
            resp = conn.getresponse()
            raw = resp.read()
        finally:
            conn.close()
        if resp.status != 200:
            raise CupsError(f"cupsd answered HTTP {resp.status} to {path}")
        return codec.parse(raw)

    def children(self) -> list[int]:
        """Pids of the live processes cupsd started for this folder (backends, filters)."""
        marker = f"CUPS_SERVERROOT={self.etc}".encode()
        own = self.proc.pid if self.proc is not None else -1
        out = []
        for d in Path("/proc").iterdir():
            if d.name.isdigit() and int(d.name) != own and _environ_has(int(d.name), marker):
                out.append(int(d.name))
        return [p for p in out if proc_alive(p)]

    def kill(self) -> None:
        """SIGKILL cupsd and every backend and filter it started (a crash of the service as
        systemd handles it: the unit's whole control group goes)."""
        kids = self.children()
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        marker = f"CUPS_SERVERROOT={self.etc}".encode()
        for pid in kids:
            if _environ_has(pid, marker):  # still the same process
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        if self.proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=STOP_TIMEOUT_S)
        self._wait_gone(kids)

    def stop(self) -> None:
        """SIGTERM cupsd (it writes its state and stops its jobs), SIGKILL if it lingers;
        then SIGKILL any backend or filter still running for this folder."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.proc.send_signal(signal.SIGKILL)
                self.proc.wait(timeout=STOP_TIMEOUT_S)
        marker = f"CUPS_SERVERROOT={self.etc}".encode()
        kids = self.children()
        for pid in kids:
            if _environ_has(pid, marker):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        self._wait_gone(kids)

    def _wait_gone(self, pids: list[int]) -> None:
        deadline = time.monotonic() + STOP_TIMEOUT_S
        while any(proc_alive(p) for p in pids) and time.monotonic() < deadline:
            time.sleep(POLL_S)  # polling for a condition (processes gone), bounded

    def persist(self) -> None:
        """Restart gracefully so the queues are on disk (printers.conf, classes.conf) now,
        not ``DirtyCleanInterval`` later: a crash then finds an installed system."""
        self.stop()
        self.start()
        for conf in ("printers.conf", "classes.conf"):
            if not (self.etc / conf).is_file():
                raise CupsError(f"cupsd did not write {conf} on shutdown")

    # --- queues ---

    def _admin(self, tool: str, *args: str) -> str:
        out = subprocess.run(
            [self.tools[tool], "-h", self.server, *args],
            capture_output=True,
            text=True,
            timeout=COMMAND_TIMEOUT_S,
            check=False,
            env={**os.environ, "CUPS_SERVER": self.server},
        )
        text = "\n".join(
            line
            for line in (out.stdout + out.stderr).splitlines()
            if "Raw queues are deprecated" not in line
        )
        if out.returncode != 0:
            raise CupsError(f"{tool} {' '.join(args)} failed ({out.returncode}): {text}")
        return text

    def add_queue(self, name: str, uri: str) -> None:
        """An enabled, accepting raw queue ``name`` printing to ``uri``."""
        self._admin("lpadmin", "-p", name, "-E", "-v", uri, "-m", "raw")

    def add_class(self, name: str, queues: list[str]) -> None:
        """Class ``name`` (a pool) of ``queues``, enabled and accepting."""
        for q in queues:
            self._admin("lpadmin", "-p", q, "-c", name)
        self._admin("cupsenable", name)
        self._admin("cupsaccept", name)

    def jobs(self, which: str = "all") -> list[dict[str, Any]]:
        """Get-Jobs on the whole scheduler: name and state (text) of each job."""
        wanted = ["job-name", "job-state"]
        resp = self.ipp(
            "/",
            Operation.GET_JOBS,
            f"ipp://127.0.0.1:{self.port}/",
            [
                attr("which-jobs", Tag.KEYWORD, which),
                attr("requested-attributes", Tag.KEYWORD, *wanted),
            ],
        )
        out = []
        for g in resp.groups_of(GroupTag.JOB):
            st, name = g.get("job-state"), g.get("job-name")
            state = int(str(st.value)) if st else 0
            out.append(
                {
                    "name": None if name is None else name.value,
                    "state": JOB_STATES.get(state, str(state)),
                }
            )
        return out

    def tail(self, lines: int = 15) -> str:
        parts = []
        for name in ("error_log", "cupsd.out"):
            path = self.log_dir / name
            with contextlib.suppress(OSError):
                text = path.read_text(errors="replace").splitlines()[-lines:]
                parts.append(f"--- {name}\n" + "\n".join(text))
        return "\n".join(parts) or "(no log)"
