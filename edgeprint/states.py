"""The job state machine as data (DESIGN §2).

``TRANSITIONS`` is the single source of truth: the store derives each
conditional ``UPDATE … WHERE state IN (…)`` guard from it, and the schema's
``CHECK (state IN …)`` is tested against :data:`ALL_STATES`.
"""

from __future__ import annotations

from enum import StrEnum


class JobState(StrEnum):
    """A job's state; the string value is what the store and the API use."""

    HELD = "HELD"
    RELEASED = "RELEASED"
    PRINTING = "PRINTING"
    DONE = "DONE"
    DEAD = "DEAD"
    CANCELLED = "CANCELLED"
    EXPIRED = "EXPIRED"


class Action(StrEnum):
    """What can happen to a job; each is one conditional store write."""

    RELEASE = "release"
    CANCEL = "cancel"
    EXPIRE = "expire"
    CLAIM = "claim"
    COMPLETE = "complete"
    RETRY = "retry"
    FAIL = "fail"
    REPLAY = "replay"
    #: A technician says a DEAD ``outcome_unknown`` job did print (docs/decisions/0026).
    RESOLVE = "resolve"


S = JobState
A = Action

#: (from-state, action) → to-state. Anything absent is not allowed.
TRANSITIONS: dict[tuple[JobState, Action], JobState] = {
    (S.HELD, A.RELEASE): S.RELEASED,
    (S.HELD, A.CANCEL): S.CANCELLED,
    (S.HELD, A.EXPIRE): S.EXPIRED,
    (S.RELEASED, A.CLAIM): S.PRINTING,
    (S.RELEASED, A.CANCEL): S.CANCELLED,
    (S.PRINTING, A.COMPLETE): S.DONE,
    (S.PRINTING, A.RETRY): S.RELEASED,
    (S.PRINTING, A.FAIL): S.DEAD,
    (S.PRINTING, A.CANCEL): S.CANCELLED,
    (S.DEAD, A.REPLAY): S.RELEASED,
    (S.DEAD, A.CANCEL): S.CANCELLED,
    (S.DEAD, A.RESOLVE): S.DONE,
}

ALL_STATES: tuple[JobState, ...] = tuple(JobState)
#: States no transition leaves (DONE, CANCELLED, EXPIRED; DEAD can be replayed).
TERMINAL_STATES: frozenset[JobState] = frozenset(S) - {src for src, _ in TRANSITIONS}


def sources(action: Action) -> tuple[JobState, ...]:
    """The states from which ``action`` is allowed, in declaration order."""
    return tuple(src for (src, act) in TRANSITIONS if act is action)


def target(action: Action) -> JobState:
    """The state ``action`` leads to (every action has exactly one target)."""
    targets = {dst for (_, act), dst in TRANSITIONS.items() if act is action}
    if len(targets) != 1:  # pragma: no cover - guarded by tests/test_state_machine.py
        raise AssertionError(f"action {action} has targets {targets}")
    return next(iter(targets))
