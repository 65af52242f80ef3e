"""DESIGN.md reads as the code is: the functions its walks name exist, its state tables are
printed from the transition tables, it stays short, and its decision records are all linked.

The two walks of DESIGN §1 name functions as dotted paths below the package
(``service.jobs.JobService.release``): each is imported and looked up, so a rename
or a move that leaves the page behind fails here. Any ``edgeprint.x.y`` the page
mentions is checked the same way.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterable
from pathlib import Path

from edgeprint.copies import COPY_TRANSITIONS, LIVE_COPY_STATES, SETTLE, CopyAction, CopyState
from edgeprint.states import TRANSITIONS, JobState

ROOT = Path(__file__).resolve().parent.parent
DESIGN = ROOT / "docs" / "DESIGN.md"
DECISIONS = ROOT / "docs" / "decisions"
#: The page's length limit: what the system is, not how it came to be.
MAX_LINES = 700
#: The sections whose backticked dotted names must all resolve.
WALKS = ("### The release walk", "### The IPP walk")

_DOTTED = re.compile(r"`([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)`")
_PACKAGE_REF = re.compile(r"(?<![\w/.-])edgeprint(?:\.[A-Za-z_]\w*)+")
_RECORD = re.compile(r"^(\d{4})-[a-z0-9-]+\.md$")
_LINK = re.compile(r"\]\(([^)#\s]+\.md)(?:#[^)]*)?\)")
_DESIGN_ANCHOR = re.compile(r"\]\([^)#\s]*DESIGN\.md#([^)\s]+)\)")


def _design() -> str:
    return DESIGN.read_text(encoding="utf-8")


def section(text: str, heading: str) -> str:
    """The text under the heading that starts with ``heading``, up to the next heading."""
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith(heading)]
    assert len(starts) == 1, f"DESIGN.md has {len(starts)} headings starting {heading!r}"
    body: list[str] = []
    for line in lines[starts[0] + 1 :]:
        if line.startswith("#"):
            break
        body.append(line)
    return "\n".join(body)


def dotted_names(text: str) -> list[str]:
    """Every backticked dotted name (``a.b`` or longer) in ``text``, in order, once each."""
    return list(dict.fromkeys(_DOTTED.findall(text)))


def resolve(name: str) -> object:
    """The object ``name`` names below the package (a leading ``edgeprint.`` is optional):
    the longest importable module prefix, then attributes. Raises LookupError or
    AttributeError when it names nothing."""
    parts = name.split(".")
    if parts[0] == "edgeprint":
        parts = parts[1:]
    for cut in range(len(parts), 0, -1):
        module = "edgeprint." + ".".join(parts[:cut])
        try:
            found: object = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            missing = exc.name or ""
            if module == missing or module.startswith(missing + "."):
                continue  # no such module: try a shorter prefix
            raise  # the module exists and one of its own imports failed
        for attribute in parts[cut:]:
            found = getattr(found, attribute)
        return found
    raise LookupError(f"no module of edgeprint starts {name!r}")


def unresolved(names: Iterable[str]) -> list[str]:
    """The names that name nothing."""
    missing = []
    for name in names:
        try:
            resolve(name)
        except (LookupError, AttributeError):
            missing.append(name)
    return missing


def job_table() -> str:
    """The job state table as DESIGN §2 prints it, from ``states.TRANSITIONS``."""
    rows = ["| state | leaves by |", "|---|---|"]
    for state in JobState:
        leaves = [
            f"{a.value} → {dst.value}" for (src, a), dst in TRANSITIONS.items() if src is state
        ]
        rows.append(f"| {state.value} | {'; '.join(leaves) or '—'} |")
    return "\n".join(rows)


def copy_table() -> str:
    """The copy transition table as DESIGN §3 prints it, from ``copies.COPY_TRANSITIONS``:
    the two rules every live state follows, and each transition besides them."""

    def by_rule(src: CopyState, action: CopyAction, dst: CopyState) -> bool:
        if src not in LIVE_COPY_STATES:
            return False
        if action is CopyAction.CANCEL:
            return dst is CopyState.CANCELLING
        return SETTLE.get(dst) is action

    rows = ["| copy state | action | becomes |", "|---|---|---|"]
    for (src, action), dst in COPY_TRANSITIONS.items():
        if not by_rule(src, action, dst):
            rows.append(f"| {src.value} | {action.value} | {dst.value} |")
    cancel_rule = all(
        COPY_TRANSITIONS.get((s, CopyAction.CANCEL)) is CopyState.CANCELLING
        for s in LIVE_COPY_STATES
    )
    settle_rule = all(
        COPY_TRANSITIONS.get((s, action)) is settled
        for s in LIVE_COPY_STATES
        for settled, action in SETTLE.items()
    )
    if cancel_rule:
        rows.append("| any live state | cancel | cancelling |")
    if settle_rule:
        actions = ", ".join(action.value for action in SETTLE.values())
        rows.append(f"| any live state | {actions} | the state of that name |")
    return "\n".join(rows)


def records() -> dict[str, Path]:
    """The decision records by file name."""
    found = {p.name: p for p in DECISIONS.glob("*.md") if p.name != "README.md"}
    assert all(_RECORD.match(name) for name in found), sorted(found)
    return found


def anchors(text: str) -> set[str]:
    """The anchors GitHub gives the headings of ``text``."""
    found = set()
    for line in text.splitlines():
        if line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            found.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return found


def links(text: str) -> list[str]:
    """The relative ``.md`` targets of the Markdown links in ``text``."""
    return [t for t in _LINK.findall(text) if "://" not in t]


def test_the_design_page_is_short() -> None:
    """DESIGN.md describes the system in at most 700 lines; the history is in the records."""
    lines = _design().count("\n") + 1
    assert lines <= MAX_LINES, f"DESIGN.md has {lines} lines; at most {MAX_LINES}"


def test_every_function_a_walk_names_exists() -> None:
    """Each backticked dotted name in the release walk and the IPP walk imports and resolves."""
    text = _design()
    for heading in WALKS:
        names = dotted_names(section(text, heading))
        assert len(names) >= 15, f"{heading}: only {names} — is the walk still written as names?"
        assert not unresolved(names), f"{heading} names what the code no longer has"


def test_every_edgeprint_reference_on_the_page_resolves() -> None:
    """An ``edgeprint.x.y`` anywhere in DESIGN.md names a module or an object that exists."""
    refs = list(dict.fromkeys(_PACKAGE_REF.findall(_design())))
    assert not unresolved(refs)


def test_the_resolver_fails_on_a_missing_name() -> None:
    """A name planted missing — a method, an attribute of a module, a module — is reported,
    and only it: the walk check can fail."""
    planted = [
        "states.JobState.NO_SUCH_STATE",
        "dispatch.worker.no_such_function",
        "dispatch.no_such_module.run",
        "edgeprint.copies.no_such_rule",
    ]
    real = ["states.JobState.DONE", "edgeprint.copy_policy.judge", "logs.log_event"]
    assert unresolved(planted + real) == planted
    walk = "1. `logs.log_event` then `copy_policy.judge_everything`."
    assert unresolved(dotted_names(walk)) == ["copy_policy.judge_everything"]


def test_the_state_tables_are_printed_from_the_transition_tables() -> None:
    """DESIGN §2 prints ``states.TRANSITIONS`` and DESIGN §3 ``copies.COPY_TRANSITIONS``."""
    text = _design()
    assert job_table() in text, "DESIGN §2's table differs from states.TRANSITIONS:\n" + job_table()
    assert copy_table() in text, (
        "DESIGN §3's copy table differs from copies.COPY_TRANSITIONS:\n" + copy_table()
    )


def test_every_linked_decision_record_exists() -> None:
    """Every record DESIGN.md, the README, the index or another record links to is a file,
    and every section of DESIGN.md a record links to is a heading there."""
    sources = [DESIGN, ROOT / "README.md", DECISIONS / "README.md", *records().values()]
    for source in sources:
        for target in links(source.read_text(encoding="utf-8")):
            path = (source.parent / target).resolve()
            assert path.is_file(), f"{source.name} links {target}, which does not exist"
    headings = anchors(_design())
    for source in sources[2:]:
        for anchor in _DESIGN_ANCHOR.findall(source.read_text(encoding="utf-8")):
            assert anchor in headings, f"{source.name} links DESIGN.md#{anchor}: no such section"


def test_every_decision_record_is_linked_and_indexed() -> None:
    """Each record is linked from the DESIGN section it shapes (a superseded one at least
    from its successor) and listed in the index; the records are numbered 0001… in order."""
    found = records()
    numbers = sorted(int(name[:4]) for name in found)
    assert numbers == list(range(1, len(numbers) + 1)), "records are numbered without gaps"
    index = {Path(t).name for t in links((DECISIONS / "README.md").read_text(encoding="utf-8"))}
    assert set(found) <= index, f"not in docs/decisions/README.md: {sorted(set(found) - index)}"
    from_design = {Path(t).name for t in links(_design()) if t.startswith("decisions/")}
    from_records = {
        Path(t).name
        for name, path in found.items()
        for t in links(path.read_text(encoding="utf-8"))
        if Path(t).name != name
    }
    orphans = sorted(set(found) - from_design - from_records)
    assert not orphans, f"decision records linked from nowhere: {orphans}"


def test_each_record_has_a_date_and_a_status() -> None:
    """A record says when it was decided and whether it stands or what superseded it."""
    for name, path in records().items():
        text = path.read_text(encoding="utf-8")
        assert re.search(r"^- Date: \d{4}-\d{2}-\d{2}$", text, re.M), name
        status = re.search(r"^- Status: (.+)$", text, re.M)
        assert status is not None, name
        assert status.group(1) == "Accepted" or status.group(1).startswith("Superseded by ["), name
        for part in ("**Context.**", "**Decision.**", "**Consequence.**"):
            assert part in text, f"{name} lacks {part}"
