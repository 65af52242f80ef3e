"""The invariants, judged against the printers' own logs (what came out) after every seed.

- **I1** DONE ⇒ exactly one whole copy of that job came out, on ``printed_on``. A DONE job
  marked ``printed_unverified`` (acknowledged whole, then forgotten by its printer) claims
  less, and is judged on what it claims: the proxy did acknowledge the whole upload, told
  edgeprint nothing that shows the job stopped, and the printer did not restart before the
  job was settled; and never more than one whole copy. If such a job's paper is missing the
  printer hid it (a silent loss edgeprint could not see): counted, not a violation.
- **I2** never a second whole copy on paper (no person asks for one in these runs).
- **I3** a partial copy is never recorded as whole: a job whose paper is only partial is
  not DONE.
- **I4** at the end every accepted job is terminal, and no printer holds an empty printer
  job of edgeprint's (a Create-Job without its document blocks ippeveprinter for ever).
- **I5** no needless doubt: in a calm seed (no appliance kill, no printer restart or
  outage), a job whose one whole copy came out on a printer that answered consistently
  ends DONE — unless the printer gave no way to know (its answer to the upload was lost and
  it reports no figure of what it received or printed, or it forgets finished jobs and
  either its clock stands still, or it aborted the job after its last page under a jam,
  or it forgot the job while it showed its head open: a bare ``other``, or it aborts jobs
  and counts no impression).
- **I6** no storm: no printer got more than :data:`BOUND` requests, or new connections, in
  any one second (per appliance process: each restart may add one burst).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from edgeprint.evidence import EVIDENCE, Evidence
from edgeprint.printers.transport import MAX_REQUEST_BURST, MAX_REQUESTS_PER_S
from testbed.adversary.runner import TERMINAL, RunOutcome
from testbed.rig import Printed

#: Requests (and connections) a printer may get in one second: the client's budget (a
#: burst, then its rate), whatever the printer answers — per appliance process: a restarted
#: appliance starts with a fresh burst (counted per start in the oracle).
BOUND = int(MAX_REQUEST_BURST + MAX_REQUESTS_PER_S)
#: Requests reach the printer (and are time-stamped by the proxy) later than they leave, and
#: bunch: a quarter more than the bound is allowed for that.
BUNCHING = 1.25
INVARIANTS = ("I1", "I2", "I3", "I4", "I5", "I6")
#: A job made on a printer this long after its answer said its head was open (stopped, a
#: bare ``other``) counts as sent to a stopped printer; within it, a claim already on its
#: way when the answer came is no fault (seconds).
STOPPED_GRACE_S = 0.5


@dataclass(frozen=True)
class Violation:
    invariant: str
    job: str | None
    detail: str


@dataclass
class Verdict:
    """One seed's judgement."""

    violations: list[Violation] = field(default_factory=list)
    hidden: int = 0  # unverified DONE jobs whose paper the printer hid (a silent loss)
    undecidable: int = 0  # jobs I5 does not count: the printer gave no way to know
    done: int = 0
    unverified: int = 0
    dead: int = 0
    peak_requests: int = 0
    peak_connections: int = 0
    #: jobs made on a printer after it said (STOPPED_GRACE_S before) that its head was open
    sent_while_stopped: int = 0

    def count(self, invariant: str) -> int:
        return sum(1 for v in self.violations if v.invariant == invariant)


def _name(job_id: str) -> str:
    return f"edgeprint-{job_id}"


def _figureless(outcome: RunOutcome, printer: str) -> bool:
    """The printer reports no figure of what it received or printed."""
    knobs = outcome.scenario.knobs[printer]
    return knobs.get("impressions") in ("absent", "zero") and knobs.get("k_octets") is None


def _aborted_with_reason(outcome: RunOutcome, printer: str) -> bool:
    """The scenario made ``printer`` abort a job and leave a printer-state reason behind
    (``abort-at N REASON``: a media-jam, under which a printer may end a job). The reason
    shows until a later job completes (ippeveprinter keeps it, as a printer's jam light
    stays on); on a printer that forgets finished jobs at once, which jobs it was shown for
    depends on timing the scenario does not fix, so it covers every job there."""
    return any(
        action == "fault" and a.get("mode") == "abort-at" and a.get("printer") == printer
        and len(a.get("args", ())) > 1
        for _, action, a in outcome.scenario.events
    )  # fmt: skip


def _aborts(outcome: RunOutcome, printer: str) -> bool:
    """The scenario made ``printer`` abort a job part-way or after its last page."""
    return any(
        action == "fault" and a.get("mode") == "abort-at" and a.get("printer") == printer
        for _, action, a in outcome.scenario.events
    )


def _undecidable(outcome: RunOutcome, printer: str, name: str) -> bool:
    """The printer gave edgeprint no way to know this copy came out whole: its answer to the
    upload was lost, and it reports no figure of what it received or printed, or forgets
    the job once finished; or it forgets finished jobs while its printer-up-time cannot show
    a restart (so "forgotten" cannot be told from "lost in a restart"); or it forgot the
    job at once while it reported a jam (its own, after the last page, or one an earlier
    job left showing) before edgeprint saw a page count (a jam that ends a job part-way
    looks the same); or it forgot the job while it showed its head open (a bare ``other``,
    an error that may have ended the job: the same as a job aborted by it); or it aborts
    jobs and counts no impression: "aborted" says nothing of paper."""
    behaviours = set(outcome.scenario.behaviours[printer])
    rec = outcome.records[printer]
    lost = any(how == "lost" and rec.made.get(key) == name for key, how in rec.uploads.items())
    forgets = bool(behaviours & {"no_history", "brief_history"})
    if lost and (forgets or _figureless(outcome, printer)):
        return True
    if forgets and _aborted_with_reason(outcome, printer):
        return True
    if _aborts(outcome, printer) and outcome.scenario.knobs[printer].get("impressions") == "absent":
        return True  # it says "aborted" and counts nothing: whether the page came out is unknown
    if forgets and any(
        shown.absent_under_fault
        for key, shown in rec.shown.items()
        if rec.made.get(key) == name
    ):  # fmt: skip
        return True
    return forgets and "up_time_frozen" in behaviours


def judge(outcome: RunOutcome) -> Verdict:
    """I1–I6 for one run."""
    v = Verdict()
    scn = outcome.scenario
    out = v.violations
    for err in outcome.errors:
        out.append(Violation("I4", None, f"the run: {err}"))
    papers = {
        p: [x for x in lines if x.job_name.startswith("edgeprint-")]
        for p, lines in outcome.paper.items()
    }
    for _index, job_id in sorted(outcome.accepted.items()):
        name = _name(job_id)
        whole = [
            (p, x) for p, lines in papers.items() for x in lines if x.job_name == name and x.whole
        ]
        partial = [
            (p, x)
            for p, lines in papers.items()
            for x in lines
            if x.job_name == name and not x.whole
        ]
        job = outcome.jobs.get(job_id)
        if job is None:
            out.append(Violation("I4", job_id, "accepted (2xx) but not found at the end"))
            continue
        state = job["state"]
        if state not in TERMINAL:
            out.append(
                Violation("I4", job_id, f"still {state} at the end ({job.get('last_error')})")
            )
        if len(whole) > 1:
            out.append(
                Violation("I2", job_id, f"{len(whole)} whole copies: {[p for p, _ in whole]}")
            )
        if state == "DONE":
            v.done += 1
            settled_by = job.get("settled_by")
            proof = EVIDENCE.get(Evidence(settled_by)) if settled_by in set(Evidence) else None
            if job.get("printed_unverified"):
                v.unverified += 1
                _judge_unverified(outcome, job, whole, v)
            elif proof is not None and not proof.verified and settled_by != "person":
                out.append(Violation("I1", job_id, f"DONE settled by {settled_by}, not a proof"))
            elif [p for p, _ in whole] != [job.get("printed_on")]:
                out.append(Violation(
                    "I1", job_id,
                    f"DONE on {job.get('printed_on')} ({settled_by}), whole copies on "
                    f"{[p for p, _ in whole]}, partial on {[p for p, _ in partial]}",
                ))  # fmt: skip
            if partial and not whole:
                out.append(Violation("I3", job_id, f"DONE but only a partial copy came out "
                                                   f"({partial[0][1].out} of {partial[0][1].pages})"))  # fmt: skip
        elif state == "DEAD":
            v.dead += 1
        if scn.calm and len(whole) == 1 and state != "DONE":
            printer = whole[0][0]
            if _undecidable(outcome, printer, name):
                v.undecidable += 1
            else:
                out.append(Violation(
                    "I5", job_id,
                    f"printed whole on {printer} (answers consistent) but {state} "
                    f"{job.get('dead_reason') or ''}: {job.get('last_error')}",
                ))  # fmt: skip
    for p, names in outcome.leftovers.items():
        for n in names:
            out.append(Violation("I4", n.removeprefix("edgeprint-"), f"{p} still holds {n}"))
    for rec in outcome.records.values():
        v.sent_while_stopped += sum(
            1 for t in rec.made_while_stopped if t is not None and t > STOPPED_GRACE_S
        )
    bound = int((BOUND + MAX_REQUEST_BURST * outcome.kills) * BUNCHING)
    for p, rec in outcome.records.items():
        reqs, conns = rec.max_per_second("requests"), rec.max_per_second("connections")
        v.peak_requests = max(v.peak_requests, reqs)
        v.peak_connections = max(v.peak_connections, conns)
        if reqs > bound or conns > bound:
            out.append(Violation("I6", None, f"{p}: {reqs} requests, {conns} connections in 1 s"))
    return v


def _judge_unverified(
    outcome: RunOutcome, job: dict[str, object], whole: list[tuple[str, Printed]], v: Verdict
) -> None:
    """A DONE job edgeprint marked printed_unverified: its claim must hold; a missing paper is
    then the printer's silence (counted), not edgeprint's error."""
    job_id = str(job["id"])
    printer = str(job.get("printed_on"))
    name = _name(job_id)
    rec = outcome.records.get(printer)
    if rec is None:
        v.violations.append(Violation("I1", job_id, f"printed_unverified on unknown {printer}"))
        return
    keys = [k for k, n in rec.made.items() if n == name]
    acked = [k for k in keys if rec.uploads.get(k) == "acknowledged"]
    if not acked:
        v.violations.append(Violation("I1", job_id, f"printed_unverified but {printer} never "
                                                    "acknowledged a whole upload of it"))  # fmt: skip
        return
    key = acked[-1]
    shown = rec.shown.get(key)
    stopped = sorted(shown.states & {7, 8}) if shown is not None else []
    if stopped:
        v.violations.append(Violation("I1", job_id, f"printed_unverified but {printer} "
                                                    f"showed it in state {stopped}"))  # fmt: skip
        return
    made_at = rec.made_at.get(key)
    finished = _wall(job.get("finished_at"))
    for t in outcome.restarts.get(printer, []):
        if made_at is not None and made_at <= t and (finished is None or t <= finished):
            v.violations.append(Violation("I1", job_id, f"printed_unverified although {printer} "
                                                        "restarted before it was settled"))  # fmt: skip
            return
    if not whole:
        v.hidden += 1


def _wall(rfc3339: object) -> float | None:
    if not isinstance(rfc3339, str):
        return None
    return datetime.fromisoformat(rfc3339.replace("Z", "+00:00")).timestamp()
