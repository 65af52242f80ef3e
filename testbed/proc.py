"""Run ``edgeprint serve`` as a real child process (for kill -9 and restart tests)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from testbed.polling import TimedOut, until_sync

READY_DEADLINE_S = 20.0


class ServeProcess:
    """``python -m edgeprint serve --config PATH``; :meth:`start` waits for the ready log line."""

    def __init__(
        self,
        config_path: Path,
        log_path: Path,
        env: dict[str, str] | None = None,
        command: list[str] | None = None,
    ) -> None:
        """``command`` runs instead of ``python -m edgeprint`` (e.g. the built single file)."""
        self.config_path = config_path
        self.log_path = log_path
        self.env = env or {}
        self.command = command or [sys.executable, "-m", "edgeprint"]
        self.proc: subprocess.Popen[bytes] | None = None
        self.port = 0
        #: The ready line said it serves TLS (issue 26): :attr:`url` is https://.
        self.tls = False

    def start(self) -> Self:
        """Start and block until the JSON ``ready`` line names the bound port."""
        log = open(self.log_path, "ab")  # noqa: SIM115 - owned by the child
        offset = self.log_path.stat().st_size
        self.proc = subprocess.Popen(
            [*self.command, "serve", "--config", str(self.config_path)],
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1", **self.env},
        )
        log.close()

        def ready() -> dict[str, Any] | None:
            for line in self.log_path.read_bytes()[offset:].splitlines():
                if (rec := _json(line)).get("event") == "ready":
                    return rec
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError(f"edgeprint exited {self.proc.returncode}:\n{self.tail()}")
            return None

        try:
            rec = until_sync(ready, "edgeprint ready", timeout_s=READY_DEADLINE_S, every_s=0.02)
        except TimedOut:
            self.kill()
            raise TimeoutError(
                f"edgeprint not ready in {READY_DEADLINE_S}s:\n{self.tail()}"
            ) from None
        self.port = int(rec["port"])
        self.tls = bool(rec.get("tls"))
        return self

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}"

    def tail(self, lines: int = 30) -> str:
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def wait_exit(self, timeout_s: float = 30.0) -> int:
        """Wait for the process to end by itself (e.g. at a crash point); its exit code."""
        assert self.proc is not None
        return self.proc.wait(timeout=timeout_s)

    def kill(self) -> None:
        """SIGKILL and reap: no chance to flush or clean up."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=10)

    def terminate(self, timeout_s: float = 15.0) -> int:
        """SIGTERM and wait; returns the exit code."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=timeout_s)

    def __enter__(self) -> Self:
        """``with server.start(): …`` kills the process on leaving the block."""
        return self

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.kill()


def _json(line: bytes) -> dict[str, Any]:
    try:
        rec = json.loads(line)
    except ValueError:
        return {}
    return rec if isinstance(rec, dict) else {}
