"""The corpus against the session's real Triton: the checked-in divergence reproduces through the
standalone script and through the fuzzer's replay, and `pytest fuzz/` holds each entry to its
status (strict xfail for a known divergence, a failing test for a bad file)."""
import subprocess
import sys
from pathlib import Path

import attrs
import pytest

from fuzz import corpus
from fuzz.harness.client import Request
from fuzz.checker.invariants import InvariantViolation
from fuzz.harness.engine import Kind, StepRecord
from fuzz.corpus.replay import ReplayDrift, check_entry
from fuzz.spec import ModelSpec
from fuzz.values import Answer, Queued

ROOT = Path(__file__).resolve().parent.parent
IMPLICIT = "py_implicit_direct_s1_i1_int32_csr"
CORRECT = "py_slot_direct_s2_i2_fp32_cser"  # keeps the accumulator promise on 2.51


def checked_in():
    return next(i.entry for i in corpus.load_dir(ROOT / "corpus") if i.entry and i.entry.model == IMPLICIT)


def twin_program(model):
    """uint64 5 and string "5" are two sequences; ids at and above 2**63 work."""
    big = 2**63 + 1
    return [
        StepRecord(1, 0, "start", Request(model, 5, 1.0, start=True, dtype="FP32"), via="stream"),
        StepRecord(2, 1, "start the other-typed twin", Request(model, "5", 10.0, start=True, dtype="FP32"), via="grpc"),
        StepRecord(3, 2, "start", Request(model, big, 4.0, start=True, dtype="FP32"), via="http"),
        StepRecord(4, None, "pause", kind=Kind.PAUSE, wait_s=0.05),
        StepRecord(5, 0, "continue", Request(model, 5, 2.0, dtype="FP32"), via="stream"),
        StepRecord(6, 1, "continue", Request(model, "5", 3.0, dtype="FP32"), via="stream"),
        StepRecord(7, 2, "end", Request(model, big, 1.0, end=True, dtype="FP32"), via="grpc"),
        StepRecord(8, 0, "send without START", Request(model, big, 1.0, dtype="FP32"), via="grpc"),
    ]


def must_pass(triton, model, program, **kw):
    spec = ModelSpec.fetch(triton, model)
    e = corpus.make_entry(spec, triton.version, "sums_match", "test program", program)
    return attrs.evolve(e, status="must-pass", **kw)


def test_reproducer_script_reports_the_divergence(triton):
    entry = checked_in()
    script = ROOT / "corpus" / f"{entry.name}.py"
    out = subprocess.run([sys.executable, str(script), "--url", triton.grpc_url, "--http-url", triton.http_url],
                         capture_output=True, text=True, timeout=120)
    if entry.diverges_on(triton.version):
        assert out.returncode == 1, out.stdout + out.stderr
        assert "<-- DIVERGES" in out.stdout and "DIVERGED at step(s) 3 of 3" in out.stdout, out.stdout
        assert "expected OUTPUT=1\n       got      OUTPUT=0" in out.stdout
    else:
        assert out.returncode == 0, out.stdout + out.stderr


def test_replay_breaks_the_recorded_promise_on_the_diverging_build(triton):
    entry = checked_in()
    if not entry.diverges_on(triton.version):
        check_entry(triton, entry)
        return
    with pytest.raises(InvariantViolation) as err:
        check_entry(triton, entry)
    assert err.value.invariant == "sums_match"
    assert entry.name in str(err.value) and f"python corpus/{entry.name}.py" in str(err.value)
    assert [s.action for s in err.value.program][-1] == "continue"
    # Recorded as diverging on another version only: here it must pass, so the replay fails.
    elsewhere = attrs.evolve(entry, divergence_versions=("0.0.0",))
    with pytest.raises(InvariantViolation, match="recorded known-divergence on Triton"):
        check_entry(triton, elsewhere)


def test_must_pass_program_replays_clean_with_expectations_rederived(triton):
    program = twin_program(CORRECT)
    verdict = check_entry(triton, must_pass(triton, CORRECT, program))
    assert not verdict.diverged and verdict.steps >= len(program)


def test_replay_writes_a_finding_as_the_fuzzer_does(triton, tmp_path):
    entry = attrs.evolve(checked_in(), status="must-pass", divergence=None, divergence_versions=())
    try:
        check_entry(triton, entry)
        pytest.skip(f"Triton {triton.version} keeps implicit state on the Python backend")
    except InvariantViolation as v:
        found = corpus.make_entry(ModelSpec.fetch(triton, IMPLICIT), triton.version, v.invariant, v.detail,
                                  v.program)
    path, written = corpus.record(tmp_path, found)
    assert written and corpus.load(path) == found
    assert found.status == "new" and found.invariant == "sums_match"
    assert corpus.load(path).steps[-1].got == "OUTPUT=0"


def test_replay_refuses_a_program_recorded_on_another_configuration(triton):
    entry = must_pass(triton, CORRECT, twin_program(CORRECT)[:1])
    stale = attrs.evolve(entry, spec=attrs.evolve(entry.spec, idle_s=9.0))
    with pytest.raises(ReplayDrift, match="configured differently"):
        check_entry(triton, stale)


def test_pytest_fuzz_holds_each_entry_to_its_status(triton, tmp_path):
    """A sub-session of `pytest fuzz/test_corpus.py` against the same server and a corpus of five
    files: the checked-in divergence (xfail), a must-pass program (pass), a known divergence that
    does not show (strict xfail: fails), a corrupt file and an unknown format version (each fails,
    naming its file), and the run goes on past them."""
    corpus_dir = tmp_path / "corpus"
    corpus.write(corpus_dir, checked_in())
    good = must_pass(triton, CORRECT, twin_program(CORRECT))
    corpus.write(corpus_dir, good)
    gone = attrs.evolve(must_pass(triton, CORRECT, twin_program(CORRECT)[:2]), status="known-divergence",
                        divergence_versions=(triton.version,), name="gone-divergence")
    corpus.write(corpus_dir, gone)
    (corpus_dir / "corrupt.json").write_text("{not json")
    (corpus_dir / "future.json").write_text('{"format_version": 99, "name": "future"}')
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", str(ROOT / "fuzz" / "test_corpus.py"),
         "--triton-url", triton.grpc_url, "--triton-http-url", triton.http_url, "--corpus-dir", str(corpus_dir),
         "-rA", "-q"], capture_output=True, text=True, timeout=300, cwd=ROOT)
    text = out.stdout
    assert out.returncode == 1, text + out.stderr
    diverging = checked_in().diverges_on(triton.version)
    assert f"{'XFAIL' if diverging else 'PASSED'} fuzz/test_corpus.py::test_corpus[{checked_in().name}]" in text
    assert f"PASSED fuzz/test_corpus.py::test_corpus[{good.name}]" in text
    assert "FAILED fuzz/test_corpus.py::test_corpus[gone-divergence]" in text and "XPASS(strict)" in text
    assert "FAILED fuzz/test_corpus.py::test_corpus[corrupt]" in text and "corrupt.json: not valid JSON" in text
    assert "future.json: unknown format_version 99" in text
    assert "3 failed, 1 passed, 1 xfailed" in text or not diverging, text


ONE_SLOT = "py_slot_direct_s1_i1_int32_csr"


def backlog_program(model):
    """Two STARTs on a one-slot model: the second waits in the backlog until the first ends."""
    queued = Request(model, 2, 5, start=True)
    return [
        StepRecord(1, 0, "start", Request(model, 1, 1, start=True), via="stream",
                   expected="OUTPUT=1", got="OUTPUT=1", expect=Answer(1)),
        StepRecord(2, 1, "start", queued, via="stream", expected="queued in the backlog, then OUTPUT=5",
                   got="(waiting)", kind=Kind.QUEUED, expect=Queued(5)),
        StepRecord(3, None, "pause", kind=Kind.PAUSE, wait_s=0.1),
        StepRecord(4, 0, "end", Request(model, 1, 2, end=True), via="grpc", expected="OUTPUT=3", got="OUTPUT=3",
                   expect=Answer(3)),
        StepRecord(5, 1, "answer to step 2", queued, via="stream", expected="queued in the backlog, then OUTPUT=5",
                   got="OUTPUT=5", kind=Kind.ANSWER, expect=Queued(5)),
        StepRecord(6, 1, "end", Request(model, 2, 1, end=True), via="stream", expected="OUTPUT=6", got="OUTPUT=6",
                   expect=Answer(6)),
    ]


def test_backlogged_start_replays_through_a_stream_in_both_replayers(triton, tmp_path):
    entry = must_pass(triton, ONE_SLOT, backlog_program(ONE_SLOT))
    verdict = check_entry(triton, entry)
    path = corpus.write(tmp_path, entry)
    out = subprocess.run([sys.executable, str(path.with_suffix(".py")), "--url", triton.grpc_url],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "(queued: its answer is checked where the program received it)" in out.stdout
    assert "  5. client 1: answer to step 2" in out.stdout and "no divergence: all 6 steps" in out.stdout
    # The same program with a wrong recorded answer: the script (which trusts the recording) says so.
    wrong = attrs.evolve(entry, steps=entry.steps[:4] + (attrs.evolve(entry.steps[4], expect=Queued(7)),)
                         + entry.steps[5:])
    path = corpus.write(tmp_path, attrs.evolve(wrong, name="wrong"))
    out = subprocess.run([sys.executable, str(path.with_suffix(".py")), "--url", triton.grpc_url],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 1 and "DIVERGED at step(s) 5 of 6" in out.stdout, out.stdout + out.stderr
    assert verdict.steps == 6  # the answer came in where the program recorded it


def test_a_request_on_an_id_whose_start_still_waits_is_a_drift_not_a_crash(triton):
    """What a shrink can make of backlog_program: the END that let the queued START in is gone, so
    the next request of that id comes while its START still waits (the reference model would take
    it for a generator error)."""
    program = backlog_program(ONE_SLOT)
    shrunk = program[:2] + [attrs.evolve(program[5], index=3, client=0, via="grpc")]
    with pytest.raises(ReplayDrift, match="still waits for an answer"):
        check_entry(triton, must_pass(triton, ONE_SLOT, shrunk))


def crowd_program(model):
    """A crowd as the fuzzer logs it: HELD requests of three sequences sent at once, client 0
    pipelining two of them on its one stream, then each answer in the order sent."""
    sent = [(0, Request(model, 11, 1.0, start=True, dtype="FP32"), 1.0),
            (0, Request(model, 11, 2.0, dtype="FP32"), 3.0),
            (0, Request(model, 12, 5.0, start=True, dtype="FP32"), 5.0),
            (0, Request(model, 12, 1.0, end=True, dtype="FP32"), 6.0),
            (1, Request(model, 13, 7.0, start=True, dtype="FP32"), 7.0),
            (1, Request(model, 13, 0.5, end=True, dtype="FP32"), 7.5)]
    held = [StepRecord(1 + i, c, "crowd", r, via="stream", kind=Kind.HELD, expect=Answer(v))
            for i, (c, r, v) in enumerate(sent)]
    answers = [StepRecord(7 + i, c, "answer to crowd", r, via="stream", kind=Kind.HELD_ANSWER, expect=Answer(v))
               for i, (c, r, v) in enumerate(sent)]
    return held + answers


def test_a_crowd_replays_at_once_in_both_replayers(triton, tmp_path):
    """Several HELD requests per client (a crowd) replay in order, each answer to its own request."""
    entry = must_pass(triton, CORRECT, crowd_program(CORRECT))
    verdict = check_entry(triton, entry)
    assert verdict.steps == 13  # and the teardown END of the sequence left running
    path = corpus.write(tmp_path, entry)
    out = subprocess.run([sys.executable, str(path.with_suffix(".py")), "--url", triton.grpc_url],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "no divergence: all 12 steps" in out.stdout, out.stdout + out.stderr


def test_a_held_start_that_would_wait_in_the_backlog_is_a_drift(triton):
    """What a shrink can make of a crowd: its fresh STARTs outnumber the free slots now."""
    program = [StepRecord(1 + i, i, "crowd", Request(ONE_SLOT, 21 + i, 1, start=True), via="stream",
                          kind=Kind.HELD, expect=Answer(1)) for i in range(2)]
    with pytest.raises(ReplayDrift, match="would not be answered at once"):
        check_entry(triton, must_pass(triton, ONE_SLOT, program))


def test_a_sum_the_dtype_cannot_hold_is_a_drift_not_a_finding(triton):
    """What a shrink can make of a crowd on a sum near INT32's edge: the request that brought it
    back inside is gone and could not fold, so the next one would wrap. Every correct model
    wraps too; a finding written for it would be false (seen: 4 steps, `expected -2147483702`)."""
    program = [StepRecord(1, 0, "start", Request(ONE_SLOT, 31, -(2**31), start=True), via="stream",
                          expect=Answer(-(2**31))),
               StepRecord(2, 0, "crowd", Request(ONE_SLOT, 31, -54), via="stream", kind=Kind.HELD,
                          expect=Answer(-(2**31) - 54)),
               StepRecord(3, 0, "answer to crowd", Request(ONE_SLOT, 31, -54), via="stream",
                          kind=Kind.HELD_ANSWER, expect=Answer(-(2**31) - 54))]
    with pytest.raises(ReplayDrift, match="outside"):
        check_entry(triton, must_pass(triton, ONE_SLOT, program))


def test_a_held_request_on_a_sequence_still_in_the_backlog_is_a_drift_not_a_crash(triton):
    """What a shrink can make of a program whose START waited in the backlog: the steps that let
    it in are gone, and a crowd's request on it comes next. The reference cannot expect anything
    of it (its START is unanswered): the try did not fail, the tool did not crash (seen: `generator
    error: request for ... while its previous one is pending` out of a dev campaign)."""
    steps = backlog_program(ONE_SLOT)[:2]
    held = Request(ONE_SLOT, 2, 4)
    program = steps + [StepRecord(3, 1, "crowd", held, via="stream", kind=Kind.HELD, expect=Answer(9)),
                       StepRecord(4, 1, "answer to crowd", held, via="stream", kind=Kind.HELD_ANSWER,
                                  expect=Answer(9))]
    with pytest.raises(ReplayDrift, match="waits for an answer"):
        check_entry(triton, must_pass(triton, ONE_SLOT, program))


def test_a_request_sent_aside_on_a_sequence_still_in_the_backlog_is_a_drift_not_a_crash(triton):
    """The same from a cancel's first step (sent aside on unary gRPC): a shrink removed the wait
    that let its START into a slot (seen: a delta-debugging try of corrid_truncated_to_32_bits
    crashed the campaign with `generator error: ... while its previous one is pending`)."""
    steps = backlog_program(ONE_SLOT)[:2]
    program = steps + [StepRecord(3, 1, "send aside", Request(ONE_SLOT, 2, 4), via="grpc", kind=Kind.ASIDE,
                                  expect=Answer(9))]
    with pytest.raises(ReplayDrift, match="previous one is pending"):
        check_entry(triton, must_pass(triton, ONE_SLOT, program))
