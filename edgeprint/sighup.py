"""Reload on SIGHUP (``systemctl reload edgeprint``): a running appliance reads its config
file and its certificate files again, one reload at a time, and audits each.

What a reload may change is edgeprint.reload's; applying it is the composition root's
(edgeprint.server's ``reconfigure``). Started by edgeprint.server.serve when it was given
the config file's path.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
from collections.abc import Awaitable, Callable
from pathlib import Path

from edgeprint import errors, reload, tls_runtime
from edgeprint.certificates import CertificateError
from edgeprint.config import Config, load_config
from edgeprint.logs import log_event
from edgeprint.service import Caller
from edgeprint.service.audit import AuditTrail
from edgeprint.systemd import Systemd

# The lines keep the logger they were always logged with (their JSON "logger" field).
log = logging.getLogger("edgeprint.server")


def reload_certificate(served: tls_runtime.ServedCertificate | None, config: Config) -> bool:
    """Read the certificate files again (every reload); False when the new pair is refused
    (logged with its reason; the running certificate stays)."""
    return certificate_refused(served, config) is None


def certificate_refused(served: tls_runtime.ServedCertificate | None, config: Config) -> str | None:
    """Read the certificate files again; why the new pair is refused ("file: reason", never
    key material; logged, the running certificate stays), or None when it is served."""
    if served is None or not config.server.serves_tls:
        return None
    try:
        served.reload(config.server)
    except CertificateError as exc:
        log_event(
            log,
            "tls_reload_refused",
            message=tls_runtime.refused(exc, at_start=False),
            level=logging.ERROR,
            path=str(exc.path),
            reason=exc.reason,
        )
        folder = f"{exc.path.parent}{os.sep}"  # names within the folder: the row is short
        return f"{exc.path.name}: {exc.reason.replace(folder, '')}"
    return None


class Reloads:
    """SIGHUP's handler for one running appliance: each signal starts a reload (config, then
    certificate, then the audit row), and reloads run one at a time."""

    def __init__(
        self,
        config: Config,
        path: Path,
        reconfigure: Callable[[Config], Awaitable[None]],
        audit: AuditTrail,
        served: tls_runtime.ServedCertificate | None,
        systemd: Systemd,
        status: str,
    ) -> None:
        self.config = config
        self._path = path
        self._reconfigure = reconfigure
        self._audit = audit
        self._served = served
        self._systemd = systemd
        self._status = status
        self._one_at_a_time = asyncio.Lock()
        self._tasks: set[asyncio.Task[None]] = set()

    def install(self, loop: asyncio.AbstractEventLoop) -> None:
        loop.add_signal_handler(signal.SIGHUP, self.on_hup)

    def on_hup(self) -> None:
        task = asyncio.create_task(self.reload_now(), name="reload")
        self._tasks.add(task)  # held until done (the loop keeps only weak references)
        task.add_done_callback(self._tasks.discard)

    async def reload_now(self) -> None:
        async with self._one_at_a_time:
            self._systemd.reloading()
            try:
                self.config, outcome, detail = await self._reload_config()
                refused = certificate_refused(self._served, self.config)
                if refused is not None:  # the config part still applied, if it did
                    outcome, detail = "refused", f"{detail}; certificate refused: {refused}"
                # who is ``signal`` (SIGHUP), what the config file (by name), the detail the
                # changed keys or why it was refused (a certificate's reason included)
                who = Caller("signal", "tech", kind="system")
                name = self._path.name
                await self._audit.record(who, "config-reload", "config", name, outcome, detail)
            finally:
                self._systemd.ready(self._status)

    async def _reload_config(self) -> tuple[Config, str, str]:
        """Read the file again and apply it if it is valid and changes only live keys; the
        config now in force, and the audit row's outcome and detail. A refusal is logged
        with check-config's message and changes nothing."""
        current = self.config
        try:
            new = load_config(self._path)
        except errors.ConfigError as exc:
            log_event(
                log,
                "reload_refused",
                message="config reload refused: invalid config; the running config stays",
                level=logging.ERROR,
                detail=str(exc),
            )
            return current, "refused", "invalid config"  # its message may quote values
        blocked = reload.restart_keys(current, new)
        if blocked:
            log_event(
                log,
                "reload_refused",
                message="config reload refused: these keys change only at a restart "
                "(systemctl restart edgeprint); the running config stays",
                level=logging.ERROR,
                keys=blocked,
            )
            return current, "refused", "restart keys: " + ", ".join(blocked)
        changed = reload.changed_keys(current, new)
        try:
            await self._reconfigure(new)
        except errors.StoreError as exc:  # while moving a removed printer's waiting jobs
            # The new config is in force; the move is tried again until the store takes it
            # (edgeprint.service.retirements: the removed printer's worker claims nothing new).
            log_event(
                log,
                "reload_store_failed",
                message="config reload: the store failed while moving jobs",
                level=logging.ERROR,
                error=str(exc),
            )
        log_event(log, "config_reloaded", keys=changed)
        return new, "done", ", ".join(changed) or "nothing changed"
