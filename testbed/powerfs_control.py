"""The venv side of testbed/powerfs.py: mount it, cut the power, inject disk faults, stop.

``PowerFs(base, mount)`` runs ``/usr/bin/python3 testbed/powerfs.py`` (Debian's python3
with ``python3-pyfuse3``; the project's venv has no pyfuse3) as its own process, by pid.
``cut(pids)`` SIGKILLs the given processes (the appliance), waits until they are dead,
asks the filesystem to throw away everything not durable, and mounts again on what was.
``set_mode("erofs" | "eio" | "fsync-eio" | "ok")`` injects disk faults; ``stats()`` reads
the counters. See the module docstring of testbed/powerfs.py for the durability model.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import socket
import subprocess
import tempfile
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from testbed.polling import TimedOut, until_sync

SCRIPT = Path(__file__).with_name("powerfs.py")
SYSTEM_PYTHON = "/usr/bin/python3"
MODES = ("ok", "erofs", "eio", "fsync-eio")
START_DEADLINE_S = 15.0


class PowerFsError(RuntimeError):
    """The filesystem process failed to mount, answer or stop."""


def unavailable() -> str | None:
    """Why powerfs cannot run here (None when it can): /dev/fuse, fusermount3, pyfuse3, root."""
    if not os.path.exists("/dev/fuse"):
        return "/dev/fuse is missing (modprobe fuse)"
    if shutil.which("fusermount3") is None:
        return "fusermount3 not found (apt-get install fuse3)"
    if os.geteuid() != 0:
        return "powerfs tests mount FUSE as root"
    probe = subprocess.run(
        [SYSTEM_PYTHON, "-c", "import pyfuse3, trio"], capture_output=True, check=False
    )
    if probe.returncode != 0:
        return f"{SYSTEM_PYTHON} cannot import pyfuse3 (apt-get install python3-pyfuse3)"
    return None


def is_mounted(mount: Path) -> bool:
    target = str(mount.resolve())
    with open("/proc/self/mountinfo") as f:
        return any(line.split()[4] == target for line in f)


def fsync_dir(path: Path) -> None:
    """Make the entries of ``path`` durable (what a test does before it starts cutting)."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def wait_dead(pid: int, timeout_s: float = 10.0) -> None:
    """Until ``pid`` is gone or a zombie (its descriptors closed); bounded."""

    def dead() -> bool:
        try:
            with open(f"/proc/{pid}/stat") as f:
                return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
        except (FileNotFoundError, ProcessLookupError):
            return True

    try:
        until_sync(dead, f"pid {pid} dead", timeout_s=timeout_s, every_s=0.005)
    except TimedOut:
        raise PowerFsError(f"pid {pid} still alive {timeout_s}s after SIGKILL") from None


class PowerFs:
    """One powerfs mount: ``base`` holds the backing folder, ``mount`` is where it shows."""

    def __init__(self, base: Path, mount: Path, log_path: Path | None = None) -> None:
        self.base = base
        self.mount = mount
        self.log_path = log_path or base.with_name(base.name + ".log")
        # a unix socket path must stay short (108 bytes): not under pytest's tmp_path
        self._sockdir = Path(tempfile.mkdtemp(prefix="powerfs-"))
        self.socket_path = self._sockdir / "control.sock"
        self.proc: subprocess.Popen[bytes] | None = None
        self.cuts = 0

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def start(self) -> Self:
        """Mount (the backing folder as it is: all of it durable) and wait for ready."""
        self.base.mkdir(parents=True, exist_ok=True)
        self.mount.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab")  # noqa: SIM115 - owned by the child
        self.proc = subprocess.Popen(
            [SYSTEM_PYTHON, str(SCRIPT), str(self.base), str(self.mount), str(self.socket_path)],
            stdout=subprocess.PIPE,
            stderr=log,
        )
        log.close()
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], START_DEADLINE_S)
        line = self.proc.stdout.readline() if ready else b""
        if b'"ready"' not in line:
            self._reap()
            raise PowerFsError(f"powerfs did not mount: {self.tail()}")
        return self

    def command(self, cmd: str, timeout_s: float = 60.0) -> dict[str, Any]:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(timeout_s)
            s.connect(str(self.socket_path))
            s.sendall(cmd.encode() + b"\n")
            data = b""
            while not data.endswith(b"\n"):
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
        reply: dict[str, Any] = json.loads(data)
        if not reply.get("ok"):
            raise PowerFsError(f"powerfs {cmd}: {reply}")
        return reply

    def stats(self) -> dict[str, Any]:
        return self.command("stats")

    def set_mode(self, mode: str) -> dict[str, Any]:
        """``ok``, ``erofs``, ``eio`` or ``fsync-eio`` (see testbed/powerfs.py)."""
        if mode not in MODES:
            raise ValueError(f"unknown powerfs mode {mode!r}")
        return self.command(mode)

    def cut(self, pids: Iterable[int] = ()) -> dict[str, Any]:
        """Power cut: SIGKILL ``pids``, drop all that is not durable, mount again."""
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                continue
            wait_dead(pid)
        reply = self.command("cut")
        self._reap()
        self.cuts += 1
        self.start()
        return reply

    def _reap(self, timeout_s: float = 15.0) -> None:
        """Wait for the filesystem process to exit; unmount and kill it if it does not."""
        if self.proc is None:
            return
        try:
            self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        if is_mounted(self.mount):
            subprocess.run(["fusermount3", "-u", "-z", str(self.mount)], check=False)
        self.proc = None

    def stop(self) -> None:
        """Unmount and end the process (no cut: the backing folder keeps the live state)."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            try:
                self.command("stop", timeout_s=10)
            except (OSError, PowerFsError, ValueError):
                self.proc.kill()
        self._reap()

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self._sockdir, ignore_errors=True)

    def tail(self, lines: int = 30) -> str:
        if not self.log_path.exists():
            return ""
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
