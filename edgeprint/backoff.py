"""Back-off: a delay that doubles after each failure, up to a cap (times in seconds).

One :class:`Backoff` serves both ways the appliance waits: by attempt number (a job's
retry, a webhook's next delivery: :meth:`Backoff.for_attempt`, with equal jitter), and
as a running delay that doubles on each failure and returns to the base on success (a
reconnect, a probe, a follow-up poll: :meth:`Backoff.failed` / :meth:`Backoff.reset`).
"""

from __future__ import annotations

import random
from collections.abc import Callable


class Backoff:
    """Capped exponential back-off: ``min(cap_s, base_s · 2^(n−1))`` for failure ``n``."""

    __slots__ = ("base_s", "cap_s", "delay_s")

    def __init__(self, base_s: float, cap_s: float) -> None:
        if not 0 < base_s <= cap_s:
            raise ValueError(f"back-off needs 0 < base ({base_s}) <= cap ({cap_s})")
        self.base_s = base_s
        self.cap_s = cap_s
        #: The delay the next :meth:`failed` returns.
        self.delay_s = base_s

    def ceiling(self, attempt: int) -> float:
        """The delay before retry number ``attempt`` (1 = first retry), without jitter."""
        if attempt < 1:
            raise ValueError("attempt starts at 1")
        return min(self.cap_s, self.base_s * 2.0 ** min(attempt - 1, 60))

    def for_attempt(
        self, attempt: int, rng: random.Random | Callable[[], float] | None = None
    ) -> float:
        """:meth:`ceiling` scaled by a uniform factor in [0.5, 1.0] ("equal jitter"), so the
        retries of many jobs spread out but never exceed the cap; no jitter without ``rng``."""
        ceiling = self.ceiling(attempt)
        if rng is None:
            return ceiling
        draw = rng.random() if isinstance(rng, random.Random) else rng()
        return ceiling * (0.5 + 0.5 * draw)

    def failed(self) -> float:
        """The delay to wait after this failure; the next one is twice as long (capped)."""
        delay = self.delay_s
        self.delay_s = min(self.delay_s * 2, self.cap_s)
        return delay

    def reset(self) -> None:
        """A success: the next failure waits the base delay again."""
        self.delay_s = self.base_s
