"""share_sequence (issue 13, item 1): requests of one sequence sent at once from several
connections. The order check is pure; the step runs live against the session's Triton, is
replayed and runs in the standalone reproducer."""
import subprocess
import sys
import time

import attrs
import pytest

from fuzz import corpus
from fuzz.corpus import _step_from_json, _step_to_json
from fuzz.harness.engine import Engine, Setup
from fuzz.checker.invariants import InvariantViolation
from fuzz.corpus.replay import ReplayDrift, replay_steps
from fuzz.checker.linearize import in_some_order
from fuzz.harness.sharing import possible
from fuzz.spec import ModelSpec
from fuzz.values import AnyOrder, Kind, Outcome, Request

MODEL = "py_slot_direct_s2_i2_fp32_cser"
SPEC = ModelSpec(name="m", dtype="INT32", strategy="direct", slots_per_instance=2, instances=1, idle_s=0.5,
                 max_batch_size=2, controls=frozenset({"START", "READY"}), corrid_type=None,
                 implicit_state=False, flavour="slot", backend="python")


def _in_some_order(base, values, answers, carries_state=True):
    """The history checker's verdict on requests of `values` sent at once at the sum `base`."""
    requests = [Request("m", 7, v) for v in values]
    return in_some_order(SPEC, base, requests, [Outcome(a) for a in answers], carries_state)


def test_the_answers_must_be_one_orders_running_sums():
    assert _in_some_order(10, [1, 2, 4], [11, 13, 17])  # in the order sent
    assert _in_some_order(10, [1, 2, 4], [17, 16, 14])  # the other way round
    assert _in_some_order(10, [1, 2, 4], [11, 17, 15])
    assert not _in_some_order(10, [1, 2, 4], [11, 13, 14])  # 4 came first and then 1 after 2?
    assert not _in_some_order(10, [1, 2], [11, 11])  # both saw only themselves: one was lost
    assert _in_some_order(0, [5, 5], [5, 10])  # equal values: either order
    assert possible(10, [1, 2, 4], 2) == (14, 15, 16, 17)


def test_without_state_carried_each_answer_is_its_own_value_on_the_initial_sum():
    own = lambda total, value: 0 + value  # noqa: E731 - BatcherModel.then of a build that carries none
    assert _in_some_order(10, [1, 2, 4], [1, 2, 4], carries_state=False)
    assert not _in_some_order(10, [1, 2, 4], [11, 13, 14], carries_state=False)
    assert possible(10, [1, 2, 4], 2, then=own) == (4,)


def test_requests_of_one_sequence_sent_at_once_keep_an_order(triton, tmp_path):
    spec = ModelSpec.fetch(triton, MODEL)
    vias = ["stream", "stream", "grpc"]  # two clients' streams and a unary call
    # send_at_once sends nothing when the model would not answer at once: on a loaded machine the
    # START's answer can come back after its sequence's idle window opened (seen once in CI)
    for attempt in range(3):
        e = Engine(Setup.of(triton, spec), salt=30_000 + attempt + time.monotonic_ns() % 10_000)
        seq_id = e.salt * 2**40
        e.send(0, spec.request(seq_id, 1.0, start=True), "stream", "start")
        if e.sharing.send_at_once([(c, spec.request(seq_id, float(2**c)), vias[c - 1]) for c in range(1, 4)], "at once"):
            break
        e.finish()
    else:
        pytest.fail("three times the START's answer came back too late to send the others at once")
    answers = [s for s in e.log if s.kind is Kind.SHARED_ANSWER]
    assert len(answers) == 3 and all(isinstance(s.expect, AnyOrder) for s in answers)
    assert max(s.outcome.value for s in answers) == 15.0 and e.model.total(("u", seq_id)) == 15.0
    assert e.send(0, spec.request(seq_id, 16.0, end=True), "grpc", "end").value == 31.0
    e.finish()
    assert not e.failed
    steps = e.log[:-1] if e.log[-1].action == "end (teardown)" else e.log
    assert [_step_from_json(_step_to_json(s), 0) for s in steps] == steps
    again = replay_steps(triton, spec, steps)
    assert [s.kind for s in again].count(Kind.SHARED_ANSWER) == 3 and again[-1].outcome.value == 31.0
    entry = attrs.evolve(corpus.make_entry(spec, triton.version, "order_kept", "test program", steps),
                         status="must-pass")
    script = corpus.write(tmp_path, entry).with_suffix(".py")
    out = subprocess.run([sys.executable, str(script), "--url", triton.grpc_url], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr


def test_a_shrunk_program_whose_shared_requests_no_longer_fit_is_a_drift(triton):
    """Delta debugging can leave a shared group whose first request ends its sequence (an END
    folded into it): the replay of that candidate drifts, it is no generator error."""
    spec = ModelSpec.fetch(triton, MODEL)
    e = Engine(Setup.of(triton, spec), salt=40_000 + time.monotonic_ns() % 10_000)
    seq_id = e.salt * 2**40
    e.send(0, spec.request(seq_id, 1.0, start=True), "stream", "start")
    assert e.sharing.send_at_once([(c, spec.request(seq_id, 2.0), "stream") for c in (1, 2)], "at once")
    e.finish()
    steps = [s for s in e.log if s.action != "end (teardown)"]
    first = next(i for i, s in enumerate(steps) if s.kind is Kind.SHARED)
    steps[first] = attrs.evolve(steps[first], request=attrs.evolve(steps[first].request, end=True))
    with pytest.raises(ReplayDrift, match="not answered at once"):
        replay_steps(triton, spec, steps)


def started_then_shared(triton, salt):
    """An engine on MODEL that started a sequence (1.0) and sent it 2.0 from two clients at once."""
    spec = ModelSpec.fetch(triton, MODEL)
    e = Engine(Setup.of(triton, spec), salt=salt + time.monotonic_ns() % 10_000)
    seq_id = e.salt * 2**40
    e.send(0, spec.request(seq_id, 1.0, start=True), "stream", "start")
    for c in (1, 2):
        assert e.sharing.send(c, spec.request(seq_id, 2.0), "at once")
    return e, spec, seq_id


def answered_instead(e, outcomes):
    """Puts `outcomes` in place of what the server answered the shared requests, in order."""
    for (_, _, box, _), outcome in zip(e.sharing.shared.sent, outcomes, strict=True):
        box.get(timeout=5)
        box.put(outcome)


def test_answers_in_no_order_break_order_kept(triton):
    """The check itself, fed answers no arrival order gives (a server that lost one)."""
    e, spec, seq_id = started_then_shared(triton, 40_000)
    answered_instead(e, [Outcome(value=3.0)] * 2)  # what a server that ran both on the old sum would say
    with pytest.raises(InvariantViolation) as raised:
        e.sharing.check("answer")
    e.failed = True
    e.finish()
    assert raised.value.invariant == "order_kept"
    assert "answered in no arrival order's running sums: 2.0 -> OUTPUT=3.0, 2.0 -> OUTPUT=3.0" in raised.value.detail


@pytest.mark.parametrize("refused, late, fails", [(2, True, False), (2, False, True), (1, True, True)],
                         ids=["all-refused-late", "all-refused-in-time", "one-refused-late"])
def test_requests_sent_at_once_all_refused_after_the_window_opened_are_indeterminate(triton, refused, late, fails):
    """As one request refused for want of START once its sequence's idle window opened (the
    reaper may have taken it first on a loaded machine), requests of one sequence sent at once
    and all so refused are indeterminate, and the model takes the sequence as gone. Refused
    before the window opened, or only some of them (one answered: the sequence was there, and
    stayed), they break valid_is_accepted."""
    from fuzz.checker.model import START_ERROR, batcher_error, key_of

    e, spec, seq_id = started_then_shared(triton, 41_000)
    start_error = Outcome(status="INVALID_ARGUMENT", message=batcher_error(spec, START_ERROR, id=seq_id))
    answered_instead(e, [start_error if n < refused else Outcome(value=3.0) for n in range(2)])  # as if reaped
    if late:
        e.sharing.shared.at_risk_from = time.monotonic() - 0.01
    try:
        if fails:
            with pytest.raises(InvariantViolation) as raised:
                e.sharing.check("answer")
            assert raised.value.invariant == "valid_is_accepted"
        else:
            e.sharing.check("answer")
            assert not e.model.is_live(key_of(seq_id))
            assert "indeterminate" in e.log[-1].expected and e.log[-1].expect is None
    finally:
        e.failed = True
        e.finish()
