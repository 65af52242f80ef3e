"""A small IPP client for tests of edgeprint's IPP queues (our codec over aiohttp)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import aiohttp

from edgeprint.ipp import codec
from edgeprint.ipp.codec import IppMessage
from edgeprint.ipp.names import GroupTag, Operation, Tag
from edgeprint.ipp.values import Attribute, AttributeGroup, attr

_ids = itertools.count(1)


@dataclass
class IppQueue:
    """One queue of an appliance: ``ipp://host:port/ipp/print/<name>``."""

    http: aiohttp.ClientSession
    url: str  # http://host:port
    name: str
    user: str = "ann"

    @property
    def uri(self) -> str:
        return f"{self.url.replace('http://', 'ipp://', 1)}/ipp/print/{self.name}"

    def request(
        self,
        operation: int,
        *attributes: Attribute,
        job: Sequence[Attribute] = (),
        data: bytes = b"",
    ) -> IppMessage:
        """A request with charset, language, printer-uri, requesting-user-name and ``attributes``."""
        message = codec.request(
            operation,
            next(_ids),
            printer_uri=self.uri,
            attributes=[attr("requesting-user-name", Tag.NAME, self.user), *attributes],
            data=data,
        )
        if job:
            message.groups.append(AttributeGroup(GroupTag.JOB, list(job)))
        return message

    async def post(
        self, body: bytes, *, path: str | None = None, **headers: str
    ) -> tuple[int, bytes]:
        """POST raw bytes to the queue (or to ``path``, e.g. a job-uri's); (HTTP status, body)."""
        async with self.http.post(
            f"{self.url}{path or f'/ipp/print/{self.name}'}",
            data=body,
            headers={"Content-Type": "application/ipp", **headers},
        ) as r:
            return r.status, await r.read()

    async def send(self, message: IppMessage, **headers: str) -> IppMessage:
        """Send ``message``; the parsed answer (HTTP 200 required)."""
        status, body = await self.post(message.encode(), **headers)
        assert status == 200, (status, body[:200])
        answer = codec.parse(body)
        assert answer.request_id == message.request_id
        return answer

    async def print_job(
        self, pdf: bytes, *attributes: Attribute, job: Sequence[Attribute] = ()
    ) -> IppMessage:
        return await self.send(
            self.request(
                Operation.PRINT_JOB,
                attr("document-format", Tag.MIME_MEDIA_TYPE, "application/pdf"),
                *attributes,
                job=job,
                data=pdf,
            )
        )

    async def job_attributes(self, job_id: int) -> IppMessage:
        return await self.send(
            self.request(Operation.GET_JOB_ATTRIBUTES, attr("job-id", Tag.INTEGER, job_id))
        )


def status_message(answer: IppMessage) -> str:
    value = answer.value(GroupTag.OPERATION, "status-message")
    return value if isinstance(value, str) else ""
