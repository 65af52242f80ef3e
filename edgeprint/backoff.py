"""Retry back-off: capped exponential with jitter (times in seconds)."""

from __future__ import annotations

import random


def retry_delay(attempt: int, base_s: float, cap_s: float, rng: random.Random) -> float:
    """Delay before retry number ``attempt`` (1 = first retry), in seconds.

    ``min(cap_s, base_s * 2**(attempt-1))`` scaled by a uniform factor in
    [0.5, 1.0] ("equal jitter"), so retries of many jobs spread out but never
    exceed the cap.
    """
    if attempt < 1:
        raise ValueError("attempt starts at 1")
    ceiling = min(cap_s, base_s * 2.0 ** min(attempt - 1, 60))
    return ceiling * (0.5 + 0.5 * rng.random())
