"""The one Backoff: capped doubling by attempt (with equal jitter) and as a running delay."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from edgeprint.backoff import Backoff

bases = st.floats(min_value=0.001, max_value=100.0)


@given(
    bases, st.floats(min_value=1.0, max_value=1000.0), st.integers(1, 200), st.integers(0, 2**32)
)
def test_a_jittered_delay_lies_between_half_and_all_of_its_capped_ceiling(
    base: float, factor: float, attempt: int, seed: int
) -> None:
    backoff = Backoff(base, base * factor)
    ceiling = backoff.ceiling(attempt)
    assert ceiling == min(base * factor, base * 2.0 ** min(attempt - 1, 60))
    delay = backoff.for_attempt(attempt, random.Random(seed))
    assert ceiling / 2 <= delay <= ceiling <= backoff.cap_s


@given(bases, st.integers(1, 12), st.integers(0, 40))
def test_a_running_delay_doubles_to_the_cap_and_a_success_resets_it(
    base: float, doublings: int, failures: int
) -> None:
    backoff = Backoff(base, base * 2**doublings)
    waits = [backoff.failed() for _ in range(failures)]
    assert waits == [min(base * 2**i, base * 2**doublings) for i in range(failures)]
    backoff.reset()
    assert backoff.failed() == base


def test_a_backoff_refuses_a_base_above_its_cap_and_attempt_zero() -> None:
    with pytest.raises(ValueError, match=r"0 < base \(2\) <= cap \(1\)"):
        Backoff(2, 1)
    with pytest.raises(ValueError, match="attempt starts at 1"):
        Backoff(1, 2).ceiling(0)
