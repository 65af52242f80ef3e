"""The release credentials' queries (issue 24) on both backends: the lookup key made once,
one namespace across owners and kinds, a set that fails stores nothing, and the per-address
count of tries that cannot be outrun."""

from __future__ import annotations

import asyncio

import pytest

from edgeprint import errors
from edgeprint.store.interface import Store
from edgeprint.store.owners import Credential, Owners


async def test_the_lookup_key_is_made_once(store: Store) -> None:
    owners = Owners(store)
    keys = await asyncio.gather(*(owners.lookup_key(f"{i:064x}", now=1.0) for i in range(5)))
    assert len(set(keys)) == 1
    assert await owners.lookup_key("f" * 64, now=2.0) == keys[0]


async def test_one_namespace_and_all_or_none(store: Store) -> None:
    owners = Owners(store)
    await owners.put("ann", {"code": ("L1", "h1"), "card": ("L2", "h2")}, now=1.0, actor="t")
    assert await owners.find("L1") == Credential("ann", "code", "h1")
    assert await owners.kinds("ann") == ["card", "code"]
    assert await owners.held_by_others("bob", {"card": "L1"})
    assert await owners.held_by_others("ann", {"card": "L1"})  # her own code, as her card
    assert not await owners.held_by_others("ann", {"code": "L1"})  # the same, kept
    # bob's code is new, his card is ann's: the unique lookup refuses, nothing of it stays
    with pytest.raises(errors.StoreError):
        await owners.put("bob", {"code": ("L3", "h3"), "card": ("L2", "h4")}, now=2.0, actor="t")
    assert await owners.kinds("bob") == []
    assert await owners.find("L3") is None
    # replacing a kind frees its old value
    await owners.put("ann", {"code": ("L4", "h5")}, now=3.0, actor="t")
    assert await owners.find("L1") is None
    assert await owners.remove("ann") == 2
    assert await owners.remove("ann") == 0


async def test_tries_per_address_lock_at_the_limit(store: Store) -> None:
    owners = Owners(store)
    taken = await asyncio.gather(
        *(owners.take_attempt("10.0.0.9", now=100.0, max_failures=3, lockout_s=60) for _ in
          range(10))
    )  # fmt: skip
    counted = sorted(t for t in taken if t is not None)
    assert counted == [(1, None), (2, None), (3, 160.0)]
    assert await owners.locked_until("10.0.0.9") == 160.0
    # another address has its own count; the lock ends by itself, then counts afresh
    assert await owners.take_attempt("10.0.0.8", now=100.0, max_failures=3, lockout_s=60) == (
        1, None,
    )  # fmt: skip
    assert await owners.take_attempt("10.0.0.9", now=161.0, max_failures=3, lockout_s=60) == (
        1, None,
    )  # fmt: skip
    assert await owners.take_attempt("10.0.0.7", now=5.0, max_failures=1, lockout_s=10) == (
        1, 15.0,
    )  # fmt: skip


async def test_a_right_try_gives_back_only_itself(store: Store) -> None:
    owners = Owners(store)

    async def take(now: float) -> tuple[int, float | None] | None:
        return await owners.take_attempt("10.0.0.9", now=now, max_failures=3, lockout_s=60)

    assert await take(100.0) == (1, None)  # wrong
    right = await take(101.0)
    assert right == (2, None)
    await owners.give_back("10.0.0.9", right[1])
    assert await owners.failures("10.0.0.9") == 1  # the wrong one stays
    assert await take(102.0) == (2, None)  # wrong
    right = await take(103.0)  # the third try locks, and it is right: it lifts its own lock
    assert right == (3, 163.0)
    await owners.give_back("10.0.0.9", right[1])
    assert (await owners.failures("10.0.0.9"), await owners.locked_until("10.0.0.9")) == (2, None)
    assert await take(104.0) == (3, 164.0)  # the next wrong one locks
    # a right try does not lift a lock another try set (it was refused anyway)
    assert await take(105.0) is None
    await owners.give_back("10.0.0.9", None)
    assert await owners.locked_until("10.0.0.9") == 164.0


async def test_wrong_tries_age_out(store: Store) -> None:
    owners = Owners(store)

    async def take(now: float) -> tuple[int, float | None] | None:
        return await owners.take_attempt("10.0.0.9", now=now, max_failures=3, lockout_s=60)

    assert await take(100.0) == (1, None)
    assert await take(130.0) == (2, None)
    # a right try meanwhile does not keep the wrong ones young
    right = await take(150.0)
    assert right == (3, 210.0)
    await owners.give_back("10.0.0.9", right[1])
    assert await take(189.0) == (3, 249.0)  # 59 s after the last wrong one: still counted
    assert await take(200.0) is None
    assert await take(249.5) == (1, None)  # the lock ended: afresh
    assert await take(309.5) == (1, None)  # 60 s after the last wrong one: afresh
