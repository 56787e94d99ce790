"""The pure parts of shrinking from a fresh model (fuzz/corpus/isolate.py); the live part runs in
tests/test_broken_models.py, whose history-dependent bugs (a count across sequences, a slot that
remembers its last owner) only replay from a freshly loaded model."""
import time

import attrs

from fuzz.corpus import isolate
from fuzz.harness.engine import FuzzSettings
from fuzz.checker.invariants import InvariantViolation
from fuzz.spec import ModelSpec
from fuzz.corpus.isolate import RELOAD, _program
from fuzz.corpus.shrink import by_sequence, continuations, every_continuation, shifted
from fuzz.values import Fault, Kind, Request, StepRecord


SPEC = ModelSpec(name="m", dtype="INT32", strategy="direct", slots_per_instance=2, instances=1, idle_s=0.5,
                 max_batch_size=4, controls=frozenset({"START", "END", "READY"}), corrid_type=None,
                 implicit_state=False)


def step(i, client, seq_id=None, kind=Kind.REQUEST, start=True):
    req = Request("m", seq_id, 1, start=start) if seq_id is not None else None
    return StepRecord(index=i, client=client, action="a", request=req, kind=kind)


def test_steps_are_grouped_by_the_sequence_they_send_on():
    steps = [step(1, 0, 5), step(2, 1, 6), step(3, 0, 5), step(4, 1, kind=Kind.ANSWER),
             step(5, None, kind=Kind.LEAVE_TO_EXPIRE), step(6, 2, kind=Kind.CLOSE_STREAM), step(7, 0, 6)]
    # An answer goes with its client's last id; a step of all clients, or of a client that has
    # sent nothing yet, is a group of its own.
    assert by_sequence(steps) == [[0, 2], [1, 3, 6], [4], [5]]


def test_a_program_from_a_fresh_model_starts_with_the_reload_and_is_numbered_again():
    program = _program([step(7, 0, 5), step(9, 1, 6)])
    assert program[0].kind is Kind.FAULT and program[0].fault == RELOAD.fault
    assert [s.index for s in program] == [1, 2, 3]
    assert [s.request.seq_id for s in program[1:]] == [5, 6]


def test_a_sequences_requests_after_its_start_are_one_unit():
    steps = [step(1, 0, 5), step(2, 0, 5, start=False), step(3, 1, 6), step(4, 0, 5, start=False),
             step(5, 1, 6, kind=Kind.ANSWER), step(6, 1, 6, start=False)]
    assert continuations(steps) == [[1, 3], [5]]
    # tried first, as one unit: one replay decides whether the bug needs anything but STARTs
    assert every_continuation(steps) == [[1, 3, 5]]
    assert every_continuation(steps[:1]) == []


def failing(steps, needs: set, program=None):
    """The stand-in for a live replay: a sums_match violation (its program `program`, else the
    steps) when the steps START every id in `needs`, else None."""
    if not needs <= {s.request.seq_id for s in steps if s.request is not None and s.request.start}:
        return None
    v = InvariantViolation("sums_match", "wrong running sum")
    v.program = list(steps) if program is None else program
    return v


def test_shrinking_keeps_only_strictly_shorter_programs(monkeypatch):
    """The predicate stands in for a live replay (the algorithm is what is tested): a program
    fails when it holds the START of 5 and the START of 6, and like a replay's drain, every
    failing replay appends a teardown step, so a removal can fail again at the same length."""
    tries = []

    def fails(server, spec, steps, invariant, settings, fresh=None):
        tries.append(len(steps))
        return failing(steps, {5, 6}, _program([*steps, step(99, 4, 5, start=False)]))

    monkeypatch.setattr(isolate, "_try", fails)
    run = [step(1, 0, 5), *[step(i, 0, 5, start=False) for i in range(2, 12)], step(12, 1, 6), step(13, 2, 7)]
    found = fails(None, None, run, "sums_match", None)
    shrunk = isolate._shrink(None, SPEC, found, FuzzSettings(), time.monotonic() + 10)
    body = [s for s in shrunk.program if s.kind is not Kind.FAULT]
    assert [(s.request.seq_id, s.request.start) for s in body] == [(5, True), (6, True), (5, False)]
    assert len(tries) < 30, tries  # it ends when nothing shorter fails, not when the budget does


def test_a_quick_cut_a_fresh_model_does_not_fail_on_falls_back_to_a_longer_one(monkeypatch):
    """Plain replays (ids moved) cut the program to its STARTs of 5 and 6; from a fresh model (the
    stand-in for a live replay) only programs with the START of 7 too fail, as a crowd's batch is
    composed otherwise after a reload. The quick cut keeps the shortest cut a fresh model fails
    on, instead of nothing."""
    def plain(server, spec, steps, invariant, settings):
        return failing(steps, {5, 6})
    fresh_tries = []

    def fresh(server, spec, steps, invariant, settings, fresh=None):
        fresh_tries.append(len(steps))
        return failing(steps, {7}, _program(steps))

    monkeypatch.setattr(isolate, "_moved", plain)
    monkeypatch.setattr(isolate, "_try", fresh)
    run = [step(1, 0, 5), *[step(i, 0, 5, start=False) for i in range(2, 12)], step(12, 1, 6), step(13, 2, 7)]
    found = fresh(None, None, run, "sums_match", None)
    quick, _ = isolate._cut_quickly(None, SPEC, found, FuzzSettings(), time.monotonic() + 30)
    assert quick is not None
    body = [s for s in quick.program if s.kind is not Kind.FAULT]
    assert [s.request.seq_id for s in body] == [5, 6, 7]
    # the shortest cut (2 steps) was checked first, FLAKY_TRIES times, then the next one
    assert fresh_tries[1:] == [2] * isolate.FLAKY_TRIES + [3]


def test_a_quick_cut_starts_without_the_programs_waits_where_it_fails_without_them(monkeypatch):
    """A program with a wait for slots to free (a pause) is still cut with plain replays, from
    the program without its waits: each plain try would otherwise take the wait's seconds."""
    plain_tries = []

    def plain(server, spec, steps, invariant, settings):
        plain_tries.append([s.kind for s in steps])
        return failing(steps, {5, 6})

    def fresh(server, spec, steps, invariant, settings, fresh=None):
        return failing(steps, {5, 6}, _program(steps))

    monkeypatch.setattr(isolate, "_moved", plain)
    monkeypatch.setattr(isolate, "_try", fresh)
    run = [step(1, 0, 5), step(2, None, kind=Kind.PAUSE), *[step(i, 0, 5, start=False) for i in range(3, 12)],
           step(12, 1, 6), step(13, 2, 7)]
    found = fresh(None, None, run, "sums_match", None)
    quick, _ = isolate._cut_quickly(None, SPEC, found, FuzzSettings(), time.monotonic() + 30)
    assert quick is not None and [s.request.seq_id for s in quick.program if s.request is not None] == [5, 6]
    assert plain_tries and not any(Kind.PAUSE in kinds for kinds in plain_tries)  # only the quick cut's tries



def test_a_cut_gets_replays_enough_to_miss_one_failing_as_often_at_most_1_time_in_10():
    assert isolate.tries_for(4, 4) == 1  # it failed every time
    assert isolate.tries_for(4, 8) == 4  # 1 - 0.5**4 >= 0.9
    assert isolate.tries_for(2, 8) == 9  # 1 - 0.75**9 >= 0.9
    assert isolate.tries_for(1, 8) == isolate.MAX_TRIES


def test_a_cut_of_a_failure_that_comes_back_now_and_then_gets_as_many_replays_as_its_rate_asks(monkeypatch):
    """A crowd's batch-composition bug fails in a fraction of plain replays only. The stand-in
    plain replay fails 1 time in 4 (seeded), when the program STARTs 5 and 6: its cuts get enough
    replays that most shrinks end at those two, where three replays a cut threw good cuts away
    (14 of 40 seeds ended at the two then)."""
    import random

    def fresh(server, spec, steps, invariant, settings, fresh=None):
        return failing(steps, {5, 6}, _program(steps))

    monkeypatch.setattr(isolate, "_try", fresh)
    program = [step(i, c, seq_id, start=s) for i, (c, seq_id, s) in
               enumerate([(0, 5, True), (2, 8, True), (0, 5, False), (3, 9, True), (2, 8, False), (1, 6, True),
                          (3, 9, False), (0, 5, False), (4, 10, True), (1, 6, False), (4, 10, False)], start=1)]
    ended = []
    for seed in range(40):
        luck = random.Random(seed)
        monkeypatch.setattr(isolate, "_moved", lambda server, spec, steps, invariant, settings:
                            failing(steps, {5, 6}) if luck.random() < 0.25 else None)
        quick, _ = isolate._cut_quickly(None, SPEC, fresh(None, None, program, "sums_match", None), FuzzSettings(),
                                        time.monotonic() + 30)
        ended.append(quick and [s.request.seq_id for s in quick.program if s.request is not None])
    assert sum(ids == [5, 6] for ids in ended) >= 30, ended  # 31 of 40


def test_a_failure_of_a_count_since_load_is_cut_by_reloads_only(monkeypatch):
    """Every tenth START since the model loaded fails. The failing example alone passes from a
    fresh model (3 STARTs), with one example of history too (7), with two it fails (11). Plain
    replays of the 7-START program a fresh model passed on fail all the same, every first or
    second, as the count turns: what a plain replay leaves decides them, so no cut is made from
    plain replays (they cut it to one START), and the reloads cut the program to the ten STARTs
    it needs."""
    count, plain = {"n": 0}, []

    def tenth_start(server, spec, steps, invariant, settings, reload=True, fresh=None):
        if reload:
            count["n"] = 0
        else:
            plain.append(len(steps))
        for k, s in enumerate(steps):
            if s.request is not None and s.request.start:
                count["n"] += 1
                if count["n"] % 10 == 0:
                    return failing(steps[:k + 1], set(), _program(steps[:k + 1]) if reload else None)
        return None

    monkeypatch.setattr(isolate, "_try", tenth_start)
    example = [step(1, 0, 7), step(2, 1, 8), step(3, 0, 7, start=False), step(4, 2, 9)]
    v = failing(example, set())
    v.history = [[step(i, 3, 100 + 10 * n + i) for i in range(1, 5)] for n in range(2)]
    found = isolate.from_fresh_model(None, SPEC, v, FuzzSettings(), 30)
    starts = [s for s in found.program if s.request is not None and s.request.start]
    assert found.program[0].kind is Kind.FAULT and len(starts) == 10 and len(found.program) == 11
    assert len(plain) <= isolate.RATE_REPLAYS  # the check that plain replays fail, and no cut


def test_a_failure_that_needs_an_id_its_history_started_is_still_cut_in_plain_replays(monkeypatch):
    """The failure needs id 5, which an earlier example started, and the example's own 7: plain
    replays of the example alone (the longest program a fresh model passed on) pass too, so they
    are faithful, and the plain cuts run as before (ms a try) and keep the two STARTs."""
    plain = []

    def plain_replay(server, spec, steps, invariant, settings):
        plain.append(len(steps))
        return failing(steps, {5, 7})

    monkeypatch.setattr(isolate, "_moved", plain_replay)
    monkeypatch.setattr(isolate, "_try", lambda server, spec, steps, invariant, settings, reload=True, fresh=None:
                        failing(steps, {5, 7}, _program(steps)))
    example = [step(1, 0, 7), step(2, 1, 8), step(3, 0, 7, start=False)]
    v = failing(example, {7})
    v.history = [[step(1, 2, 5), step(2, 3, 6), step(3, 2, 5, start=False)]]
    found = isolate.from_fresh_model(None, SPEC, v, FuzzSettings(), 30)
    assert {s.request.seq_id for s in found.program if s.request is not None} == {5, 7}
    assert len(plain) > isolate.RATE_REPLAYS  # the check, then the cuts


def test_the_time_a_shrink_leaves_retries_the_shorter_plain_cuts_from_a_fresh_model(monkeypatch):
    """A crowd's short cut fails from a fresh model in some replays only (the stand-in: the cut
    of the STARTs of 5 and 6 fails every third try); what the shrink kept is longer. The time
    left goes to the shorter cuts, shortest first, round after round, until one fails."""
    calls = []

    def fresh(server, spec, steps, invariant, settings, fresh=None):
        calls.append(len(steps))
        return failing(steps, {5, 6}, _program(steps)) if len(calls) % 3 == 0 else None

    monkeypatch.setattr(isolate, "_try", fresh)
    best = failing([step(1, 0, 5), step(2, 2, 7), step(3, 1, 6)], {5, 6}, _program(
        [step(1, 0, 5), step(2, 2, 7), step(3, 1, 6)]))
    cuts = [[step(1, 0, 5), step(2, 1, 6)], [step(1, 0, 5), step(2, 2, 7), step(3, 1, 6), step(4, 0, 5, start=False)]]
    again = isolate._shorter_again(None, SPEC, best, cuts, FuzzSettings(), time.monotonic() + 10)
    assert [s.request.seq_id for s in again.program if s.request is not None] == [5, 6]
    assert calls == [2, 2, 2]  # only the cut shorter than what was kept
    # with no time left, what the shrink kept
    assert isolate._shorter_again(None, SPEC, best, cuts, FuzzSettings(), time.monotonic()) is best
    # a cut that never fails from a fresh model gets AGAIN_ROUNDS tries, not the whole budget
    calls.clear()
    monkeypatch.setattr(isolate, "_try", lambda *a, **k: calls.append(1))
    assert isolate._shorter_again(None, SPEC, best, cuts, FuzzSettings(), time.monotonic() + 10) is best
    assert len(calls) == isolate.AGAIN_ROUNDS


def test_a_cut_of_requests_sent_at_once_gets_a_few_replays_even_where_the_whole_failed_every_time():
    """The whole crowd had more chances to share a batch than a cut of it has."""
    def always(steps):
        return failing(steps, {5})
    plain = [step(1, 0, 5)]
    crowd = [step(1, 0, 5, kind=Kind.HELD), step(2, 0, 5, kind=Kind.HELD_ANSWER)]
    assert isolate._rated(always, plain, time.monotonic() + 10)[1].tries == 1
    assert isolate._rated(always, crowd, time.monotonic() + 10)[1].tries == isolate.HELD_TRIES


class _Clock:
    """time as isolate reads it, moved only by sleep."""
    def __init__(self):
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_a_crowd_that_fails_once_in_twenty_replays_is_rated_and_its_cuts_replayed_for_as_long_as_the_whole(monkeypatch):
    """A crowd's batch composition shows a bug in a few plain replays only: its rating goes on past
    RATE_REPLAYS while none failed, and a cut of it is replayed (past its tries) until the replays
    took HELD_TIME_SHARE times one replay of the whole, where a plain program's cut gets its tries."""
    crowd = [step(1, 0, 5, kind=Kind.HELD), step(2, 0, 5, kind=Kind.HELD_ANSWER)]
    replays = []

    def twentieth(steps):
        replays.append(len(steps))
        return failing(steps, {5}) if len(replays) % 20 == 0 else None
    found, rate = isolate._rated(twentieth, crowd, time.monotonic() + 10)
    assert found is not None and len(replays) == 20 and rate.held
    assert rate.tries == isolate.MAX_TRIES  # 1 of 20
    assert isolate._rated(twentieth, [step(1, 0, 5)], time.monotonic() + 10) == \
        (None, isolate.Rate(0, replays=isolate.RATE_REPLAYS))
    # where 20 replays of it passed before, the rating goes on from there: 12 more, none failing
    replays.clear()
    assert isolate._rated(lambda steps: replays.append(1), crowd, time.monotonic() + 10, 20) == \
        (None, isolate.Rate(0, replays=isolate.HELD_RATE_REPLAYS))
    assert len(replays) == isolate.HELD_RATE_REPLAYS - 20
    # the cut is replayed until 2 x the whole's replay time; a cut of a plain program gets its tries.
    # On a clock each replay moves by its time (a loaded machine's sleeps overshoot: CI's took 3 ms).
    clock = _Clock()
    monkeypatch.setattr(isolate, "time", clock)
    never = isolate._replayed(lambda steps: replays.append(clock.sleep(0.001)), isolate.Rate(3, True, 0.005),
                              clock.monotonic() + 10)
    replays.clear()
    began = clock.monotonic()
    assert never(crowd) is None
    assert clock.monotonic() - began >= isolate.HELD_TIME_SHARE * 0.005
    assert 3 < len(replays) < isolate.HELD_MAX_TRIES
    counted = []
    capped = isolate._replayed(lambda steps: counted.append(1), isolate.Rate(3, True, 60.0), clock.monotonic() + 10)
    assert capped(crowd) is None and len(counted) == isolate.HELD_MAX_TRIES
    # ... and for a tenth of the time the cuts have at most (each replay 5 ms: 30 take longer)
    counted.clear()
    share = isolate._replayed(lambda steps: counted.append(clock.sleep(0.005)), isolate.Rate(3, True, 60.0),
                              clock.monotonic() + 0.5)
    assert share(crowd) is None and 3 <= len(counted) < isolate.HELD_MAX_TRIES
    # a cut whose replays are slow (one waits out a timeout) gets that tenth, not its ten tries
    counted.clear()
    slow = isolate._replayed(lambda steps: counted.append(clock.sleep(0.03)), isolate.Rate(10, True, 0.01),
                             clock.monotonic() + 0.5)
    assert slow(crowd) is None and len(counted) <= 2
    counted.clear()
    assert isolate._replayed(lambda steps: counted.append(1), isolate.Rate(3), clock.monotonic() + 10)(crowd) is None
    assert len(counted) == 3


def test_a_crowd_whose_lone_reloads_passed_is_cut_in_plain_replays_and_never_given_history(monkeypatch):
    """Three reloads of a crowd's example passed by chance; plain replays of it fail, so it needs
    no history: it is cut alone, and its cuts get fresh tries until one fails."""
    fresh_tries = []

    def fresh(server, spec, steps, invariant, settings, reload=True, fresh=None):
        fresh_tries.append(len(steps))
        return failing(steps, {5, 6}, _program(steps)) if len(fresh_tries) > 6 else None

    monkeypatch.setattr(isolate, "_moved", lambda server, spec, steps, invariant, settings: failing(steps, {5, 6}))
    monkeypatch.setattr(isolate, "_try", fresh)
    crowd = [step(1, 0, 5, kind=Kind.HELD), step(2, 1, 6, kind=Kind.HELD), step(3, 0, 5, kind=Kind.HELD_ANSWER),
             step(4, 1, 6, kind=Kind.HELD_ANSWER), step(5, 2, 7), step(6, 2, 8)]
    v = failing(crowd, {5, 6})
    v.history = [[step(i, 3, 100 + i) for i in range(1, 101)]]
    found = isolate.from_fresh_model(None, SPEC, v, FuzzSettings(), 30)
    assert found is not None and {s.request.seq_id for s in found.program if s.request is not None} == {5, 6}
    assert max(fresh_tries) <= len(crowd)  # never with the history's 100 steps before it


def test_cuts_that_failed_in_plain_replays_get_fresh_tries_round_after_round(monkeypatch):
    """A crowd cut that fails in few replays: its fresh tries go on, shortest first, until one
    fails or the time is up, where history would otherwise be added to the whole."""
    calls = []

    def fifth_fails(server, spec, steps, invariant, settings, reload=True, fresh=None):
        calls.append(len(steps))
        return failing(steps, {5}) if len(calls) == 5 else None
    monkeypatch.setattr(isolate, "_try", fifth_fails)
    cuts = [[step(1, 0, 5), step(2, 1, 6)], [step(1, 0, 5)]]
    again = isolate._confirmed(None, SPEC, "sums_match", FuzzSettings(), cuts, time.monotonic() + 10, None)
    assert calls == [1, 2, 1, 2, 1] and len(again.program) == 1
    calls.clear()
    assert isolate._confirmed(None, SPEC, "sums_match", FuzzSettings(), cuts, time.monotonic(), None) is None
    assert calls == []


def test_a_program_keeps_its_reload_when_other_traffic_before_it_moves_a_count_it_needs(monkeypatch):
    """A model that loses every third request's value, counting requests across sequences (since
    it loaded): a 3-request program fails from a fresh model, and two plain replays in a row both
    fail too (each moves the count by 3). Traffic before a try moves the count off: the reload
    stays. A program that fails whatever ran before it loses its reload."""
    count = {"n": 0}

    def loses_every_third(server, spec, steps, invariant, settings, reload=True, fresh=None):
        if reload:
            count["n"] = 0
        lost = []
        for s in steps:
            if s.request is not None:
                count["n"] += 1
                lost.append(count["n"] % 3 == 0)
        return failing(steps, set()) if lost[-1] else None  # the last request's value lost

    body = [step(2, 0, 5), step(3, 0, 5, start=False), step(4, 0, 5, start=False)]
    monkeypatch.setattr(isolate, "_try", loses_every_third)
    fresh = loses_every_third(None, SPEC, _program(body), "sums_match", FuzzSettings())
    assert fresh is not None and [s.index for s in fresh.program][0] == 1
    assert all(isolate._moved(None, SPEC, body, "sums_match", FuzzSettings()) for _ in range(2))  # in phase
    assert isolate._without_reload(None, SPEC, fresh, FuzzSettings()) is fresh

    monkeypatch.setattr(isolate, "_try", lambda server, spec, steps, *a, **k: failing(steps, set()))
    plain = isolate._without_reload(None, SPEC, failing(_program(body), set()), FuzzSettings())
    assert plain.program[0].kind is Kind.REQUEST and len(plain.program) == 3


def _violation(steps):
    v = InvariantViolation("valid_is_accepted", "refused a request that must be accepted")
    v.program = steps
    return v


def test_a_failure_that_replays_only_on_what_earlier_examples_left_is_reported_as_needing_them(monkeypatch):
    """A failure Hypothesis replayed (the model kept a leak from earlier examples) that polishing
    cannot cut and that passes from a fresh model is shrunk from a fresh model with its history,
    and reported as needing what ran before it where that finds nothing; one that fails from a
    fresh model stays as it is. One that sends requests at once (its batches may pass by luck) is
    judged so on AT_ONCE_FRESH_TRIES fresh replays and shrunk from a fresh model where it passes
    them all, but stays replaying where that finds nothing (a crowd composes otherwise after a
    reload), and stays as it is where one of them fails."""
    from fuzz import campaign
    from fuzz.harness.engine import RunStats

    fresh_runs, fresh_tries = [], []

    def passes(server, spec, steps, invariant, settings, reload=True, **k):
        fresh_tries.append(reload)
        return None

    monkeypatch.setattr(campaign, "polish", lambda *a, **k: None)
    monkeypatch.setattr(campaign, "from_fresh_model", lambda server, spec, v, *a: fresh_runs.append(v))
    monkeypatch.setattr(isolate, "_try", passes)
    sequential = _violation([step(1, 0, 5), step(2, 0, 6)])
    at_once = _violation([step(1, 0, 5), step(2, 1, 6, kind=Kind.HELD), step(3, 2, 7, kind=Kind.HELD)])
    violations, unreplayable = [sequential, at_once], set()
    replayable = campaign._shrink_further(None, SPEC, violations, {id(sequential), id(at_once)}, RunStats(),
                                          FuzzSettings(), cut_short=False, unreplayable=unreplayable)
    assert not replayable and unreplayable == {id(sequential)} and fresh_runs == [sequential, at_once]
    assert fresh_tries.count(True) == isolate.FLAKY_TRIES + isolate.AT_ONCE_FRESH_TRIES
    # where the shrink from a fresh model finds a cut, it replaces the one sent at once
    cut = _violation([step(0, None, kind=Kind.FAULT), step(1, 0, 5)])
    monkeypatch.setattr(campaign, "from_fresh_model", lambda server, spec, v, *a: cut)
    violations = [at_once]
    replayable = campaign._shrink_further(None, SPEC, violations, {id(at_once)}, RunStats(), FuzzSettings(),
                                          cut_short=False, unreplayable=set())
    assert violations == [cut] and list(replayable.values()) == [cut]

    def eighth_fails(server, spec, steps, invariant, settings, reload=True, **k):
        fresh_tries.append(reload)
        return _violation(steps) if fresh_tries.count(True) == 8 else None

    fresh_tries.clear()
    fresh_runs.clear()
    monkeypatch.setattr(isolate, "_try", eighth_fails)
    unreplayable = set()
    campaign._shrink_further(None, SPEC, [at_once], {id(at_once)}, RunStats(), FuzzSettings(),
                             cut_short=False, unreplayable=unreplayable)
    assert not unreplayable and fresh_tries.count(True) == 8
    monkeypatch.setattr(isolate, "_try", lambda server, spec, steps, invariant, *a, **k: _violation(steps))
    unreplayable = set()
    campaign._shrink_further(None, SPEC, [sequential], {id(sequential)}, RunStats(), FuzzSettings(),
                             cut_short=False, unreplayable=unreplayable)
    assert not unreplayable and not fresh_runs


def test_a_program_with_a_fault_and_requests_at_once_is_not_judged_on_fresh_replays(monkeypatch):
    """A program with requests sent at once and a fault other than a reload (a restart takes
    seconds a replay) is not judged on fresh replays."""
    tries = []
    monkeypatch.setattr(isolate, "_try", lambda *a, **k: tries.append(1))
    restart = StepRecord(index=2, client=None, action="restart", kind=Kind.FAULT, fault=Fault("restart"))
    v = _violation([step(1, 0, 5), restart, step(3, 1, 6, kind=Kind.HELD), step(4, 2, 7, kind=Kind.HELD)])
    tried = isolate.Tried()
    assert not isolate.replays_only_on_history(None, SPEC, v, FuzzSettings(), time.monotonic() + 30, tried)
    assert not tries and not tried.judged_at_once  # (sent in turn it keeps its fault: not sequential either)


def test_a_long_failure_polish_cannot_cut_is_shrunk_from_a_fresh_model(monkeypatch):
    """A failure over FOCUS_FIRST_STEPS steps that replays, but that polishing cut nothing of, is
    shrunk from a fresh model (seen: a race met in a cancel group's queue of 215, whose plain
    cuts failed once by luck and whose fresh try passed: 219 steps kept; from a fresh model, 11),
    and what that finds is kept only if shorter. A long one whose shrinking was cut short keeps
    the fallback to the first failure; a short one polishing cut nothing of stays as it is."""
    from fuzz import campaign
    from fuzz.corpus.isolate import FOCUS_FIRST_STEPS
    from fuzz.harness.engine import RunStats

    fresh_runs, found = [], {}
    monkeypatch.setattr(campaign, "polish", lambda *a, **k: None)
    monkeypatch.setattr(campaign, "replays_only_on_history", lambda *a, **k: False)
    monkeypatch.setattr(campaign, "from_fresh_model", lambda server, spec, v, *a: fresh_runs.append(v) or found.get(id(v)))
    long = _violation([step(i + 1, 0, 5 + i) for i in range(FOCUS_FIRST_STEPS + 1)])
    short = _violation([step(1, 0, 5), step(2, 0, 6)])
    stats = RunStats()
    stats.first[long.invariant] = first = _violation([step(1, 0, 9)])
    found[id(long)] = cut = _violation(long.program[-3:])
    violations = [long, short]
    replayable = campaign._shrink_further(None, SPEC, violations, {id(long), id(short)}, stats, FuzzSettings(),
                                          cut_short=False, unreplayable=set())
    assert fresh_runs == [long] and violations == [cut, short] and list(replayable.values()) == [cut]
    found[id(long)] = _violation([step(0, None, kind=Kind.FAULT)] + list(long.program))  # the reload in front: no gain
    fresh_runs.clear()
    violations = [long]
    assert not campaign._shrink_further(None, SPEC, violations, {id(long)}, stats, FuzzSettings(),
                                        cut_short=False, unreplayable=set())
    assert fresh_runs == [long] and violations == [long]  # (and no fallback to the first: it replays as it is)
    fresh_runs.clear()
    del found[id(long)]  # nothing from a fresh model
    campaign._shrink_further(None, SPEC, [long], {id(long)}, stats, FuzzSettings(), cut_short=True, unreplayable=set())
    assert fresh_runs == [long, first]  # cut short: from a fresh model, then the first failure


def test_a_leak_met_inside_a_pipelined_run_is_judged_with_the_run_sent_in_turn(monkeypatch):
    """A failure met inside a client's pipelined requests (HELD steps of one client) whose
    requests sent in turn fail here too, and pass from a fresh model, failed on what earlier
    examples left: it is reported as needing them. Where sent in turn they pass here, its
    pipelining may be what failed: it is judged as it is, pipelined."""
    from fuzz import campaign
    from fuzz.harness.engine import RunStats

    monkeypatch.setattr(campaign, "polish", lambda *a, **k: None)
    monkeypatch.setattr(campaign, "from_fresh_model", lambda *a: None)
    plain_tries = []

    def here_only(server, spec, steps, invariant, settings, reload=True, fresh=None):
        plain_tries.append(steps)
        return None if reload else _violation(steps)  # fails on the model, passes on a fresh one

    monkeypatch.setattr(isolate, "_try", here_only)
    pipelined = _violation([step(1, 0, 5), step(2, 0, 6, kind=Kind.HELD), step(3, 0, 7, kind=Kind.HELD),
                            step(4, 0, 6, kind=Kind.HELD_ANSWER)])
    unreplayable = set()
    campaign._shrink_further(None, SPEC, [pipelined], {id(pipelined)}, RunStats(), FuzzSettings(),
                             cut_short=False, unreplayable=unreplayable)
    assert unreplayable == {id(pipelined)}
    assert all(s.kind is Kind.REQUEST for s in plain_tries[0]) and len(plain_tries[0]) == 3  # in turn
    # In turn it passes here too (its pipelining may be what failed): judged as it is, pipelined, and
    # it stays where a fresh replay fails.
    tries = []

    def second_fresh_fails(server, spec, steps, invariant, settings, reload=True, **k):
        if not reload:
            return None
        tries.append(steps)
        return _violation(steps) if len(tries) == 2 else None

    monkeypatch.setattr(isolate, "_try", second_fresh_fails)
    unreplayable = set()
    campaign._shrink_further(None, SPEC, [pipelined], {id(pipelined)}, RunStats(), FuzzSettings(),
                             cut_short=False, unreplayable=unreplayable)
    assert not unreplayable and tries == [pipelined.program] * 2


def test_a_cut_of_a_crowd_that_always_failed_must_fail_twice_from_a_fresh_model(monkeypatch):
    """Polishing a program sent at once that failed every replay: its shortest cut is kept only
    where two fresh tries fail (of up to four); one lucky failure of a cut that seldom fails does
    not replace it. A sequential program's cut needs one, as before."""
    crowd = [step(1, 0, 5), step(2, 1, 6, kind=Kind.HELD), step(3, 2, 7, kind=Kind.HELD),
             step(4, 1, 6, kind=Kind.HELD_ANSWER), step(5, 2, 7, kind=Kind.HELD_ANSWER)]
    monkeypatch.setattr(isolate, "_moved", lambda server, spec, steps, invariant, settings: _violation(steps))
    fresh = []

    def once(server, spec, steps, invariant, settings, reload=True, fresh_copies=None, **k):
        fresh.append(len(steps))
        return _violation(steps) if len(fresh) == 1 else None  # the first fresh try fails, no other
    monkeypatch.setattr(isolate, "_try", once)
    assert isolate.polish(None, SPEC, _violation(crowd), FuzzSettings(), 5) is None
    assert len(fresh) == 4
    fresh.clear()
    monkeypatch.setattr(isolate, "_try", lambda *a, **k: fresh.append(1) or _violation(a[2]))
    monkeypatch.setattr(isolate, "_without_reload", lambda server, spec, v, settings: v)
    assert isolate.polish(None, SPEC, _violation(crowd), FuzzSettings(), 5) is not None and len(fresh) == 2


def test_a_cut_of_a_crowd_that_fails_far_less_often_than_its_program_is_not_kept(monkeypatch):
    """Polishing a program sent at once: a cut that fails in 1 of 8 plain replays, where the
    program failed in every one, is no shrink of it (one lucky replay accepted it)."""
    crowd = [step(1, 0, 5), step(2, 1, 6, kind=Kind.HELD), step(3, 2, 7, kind=Kind.HELD),
             step(4, 1, 6, kind=Kind.HELD_ANSWER), step(5, 2, 7, kind=Kind.HELD_ANSWER)]
    replays = []

    def plain(server, spec, steps, invariant, settings):
        replays.append(len(steps))
        whole = len(steps) == len(crowd)
        return _violation(steps) if whole or len(replays) % 8 == 0 else None
    monkeypatch.setattr(isolate, "_moved", plain)
    monkeypatch.setattr(isolate, "_try", lambda *a, **k: _violation(a[2]))
    monkeypatch.setattr(isolate, "_without_reload", lambda server, spec, v, settings: v)
    assert isolate.polish(None, SPEC, _violation(crowd), FuzzSettings(), 5) is None


def test_a_program_sent_at_once_is_judged_replayable_only_where_most_replays_fail(monkeypatch):
    """A START pipelined right behind a START+END on its id fails when it gets the other slot (1
    replay in 20): one lucky replay once called it replayable, and the next two passed (CI).
    Judged, it must fail 3 of 4 replays; a program sent one request at a time needs one."""
    pipelined = [step(1, 3, 5, kind=Kind.HELD), step(2, 3, 5, kind=Kind.HELD),
                 step(3, 3, 5, kind=Kind.HELD_ANSWER), step(4, 3, 5, kind=Kind.HELD_ANSWER)]
    replays = []

    def every_other(server, spec, steps, settings=None):
        replays.append(1)
        if len(replays) % 2 == 0:
            raise _violation(steps)
    monkeypatch.setattr(isolate, "replay_steps", every_other)
    assert not isolate.replays_reliably(None, SPEC, _violation(pipelined), FuzzSettings())
    assert len(replays) == 3  # it stops once a third failure can no longer come: pass, fail, pass
    monkeypatch.setattr(isolate, "replay_steps", lambda *a, **k: replays.append(1) or _raise(_violation(pipelined)))
    replays.clear()
    assert isolate.replays_reliably(None, SPEC, _violation(pipelined), FuzzSettings()) and len(replays) == 3
    replays.clear()
    assert isolate.replays_reliably(None, SPEC, _violation([step(1, 0, 5)]), FuzzSettings()) and len(replays) == 1


def _raise(err):
    raise err


def test_a_cut_that_does_not_replay_reliably_gives_way_to_the_program_it_was_cut_from(monkeypatch):
    """A shrink's cut of requests sent at once, confirmed by one fresh failure, is rated again
    before it is called replayable: where it fails by luck, the rated program it was cut from is
    reported instead; where that one was not rated (shrinking was stopped), the cut is reported
    as not replayable, and so is an unrated program left as it was. A cut sent one request at a
    time replays alike, and is not replayed again."""
    from fuzz import campaign
    held = [step(1, 3, 5, kind=Kind.HELD), step(2, 3, 5, kind=Kind.HELD), step(3, 3, 5, kind=Kind.HELD_ANSWER)]
    whole, cut = _violation(held + [step(4, 3, 5, kind=Kind.HELD_ANSWER)]), _violation(held)
    rated = []
    monkeypatch.setattr(campaign, "replays_reliably",
                        lambda server, spec, v, settings: rated.append(v) or v is not cut)
    violations, replayable, unreplayable = [cut], {id(cut): cut}, set()
    campaign._rate_cuts(None, SPEC, violations, [whole], replayable, unreplayable, {id(whole)}, FuzzSettings(),
                        trusted=True)
    assert violations == [whole] and not replayable and not unreplayable
    violations, replayable = [cut], {id(cut): cut}
    campaign._rate_cuts(None, SPEC, violations, [whole], replayable, unreplayable, {id(whole)}, FuzzSettings(),
                        trusted=False)
    assert violations == [cut] and not replayable and unreplayable == {id(cut)}
    unreplayable = set()
    campaign._rate_cuts(None, SPEC, [cut], [cut], {}, unreplayable, {id(cut)}, FuzzSettings(), trusted=False)
    assert unreplayable == {id(cut)}
    rated.clear()
    sequential = _violation([step(1, 0, 5)])
    violations, replayable = [sequential], {id(sequential): sequential}
    campaign._rate_cuts(None, SPEC, violations, [whole], replayable, set(), {id(whole)}, FuzzSettings(), trusted=True)
    assert violations == [sequential] and replayable == {id(sequential): sequential} and not rated


def test_a_failure_that_needs_earlier_examples_is_never_reported_in_place_of_a_cut_that_fails_by_luck(monkeypatch):
    """A failure that passes from a fresh model (it needs what earlier examples left) is marked
    so even where a fresh model's shrink found a cut: if that cut then fails only by luck, the cut
    is reported as not replayable, not the program that needs history."""
    from fuzz import campaign
    from fuzz.generator.machine import RunStats
    leak = _violation([step(1, 0, 5)])
    held = [step(1, 3, 5, kind=Kind.HELD), step(2, 3, 6, kind=Kind.HELD), step(3, 3, 5, kind=Kind.HELD_ANSWER)]
    cut = _violation(held)
    monkeypatch.setattr(campaign, "polish", lambda *a, **k: None)
    monkeypatch.setattr(campaign, "replays_only_on_history", lambda *a, **k: True)
    monkeypatch.setattr(campaign, "from_fresh_model", lambda *a: cut)
    monkeypatch.setattr(campaign, "replays_reliably", lambda server, spec, v, settings: v is not cut)
    violations, unreplayable = [leak], set()
    replayable = campaign._shrink_further(None, SPEC, violations, {id(leak)}, RunStats(), FuzzSettings(),
                                          cut_short=False, unreplayable=unreplayable)
    campaign._rate_cuts(None, SPEC, violations, [leak], replayable, unreplayable, {id(leak)}, FuzzSettings(),
                        trusted=True)
    assert violations == [cut] and not replayable and id(cut) in unreplayable


def _long_program(n: int) -> list:
    """n sequences of three requests each, one after another, on ids 100..."""
    return [step(3 * s + k + 1, s % 4, 100 + s, start=k == 0) for s in range(n) for k in range(3)]


def test_a_long_failure_that_replays_is_rated_on_the_sequences_it_ended_with_before_it_is_whole(monkeypatch):
    """A polish of a program longer than FOCUS_FIRST_STEPS whose bug needs its last two sequences:
    plain replays of the last sequence alone (all pass), then of the last two (fail), and the whole
    is never replayed (a replay of thousands of steps takes seconds: rating it whole once took
    a shrink's whole budget)."""
    lengths = []
    steps = _long_program(40)
    needs = {138, 139}

    def plain(server, spec, steps_, invariant, settings):
        lengths.append(len(steps_))
        return failing(steps_, needs)

    monkeypatch.setattr(isolate, "_moved", plain)
    monkeypatch.setattr(isolate, "_try", lambda server, spec, s, inv, settings, **k: failing(s, needs, _program(s)))
    v = failing(steps, needs)
    polished = isolate.polish(None, SPEC, v, FuzzSettings(), 30)
    assert polished is not None
    assert sorted({s.request.seq_id for s in polished.program if s.request is not None}) == [138, 139]
    assert set(lengths[:lengths.index(6)]) == {3} and len(steps) not in lengths


def test_a_long_failure_from_a_fresh_model_is_cut_from_its_last_sequences_before_any_whole_try(monkeypatch):
    """Hypothesis could not replay it (a cancel's or a batch's luck): its last sequences are cut
    with plain replays and confirmed from a fresh model before the whole program is tried fresh."""
    fresh_lengths = []
    steps = _long_program(40)
    needs = {138, 139}
    monkeypatch.setattr(isolate, "_moved", lambda server, spec, s, inv, settings: failing(s, needs))

    def fresh(server, spec, s, invariant, settings, reload=True, fresh=None):
        fresh_lengths.append(len(s))
        return failing(s, needs, _program(s))

    monkeypatch.setattr(isolate, "_try", fresh)
    monkeypatch.setattr(isolate.FreshCopies, "of", staticmethod(lambda server, spec: None))
    found = isolate.from_fresh_model(None, SPEC, failing(steps, needs), FuzzSettings(), 30)
    assert found is not None and found.program[0].kind is Kind.FAULT
    assert sorted({s.request.seq_id for s in found.program if s.request is not None}) == [138, 139]
    assert len(steps) not in fresh_lengths


def test_a_shrink_from_a_fresh_model_does_not_try_again_what_polish_and_the_fresh_replays_showed(monkeypatch):
    """A long failure that needs an id its history started (a cache that outlives examples): the
    polish's plain replays of it and of its last sequences never fail, nor do three replays from a
    fresh model; the shrink from a fresh model then goes to its history at once, and spends no
    try on the program alone again (seen: 15 s of a 30 s budget, ddmin left 5 s for 228 steps)."""
    needs = {5, 138}
    plain, fresh_alone = [], []
    steps = _long_program(40)

    def moved(server, spec, s, invariant, settings):
        plain.append(len(s))
        return failing(s, needs)

    def fresh(server, spec, s, invariant, settings, reload=True, fresh=None):
        if len(s) == len(steps):
            fresh_alone.append(len(s))
        return failing(s, needs, _program(s))

    monkeypatch.setattr(isolate, "_moved", moved)
    monkeypatch.setattr(isolate, "_try", fresh)
    monkeypatch.setattr(isolate.FreshCopies, "of", staticmethod(lambda server, spec: None))
    v = failing(steps, {138})
    v.history = [[step(1, 2, 5), step(2, 3, 6)]]
    tried = isolate.Tried()
    assert isolate.polish(None, SPEC, v, FuzzSettings(), 30, tried) is None
    assert isolate._key(steps) in tried.passed  # rated in full, and passed
    assert isolate.replays_only_on_history(None, SPEC, v, FuzzSettings(), time.monotonic() + 30, tried)
    assert tried.passed_fresh and len(fresh_alone) == isolate.FLAKY_TRIES
    plain.clear()
    found = isolate.from_fresh_model(None, SPEC, v, FuzzSettings(), 30, tried)
    assert found is not None and {5, 138} <= {s.request.seq_id for s in found.program if s.request is not None}
    assert len(fresh_alone) == isolate.FLAKY_TRIES  # none more of the program alone
    assert plain and len(steps) not in plain, plain  # the history with it, its cores and cuts


def test_cores_whose_plain_replays_passed_are_not_rated_again_once_history_is_added(monkeypatch):
    """A long failure that needs an id its history started: the sequences it ended with (its
    cores) are rated in plain replays and pass; with its history added, the program's last
    sequences are the same ones, and are not rated again before the whole is (seen: seven cores
    rated twice, 9 s of a 30 s budget)."""
    needs = {5, 138}
    steps = _long_program(40)
    rated: dict = {}
    whole_rated = []

    def moved(server, spec, s, invariant, settings):
        if len(s) > len(steps):
            whole_rated.append(len(s))
        elif not whole_rated:
            rated[_requests_of(s)] = rated.get(_requests_of(s), 0) + 1
        return failing(s, needs)

    monkeypatch.setattr(isolate, "_moved", moved)
    monkeypatch.setattr(isolate, "_try", lambda server, spec, s, invariant, settings, reload=True, fresh=None:
                        failing(s, needs, _program(s)))
    monkeypatch.setattr(isolate.FreshCopies, "of", staticmethod(lambda server, spec: None))
    v = failing(steps, {138})
    v.history = [[step(1, 2, 5), step(2, 3, 6)]]
    found = isolate.from_fresh_model(None, SPEC, v, FuzzSettings(), 30)
    assert found is not None and whole_rated
    cores = {sends: n for sends, n in rated.items() if sends != _requests_of(steps)}
    assert cores and max(cores.values()) <= isolate.RATE_REPLAYS, cores


def _requests_of(steps) -> frozenset:
    return frozenset((s.request.seq_id, s.request.start) for s in steps if s.request is not None)


def test_a_failure_that_needs_most_of_its_sequences_rates_no_cut_of_a_core_that_passed(monkeypatch):
    """A polish of a long program whose bug needs its first sequence and 30 of the others (a cache
    that evicts the oldest): the last sequence, the last two and the last half pass their plain
    replays; the last 4 and 8 (cuts of the half) are not rated, nor replayed again by ddmin's
    focus, whose ids are moved (seen: 7 s of a 30 s budget on such cuts, every one passing)."""
    steps = _long_program(40)
    steps[-1] = attrs.evolve(steps[-1], request=attrs.evolve(steps[-1].request, seq_id=100))  # the first's next
    replayed = []

    def plain(server, spec, steps_, invariant, settings):  # a replay with its ids moved, as _moved's
        ids = {s.request.seq_id for s in steps_}
        replayed.append(len(ids))
        if steps_[-1].request.seq_id != steps_[0].request.seq_id or len(ids) < 31:
            return None
        v = InvariantViolation("sums_match", "wrong running sum")
        v.program = shifted(steps_, 1000 * len(replayed), "")
        return v

    monkeypatch.setattr(isolate, "_moved", plain)
    monkeypatch.setattr(isolate, "_try", lambda server, spec, s, invariant, settings, reload=True, fresh=None: None)
    v = InvariantViolation("sums_match", "wrong running sum")
    v.program = steps
    tried = isolate.Tried()
    assert isolate.polish(None, SPEC, v, FuzzSettings(), 30, tried) is None  # no fresh model fails
    counts = sorted(set(replayed))
    assert 4 not in counts and 8 not in counts, counts  # cuts of the last half (20), which passed
    assert 20 in counts and 31 in counts  # the half, and the fewest that fail (halving past it)
    assert replayed.count(2) == isolate.RATE_REPLAYS  # the last two, rated once, not tried again by focus


def test_a_rating_cut_short_by_its_share_goes_on_from_its_replays_next_time(monkeypatch):
    """A crowd's core rated for 10 ms, 1 ms a replay, passes 10 replays and is not rated in full;
    rated again (the shrink from a fresh model rates the same cores), it goes on from those 10
    (seen: eight cores rated twice, 10 s of a 30 s budget)."""
    clock = _Clock()
    monkeypatch.setattr(isolate, "time", clock)
    crowd = [step(1, 0, 5, kind=Kind.HELD), step(2, 0, 5, kind=Kind.HELD_ANSWER)]
    replays = []
    plain = lambda steps: replays.append(clock.sleep(0.001))  # noqa: E731
    tried = isolate.Tried()
    assert isolate._rated_noting(plain, crowd, clock.monotonic() + 0.0095, tried) == (None, isolate.Rate(0, replays=10))
    assert isolate._key(crowd) not in tried.passed and tried.replays_passed[isolate._key(crowd)] == 10
    assert isolate._rated_noting(plain, crowd, clock.monotonic() + 10, tried)[0] is None
    assert len(replays) == isolate.HELD_RATE_REPLAYS and isolate._key(crowd) in tried.passed


def test_a_program_and_its_copy_with_ids_moved_are_one_shape_and_twins_are_not_strangers():
    """`_shape`: what `_moved` cannot change. A program and its copy shifted (integers by one offset,
    strings given a try's tag) are one shape; ids 2**32 apart (twins of a 32-bit CORRID) are not the
    shape of ids 1 apart, nor an integer id that of a string, nor the misuse id 0 that of another."""
    from fuzz.corpus.shrink import shifted
    shape = lambda steps: isolate._shape(isolate._key(steps))  # noqa: E731
    twins = [step(1, 0, 5), step(2, 1, 5 + 2**32)]
    assert shape(twins) == shape(shifted(twins, 1000, "p3."))
    assert shape(twins) != shape([step(1, 0, 5), step(2, 1, 6)])
    words = [step(1, 0, "a"), step(2, 1, "b")]
    assert shape(words) == shape(shifted(shifted(words, 7, "p1."), 9, "p2."))
    assert shape(words) != shape([step(1, 0, "a"), step(2, 1, "a")])
    assert shape([step(1, 0, 5)]) != shape([step(1, 0, "5")])
    assert shape([step(1, 0, 0), step(2, 0, 5)]) != shape([step(1, 0, 5), step(2, 0, 0)])


def test_a_fault_s_calls_move_with_the_program_and_keep_its_shape():
    """A give_up round's calls are sequences of their own: `shifted` moves their ids as it moves
    every request's, so a plain try does not meet what an earlier one left on them, and `_shape`
    takes the moved copy for the program it was."""
    from fuzz.corpus.shrink import shifted
    from fuzz.values import Fault
    shape = lambda steps: isolate._shape(isolate._key(steps))  # noqa: E731
    give_up = StepRecord(2, None, "calls given up", kind=Kind.FAULT,
                         fault=Fault("give_up", ids=[7, 8], at_once=2, deadline_us=500, spare_every=2))
    program = [step(1, 0, 5), give_up]
    moved = shifted(program, 1000, "p1.")
    assert moved[1].fault.ids == (1007, 1008) and moved[1].fault.deadline_us == 500
    assert shape(program) == shape(moved)
    assert shape(program) != shape([step(1, 0, 5), attrs.evolve(give_up, fault=attrs.evolve(give_up.fault, ids=[7, 9]))])


def test_plain_replays_keep_a_client_s_fault_and_drop_a_server_s():
    """A cut or a give_up round takes milliseconds and a cancel's bug needs it: plain replays keep
    it, unless a slow step went before it. A restart or a reload takes seconds: they go, as an
    idle wait does."""
    from fuzz.values import Fault
    fault = lambda name, **kw: StepRecord(2, None, name, kind=Kind.FAULT, fault=Fault(name, **kw))  # noqa: E731
    give_up = fault("give_up", ids=[7], at_once=1, deadline_us=500)
    assert isolate._without_slow([step(1, 0, 5), give_up], SPEC) == [step(1, 0, 5), give_up]
    assert isolate._without_slow([step(1, 0, 5), fault("cut")], SPEC) == [step(1, 0, 5), fault("cut")]
    assert isolate._without_slow([step(1, 0, 5), fault("restart")], SPEC) == [step(1, 0, 5)]
    assert isolate._without_slow([step(1, 0, 5), fault("reload")], SPEC) == [step(1, 0, 5)]
    # after a wait (or a restart) it goes too: the wait freed the slots a give_up round takes
    wait = StepRecord(2, None, "go silent", kind=Kind.GO_SILENT, wait_s=1.0)
    assert isolate._without_slow([step(1, 0, 5), wait, give_up], SPEC) == [step(1, 0, 5)]
    assert isolate._without_slow([give_up, wait, step(3, 0, 5)], SPEC) == [give_up, step(3, 0, 5)]


def test_a_program_s_span_is_its_recorded_time():
    """`_span` is how long the program ran (a whole try is not started that would end past a
    shrink's deadline); 0 where no time was recorded."""
    timed = [attrs.evolve(step(1, 0, 5), sent_at=10.0, done_at=10.5), step(2, 0, 6),
             attrs.evolve(step(3, 0, 7), sent_at=12.0, done_at=13.25)]
    assert isolate._span(timed) == 3.25 and isolate._span([step(1, 0, 5)]) == 0.0


def test_ids_that_an_offset_would_undo_are_moved_by_an_odd_factor_and_keep_their_relation(monkeypatch):
    """Plain replays move ids so that a try meets no state an earlier one left: by an offset,
    which keeps differences, or where the failing (last) id's twin is its negation or both are
    aligned (what an offset undoes), no two ids are apart as a factor undoes, and none is one a
    factor hardly moves, by an odd factor, which keeps those."""
    from fuzz.corpus.shrink import shifted, undone_by_shifting
    k = 123456789
    negation, aligned = [k, 2**64 - k], [5 * 2**8, 9 * 2**16]
    for ids in (negation, aligned):
        assert undone_by_shifting([step(1, 0, ids[0]), step(2, 1, ids[1]), step(3, 0, "s")])
    assert not undone_by_shifting([step(1, 0, k), step(2, 1, 10 * k)])  # a multiple: a product wraps
    assert not undone_by_shifting([step(1, 0, k), step(2, 1, k + 1), step(3, 0, k + 2**32)])
    assert not undone_by_shifting([step(1, 0, 5 * 2**8), step(2, 1, 0)])  # the misuse id 0 is no twin
    assert not undone_by_shifting([step(1, 0, 7), step(2, 1, 8), step(3, 0, k), step(4, 1, 2**64 - k)])  # neighbours
    assert not undone_by_shifting([step(1, 0, 2**63), step(2, 1, k), step(3, 0, 2**64 - k)])  # 2^63 stays put
    assert not undone_by_shifting([step(1, 0, k), step(2, 1, 2**64 - k), step(3, 0, 7)])  # not the failing id's
    seen = []
    monkeypatch.setattr(isolate, "_try", lambda server, spec, steps, invariant, settings, **kw: seen.append(steps))
    for ids, keeps in ((negation, lambda a, b: (a + b) % 2**64 == 0), (aligned, lambda a, b: a % 2**8 == 0 == b % 2**8),
                       ([k, k + 1], lambda a, b: b - a == 1)):
        for _ in range(2):
            isolate._moved(None, SPEC, [step(1, 0, ids[0]), step(2, 1, ids[1])], "sums_match", FuzzSettings())
            a, b = (s.request.seq_id for s in seen[-1])
            assert keeps(a, b) and {a, b}.isdisjoint(ids), (ids, a, b)
            # a cut of the moved program is moved alike again
            assert undone_by_shifting(seen[-1]) == undone_by_shifting([step(1, 0, ids[0]), step(2, 1, ids[1])])
        assert seen[-1] != seen[-2]  # each try's ids are its own
    moved = shifted([step(1, 0, k), step(2, 1, "7")], 0, "p1.", factor=3)
    assert [s.request.seq_id for s in moved] == [3 * k, "21"]  # an integer's text moves with it
    assert len({m.request.seq_id for m in shifted([step(i, 0, i) for i in range(1, 4097)], 0, "", factor=3)}) == 4096
