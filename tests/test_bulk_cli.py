"""``edgeprint release|cancel|replay --filter … --limit N`` (or ``--ids``) against a real
appliance on loopback: the count asked first, the outcomes in words, usage errors."""

from __future__ import annotations

import io

import pytest

from edgeprint.cli import parser
from tests.conftest import KIOSK_TOKEN, TECH_TOKEN, Appliance
from tests.test_bulk import held
from tests.test_cli_tech import run_cli
from tests.test_resolve import dead_job


def _answer(monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(text))


async def test_release_by_filter_asks_with_the_count_then_says_what_happened(
    app: Appliance, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three of ann's HELD jobs, limit 2: the question names 2 and that more match; "y"
    releases the two oldest; each is listed in words."""
    ids = await held(app, 3, "cli-rel")
    _answer(monkeypatch, "y\n")
    code, out, err = await run_cli(
        capsys, "release", "--filter", "owner=ann,state=held", "--limit", "2", "--url", app.url,
        token=KIOSK_TOKEN,
    )  # fmt: skip
    assert (code, err) == (0, "")
    assert out.startswith(
        "release 2 job(s) (owner=ann, state=HELD) (more match: the oldest are taken)? [y/N] "
    )
    assert "release: 2 job(s): 2 released" in out
    assert f"  {ids[0]}  released, now RELEASED" in out
    assert f"  {ids[1]}  released, now RELEASED" in out
    assert "more jobs match: run it again for the next ones" in out
    states = [(await app.running.service.get(i)).state.value for i in ids]
    assert states == ["RELEASED", "RELEASED", "HELD"]


async def test_saying_no_changes_nothing(
    app: Appliance, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Anything but y/yes (here "n", then no answer at all): "nothing done", exit 1, the
    store unchanged."""
    await held(app, 2, "cli-no")
    before = app.snapshot()
    for answer in ("n\n", ""):
        _answer(monkeypatch, answer)
        code, out, _ = await run_cli(
            capsys, "cancel", "--filter", "owner=ann", "--limit", "5", "--url", app.url
        )
        assert code == 1
        assert out == "cancel 2 job(s) (owner=ann)? [y/N] nothing done\n"
    assert app.snapshot() == before


async def test_cancel_by_ids_and_replay_by_reason_with_yes(
    app: Appliance, capsys: pytest.CaptureFixture[str]
) -> None:
    """--yes asks nothing; a job already gone says so in words; replay --filter takes only
    the dead letters of that reason."""
    ids = await held(app, 2, "cli-yes")
    assert (await app.post(f"/v1/jobs/{ids[1]}/cancel")).status == 200
    code, out, _ = await run_cli(
        capsys, "cancel", "--ids", ",".join(ids), "--limit", "2", "--yes", "--url", app.url
    )
    assert code == 1  # one of the two was not acted on
    assert out.splitlines() == [
        "cancel: 2 job(s): 1 cancelled, 1 conflict",
        f"  {ids[0]}  cancelled, now CANCELLED",
        f"  {ids[1]}  not done: it had moved on, now CANCELLED",
    ]
    poison = (await dead_job(app, "cli-dead-p1", "poison"))["id"]
    other = (await dead_job(app, "cli-dead-x1", "attempts_exhausted"))["id"]
    code, out, _ = await run_cli(
        capsys, "replay", "--filter", "dead_reason=poison", "--limit", "10", "--yes",
        "--url", app.url,
    )  # fmt: skip
    assert code == 0
    assert f"  {poison}  replayed (it prints once more), now RELEASED" in out
    assert (await app.running.service.get(other)).state.value == "DEAD"


async def test_nothing_matching_is_said_and_done(
    app: Appliance, capsys: pytest.CaptureFixture[str]
) -> None:
    """A filter that matches nothing: said plainly, exit 0, no question asked."""
    await held(app, 1, "cli-none")
    before = app.snapshot()
    code, out, _ = await run_cli(
        capsys, "release", "--filter", "owner=nobody", "--limit", "5", "--url", app.url
    )
    assert (code, out) == (0, "no job to release matches owner=nobody; nothing done\n")
    assert app.snapshot() == before


async def test_exit_1_when_a_selected_job_was_not_acted_on(
    app: Appliance, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Exit 0 only when every selected job was acted on: an id of no job, a DONE job's
    conflict, a PIN job for a kiosk each exit 1, with and without --yes, nothing done."""
    ghost = "0" * 32
    [pinned] = await held(app, 1, "cli-exit-pin", release_pin="4321")
    before = app.snapshot()
    # --yes: the real call answers not-found
    code, out, _ = await run_cli(
        capsys, "cancel", "--ids", ghost, "--limit", "1", "--yes", "--url", app.url
    )
    assert code == 1
    assert out.splitlines() == [
        "cancel: 1 job(s): 1 not-found",
        f"  {ghost}  not done: no such job",
    ]
    # asked first: the dry run already says why, nothing is asked or done
    _answer(monkeypatch, "y\n")
    code, out, _ = await run_cli(capsys, "cancel", "--ids", ghost, "--limit", "1", "--url", app.url)
    assert (code, out.splitlines()[0]) == (1, "cancel: 1 job(s): 1 not-found")
    # a kiosk's cancel of a job with a release PIN: what really works, in words
    code, out, _ = await run_cli(
        capsys, "cancel", "--ids", pinned, "--limit", "1", "--yes", "--url", app.url,
        token=KIOSK_TOKEN,
    )  # fmt: skip
    assert code == 1
    said = " ".join(" ".join(out.splitlines()[1:]).split())
    assert said == (
        f"{pinned} not done: it has a release PIN: cancel it with a tech token or its PIN "
        f"(edgeprint cancel {pinned} --pin PIN), now HELD"
    )
    # a release of it: release it alone with its PIN
    code, out, _ = await run_cli(
        capsys, "release", "--ids", pinned, "--limit", "1", "--yes", "--url", app.url,
        token=KIOSK_TOKEN,
    )  # fmt: skip
    assert code == 1
    assert "it has a release PIN: release it alone with its PIN" in " ".join(out.split())
    assert app.snapshot() == before
    # the words are true: the single cancel with its PIN cancels it, with a kiosk token
    code, out, err = await run_cli(
        capsys, "cancel", pinned, "--pin", "4321", "--url", app.url, token=KIOSK_TOKEN
    )
    assert (code, out, err) == (0, f"cancelled {pinned}: now CANCELLED\n", "")
    # cancelled already: cancelling it again is a conflict (it moved on), exit 1
    code, out, _ = await run_cli(
        capsys, "cancel", "--ids", pinned, "--limit", "1", "--yes", "--url", app.url
    )
    assert code == 1
    assert f"  {pinned}  not done: it had moved on, now CANCELLED" in out


async def test_single_cancel_without_its_pin_is_refused_and_a_tech_token_needs_none(
    app: Appliance, capsys: pytest.CaptureFixture[str]
) -> None:
    [pinned] = await held(app, 1, "cli-single-pin", release_pin="4321")
    before = app.snapshot()
    code, _, err = await run_cli(capsys, "cancel", pinned, "--url", app.url, token=KIOSK_TOKEN)
    assert code == 1
    assert "403" in err
    assert "needs its release PIN" in err
    assert app.snapshot() == before
    code, out, _ = await run_cli(capsys, "cancel", pinned, "--url", app.url, token=TECH_TOKEN)
    assert (code, out) == (0, f"cancelled {pinned}: now CANCELLED\n")


def test_help_documents_the_exit_codes() -> None:
    for verb in ("release", "cancel", "replay"):
        sub = parser.parser()._subparsers._group_actions[0].choices[verb]  # type: ignore[union-attr]
        text = " ".join(sub.format_help().split())
        assert "exit status: 0 every selected job was acted on (or a filter matched none); " in text
        assert "1 some were not (no such job, moved on, a release PIN, …: each is listed)" in text


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["release", "--filter", "owner=ann"], "--limit N is required"),
        (["release", "--filter", "owner=ann", "--limit", "501"], "--limit must be 1 to 500"),
        (["release", "--limit", "5"], "release: give JOB_ID, or --filter"),
        (["cancel", "--filter", "colour=red", "--limit", "5"], "unknown filter key 'colour'"),
        (["cancel", "--filter", "owner", "--limit", "5"], "KEY=VALUE"),
        (["cancel", "--ids", "nope", "--limit", "5"], "32 lowercase hex"),
        (["cancel", "--ids", f"{'a' * 32},{'b' * 32}", "--limit", "1"], "more than --limit"),
        (["replay"], "give JOB_ID, or --filter"),
        (["replay", "a" * 32, "--filter", "owner=ann", "--limit", "1"], "give JOB_ID, or"),
        (["replay", "a" * 32, "--limit", "1"], "replays one job"),
        (["cancel"], "give JOB_ID, or --filter"),
        (["cancel", "a" * 32, "--limit", "1"], "cancels one job"),
        (["cancel", "--filter", "owner=ann", "--limit", "1", "--pin", "4321"],
         "--pin goes with one JOB_ID"),
        (["cancel", "a" * 32, "--pin", "12ab"], "4-12 digits"),
    ],
    ids=["no-limit", "limit-over", "neither", "unknown-key", "no-value", "bad-id", "too-many",
         "replay-nothing", "replay-both", "replay-limit", "cancel-nothing", "cancel-limit",
         "cancel-bulk-pin", "cancel-bad-pin"],
)  # fmt: skip
async def test_usage_errors_exit_2_and_send_nothing(
    app: Appliance, capsys: pytest.CaptureFixture[str], argv: list[str], says: str
) -> None:
    await held(app, 1, "cli-usage")
    before = app.snapshot()
    code, _, err = await run_cli(capsys, *argv, "--url", app.url)
    assert code == 2
    assert says in err
    assert app.snapshot() == before
