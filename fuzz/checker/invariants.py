"""The checker: compares what came back with what the reference model expects.

Each failed promise is an InvariantViolation named after the promise (`sums_match`,
`start_is_required`, ...). Its message says what was sent, what came back, what was expected,
and (added by the machine) the program so far and how to replay it.
"""
from __future__ import annotations

from typing import Callable

import attrs

from .model import Answer, Queued, Refusal, normalize_message
from ..spec import ModelSpec, same_sum, same_sums
from ..values import Outcome, Request, StepRecord


@attrs.frozen
class Invariant:
    """A promise the server makes. The built-in ones are checked where the engine sends and
    collects; one a user registers brings its own `judge`, which sees every step of the program
    once it is recorded (what was sent, what was expected, what came back, and when: a StepRecord)
    and says what is wrong with it, or None."""
    name: str
    promise: str
    judge: Callable[[StepRecord, ModelSpec], str | None] | None = None


# Every promise, by name: the built-in ones, then any registered.
INVARIANTS: dict[str, Invariant] = {}


def register(invariant: Invariant) -> Invariant:
    """Adds a promise (e.g. from a conftest.py): its violations are findings like any other,
    shrunk, saved and replayed under its name (the corpus keeps the name; replaying such an entry
    needs the invariant registered again)."""
    if not invariant.name.isidentifier():
        raise ValueError(f"an invariant's name is an identifier, like sums_match; got {invariant.name!r}")
    if invariant.name in INVARIANTS:
        raise ValueError(f"an invariant named {invariant.name} is registered already")
    if invariant.judge is None:
        raise ValueError(f"invariant {invariant.name}: a registered promise needs a judge (a function of the "
                         f"step and the model's spec that returns what is wrong, or None)")
    INVARIANTS[invariant.name] = invariant
    return invariant


def unregister(name: str) -> None:
    if name in BUILT_IN:
        raise ValueError(f"{name} is built in")
    INVARIANTS.pop(name, None)


def misshapen(rec: StepRecord, spec: ModelSpec | None) -> str | None:
    """An answer whose OUTPUT came back in a shape other than its INPUT's, or of another datatype
    than the model's: the contract gives both the same dims and datatype, so a row's OUTPUT is one
    element of the model's type, whatever its value (the value alone is read: a shape or a type
    error would go unseen). Judged on every answer, whatever was expected of it."""
    got, req = rec.outcome, rec.request
    if got is None or not got.ok or req is None:
        return None
    if got.shape is not None and got.shape != req.shape:
        return (f"OUTPUT came back shaped {list(got.shape)} where INPUT was sent shaped {list(req.shape)} (the "
                f"model's config gives OUTPUT the dims of INPUT: one element a row)")
    dtype = spec.dtype if spec is not None else req.dtype
    if got.datatype is not None and got.datatype != dtype:
        return f"OUTPUT came back as {got.datatype} where the model's config says TYPE_{dtype}"
    return None


def judged(rec: StepRecord, spec: ModelSpec) -> InvariantViolation | None:
    """The first registered judge's finding on a recorded step, as its violation."""
    for invariant in INVARIANTS.values():
        if invariant.judge is not None:
            problem = invariant.judge(rec, spec)
            if problem:
                return InvariantViolation(invariant.name, problem)
    return None


for _name, _promise in (
    ("sums_match", "every answer is the running sum since the sequence's START"),
    ("valid_is_accepted", "what must be accepted is accepted"),
    ("start_is_required", "no START, no live sequence: the exact START-flag error"),
    ("invalid_is_refused", "malformed requests get their exact error"),
    ("capacity_respected", "no new sequence is served while every slot is held"),
    ("slots_reused", "after idle timeouts, as many new sequences as slots are admitted promptly"),
    ("no_hangs", "every request is answered within the bound; streams drain at teardown"),
    ("order_kept", "requests of one sequence sent at once are answered as some arrival order's running sums"),
    ("timeouts_respected", "a START that waits in the backlog past its timeout fails then, not before"),
    ("cancel_ends_sequence", "a cancelled request (a backlogged START, or one queued on a running sequence) "
                             "ends its sequence"),
    ("server_alive", "the server does not die"),
    ("stats_agree", "the statistics extension agrees with what the clients saw (fuzz/checker/server_stats.py)"),
    ("batches_fill", "requests held for a full batch run as one batch per instance"),
):
    INVARIANTS[_name] = Invariant(_name, _promise)
INVARIANTS["answers_well_formed"] = Invariant(
    "answers_well_formed", "every answer's OUTPUT has its INPUT's shape (one element a row) and the model's "
                           "datatype", judge=misshapen)
BUILT_IN = frozenset(INVARIANTS)


class InvariantViolation(AssertionError):
    def __init__(self, invariant: str, detail: str):
        assert invariant in INVARIANTS, invariant
        self.invariant = invariant
        self.detail = detail
        super().__init__(f"[{invariant}] {detail}")


class NamedDivergence(InvariantViolation):
    """A violation the checker recognised, as it saw it, as the known divergence `known_as`
    (fuzz/checker/divergences.py). A class of its own: Hypothesis tells failures apart by their
    exception's type and where it was raised, and a shrink of a finding must not slide into it
    (the campaign keeps the shortest of each apart too: engine.failure_key)."""

    def __init__(self, invariant: str, detail: str, known_as: str):
        super().__init__(invariant, detail)
        self.known_as = known_as


def failure_key(violation: InvariantViolation) -> str:
    """What a campaign keeps the first and shortest failures by: the promise, and for a divergence
    the checker named, its name too."""
    known_as = getattr(violation, "known_as", "")
    return f"{violation.invariant} ({known_as})" if known_as else violation.invariant


@attrs.frozen
class Check:
    """One request's verdict, for the step log."""
    request: Request
    expected: str
    got: str
    violation: InvariantViolation | None = None


def describe_expectation(exp) -> str:
    after = f" after {list(exp.partials)!r}" if isinstance(exp, (Answer, Queued)) and exp.partials else ""
    if isinstance(exp, Answer):
        return f"OUTPUT={exp.value!r}{after}"
    if isinstance(exp, Queued):
        return f"queued in the backlog, then OUTPUT={exp.value!r}{after}"
    if isinstance(exp, Refusal):
        return f"{exp.status}: {exp.message}"
    return repr(exp)


def not_answered(got: Outcome, refused: InvariantViolation) -> InvariantViolation:
    """What a request that must be answered broke when no usable answer came: an answer without
    its OUTPUT (or with an empty one) is a malformed answer, not a refusal."""
    if got.status == "BAD_RESPONSE":
        return InvariantViolation("answers_well_formed", f"answered, but {got.message}")
    return refused


def check_prompt(req: Request, exp, got: Outcome, transport: str, *, context: str = "") -> Check:
    """A request the server must answer at once (Answer or Refusal)."""
    expected = describe_expectation(exp)
    violation = None
    if got.status == "CLIENT_TIMEOUT":
        invariant = "slots_reused" if context == "refill" else "no_hangs"
        violation = InvariantViolation(invariant, f"no answer: {got.message}")
    elif isinstance(exp, Answer):
        if not got.ok:
            invariant = "slots_reused" if context == "refill" else "valid_is_accepted"
            violation = not_answered(got, InvariantViolation(invariant, "refused a request that must be accepted"))
        elif not same_sum(got.value, exp.value):
            violation = InvariantViolation("sums_match", "wrong running sum")
        elif not same_sums(got.partials, exp.partials):
            violation = InvariantViolation("sums_match", "wrong running sums before the final answer")
    elif isinstance(exp, Refusal):
        if got.ok:
            violation = InvariantViolation(exp.invariant, "accepted a request that must be refused")
        elif normalize_message(got.message) != exp.message or (transport == "grpc" and got.status != exp.status):
            violation = InvariantViolation(exp.invariant, "refused with the wrong error")
        elif exp.invariant == "timeouts_respected" and got.latency_s < req.timeout_us / 1e6:
            # The server counts the timeout from the request's arrival, after it was sent.
            violation = InvariantViolation(exp.invariant, f"failed after {got.latency_s * 1e3:.3f} ms, before its "
                                                          f"timeout of {req.timeout_us / 1e3:g} ms")
    else:
        raise TypeError(f"not a prompt expectation: {exp!r}")
    return Check(req, expected, got.describe(), violation)


def check_served(req: Request, exp: Queued, got: Outcome, capacity_problem: str | None) -> Check:
    """A backlogged START was answered."""
    expected = describe_expectation(exp)
    violation = None
    if capacity_problem:
        violation = InvariantViolation("capacity_respected", capacity_problem)
    elif not got.ok:
        violation = not_answered(got, InvariantViolation("valid_is_accepted", "a backlogged START was refused"))
    elif not same_sum(got.value, exp.value) or not same_sums(got.partials, exp.partials):
        violation = InvariantViolation("sums_match", "wrong running sum for a START let in from the backlog")
    return Check(req, expected, got.describe(), violation)
