"""The registry of promises, without a server: a user's invariant needs a name and a judge, and
its judge's finding is a violation under its name (tests/test_campaign.py runs one live)."""
import ast
import pathlib

import attrs
import pytest

from fuzz.checker.invariants import INVARIANTS, Invariant, InvariantViolation, judged, register, unregister
from fuzz.values import Outcome, Request, StepRecord

SPEC = None  # the judge here reads the step only


def _over_100(rec, spec):
    got = rec.outcome
    return f"answered {got.value}, over 100" if got is not None and got.ok and got.value > 100 else None


def test_a_registered_judge_names_its_finding():
    register(Invariant("no_answer_over_100", "no answer is over 100", judge=_over_100))
    try:
        small = StepRecord(1, 0, "start", Request("m", 5, 7, start=True), outcome=Outcome(value=7))
        big = StepRecord(2, 0, "continue", Request("m", 5, 101), outcome=Outcome(value=108))
        assert judged(small, SPEC) is None
        violation = judged(big, SPEC)
        assert isinstance(violation, InvariantViolation)
        assert (violation.invariant, violation.detail) == ("no_answer_over_100", "answered 108, over 100")
    finally:
        unregister("no_answer_over_100")
    assert "no_answer_over_100" not in INVARIANTS and judged(big, SPEC) is None


def test_bad_registrations_are_refused_with_what_to_do():
    with pytest.raises(ValueError, match="registered already"):
        register(Invariant("sums_match", "again", judge=_over_100))
    with pytest.raises(ValueError, match="needs a judge"):
        register(Invariant("unjudged", "nobody checks it"))
    with pytest.raises(ValueError, match="an identifier"):
        register(Invariant("two words", "x", judge=_over_100))
    with pytest.raises(ValueError, match="built in"):
        unregister("sums_match")
    with pytest.raises(AssertionError):
        InvariantViolation("unjudged", "not a promise")


def test_an_answer_shaped_otherwise_than_its_input_is_not_well_formed():
    batched, flat = Request("m", 5, 7, start=True), Request("m", 5, 7, start=True, batch_dim=False)
    fine = [StepRecord(1, 0, "start", batched, outcome=Outcome(value=7, shape=(1, 1))),
            StepRecord(2, 0, "start", flat, outcome=Outcome(value=7, shape=[1])),
            StepRecord(3, 0, "start", batched, outcome=Outcome(value=7)),  # a client that read no shape
            StepRecord(4, 0, "start", batched, outcome=Outcome(status="INVALID_ARGUMENT", message="no"))]
    assert [judged(rec, SPEC) for rec in fine] == [None] * 4
    for shape in ((2,), (1, 2), (1,), (1, 1, 1)):
        violation = judged(StepRecord(5, 0, "start", batched, outcome=Outcome(value=7, shape=shape)), SPEC)
        assert violation is not None and violation.invariant == "answers_well_formed", shape
        assert f"shaped {list(shape)} where INPUT was sent shaped [1, 1]" in violation.detail
    typed = StepRecord(6, 0, "start", batched, outcome=Outcome(value=7, shape=(1, 1), datatype="INT64"))
    assert "OUTPUT came back as INT64 where the model's config says TYPE_INT32" in judged(typed, SPEC).detail
    assert judged(attrs.evolve(typed, outcome=Outcome(value=7, shape=(1, 1), datatype="INT32")), SPEC) is None
    with pytest.raises(ValueError, match="built in"):
        unregister("answers_well_formed")


def test_an_answer_without_its_output_is_malformed_not_refused():
    """A response that came but carries no OUTPUT breaks answers_well_formed (the report says it was
    answered, and how); an error response is still a refusal."""
    from fuzz.checker.invariants import check_prompt
    from fuzz.checker.model import Answer

    req = Request("m", 5, 1, start=True)
    bad = Outcome(status="BAD_RESPONSE", message="no OUTPUT in response (got ['SEQFUZZ_ROW'])")
    check = check_prompt(req, Answer(1), bad, "stream")
    assert check.violation.invariant == "answers_well_formed" and "answered, but no OUTPUT" in check.violation.detail
    refused = check_prompt(req, Answer(1), Outcome(status="ERROR", message="boom"), "stream")
    assert refused.violation.invariant == "valid_is_accepted"
    assert check_prompt(req, Answer(1), bad, "stream", context="refill").violation.invariant == "answers_well_formed"


def _violations_built(path: pathlib.Path) -> list[int]:
    """The lines of `path` that call InvariantViolation(...) (by name or as an attribute)."""
    calls = (n for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.Call))
    return [c.lineno for c in calls
            if getattr(c.func, "id", None) == "InvariantViolation" or getattr(c.func, "attr", None) == "InvariantViolation"]


def test_only_the_checker_builds_violations():
    """The engine, the rules and the drivers observe; what an observation breaks is the checker's
    to say (fuzz/checker/verdicts.py): no module outside fuzz/checker/ builds a violation."""
    package = pathlib.Path(__file__).resolve().parent.parent / "fuzz"
    outside = {str(p.relative_to(package)): lines for p in sorted(package.rglob("*.py"))
               if "checker" not in p.relative_to(package).parts and (lines := _violations_built(p))}
    assert not outside, f"InvariantViolation built outside fuzz/checker/ (file: lines): {outside}"
    # (and the scan finds them where they are)
    assert _violations_built(package / "checker" / "verdicts.py")
