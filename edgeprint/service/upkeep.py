"""Housekeeping: held jobs past their hold TTL expire, documents past retention are deleted."""

from __future__ import annotations

import logging

from edgeprint.clock import wall_cutoff
from edgeprint.logs import log_event
from edgeprint.service.shared import Shared

#: One logger for every part of the service: the name log readers filter on (issue 28 split it).
log = logging.getLogger("edgeprint.service.jobs")


class Upkeep:
    """Housekeeping: held jobs past their hold TTL expire, documents past retention are deleted."""

    def __init__(self, shared: Shared) -> None:
        self._s = shared

    async def housekeeping(self) -> tuple[list[str], int]:
        """Expire held jobs past ``hold_ttl_s``; delete documents past retention.

        Returns (expired job ids, documents deleted).
        """
        now, run = self._s.clock(), self._s.run()  # ages on the run clock (issue 27)
        retention = self._s.config.retention
        expired = await self._s.jobs.expire_held(run - retention.hold_ttl_s, now=now)
        for job_id in expired:
            log_event(log, "job_expired", job_id=job_id)
        await self._s.audit.sweep(wall_cutoff(now, run, retention.audit_s))
        due = await self._s.jobs.retention_due(run - retention.document_retention_s)
        for job_id in due:
            self._s.spool.remove(job_id)
            if self._s.renditions is not None:
                job = await self._s.jobs.get(job_id)
                if job is not None:
                    self._s.renditions.sweep(job.document_sha256)
        if due:
            await self._s.jobs.mark_documents_deleted(due, now=now)
            log_event(log, "documents_deleted", count=len(due))
        return expired, len(due)
