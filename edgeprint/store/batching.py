"""The group commit's queue, shared by both backends (``db.Store``, ``postgres.PostgresStore``).

Callers put a :class:`Unit` (statements that apply together or not at all) or a
:class:`Read` on a queue and wait on its future; one task per connection takes
everything queued with :func:`next_batch`, runs it the backend's way (SQLite: one
``BEGIN IMMEDIATE … COMMIT`` on the connection's thread; PostgreSQL: one pipelined
transaction) and answers every caller with :func:`answer` or :func:`fail`. Only how a
batch runs differs between the backends.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from edgeprint import errors

Params = tuple[Any, ...]


@dataclass
class Unit:
    """Several statements that must all apply or none (one caller of :meth:`write_many`)."""

    statements: list[tuple[str, Params]]
    future: asyncio.Future[list[Any]] = field(repr=False)


@dataclass
class Read:
    """One read-only statement and its caller."""

    sql: str
    params: Params
    future: asyncio.Future[Any] = field(repr=False)


_Q = TypeVar("_Q", Unit, Read)


async def enqueue(queue: asyncio.Queue[Any], item: Unit | Read) -> Any:
    """Queue ``item`` for its connection's task and wait for its answer."""
    queue.put_nowait(item)
    return await item.future


def unit(statements: Sequence[tuple[str, Params]]) -> Unit:
    return Unit(list(statements), asyncio.get_running_loop().create_future())


def read(sql: str, params: Params) -> Read:
    return Read(sql, params, asyncio.get_running_loop().create_future())


async def next_batch(queue: asyncio.Queue[_Q | None], limit: int) -> list[_Q] | None:
    """Wait for work, then take everything queued (up to ``limit``); None: stop.

    A stop marker found behind work is put back, so the work before it runs first.
    """
    first = await queue.get()
    if first is None:
        return None
    batch = [first]
    while len(batch) < limit and not queue.empty():
        item = queue.get_nowait()
        if item is None:
            queue.put_nowait(None)
            break
        batch.append(item)
    return batch


def fail(batch: Sequence[Unit | Read], err: BaseException) -> None:
    """Every caller of ``batch`` still waiting gets ``err``."""
    for w in batch:
        if not w.future.done():
            w.future.set_exception(err)


def answer(
    batch: Sequence[Unit | Read],
    results: Sequence[Any],
    own_error: Callable[[Exception], errors.StoreError],
) -> None:
    """Each caller its result, or ``own_error`` of the exception that failed its part alone.

    A caller that went away (cancelled) is skipped: its work ran all the same.
    """
    for w, res in zip(batch, results, strict=True):
        if w.future.done():
            continue
        if isinstance(res, Exception):
            w.future.set_exception(own_error(res))
        else:
            w.future.set_result(res)
