"""Histories as data, judged without a server: the history a program's steps record
(fuzz/checker/history.py), the history checker (fuzz/checker/linearize.py), saved times in the corpus, and the
`python -m fuzz.rejudge` command."""
import json
import subprocess
import sys
from pathlib import Path

import attrs
import pytest

from fuzz import corpus
from fuzz.checker.history import NEVER, history_of
from fuzz.checker.linearize import judge
from fuzz.spec import ModelSpec
from fuzz.values import Fault, Kind, Outcome, Request, StepRecord

ROOT = Path(__file__).resolve().parent.parent
SPEC = ModelSpec(name="m", dtype="INT32", strategy="direct", slots_per_instance=2, instances=1, idle_s=0.5,
                 max_batch_size=2, controls=frozenset({"START", "READY"}), corrid_type=None,
                 implicit_state=False, flavour="slot", backend="python")


class Program:
    """Steps with times: each step is sent at `at` and recorded at `done` (default: one tick each)."""

    def __init__(self):
        self.steps, self.clock = [], 0.0

    def add(self, kind=Kind.REQUEST, request=None, outcome=None, *, client=0, via="stream", sent=None, fault=None,
            answers_behind=()):
        self.clock += 1.0
        sent_at = self.clock - 0.5 if sent is None else sent
        if outcome is not None:
            outcome = attrs.evolve(outcome, sent_at=sent_at)
        self.steps.append(StepRecord(len(self.steps) + 1, client, kind.value, request, via=via, kind=kind,
                                     outcome=outcome, fault=fault, sent_at=sent_at, done_at=self.clock,
                                     answers_behind=answers_behind))
        return self

    def verdicts(self, spec=SPEC, **kw):
        return judge(history_of(self.steps), spec, **kw)


def req(seq_id, value, start=False, end=False):
    return Request("m", seq_id, value, start=start, end=end)


def ok(value, *partials):
    return Outcome(value, partials=partials)


def broken(verdicts):
    return [v for v in verdicts if v.verdict == "broken"]


def test_a_sequence_answered_with_its_running_sums_is_kept():
    p = Program().add(request=req(5, 1, start=True), outcome=ok(1)).add(request=req(5, 2), outcome=ok(3)) \
        .add(request=req(5, 4, end=True), outcome=ok(7))
    (v,) = p.verdicts()
    assert v.verdict == "kept" and v.ops == 3


def test_a_wrong_running_sum_is_broken_at_its_step_with_what_it_could_have_been():
    p = Program().add(request=req(5, 1, start=True), outcome=ok(1)).add(request=req(5, 2), outcome=ok(2))
    (v,) = broken(p.verdicts())
    assert (v.invariant, v.step, v.possible) == ("sums_match", 2, (3,))
    assert "step 2 got OUTPUT=2" in v.describe() and "could only be 3" in v.describe()


def test_an_answer_after_the_end_breaks_start_is_required():
    p = Program().add(request=req(5, 1, start=True, end=True), outcome=ok(1)).add(request=req(5, 2), outcome=ok(3))
    (v,) = broken(p.verdicts())
    assert (v.invariant, v.possible) == ("start_is_required", (None,))


def test_a_refusal_did_not_run_and_is_not_judged():
    refused = Outcome(status="INVALID_ARGUMENT", message="must specify the START flag")
    p = Program().add(request=req(5, 2), outcome=refused).add(request=req(5, 1, start=True), outcome=ok(1)) \
        .add(request=req(5, 9), outcome=refused).add(request=req(5, 2), outcome=ok(3))
    assert [v.verdict for v in p.verdicts()] == ["kept"]


def test_an_answer_without_its_output_ran_to_a_sum_nobody_saw():
    """A response with no OUTPUT is the model's answer: the request ran (its sum went on), so the
    next answer is judged with it counted, and without it too (its sum was not seen)."""
    bare = Outcome(status="BAD_RESPONSE", message="no OUTPUT in response")
    p = Program().add(request=req(5, 1, start=True), outcome=ok(1))
    p.add(request=req(5, 2), outcome=bare).add(request=req(5, 4), outcome=ok(7))
    assert [v.verdict for v in p.verdicts()] == ["kept"], "it ran: 1 + 2 + 4"


@pytest.mark.parametrize("answers, verdict", [
    ((7, 5), "kept"),  # both sent before either answer came: the second client's ran first
    ((3, 5), "broken"),  # each answer is some order's, but no one order gives both
])
def test_requests_in_flight_together_from_two_clients_are_explained_by_one_order(answers, verdict):
    p = Program().add(request=req(5, 1, start=True), outcome=ok(1))
    p.add(Kind.SHARED, req(5, 2), client=0).add(Kind.SHARED, req(5, 4), client=1)
    p.add(Kind.SHARED_ANSWER, req(5, 2), ok(answers[0]), client=0, sent=1.5)
    p.add(Kind.SHARED_ANSWER, req(5, 4), ok(answers[1]), client=1, sent=2.5)
    assert [v.verdict for v in p.verdicts()] == [verdict]


def test_an_answer_that_came_before_a_send_orders_them():
    # the 4 was sent after the 2's answer came: 1 + 4 first is no order the history allows
    p = Program().add(request=req(5, 1, start=True), outcome=ok(1), client=0)
    p.add(request=req(5, 2), outcome=ok(7), client=0, via="grpc").add(request=req(5, 4), outcome=ok(5), client=1,
                                                                     via="grpc")
    (v,) = broken(p.verdicts())
    assert (v.step, v.possible) == (2, (3,))


def test_a_clients_stream_keeps_the_order_sent_even_when_pipelined():
    # pipelined on one stream (each sent before the one ahead was answered): stream order holds
    p = Program().add(request=req(5, 1, start=True), outcome=ok(1))
    p.add(request=req(5, 2), outcome=ok(7), sent=1.6).add(request=req(5, 4), outcome=ok(5), sent=1.7)
    assert [v.invariant for v in broken(p.verdicts())] == ["sums_match"]
    # the same on unary gRPC (no order between concurrent calls) is explained by 4 arriving first
    q = Program().add(request=req(5, 1, start=True), outcome=ok(1))
    q.add(request=req(5, 2), outcome=ok(7), sent=1.6, via="grpc").add(request=req(5, 4), outcome=ok(5), sent=1.7,
                                                                      via="grpc")
    assert [v.verdict for v in q.verdicts()] == ["kept"]


def test_a_streams_order_is_its_sends_not_the_order_its_steps_were_recorded_in():
    """A pipelined run (1+2, then a START of its own id) whose START went to the backlog: its
    QUEUED step is recorded before the answers of the requests sent ahead of it."""
    p = Program().add(request=req(5, 1, start=True), outcome=ok(1))
    p.add(Kind.QUEUED, req(5, 10, start=True), sent=1.7)
    p.add(request=req(5, 2), outcome=ok(3), sent=1.6)
    p.add(Kind.ANSWER, req(5, 10, start=True), ok(10), sent=1.7)
    assert [v.verdict for v in p.verdicts()] == ["kept"]


def test_a_request_whose_answer_does_not_say_may_have_run_then_or_later():
    cancelled = Outcome(status="CANCELLED", message="cancelled by the client")
    p = Program().add(request=req(5, 1, start=True), outcome=ok(1))
    p.add(request=req(5, 2), outcome=cancelled, via="grpc").add(request=req(5, 4), outcome=ok(7))
    assert [v.verdict for v in p.verdicts()] == ["kept"], "it ran"
    q = Program().add(request=req(5, 1, start=True), outcome=ok(1))
    q.add(request=req(5, 2), outcome=cancelled, via="grpc").add(request=req(5, 4), outcome=ok(5))
    assert [v.verdict for v in q.verdicts()] == ["kept"], "it did not"
    r = Program().add(request=req(5, 1, start=True), outcome=ok(1))
    r.add(request=req(5, 2), outcome=cancelled, via="grpc").add(request=req(5, 4), outcome=ok(6))
    assert [v.possible for v in broken(r.verdicts())] == [(5, 7)], "neither explains 6"


def test_a_send_never_answered_may_run_any_time_after_it():
    p = Program().add(request=req(5, 1, start=True), outcome=ok(1)).add(Kind.BEHIND, req(5, 2))
    p.add(request=req(5, 4), outcome=ok(5), via="grpc", client=1).add(request=req(5, 8), outcome=ok(15), via="grpc")
    assert [v.verdict for v in p.verdicts()] == ["kept"]
    ops = history_of(p.steps).ops
    assert [(op.step, op.certain, op.completed) for op in ops if not op.certain] == [(2, False, NEVER)]


def test_a_restart_may_end_every_sequence_and_the_deadlines_faults_ids_are_not_judged():
    p = Program().add(request=req(5, 1, start=True), outcome=ok(1)).add(request=req(7, 1, start=True), outcome=ok(1))
    p.add(Kind.FAULT, fault=Fault("restart"), client=None, via="")
    p.add(request=req(5, 2), outcome=ok(3)).add(request=req(7, 2), outcome=ok(3))
    assert {v.verdict for v in p.verdicts()} == {"kept"}, "the restart may not have lost them"
    p.add(Kind.FAULT, fault=Fault("deadlines", ids=(7,), at_once=2, deadline_us=1000), client=None, via="")
    p.add(request=req(7, 2), outcome=ok(99))
    assert {v.key: v.verdict for v in p.verdicts()} == {("u", 5): "kept", ("u", 7): "unknown"}


def test_an_iterative_start_answers_once_per_execution_and_ends_its_sequence():
    spec = attrs.evolve(SPEC, iterations=3)
    p = Program().add(request=req(5, 2, start=True), outcome=ok(6, 2, 4))
    assert [v.verdict for v in p.verdicts(spec)] == ["kept"]
    cut_short = Program().add(request=req(5, 2, start=True), outcome=ok(6, 2))
    assert [v.invariant for v in broken(cut_short.verdicts(spec))] == ["sums_match"]
    after = Program().add(request=req(5, 2, start=True), outcome=ok(6, 2, 4)).add(request=req(5, 1), outcome=ok(7))
    assert [v.invariant for v in broken(after.verdicts(spec))] == ["start_is_required"]


def test_a_model_that_carries_no_state_taken_as_built():
    p = Program().add(request=req(5, 1, start=True), outcome=ok(1)).add(request=req(5, 2), outcome=ok(2))
    assert [v.verdict for v in p.verdicts(carries_state=False)] == ["kept"]


def test_a_search_past_its_budget_is_unknown_not_kept():
    cancelled = Outcome(status="CANCELLED", message="cancelled by the client")
    p = Program().add(request=req(5, 1, start=True), outcome=ok(1))
    for value in range(2, 10):
        p.add(request=req(5, value), outcome=cancelled, via="grpc")
    p.add(request=req(5, 1000), outcome=ok(-1))
    assert [v.verdict for v in p.verdicts(budget=200)] == ["unknown"]
    assert [v.verdict for v in p.verdicts()] == ["broken"]


def test_without_saved_times_steps_are_placed_by_their_order():
    p = Program().add(request=req(5, 1, start=True), outcome=ok(1))
    p.add(Kind.HELD, req(5, 2), client=0).add(Kind.HELD, req(5, 4), client=1)
    p.add(Kind.HELD_ANSWER, req(5, 2), ok(7), client=0).add(Kind.HELD_ANSWER, req(5, 4), ok(5), client=1)
    untimed = [attrs.evolve(s, sent_at=None, done_at=None, outcome=s.outcome and attrs.evolve(s.outcome, sent_at=None))
               for s in p.steps]
    history = history_of(untimed)
    assert not history.timed and all(op.channel is None for op in history.ops)
    assert [(op.step, op.invoked, op.completed) for op in history.ops] == [(1, -NEVER, 0.0), (4, 0.0, 3.0),
                                                                            (5, 0.0, 4.0)]
    assert [v.verdict for v in judge(history, SPEC)] == ["kept"]


def test_the_corpus_keeps_step_times_and_rejudge_judges_them_without_a_server(tmp_path):
    p = Program().add(request=req(5, 1, start=True), outcome=ok(1)).add(request=req(5, 2), outcome=ok(2))
    steps = [attrs.evolve(s, sent_at=s.sent_at + 1000.0, done_at=s.done_at + 1000.0) for s in p.steps]
    entry = corpus.make_entry(SPEC, "2.51.0", "sums_match", "wrong running sum", steps)
    path = corpus.write(tmp_path, entry)
    saved = json.loads(path.read_text())["steps"]
    assert [s["at"] for s in saved] == [[0.0, 0.5], [1.0, 1.5]], "seconds from the first send"
    assert "sent_at" not in saved[0]["outcome"], "no clock reading of the run that saved it"
    back = corpus.load(path)
    assert [(s.sent_at, s.done_at) for s in back.steps] == [(0.0, 0.5), (1.0, 1.5)]
    run = subprocess.run([sys.executable, "-m", "fuzz.rejudge", str(tmp_path)], cwd=ROOT, capture_output=True,
                         text=True)
    assert run.returncode == 1, run.stderr
    assert "1 broken" in run.stdout and "step 2 got OUTPUT=2" in run.stdout and "could only be 3" in run.stdout
    bad = subprocess.run([sys.executable, "-m", "fuzz.rejudge", str(tmp_path / "nothing.json")], cwd=ROOT,
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "no such file" in bad.stderr


def test_rejudge_runs_the_judges_of_single_steps_too(tmp_path):
    """An answer of the right sum but the wrong shape: the history checker explains every sum,
    and answers_well_formed (a judge of each step) finds the step."""
    p = Program().add(request=req(5, 1, start=True), outcome=attrs.evolve(ok(1), shape=(1, 2))) \
        .add(request=req(5, 2), outcome=attrs.evolve(ok(3), shape=(1, 1), datatype="INT32"))
    corpus.write(tmp_path, corpus.make_entry(SPEC, "2.51.0", "answers_well_formed", "shape", p.steps))
    run = subprocess.run([sys.executable, "-m", "fuzz.rejudge", str(tmp_path)], cwd=ROOT, capture_output=True,
                         text=True)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "0 broken" in run.stdout and "1 step(s) breaking a judge's promise" in run.stdout
    assert "[answers_well_formed] step 1: OUTPUT came back shaped [1, 2]" in run.stdout


def test_an_entry_saved_before_times_were_kept_loads_untimed(tmp_path):
    p = Program().add(request=req(5, 1, start=True), outcome=ok(1))
    entry = corpus.make_entry(SPEC, "2.51.0", "sums_match", "x", p.steps)
    data = entry.to_json()
    for s in data["steps"]:
        del s["at"]
    back = corpus.CorpusEntry.from_json(data)
    assert back.steps[0].sent_at is None and not history_of(back.steps).timed
    data["steps"][0]["at"] = [2.0, 1.0]
    try:
        corpus.CorpusEntry.from_json(data, "x.json")
    except corpus.CorpusError as err:
        assert "sent <= done" in str(err)
    else:
        raise AssertionError("a step sent after it was done loads")


def test_a_queue_sent_back_to_back_is_one_line_of_the_program_text_and_every_step_is_kept():
    from fuzz.values import Kind, Request, StepRecord, program_lines
    req = Request(model="m", seq_id=9, value=1)
    start = StepRecord(0, 0, "start", Request(model="m", seq_id=9, value=1, start=True), via="stream")
    behind = [StepRecord(i, 0, "one more behind it on its stream", req, via="stream", kind=Kind.BEHIND) for i in range(1, 201)]
    other = StepRecord(201, 0, "one more behind it on its stream", Request(model="m", seq_id=9, value=2), via="stream",
                       kind=Kind.BEHIND)
    lines = program_lines([start, *behind, other])
    assert len(lines) == 3 and lines[0] == start.describe() and lines[2] == other.describe()
    assert lines[1].startswith(behind[0].describe()) and lines[1].endswith("... and 199 more alike, sent back to back "
                                                                          "(steps 2-200)")
    assert program_lines(behind[:2]) == [s.describe() for s in behind[:2]]  # two are two lines


def test_a_queue_of_alike_requests_that_may_have_run_is_judged_by_how_many_ran():
    # cancel_pipelined's queue behind its first: hundreds of alike requests, none answered. Which
    # of them ran is a count, not a subset: the search judges it, where 2^k subsets spent its budget.
    def queue(witness_sum, k=300):
        p = Program().add(request=req(5, 1, start=True), outcome=ok(1))
        for _ in range(k):
            p.add(Kind.BEHIND, req(5, 1))
        return p.add(request=req(5, 2), outcome=ok(witness_sum), via="grpc", client=1)
    for ran in (0, 57, 300):
        assert [v.verdict for v in queue(1 + ran + 2).verdicts()] == ["kept"], ran
    (v,) = broken(queue(1 + 301 + 2).verdicts())  # more of them than were sent
    assert v.invariant == "sums_match" and v.possible == tuple(range(3, 304))
    # twins are alike requests sent together: others are no twins of them, and an answer to one
    # (on its stream's order) is no twin either
    p = Program().add(request=req(5, 1, start=True), outcome=ok(1))
    p.add(Kind.BEHIND, req(5, 1)).add(Kind.BEHIND, req(5, 2)).add(Kind.BEHIND, req(5, 1))
    p.add(request=req(5, 4), outcome=ok(1 + 2 + 4), via="grpc", client=1)  # only the 2 ran: a subset, no prefix
    assert [v.verdict for v in p.verdicts()] == ["kept"]


CANCELLED = Outcome(None, "CANCELLED", "")  # failed with the cancelled request it was queued behind
NO_START = Outcome(None, "INVALID_ARGUMENT", "must specify the START flag")


def cancel_group(behind_answers, witness, after, *, behind=(4, 8)):
    """A cancel_pipelined group on a sequence of sum 1: the first (2) on unary gRPC, the requests
    `behind` on the client's stream, a witness (16), the cancel (what each one behind had
    answered), the two answers, and the next request (32)."""
    p = Program().add(request=req(5, 1, start=True), outcome=ok(1))
    p.add(Kind.ASIDE, req(5, 2), via="grpc")
    for value in behind:
        p.add(Kind.BEHIND, req(5, value))
    p.add(Kind.ASIDE, req(5, 16), via="grpc")
    p.add(Kind.CANCEL_STREAM, via="", answers_behind=behind_answers)
    p.add(Kind.ASIDE_ANSWER, req(5, 2), ok(3), via="grpc", sent=1.5)  # (their client's clock at the sends)
    p.add(Kind.ASIDE_ANSWER, req(5, 16), witness, via="grpc", sent=1.5 + len(behind) + 1)
    return p.add(Kind.AFTER_CANCEL, req(5, 32), after, via="grpc")


def test_a_swept_witness_ends_its_sequence_so_an_answer_after_it_breaks_cancel_ends_sequence():
    assert [v.verdict for v in cancel_group((ok(7), None), CANCELLED, NO_START).verdicts()] == ["kept"]
    # the sequence went on after the witness failed with the cancelled request: no order explains it
    (v,) = broken(cancel_group((ok(7), None), CANCELLED, ok(1 + 2 + 4 + 32)).verdicts())
    assert (v.invariant, v.step, v.possible) == ("cancel_ends_sequence", 9, (None,))
    assert "the sequence ended there" in v.describe()
    # a witness that ran says the sequence went on: its sum, then the next request's
    assert [v.verdict for v in cancel_group((ok(7), None), ok(1 + 2 + 4 + 16), ok(1 + 2 + 4 + 16 + 32)).verdicts()] \
        == ["kept"]
    # a witness answered START-flag error (the sequence ended before it came) is a refusal, left out
    assert [v.verdict for v in cancel_group((ok(7), None), NO_START, NO_START).verdicts()] == ["kept"]


def test_the_answers_behind_at_the_cancel_ran_in_their_stream_s_order():
    # the first behind answered 7: the first (answered 3) ran before it
    assert [v.verdict for v in cancel_group((ok(7), None), CANCELLED, NO_START).verdicts()] == ["kept"]
    for wrong in (9, 5):  # 5: as if the first had not run yet, but its answer says it had
        (v,) = broken(cancel_group((ok(wrong), None), CANCELLED, NO_START).verdicts())
        # named at the cancel, the step that recorded the answers behind (or at the first's answer)
        assert v.invariant == "sums_match" and v.step in (6, 7), v
    # both answered: the second's sum holds the first's (their stream kept their order: 8 before
    # 4 would have answered 11, then 15)
    assert [v.verdict for v in cancel_group((ok(7), ok(15)), CANCELLED, NO_START).verdicts()] == ["kept"]
    assert broken(cancel_group((ok(15), ok(11)), CANCELLED, NO_START).verdicts())
    # not answered at the cancel: they may have run, then or later (the witness ran after both)
    assert [v.verdict for v in cancel_group((None, None), ok(1 + 2 + 4 + 8 + 16), NO_START).verdicts()] == ["kept"]


def test_a_deep_queue_half_answered_is_judged_with_those_not_answered_after_those_that_were():
    # 256 behind, the first 128 answered at the cancel, 64 more ran before the witness and the rest
    # before the next request: the ones not answered came after the answered on their stream,
    # which the search keeps (without it, a wrong sum after the group spent the budget: "unknown")
    def deep(after_sum, before_witness=128 + 64):
        p = Program().add(request=req(5, 1, start=True), outcome=ok(1))
        p.add(Kind.ASIDE, req(5, 2), via="grpc")
        for _ in range(256):
            p.add(Kind.BEHIND, req(5, 1))
        p.add(Kind.ASIDE, req(5, 16), via="grpc")
        p.add(Kind.CANCEL_STREAM, via="", answers_behind=[ok(3 + k) for k in range(1, 129)] + [None] * 128)
        p.add(Kind.ASIDE_ANSWER, req(5, 2), ok(3), via="grpc", sent=1.5)
        p.add(Kind.ASIDE_ANSWER, req(5, 16), ok(3 + before_witness + 16), via="grpc", sent=p.clock - 2.5)
        return p.add(Kind.AFTER_CANCEL, req(5, 32), ok(after_sum), via="grpc")
    assert [v.verdict for v in deep(3 + 256 + 16 + 32).verdicts()] == ["kept"]
    (v,) = deep(3 + 256 + 16 + 32 + 1000).verdicts()
    assert v.verdict == "broken" and v.invariant == "sums_match", v
    # the witness, answered after the cancel, cannot have run before the 128 that had answered
    (v,) = deep(3 + 100 + 16 + 32, before_witness=100).verdicts()
    assert v.verdict == "broken" and v.invariant == "sums_match", v


def test_a_cancel_whose_requests_behind_a_shrink_cut_says_nothing_of_them():
    # two answers kept, one request behind left: which answer is whose is not known, none is taken
    p = cancel_group((ok(7), ok(15)), CANCELLED, NO_START, behind=(4,))
    assert [v.verdict for v in p.verdicts()] == ["kept"]
    assert all(not op.certain for op in history_of(p.steps).ops if op.request and op.request.value == 4)


def test_a_second_group_s_answers_behind_are_its_own_not_those_an_earlier_cancel_left_open():
    # the first group's second request behind never answered (it stays a send that may have run);
    # the second group's one answer behind is its own request's, not that one's
    first = cancel_group((ok(7), None), ok(1 + 2 + 4 + 16), ok(1 + 2 + 4 + 16 + 32))
    p = Program()
    p.steps, p.clock = list(first.steps), first.clock
    p.add(Kind.ASIDE, req(5, 64), via="grpc").add(Kind.BEHIND, req(5, 128))
    p.add(Kind.CANCEL_STREAM, via="", answers_behind=(ok(55 + 64 + 128),))
    p.add(Kind.ASIDE_ANSWER, req(5, 64), ok(55 + 64), via="grpc", sent=p.clock - 2.5)
    history = history_of(p.steps)
    (second,) = [op for op in history.ops if op.request is not None and op.request.value == 128]
    assert second.certain and second.outcome.value == 55 + 64 + 128
    assert not next(op for op in history.ops if op.request is not None and op.request.value == 8).certain
    assert [v.verdict for v in p.verdicts()] == ["kept"]


def test_the_corpus_keeps_what_each_request_behind_had_answered_at_the_cancel():
    p = cancel_group((ok(7), None), CANCELLED, NO_START)
    (cancel,) = [s for s in p.steps if s.kind is Kind.CANCEL_STREAM]
    d = corpus._step_to_json(cancel)
    assert d["answers_behind"][1] is None and d["answers_behind"][0]["value"] == 7
    back = corpus._step_from_json(json.loads(json.dumps(d)), 0)
    assert [o and o.value for o in back.answers_behind] == [7, None]
    assert "answers_behind" not in corpus._step_to_json(p.steps[0])  # other steps' JSON is as before
