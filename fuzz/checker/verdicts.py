"""What the engine and its drivers saw, as the promise it breaks: every violation that is not one
request's answer against the reference's expectation (invariants.check_prompt, check_served) is
built here, from what was observed (a dead server, an answer that never came, a cancel group's
answers, requests of one sequence sent at once, the statistics). The engine and the rules observe
and record; they ask here what that means, and nothing outside fuzz/checker/ builds a violation
(tests/test_invariants.py holds the tree to that).
"""
from __future__ import annotations

from .invariants import InvariantViolation, NamedDivergence, not_answered
from ..spec import same_sum
from ..values import Outcome, Request


# What a death after cancelled streams says of a decoupled model that sends its final flag in a
# response of its own (Engine._after_given_up), and the known divergence that names it.
FINAL_ALONE = "; its answers came with their final flag in a response of their own"
FINAL_ALONE_CRASH = "final-alone-cancel-crash"
DECOUPLED_CANCEL_CRASH = "decoupled-cancel-crash"  # its older builds' wider form: any decoupled model


def server_gone(reason: str, after: str = "", log_tail: str = "") -> InvariantViolation:
    """The server is gone (`reason`, with what the death came `after`, and its log's last lines)."""
    died = InvariantViolation("server_alive", reason)
    died.after, died.log_tail = after, log_tail
    died.detail += after  # (the message stays the reason: a report adds the program to it)
    return died


def fault_not_survived(action: str, err: BaseException) -> InvariantViolation:
    """A restart or reload the server did not come back from."""
    return InvariantViolation("server_alive", f"{action}: it did not come back: {err}")


def unexplained(broken) -> InvariantViolation:
    """An answer the history checker (linearize.judge) found no order of the requests explains."""
    return InvariantViolation(broken.invariant, f"the history checker: {broken.describe()}")


def queued_start_let_in_unanswered(step: int, within_s: float) -> InvariantViolation:
    """A START from the backlog, let in as a slot freed, not answered in time."""
    return InvariantViolation("no_hangs", f"the START queued at step {step} was let in when a slot freed but "
                                          f"not answered within {within_s:.3g} s")


def queued_start_unanswered(step: int, since_sent_s: float) -> InvariantViolation:
    """A replayed program's backlogged START, never answered."""
    return InvariantViolation("no_hangs", f"the START queued at step {step} was not answered "
                                          f"within {since_sent_s:.1f} s of being sent")


def never_answered(pending: int, first_step: int | None, held_back: int) -> InvariantViolation:
    """Requests still unanswered (or held back) once the example drained."""
    return InvariantViolation("no_hangs", f"{pending} request(s) never answered"
                                          + (f", e.g. the START of step {first_step}" if first_step is not None else "")
                                          + f"; {held_back} still held back at the end")


def unary_hung_after_given_up(bound_s: float) -> InvariantViolation:
    """A whole sequence on unary gRPC, sent after calls given up by their clients, got no answer."""
    return InvariantViolation("no_hangs", f"unary gRPC stopped answering after the calls given up: a "
                                          f"whole sequence got no answer in {bound_s:.3g} s")


def cancelled_start_ran(got: Outcome | None) -> InvariantViolation | None:
    """A backlogged START its client cancelled: it must not be answered as if it ran."""
    if got is not None and got.ok:
        return InvariantViolation("cancel_ends_sequence", "the cancelled START was answered as if it ran")
    return None


def batch_not_full(capacity: int, hook: str, executions: int | None, instances: int, *,
                   read_early: bool) -> InvariantViolation | None:
    """The full_batch fault's STARTs (`capacity` of them, held by the scheduler hook `hook`) ran in
    `executions` executions (None: unknown), where one full batch per instance is due. Too few is
    a finding whenever read; too many only if read before a backlog START could run (`read_early`)."""
    if executions is None or executions == instances or (executions > instances and not read_early):
        return None
    return InvariantViolation("batches_fill", f"{capacity} STARTs held by {hook}={capacity} ran in {executions} "
                                              f"execution(s), not one full batch per instance ({instances})")


def told_apart(got: Outcome, total: float, req: Request, ran_means: str, refused_means: str,
               refused_ok) -> InvariantViolation | None:
    """A teardown END whose answer alone tells its sequence's state: its sum `total` where it ran
    (`ran_means`), or a refusal `refused_ok(got, req)` accepts (`refused_means`)."""
    if got.status == "CLIENT_TIMEOUT":
        return InvariantViolation("no_hangs", f"no answer: {got.message}")
    if got.ok and not same_sum(got.value, total):
        return InvariantViolation("sums_match", f"wrong running sum where {ran_means}")
    if not got.ok and not refused_ok(got, req):
        return not_answered(got, InvariantViolation("valid_is_accepted",
                                                    f"refused, but not as expected: {refused_means}"))
    return None


def stats_disagree(problem: str, tally: str, rises: str) -> InvariantViolation:
    """The server's statistics against the requests answered (`tally`): `problem`."""
    violation = InvariantViolation("stats_agree", f"{problem}; {tally}; the statistics rose: {rises}")
    violation.got = problem  # what a known divergence's signature is matched against
    return violation


def behind_impossible(said: str, expected: str) -> InvariantViolation:
    """A request behind a cancelled one on its stream answered a sum its queue cannot have made."""
    return InvariantViolation("sums_match", f"a request behind answered a sum its queue cannot "
                                            f"have made: {said}, expected {expected}")


def after_cancel_wrong(got: Outcome, detail: str, *, wrong_sum: bool) -> InvariantViolation:
    """A cancel group's next request answered as none of the group's outcomes allows: a sum no
    leave makes where the sequence may go on (`wrong_sum`), else cancel_ends_sequence."""
    return not_answered(got, InvariantViolation("sums_match" if wrong_sum else "cancel_ends_sequence", detail))


def in_no_order(base: float, values: list, got: list) -> InvariantViolation:
    """Requests of one sequence (their `values`), sent at once from the sum `base`: answered
    (`got`) in no arrival order's running sums, or one of them refused."""
    said = ", ".join(f"{v!r} -> {o.describe()}" for v, o in zip(values, got))
    if not all(o.ok for o in got):
        bad = next(o for o in got if not o.ok)
        return not_answered(bad, InvariantViolation("valid_is_accepted", f"one of {len(got)} requests of one "
                                                    f"sequence sent at once was refused (from the sum {base!r}: "
                                                    f"{said})"))
    return InvariantViolation("order_kept", f"{len(got)} requests of one sequence sent at once from the sum "
                                            f"{base!r} were answered in no arrival order's running sums: {said}")


# What verdicts.start_ran_first says, and the known divergence that names it (fuzz/checker/divergences.py).
START_RAN_FIRST = "the START pipelined right behind its sequence's END on its id ran first"
OVERTAKES = "start-overtakes-its-ids-end"


def start_ran_first(req: Request, start_sum: float, initial_sum: float, got: Outcome, then) -> InvariantViolation | None:
    """A request of a running sequence (its END, or one pipelined before the END and still in
    flight with it) whose answer (`got`, a wrong sum) is the sum `start_sum` of the START pipelined
    right behind that END on its id (a new sequence) plus the request's own value, `then(sum,
    value)` adding as the model does: the START ran first (before the END, or in one execution
    with the request before it, its row first), and the model added the old sequence's request
    to the new sequence's sum (it keeps its state by CORRID). None where the answer is not that
    sum, or where that sum is also what a state reset before the request gives (a START of 0 from
    the initial sum: a hoisted reset would answer the same): then it is a finding like any wrong
    sum."""
    overtaken = then(start_sum, req.value)
    if not got.ok or not same_sum(got.value, overtaken) or same_sum(overtaken, then(initial_sum, req.value)):
        return None
    whose = "the END's" if req.end else "this request's"
    return NamedDivergence("sums_match", f"wrong running sum: {START_RAN_FIRST} (its sum {start_sum!r}, "
                                         f"plus {whose} {req.value!r})", OVERTAKES)
