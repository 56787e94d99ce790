"""The pure parts of shrinking a program past Hypothesis (fuzz/corpus/shrink.py): what a removal leaves,
folded sums, moved ids. The live part (polishing a failure against a broken model) runs in
tests/test_broken_models.py."""
import attrs

from fuzz.corpus.shrink import (DDMIN_PASSES, by_sequence, crowd_cores, crowd_layers, every_wait, focus_cuts, quiet,
                                shifted, start_later, started_later, unended, without)
from fuzz.spec import ModelSpec
from fuzz.values import Kind, Outcome, Request, StepRecord

SPEC = ModelSpec(name="m", dtype="INT32", strategy="direct", slots_per_instance=2, instances=1, idle_s=0.5,
                 max_batch_size=4, controls=frozenset({"START", "END", "READY"}), corrid_type=None,
                 implicit_state=False)
OK = Outcome(0)
REFUSED = Outcome(status="INVALID_ARGUMENT", message="must specify the START flag")


def req(i, seq_id, value, start=False, end=False, outcome=OK, kind=Kind.REQUEST, **kw):
    return StepRecord(index=i, client=0, action="a", request=Request("m", seq_id, value, start=start, end=end, **kw),
                      kind=kind, outcome=outcome)


def sent(steps):
    return [(s.request.seq_id, s.request.value, s.request.start, s.request.end) for s in steps]


def failing_while(fails, tries, seen):
    """A stand-in for a live replay of a cut: notes seen(kept) in tries, and breaks sums_match
    while fails(kept)."""
    from fuzz.checker.invariants import InvariantViolation

    def try_(kept):
        tries.append(seen(kept))
        if not fails(kept):
            return None
        v = InvariantViolation("sums_match", "wrong running sum")
        v.program = kept
        return v
    return try_


def test_a_removed_request_of_a_running_sequence_folds_into_the_one_before():
    # start a 0; start b 1; continue a 1; restart a 0 -> without "continue a": a's START carries
    # its value, so the restart's answer still shows a sum that START should have reset.
    steps = [req(1, 5, 0, start=True), req(2, 13, 1, start=True), req(3, 5, 1), req(4, 5, 0, start=True)]
    assert sent(without(steps, {2}, SPEC)) == [(5, 1, True, False), (13, 1, True, False), (5, 0, True, False)]
    # ... and a run's requests all fold into its START: the sum it reached, in one request
    run = [req(1, 7, 30000, start=True), req(2, 7, 2000), req(3, 7, 700, end=True)]
    assert sent(without(run, {1, 2}, SPEC)) == [(7, 32700, True, True)]


def test_a_fold_stays_inside_its_sequence_and_its_answers():
    steps = [req(1, 5, 4, start=True), req(2, 5, 1, end=True),  # a first sequence on id 5, ended
             req(3, 5, 2, outcome=REFUSED),  # refused: it summed to nothing
             req(4, 5, 3, start=True), req(5, 5, 6),  # a second one
             req(6, 5, 9, batch=2)]  # a misuse: not a sum
    # A refused request, a misuse and a request whose START is removed too are dropped, not folded.
    assert sent(without(steps, {2, 5}, SPEC)) == sent(steps[:2] + steps[3:5])
    assert sent(without(steps, {3, 4}, SPEC)) == sent(steps[:3] + steps[5:])
    # Into an ended sequence, nothing folds: the request after END started nothing.
    assert sent(without(steps, {1}, SPEC))[0] == (5, 5, True, True)
    assert sent(without(steps[:2] + [req(3, 5, 7)], {2}, SPEC)) == sent(steps[:2])


def test_a_fold_that_would_leave_the_exact_range_drops_instead():
    big = 2**31 - 1
    # sums -big, 0, big: each in range, though the last two values add up to 2 * big
    steps = [req(1, 5, -big, start=True), req(2, 5, big), req(3, 5, big)]
    assert sent(without(steps, {2}, SPEC)) == sent(steps[:2])
    assert sent(without(steps, {1}, SPEC)) == [(5, 0, True, False), (5, big, False, False)]


def test_a_queued_start_takes_folds_and_its_answer_step_stays():
    queued = attrs.evolve(req(1, 5, 2, start=True, outcome=None), kind=Kind.QUEUED)
    answer = attrs.evolve(req(2, 5, 2, start=True), kind=Kind.ANSWER, index=2)
    steps = [queued, answer, req(3, 5, 3)]
    assert sent(without(steps, {2}, SPEC)) == [(5, 5, True, False), (5, 2, True, False)]
    # a restart sent with others at once (a crowd's) begins a new sum: nothing after it folds before it
    restart = [req(1, 5, 1, start=True), req(2, 5, 3, start=True, kind=Kind.HELD), req(3, 5, 4)]
    assert sent(without(restart, {2}, SPEC)) == sent(restart[:2])


def test_moved_ids_keep_equalities_and_congruences():
    steps = [req(1, 5, 0, start=True), req(2, 5 + 2**32, 0, start=True), req(3, "5", 0, start=True),
             req(4, "abc", 0, start=True), req(5, 2**64 - 1, 0, start=True), req(6, 0, 0), req(7, "", 0),
             req(8, "L" * 130, 0), req(9, "x" * 128, 0),
             StepRecord(index=10, client=None, action="leave to expire", kind=Kind.LEAVE_TO_EXPIRE)]
    offset = 0x9E3779B97F4A7C15
    ids = [s.request.seq_id if s.request else None for s in shifted(steps, offset, "p1.")]
    assert ids[0] == 5 + offset and ids[1] - ids[0] == 2**32
    assert ids[2] == str(ids[0])  # 5 and "5" stay twins
    assert ids[3] == "p1.abc" and ids[4] == (2**64 - 1 + offset) % 2**64
    assert ids[5:7] == [0, ""]  # misuse ids stay what they are
    assert ids[7] == "p1." + "L" * 130  # still too long
    assert len(ids[8]) == 128  # still a valid id
    assert ids[9] is None
    # a cut of a cut: the next try's tag replaces the last one's, it does not stack
    again = [s.request.seq_id if s.request else None for s in shifted(shifted(steps, offset, "p1."), offset, "p2.")]
    assert again[3] == "p2.abc" and again[7] == "p2." + "L" * 130


def test_a_held_request_and_its_answer_go_together():
    """A burst's (or a full batch's) request sent without waiting, and the step that checks its
    answer: removing either removes both, or the request would race the program's next one."""
    def held(i, client, seq_id, kind):
        return attrs.evolve(req(i, seq_id, 1, start=True), client=client, kind=kind)

    steps = [held(1, 0, 5, Kind.HELD), held(2, 1, 6, Kind.HELD), held(3, 0, 5, Kind.HELD_ANSWER),
             held(4, 1, 6, Kind.HELD_ANSWER), req(5, 5, 2, end=True)]
    assert [s.index for s in without(steps, {2}, SPEC)] == [2, 4, 5]  # 0's answer: 0's request too
    assert [s.index for s in without(steps, {1}, SPEC)] == [1, 3, 5]  # 1's request: its answer too
    assert [s.index for s in without(steps, {4}, SPEC)] == [1, 2, 3, 4]


def test_every_wait_for_an_idle_timeout_is_one_unit_and_goes_first():
    """Most bugs need no wait, and each costs every later try a second or more."""
    wait = StepRecord(index=2, client=None, action="leave 1 sequence(s) to expire", kind=Kind.LEAVE_TO_EXPIRE)
    silent = StepRecord(index=4, client=None, action="go silent", kind=Kind.GO_SILENT)
    steps = [req(1, 5, 1, start=True), wait, req(3, 6, 1, start=True), silent, req(5, 5, 2)]
    assert every_wait(steps) == [[1, 3]]
    assert every_wait(steps[:1]) == []
    assert DDMIN_PASSES[0] is every_wait


def test_a_timed_removal_keeps_the_gap_before_the_request_after_it_and_quiet_drops_silences():
    # start a at 0.00-0.01 s; b's requests fill 0.01-0.30 s; a goes on at 0.30 s. Without b, a's
    # request still waits 0.29 s after its START: a bug of gaps (state with a shorter life than
    # the idle window) fails again. Untimed, or when nothing before it went, no silence is added.
    at = lambda s, sent, done: attrs.evolve(s, sent_at=sent, done_at=done)  # noqa: E731
    steps = [at(req(1, 5, 1, start=True), 0.0, 0.01), at(req(2, 13, 1, start=True), 0.01, 0.02),
             at(req(3, 13, 2), 0.02, 0.30), at(req(4, 5, 3), 0.30, 0.31)]
    timed = without(steps, {1, 2}, SPEC, timed=True)
    assert [s.index for s in timed] == [1, 4] and timed[1].wait_s == 0.29
    assert [s.wait_s for s in without(steps, {1, 2}, SPEC)] == [0.0, 0.0]
    assert [s.wait_s for s in without(steps, {2}, SPEC, timed=True)] == [0.0, 0.0, 0.28]
    assert [s.wait_s for s in without(steps, {0}, SPEC, timed=True)] == [0.0, 0.0, 0.0]  # b's START: no kept step before
    assert [s.wait_s for s in quiet(timed)] == [0.0, 0.0] and quiet(timed)[1].request == timed[1].request


def test_a_crowd_is_cut_a_layer_at_a_time_and_stays_a_crowd():
    # sequences 5 (START and three more) and 6 (three, no START) pipelined at once, then answers
    held = [req(1, 5, 1, start=True, kind=Kind.HELD), req(2, 5, 1, kind=Kind.HELD), req(3, 5, 1, kind=Kind.HELD),
            req(4, 5, 1, kind=Kind.HELD), req(5, 6, 1, kind=Kind.HELD), req(6, 6, 1, kind=Kind.HELD),
            req(7, 6, 1, kind=Kind.HELD)]
    answers = [attrs.evolve(s, index=8 + i, kind=Kind.HELD_ANSWER) for i, s in enumerate(held)]
    steps = [req(0, 6, 1, start=True), *held, *answers, req(15, 9, 1, start=True, kind=Kind.HELD)]
    # the last of each sequence, the one before each, ...; a START stays; a lone HELD run of one
    # START has no layer
    assert crowd_layers(steps) == [[4, 7], [3, 6], [2, 5]]
    assert crowd_layers(steps[:1]) == []
    kept = without(steps, {4, 7}, SPEC)  # with their answers (a held request and its answer go together)
    assert [s.kind for s in kept].count(Kind.HELD) == 6 and [s.kind for s in kept].count(Kind.HELD_ANSWER) == 5
    assert crowd_layers in DDMIN_PASSES


def test_a_program_is_first_cut_to_the_sequences_it_ended_with():
    """Ten sequences one after another, a START and two more requests each; the stand-in for a
    live replay fails while the last two (18 and 19) are there. Focus keeps the last one alone
    (passes), then the last two (fails): two tries, six steps left."""
    import time
    from fuzz.corpus.shrink import focus

    steps = [req(3 * n + k, 10 + n, 1, start=k == 0) for n in range(10) for k in range(3)]
    tries = []
    try_ = failing_while(lambda kept: {18, 19} <= {s.request.seq_id for s in kept}, tries, len)
    found = try_(steps)
    cut = focus(found, try_, lambda v: v.program, SPEC, time.monotonic() + 10)
    assert [s.request.seq_id for s in cut.program] == [18, 18, 18, 19, 19, 19]
    assert tries[1:] == [3, 6]
    # nothing shorter fails: the program as it was
    assert focus(cut, try_, lambda v: v.program, SPEC, time.monotonic() + 10) is cut


def test_a_program_is_cut_to_the_sequences_no_end_closed_when_the_last_alone_passes():
    """Twelve sequences, every third left without END (to its idle timeout), with a wait step after
    each: the stand-in fails while all four unended ones are there (a table that only idle
    timeouts fill). The last alone passes; the unended ones, the waits and the last fail at once,
    where the last 2, 4, 8 would not (their first tries were 1 and 4 sequences)."""
    import time
    from fuzz.corpus.shrink import focus

    steps = []
    for n in range(12):
        ended = n % 3 != 0 or n == 11
        steps += [req(0, 10 + n, 1, start=True), req(0, 10 + n, 1, end=ended)]
        if not ended:
            steps.append(StepRecord(index=0, client=None, action="leave 1 sequence(s) to expire", kind=Kind.LEAVE_TO_EXPIRE))
    steps = [attrs.evolve(s, index=i + 1) for i, s in enumerate(steps)]
    tries = []
    try_ = failing_while(lambda kept: {10, 13, 16, 19, 21} <= {s.request.seq_id for s in kept if s.request},
                         tries, lambda kept: sorted({s.request.seq_id for s in kept if s.request}))
    found = try_(steps)
    cut = focus(found, try_, lambda v: v.program, SPEC, time.monotonic() + 10)
    assert sorted({s.request.seq_id for s in cut.program if s.request}) == [10, 13, 16, 19, 21]
    assert sum(1 for s in cut.program if s.request is None) == 4  # the waits stay
    assert tries[1:] == [[21], [10, 13, 16, 19, 21]]


def test_a_misuse_on_an_id_no_sequence_lived_on_is_no_sequence_left_open():
    """Requests refused on an id (a misuse: an empty id, no START) left nothing in the server, so
    focus's cut of the sequences left open does not keep them (seen: two in a 10-step program, the
    shrink's budget gone before single steps). One that may have run (cancelled) is kept, and so is
    a misuse's group that holds a step sending nothing (its client's next step, filed with it)."""
    empty_id = Outcome(status="INVALID_ARGUMENT", message="must specify a non-zero or non-empty correlation ID")
    steps = [req(1, "", 5, start=True, outcome=empty_id), req(2, 7, 1, start=True), req(3, "", 5, outcome=REFUSED),
             req(4, 8, 1, start=True, outcome=Outcome(status="CANCELLED")), req(5, 7, 2, end=True)]
    assert unended(steps) == [[3]]  # id 8's START may have run; id 7 ended; the misuses left nothing
    # focus's first cuts (what each removes): all but the last sequence (9), all but it and the one
    # left open (8; with the misuses counted open, it removed id 7 only), all but the last two
    ended = steps + [req(6, 9, 1, start=True, end=True)]
    assert focus_cuts(ended)[:3] == [{0, 1, 2, 3, 4}, {0, 1, 2, 4}, {0, 2, 3}]
    close = StepRecord(index=6, client=0, action="close its stream", kind=Kind.CLOSE_STREAM)
    with_close = [steps[0], close] + [attrs.evolve(s, client=c) for s, c in zip(steps[1:], (1, 2, 3, 1))]
    assert unended(with_close) == [[0, 1, 3], [4]]


def test_a_program_that_needs_most_of_its_sequences_is_cut_by_halving_past_its_last_half():
    """Forty sequences, a START+END each, and the first one's next request at the end: the
    stand-in fails while sequence 10 (the first) and at least 25 others are there (a cache of 25
    that evicts the oldest). The last one, the last two and the last half (20) pass; no cut of
    the half is tried (it keeps fewer sequences than one that passed); halving past it finds the
    26 that fail in a few tries."""
    import time
    from fuzz.corpus.shrink import focus

    steps = [req(0, 10, 1, start=True)] + [req(0, 11 + n, 1, start=True, end=True) for n in range(39)]
    steps = [attrs.evolve(s, index=i + 1) for i, s in enumerate(steps + [req(0, 10, 1)])]
    tries = []
    try_ = failing_while(lambda kept: kept[-1].request.seq_id == 10 and len(kept) >= 27, tries,
                         lambda kept: len({s.request.seq_id for s in kept}))
    found = try_(steps)
    cut = focus(found, try_, lambda v: v.program, SPEC, time.monotonic() + 10)
    assert len({s.request.seq_id for s in cut.program}) == 26  # 10 and the last 25 others
    assert tries[1:] == [1, 2, 20, 30, 25, 27, 26]  # sequences kept: ..., then halving 20..40


def test_a_cut_to_the_last_sequence_keeps_the_time_the_others_filled_where_the_bug_needs_it():
    """Sequence 5 starts, sequences 6 and 7 fill 0.8 s, then 5 goes on: a stand-in for a model
    whose sum lives 0.75 s from its START fails only when that request comes 0.75 s or more after
    the one before it. Cut to sequence 5 alone, it passes at once; kept as silence, the time the
    others took makes it fail again: 5's two requests, the second after 0.79 s."""
    import time
    from fuzz.corpus.shrink import focus

    at = lambda s, sent, done: attrs.evolve(s, sent_at=sent, done_at=done)  # noqa: E731
    steps = [at(req(0, 5, 1, start=True), 0.0, 0.01)]
    steps += [at(req(1 + i, 6 + i // 2, 1, start=i % 2 == 0), 0.01 + 0.2 * i, 0.2 + 0.2 * i) for i in range(4)]
    steps += [at(req(5, 5, 1), 0.8, 0.81)]
    tries = []
    try_ = failing_while(lambda kept: kept[-1].request.seq_id == 5 and kept[-1].wait_s + sum(
        0.2 for s in kept[:-1] if s.request.seq_id != 5) >= 0.75, tries, lambda kept: [round(s.wait_s, 2) for s in kept])
    found = try_(steps)
    cut = focus(found, try_, lambda v: v.program, SPEC, time.monotonic() + 10)
    assert [s.request.seq_id for s in cut.program] == [5, 5] and cut.program[1].wait_s == 0.79
    assert tries[1:] == [[0.0, 0.0], [0.0, 0.79]]  # the plain cut, then the one keeping the time


def test_the_requests_sent_alone_fold_into_their_starts_in_one_try_and_the_crowd_stays():
    """A sequence built up by six requests sent alone, then a crowd with one of its requests: a
    crowd's bug needs the crowd, not how the sum was built. One removal folds the six into the
    START (its sum the same) and keeps the crowd, where single steps would take six tries (seen
    live: six such continuations left when the budget ran out)."""
    from fuzz.corpus.shrink import every_plain_continuation
    steps = [req(1, 5, 1, start=True), *[req(i, 5, i) for i in range(2, 8)],
             req(8, 5, 1, kind=Kind.HELD), req(9, 6, 2, start=True, kind=Kind.HELD),
             req(10, 5, 1, kind=Kind.HELD_ANSWER), req(11, 6, 2, start=True, kind=Kind.HELD_ANSWER)]
    assert every_plain_continuation(steps) == [[1, 2, 3, 4, 5, 6]]
    kept = without(steps, set(every_plain_continuation(steps)[0]), SPEC)
    assert sent(kept)[0] == (5, 1 + sum(range(2, 8)), True, False)
    assert [s.kind for s in kept[1:]] == [Kind.HELD, Kind.HELD, Kind.HELD_ANSWER, Kind.HELD_ANSWER]
    assert DDMIN_PASSES.index(every_plain_continuation) < DDMIN_PASSES.index(crowd_layers)


def test_a_sequence_keeps_the_request_that_checks_it_while_the_others_fold_into_its_start():
    """START a, a run of requests on a, four sequences started and ended, then a's next request,
    whose answer shows a's sum lost (a cache of four). Cutting every request after a START cuts
    that last one too, and nothing fails; this pass keeps each sequence's last request (the ENDs
    here, and a's last), folding the rest into their STARTs: one try, 13 steps to 10."""
    from fuzz.corpus.shrink import every_continuation_but_the_last
    steps = [req(1, 5, 1, start=True), *[req(i, 5, i) for i in range(2, 5)]]
    for k, seq_id in enumerate((6, 7, 8, 9)):
        steps += [req(5 + 2 * k, seq_id, 1, start=True), req(6 + 2 * k, seq_id, 2, end=True)]
    steps.append(req(13, 5, 7))
    assert every_continuation_but_the_last(steps) == [[1, 2, 3]]
    kept = without(steps, {1, 2, 3}, SPEC)
    assert sent(kept)[0] == (5, 1 + 2 + 3 + 4, True, False) and sent(kept)[-1] == (5, 7, False, False)
    assert [s.request.end for s in kept[1:9]] == [False, True] * 4
    assert DDMIN_PASSES.index(every_continuation_but_the_last) < DDMIN_PASSES.index(by_sequence)
    assert every_continuation_but_the_last(steps[:1]) == []
    # a sequence restarted on its id keeps the last request of each of its two sequences
    again = [*steps, req(14, 5, 1, start=True), req(15, 5, 2), req(16, 5, 3)]
    assert every_continuation_but_the_last(again) == [[1, 2, 3, 14]]
    # where every request it would cut is one every_plain_continuation cut already: no new try
    assert every_continuation_but_the_last(steps[:4] + [req(14, 5, 1, kind=Kind.HELD)]) == []


def test_each_group_sent_at_once_goes_whole_in_one_try():
    """A share group (three requests of one sequence from three clients, their answers), then a
    crowd right after it, then a cancel group: three units, the families apart even where one
    follows another; requests sent alone are in none."""
    from fuzz.corpus.shrink import sent_together
    kinds = [Kind.REQUEST, *[Kind.SHARED] * 3, *[Kind.SHARED_ANSWER] * 3, Kind.HELD, Kind.HELD, Kind.HELD_ANSWER,
             Kind.HELD_ANSWER, Kind.REQUEST, Kind.ASIDE, Kind.BEHIND, Kind.ASIDE, Kind.CANCEL_STREAM,
             Kind.ASIDE_ANSWER, Kind.ASIDE_ANSWER, Kind.AFTER_CANCEL, Kind.REQUEST]
    steps = [attrs.evolve(req(i, 5, 1), kind=k) for i, k in enumerate(kinds)]
    assert sent_together(steps) == [[1, 2, 3, 4, 5, 6], [7, 8, 9, 10], list(range(12, 19))]
    # two crowds in a row are two groups
    two = [attrs.evolve(req(i, 5, 1), kind=k) for i, k in enumerate([Kind.HELD, Kind.HELD_ANSWER] * 2)]
    assert sent_together(two) == [[0, 1], [2, 3]]
    assert DDMIN_PASSES.index(sent_together) < DDMIN_PASSES.index(by_sequence)


def test_a_cancel_groups_queue_behind_its_first_shortens_a_request_at_a_time_but_its_first():
    """A fast model's queue is hundreds of requests, which sent_together keeps whole: each but the
    first of a run behind the first is a unit of its own (ddmin halves the run in a few tries)."""
    from fuzz.corpus.shrink import queued_behind, sent_together
    kinds = [Kind.REQUEST, Kind.ASIDE, *[Kind.BEHIND] * 4, Kind.ASIDE, Kind.CANCEL_STREAM, Kind.ASIDE_ANSWER,
             Kind.ASIDE_ANSWER, Kind.AFTER_CANCEL, Kind.ASIDE, Kind.BEHIND, Kind.CANCEL_STREAM]
    steps = [attrs.evolve(req(i, 5, 1), kind=k) for i, k in enumerate(kinds)]
    assert queued_behind(steps) == [[4, 5], [3]]  # its end first, halves; never the first of a queue
    assert DDMIN_PASSES.index(sent_together) < DDMIN_PASSES.index(queued_behind) < DDMIN_PASSES.index(by_sequence)


def test_a_crowd_failure_is_first_tried_on_the_sequences_of_its_last_crowd():
    """Sequence 7 lives beside them, and an earlier crowd ran on 5 and 7; the last crowd (5 and
    6) failed. The cores keep 5 and 6 only: first their STARTs and the last crowd alone, then with
    their requests sent alone folded into their STARTs, then as they are."""
    def held(i, seq_id, value, kind=Kind.HELD, **kw):
        return req(i, seq_id, value, kind=kind, **kw)
    steps = [req(1, 5, 1, start=True), req(2, 6, 2, start=True), req(3, 7, 3, start=True),
             held(4, 5, 1), held(5, 7, 1), held(6, 5, 1, kind=Kind.HELD_ANSWER), held(7, 7, 1, kind=Kind.HELD_ANSWER),
             req(8, 5, 4), req(9, 7, 9), req(10, 6, 5),
             held(11, 5, 1, end=True), held(12, 6, 1), held(13, 5, 1, end=True, kind=Kind.HELD_ANSWER),
             held(14, 6, 1, kind=Kind.HELD_ANSWER)]
    skeleton, folded, core = crowd_cores(steps, SPEC)
    assert [s.index for s in core] == [1, 2, 4, 6, 8, 10, 11, 12, 13, 14]
    assert [s.index for s in folded] == [1, 2, 4, 6, 11, 12, 13, 14]
    assert sent(folded)[:2] == [(5, 1 + 4, True, False), (6, 2 + 5, True, False)]  # their sums as they were
    assert [s.index for s in skeleton] == [1, 2, 11, 12, 13, 14]  # the earlier crowd goes too
    assert crowd_cores(steps[:3], SPEC) == []  # nothing sent at once
    # the last step (a request sent alone after the crowd) names a sequence the core keeps too
    later = [*steps, req(15, 7, 1)]
    skeleton, folded = crowd_cores(later, SPEC)  # as they are, it would be the whole program: no core
    assert {s.request.seq_id for s in folded} == {s.request.seq_id for s in skeleton} == {5, 6, 7}
    # a fault struck after the crowd failed (give_up's spared call): its calls are their own crowd
    from fuzz.values import Fault
    give_up = StepRecord(15, None, "calls given up", kind=Kind.FAULT, fault=Fault("give_up", ids=[8, 9], at_once=2))
    assert crowd_cores([*steps, give_up], SPEC) == []


def test_a_crowd_is_tried_one_request_at_a_time_and_kept_where_it_is_needed():
    """Two crowds, each two requests sent at once and their answers. `alone` first sends every
    crowd's requests one at a time (each carrying what its answer checked, the answer steps
    gone), then the last crowd alone. A stand-in for a bug of a count across requests fails
    either way, so the first try stands: 8 steps become 4 plain requests. One of a batch's
    composition (fails only while both crowds are there) keeps its program after the two tries."""
    import time
    from fuzz.corpus.shrink import alone, unheld

    def crowd(i, a, b):
        held = [req(i, a, 1, start=True, kind=Kind.HELD), req(i + 1, b, 2, start=True, kind=Kind.HELD)]
        return held + [attrs.evolve(s, index=s.index + 2, kind=Kind.HELD_ANSWER, outcome=Outcome(s.request.value),
                                    expected=f"OUTPUT={s.request.value}") for s in held]
    steps = crowd(1, 5, 6) + crowd(5, 7, 8)
    plain = unheld(steps, [[0, 1], [4, 5]])
    assert [s.kind for s in plain] == [Kind.REQUEST] * 4 and sent(plain) == sent([steps[i] for i in (0, 1, 4, 5)])
    assert [s.outcome for s in plain] == [Outcome(1), Outcome(2)] * 2 and plain[0].expected == "OUTPUT=1"
    last_alone = unheld(steps, [[4, 5]])
    assert [s.kind for s in last_alone] == [Kind.HELD] * 2 + [Kind.HELD_ANSWER] * 2 + [Kind.REQUEST] * 2

    tries = []
    counting = failing_while(lambda kept: True, tries, lambda kept: [s.kind for s in kept])
    assert [s.kind for s in alone(counting(steps), counting, lambda v: v.program, time.monotonic() + 10).program] == \
        [Kind.REQUEST] * 4
    tries.clear()
    batch = failing_while(lambda kept: [s.kind for s in kept].count(Kind.HELD) == 4, tries, len)
    found = batch(steps)
    assert alone(found, batch, lambda v: v.program, time.monotonic() + 10) is found and tries[1:] == [4, 6]


def test_a_cancel_group_is_tried_as_plain_requests_and_then_folds():
    """A cancel group: the first request aside, three queued behind it on the stream, the
    witness, the cancel, the two answers, the next request. Uncancelled, its five requests go
    one at a time in the order they went (the first and the witness carrying what their answers
    checked), the cancel and the answers gone; a failure that needs no cancel then keeps the
    plain program, whose queue folds like any requests, and one that needs it keeps its group."""
    import time
    from fuzz.corpus.shrink import alone, in_turn, plainly, uncancelled

    first = req(1, 5, 2, kind=Kind.ASIDE, outcome=None)
    behind = [req(2 + k, 5, 4, kind=Kind.BEHIND, outcome=None) for k in range(3)]
    witness = req(5, 5, 64, kind=Kind.ASIDE, outcome=None)
    answers = [attrs.evolve(s, index=7 + k, kind=Kind.ASIDE_ANSWER, outcome=Outcome(v), expected=f"OUTPUT={v}")
               for k, (s, v) in enumerate([(first, 3), (witness, 79)])]
    cancel = StepRecord(index=6, client=0, action="cancel its stream", kind=Kind.CANCEL_STREAM)
    after = attrs.evolve(req(9, 5, 1, kind=Kind.AFTER_CANCEL, outcome=Outcome(80)), expected="OUTPUT=80")
    steps = [req(0, 5, 1, start=True), first, *behind, witness, cancel, *answers, after]
    plain = uncancelled(steps)
    assert [s.kind for s in plain] == [Kind.REQUEST] * 7
    assert sent(plain) == sent([steps[i] for i in (0, 1, 2, 3, 4, 5, 9)])
    assert [s.outcome for s in plain[1:]] == [Outcome(3), None, None, None, Outcome(79), Outcome(80)]
    assert plain[5].expected == "OUTPUT=79" and plain[2].expected == ""
    assert plainly(steps) == plain and in_turn(steps) == steps and uncancelled(plain) == plain
    # the queue's requests, answered in a replay, fold into the request before them
    answered = [attrs.evolve(s, outcome=OK) for s in plain]
    assert sent(without(answered, {2, 3, 4}, SPEC))[1] == (5, 14, False, False)

    tries = []
    needs_no_cancel = failing_while(lambda kept: True, tries, lambda kept: [s.kind for s in kept])
    shrunk = alone(needs_no_cancel(steps), needs_no_cancel, lambda v: v.program, time.monotonic() + 10).program
    assert shrunk == plain
    tries.clear()
    needs_it = failing_while(lambda kept: Kind.CANCEL_STREAM in [s.kind for s in kept], tries, len)
    found = needs_it(steps)
    assert alone(found, needs_it, lambda v: v.program, time.monotonic() + 10) is found and tries[1:] == [7]


def test_a_sequence_whose_age_the_bug_needs_is_thinned_every_other_request():
    """A START and 16 more requests, one every 0.05 s; a stand-in for a model whose sum lives
    0.75 s from its START fails while the last request goes 0.75 s or more after the START and no
    gap reaches 0.35 s (the sequence would idle out). Chunks of requests in a row leave such a
    gap; every other request at a time (kept as silence) does not: ddmin ends at 4 or 5 requests,
    the last one still the one that failed."""
    import time
    from fuzz.corpus.shrink import alternate_continuations, ddmin

    steps = [attrs.evolve(req(i, 5, 1, start=i == 0), sent_at=0.05 * i, done_at=0.05 * i + 0.01) for i in range(17)]

    def fails(kept):
        at, gaps = [], []
        for s in kept:
            gaps.append(s.wait_s + (0.05 if at else 0.0))
            at.append((at[-1] if at else 0.0) + gaps[-1])
        return kept[0].request.start and kept[-1].index == 16 and at[-1] >= 0.75 and max(gaps) < 0.35
    tries = []
    try_ = failing_while(fails, tries, len)
    assert alternate_continuations(steps) == [list(range(15, 0, -2))]
    cut = ddmin(try_(steps), try_, lambda v: v.program, SPEC, time.monotonic() + 10)
    assert len(cut.program) <= 5 and cut.program[-1].index == 16, [(s.index, s.wait_s) for s in cut.program]
    print(len(tries), "tries:", [(s.index, round(s.wait_s, 2)) for s in cut.program])


def test_a_paced_program_keeps_the_gaps_it_was_recorded_with():
    """A replay sends faster than the campaign did: paced keeps each request as far after the step
    before it as it went out (a wait it had already is kept if longer), and leaves steps without
    a recorded time as they are."""
    from fuzz.corpus.shrink import paced

    at = lambda s, sent, done: attrs.evolve(s, sent_at=sent, done_at=done)  # noqa: E731
    steps = [at(req(1, 5, 1, start=True), 0.0, 0.01), at(req(2, 5, 1), 0.15, 0.16),
             attrs.evolve(at(req(3, 5, 1, start=True), 0.2, 0.21), wait_s=0.5), req(4, 5, 1)]
    assert [s.wait_s for s in paced(steps)] == [0.0, 0.14, 0.5, 0.0]
    assert sent(paced(steps)) == sent(steps)


def test_a_clients_pipelined_requests_are_sent_in_turn_and_a_crowd_stays():
    """`in_turn`: a run of HELD steps all of one client (its pipelined requests) becomes plain
    requests, each carrying what its answer checked; a run across clients (a crowd) stays sent at
    once, and so does everything where the server holds STARTs until a batch is full."""
    from fuzz.corpus.shrink import in_turn
    from fuzz.values import Fault

    def held(i, client, seq_id, value, start=False):
        return attrs.evolve(req(i, seq_id, value, start=start, kind=Kind.HELD, outcome=None), client=client)

    def answer(s, i):
        return attrs.evolve(s, index=i, kind=Kind.HELD_ANSWER, outcome=Outcome(s.request.value))
    run = [held(1, 0, 5, 1, start=True), held(2, 0, 5, 2)]
    crowd = [held(5, 1, 6, 3, start=True), held(6, 2, 7, 4, start=True)]
    steps = run + [answer(run[0], 3), answer(run[1], 4)] + crowd + [answer(crowd[0], 7), answer(crowd[1], 8)]
    turned = in_turn(steps)
    assert [s.kind for s in turned] == [Kind.REQUEST] * 2 + [Kind.HELD] * 2 + [Kind.HELD_ANSWER] * 2
    assert [s.outcome for s in turned[:2]] == [Outcome(1), Outcome(2)]
    full = [StepRecord(index=0, client=None, action="full batch", kind=Kind.FAULT, fault=Fault("full_batch")), *steps]
    assert in_turn(full) == full


def test_a_removed_end_does_not_move_past_requests_of_its_sequence_sent_at_once():
    """A removed END after a kept HELD step of its sequence (pipelined, not a START) folds its
    value into the request before the run, but not its END: there it would end the sequence
    ahead of the requests the run sends on it. With no such step between, the END moves."""
    steps = [req(1, 5, 1, start=True), req(2, 5, 2, kind=Kind.HELD, outcome=None),
             req(3, 5, 2, kind=Kind.HELD_ANSWER), req(4, 5, 3, end=True)]
    assert sent(without(steps, {3}, SPEC))[0] == (5, 1 + 3, True, False)
    assert sent(without([steps[0], steps[3]], {1}, SPEC)) == [(5, 1 + 3, True, True)]


def test_focus_cuts_as_programs_come_in_focus_order_each_shorter_and_capped():
    """The programs a long failure is rated on before it is whole (fuzz/corpus/isolate.py): the
    last sequence alone, the last 2, the last half, then the last 4, 8, ...; at most `most`, none
    as long as the program."""
    from fuzz.corpus.shrink import focused

    steps = [req(3 * n + k, 10 + n, 1, start=k == 0, end=k == 2) for n in range(10) for k in range(3)]
    cuts = focused(steps, SPEC, 3)
    assert [sorted({s.request.seq_id for s in c}) for c in cuts] == [[19], [18, 19], [15, 16, 17, 18, 19]]
    assert all(len(c) < len(steps) for c in focused(steps, SPEC, 10))
    # 1, 2, the last half (5), then 4, 8 of 10 sequences: 16 would be the whole
    assert [len({s.request.seq_id for s in c}) for c in focused(steps, SPEC, 10)] == [1, 2, 5, 4, 8]
    assert focused(steps[:3], SPEC, 5) == []  # one sequence: no cut is shorter


def test_ddmin_says_what_focus_left_only_where_it_ran_in_full():
    """A shrink from a fresh model skips focus on a plain cut only where the plain ddmin's focus ran
    in full (isolate: Tried.focused): `on_focus` gets the program focus left, and is not called
    where the deadline cut focus short, nor where `focused` skips it."""
    import time
    from fuzz.corpus.shrink import ddmin

    steps = [req(3 * n + k, 10 + n, 1, start=k == 0) for n in range(10) for k in range(3)]
    try_ = failing_while(lambda kept: {18, 19} <= {s.request.seq_id for s in kept}, [], len)
    seen = []
    ddmin(try_(steps), try_, lambda v: v.program, SPEC, time.monotonic() + 10, on_focus=lambda v: seen.append(len(v.program)))
    assert seen == [6]  # the last two sequences, three steps each
    seen.clear()
    ddmin(try_(steps), try_, lambda v: v.program, SPEC, time.monotonic() - 1, on_focus=lambda v: seen.append(1))
    ddmin(try_(steps), try_, lambda v: v.program, SPEC, time.monotonic() + 10, focused=True,
          on_focus=lambda v: seen.append(1))
    assert seen == []


def test_a_start_moves_into_its_sequences_next_request_held_in_a_crowd():
    # START a; START b; then b's next and a's next at once (HELD, and their answers): a bug of the
    # row a START lands in needs b to begin inside the crowd, one line fewer, which no removal finds
    crowd = [req(1, 5, 1, start=True), req(2, 6, 2, start=True),
             req(3, 6, 3, kind=Kind.HELD), req(4, 5, 4, kind=Kind.HELD),
             req(5, 6, 3, kind=Kind.HELD_ANSWER), req(6, 5, 4, kind=Kind.HELD_ANSWER)]
    later = started_later(crowd, 1, SPEC)
    assert sent(later) == [(5, 1, True, False), (6, 5, True, False), (5, 4, False, False), (6, 5, True, False),
                           (5, 4, False, False)]
    assert [s.kind for s in later] == [Kind.REQUEST, Kind.HELD, Kind.HELD, Kind.HELD_ANSWER, Kind.HELD_ANSWER]
    # none where the next request is a START (nothing to carry it), or the sum leaves the range;
    # where it went alone, it becomes the START with its own value (removing it would fold it into
    # the START: a bug of the inputs after the START needs them as they were)
    assert started_later([req(1, 5, 1, start=True), req(2, 5, 2, kind=Kind.HELD)], 0, SPEC) is not None
    assert sent(started_later([req(1, 5, 1, start=True), req(2, 5, 2), req(3, 5, 3, end=True)], 0, SPEC)) == \
        [(5, 2, True, False), (5, 3, False, True)]
    assert sent(started_later([req(1, 5, 2**31 - 1, start=True), req(2, 5, 1)], 0, SPEC)) == [(5, 1, True, False)]
    assert started_later([req(1, 5, 1, start=True), req(2, 5, 2, kind=Kind.QUEUED)], 0, SPEC) is None
    assert started_later([req(1, 5, 1, start=True), req(2, 5, 2, outcome=REFUSED)], 0, SPEC) is None
    assert started_later([req(1, 5, 1, start=True), req(2, 5, 2, start=True, kind=Kind.HELD)], 0, SPEC) is None
    assert started_later([req(1, 5, 2**31 - 1, start=True), req(2, 5, 1, kind=Kind.HELD)], 0, SPEC) is None
    assert started_later(crowd, 2, SPEC) is None  # not a START
    assert started_later([req(1, 5, 1, start=True, outcome=REFUSED), req(2, 5, 1, kind=Kind.HELD)], 0, SPEC) is None

    # the pass keeps a move where the shorter program still fails, the last sequence's first
    tries = []
    try_ = failing_while(lambda kept: sent(kept)[0] == (5, 1, True, False) and (6, 5, True, False) in sent(kept),
                         tries, sent)
    found = failing_while(lambda kept: True, [], sent)(crowd)
    shorter = start_later(found, try_, lambda v: v.program, SPEC, deadline=float("inf"))
    assert sent(shorter.program) == sent(later)
    assert len(tries) == 2  # b's START (kept), then a's (its next is a HELD whose move fails here)


def test_a_bug_of_the_inputs_after_a_start_loses_the_start_in_front_of_them():
    """A bug of three inputs in arithmetic progression (a predictor's exact hit decoded as a
    repeat), behind a START of another value: no removal drops the START (it folds its next
    request into it, changing the inputs); start_later sends that request as the START."""
    def in_line(kept):
        inputs = [s.request.value for s in kept if s.request is not None and s.request.seq_id == 5]
        return any(b - a == c - b != 0 for a, b, c in zip(inputs, inputs[1:], inputs[2:]))

    program = [req(1, 5, 9, start=True), req(2, 5, 1), req(3, 5, 2), req(4, 5, 3)]
    try_ = failing_while(in_line, [], sent)
    shorter = start_later(try_(program), try_, lambda v: v.program, SPEC, deadline=float("inf"))
    assert sent(shorter.program) == [(5, 1, True, False), (5, 2, False, False), (5, 3, False, False)]
