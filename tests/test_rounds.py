"""How a campaign's rounds of Hypothesis examples end (fuzz/campaign.py), on toy machines: no
server is involved, only the harness's reading of Hypothesis's errors."""
import itertools
import sys
import time

from hypothesis import settings, strategies as st
from hypothesis.errors import FlakyStrategyDefinition
from hypothesis.stateful import RuleBasedStateMachine, rule

from fuzz.campaign import UNSTEADY_STEPS, _rounds
from fuzz.harness.engine import RoundSpent, RunStats

ROUND = settings(max_examples=50, database=None, deadline=None)
NO_CLEAN = (None, None)  # no clean round's machine (a campaign too small for one)
draws = itertools.count()


class Unsteady(RuleBasedStateMachine):
    """Draws what an outside counter says, as a rule whose draws follow a server's answers does:
    the same choices draw differently from one example to the next."""

    @rule(data=st.data())
    def step(self, data):
        for _ in range(next(draws) % 3):
            data.draw(st.integers(0, 3 + next(draws) % 7))


class UnsteadyAndErring(Unsteady):
    """The same, and a rule that fails as a bug of the harness would (no broken promise): its
    shrink can meet an unsteady draw too, which must not pass the error off as one."""
    stats = RunStats()

    @rule()
    def harness_bug(self):
        raise RuntimeError("a bug of the harness")

    def teardown(self):
        self.stats.example_ended(sys.exc_info()[1])


class Failing(RuleBasedStateMachine):
    @rule(x=st.integers(0, 10))
    def step(self, x):
        raise ValueError("a promise broke")


def _no_partial(stop):
    raise AssertionError(f"not stopped: {stop}")


def test_a_round_ended_by_an_unsteady_draw_is_no_finding_and_the_next_round_goes_on(capsys):
    stats = RunStats()
    started = time.monotonic()
    assert _rounds((Unsteady, ROUND), NO_CLEAN, 3.0, started, _no_partial, stats) is None
    assert stats.unsteady_rounds >= 1
    assert time.monotonic() - started >= 3.0  # rounds went on until the budget, not one past the draw
    assert UNSTEADY_STEPS not in capsys.readouterr().out  # Hypothesis's report of an "error" held back


def test_without_a_budget_an_unsteady_draw_ends_the_campaign_without_a_finding():
    stats = RunStats()
    for _ in range(20):  # each run of 50 examples is one chance for the draws to disagree
        assert _rounds((Unsteady, ROUND), NO_CLEAN, None, time.monotonic(), _no_partial, stats) is None
        if stats.unsteady_rounds:
            break
    assert stats.unsteady_rounds == 1


def test_an_unsteady_draw_after_a_violation_is_judged_not_swallowed():
    stats = RunStats(shortest={"sums_match": object()})  # a promise broke earlier in the round
    for _ in range(20):
        error = _rounds((Unsteady, ROUND), NO_CLEAN, None, time.monotonic(), _no_partial, stats)
        if error is not None:
            break
    assert isinstance(error, FlakyStrategyDefinition) and stats.unsteady_rounds == 0


def test_a_real_failure_ends_the_rounds_with_its_error():
    stats = RunStats()
    error = _rounds((Failing, ROUND), NO_CLEAN, 30.0, time.monotonic(), _no_partial, stats)
    assert isinstance(error, ValueError) and stats.unsteady_rounds == 0


def test_a_harness_error_whose_shrink_meets_an_unsteady_draw_is_not_passed_off_as_one():
    for _ in range(5):
        UnsteadyAndErring.stats = stats = RunStats()
        error = _rounds((UnsteadyAndErring, ROUND), NO_CLEAN, None, time.monotonic(), _no_partial, stats)
        assert error is not None and stats.unsteady_rounds == 0 and stats.harness_errors, (error, stats)


class Steady(RuleBasedStateMachine):
    @rule(x=st.integers(0, 10))
    def step(self, x):
        pass


def test_a_refresh_comes_before_every_round_but_the_first_and_a_stop_in_it_keeps_what_was_done():
    stats, calls = RunStats(), []
    few = settings(ROUND, max_examples=3)
    assert _rounds((Steady, few), NO_CLEAN, 0.5, time.monotonic(), _no_partial, stats,
                   refresh=lambda: calls.append(stats.rounds)) is None
    assert stats.rounds >= 2 and calls == list(range(1, stats.rounds)), (stats.rounds, calls)

    def stop():
        raise KeyboardInterrupt("told to stop during a reload")

    stats, kept = RunStats(), []
    try:
        _rounds((Steady, few), NO_CLEAN, 30.0, time.monotonic(), lambda s: kept.append(s) or "so far", stats,
                refresh=stop)
    except KeyboardInterrupt as stopped:
        assert stopped.partial_result == "so far" and len(kept) == 1
    else:
        raise AssertionError("the stop was swallowed")


class Counting(Steady):
    """Says which machine each example was of."""
    stats, ran = RunStats(), []

    def __init__(self):
        super().__init__()
        self.stats.examples += 1
        self.ran.append(type(self).__name__)


class CleanCounting(Counting):
    pass


def test_a_clean_round_comes_first_where_one_is_due_then_the_planned_rest():
    Counting.stats, Counting.ran = stats, ran = RunStats(clean_due=True), []
    plain, clean = (Counting, settings(ROUND, max_examples=4)), (CleanCounting, settings(ROUND, max_examples=2))
    assert _rounds(plain, clean, None, time.monotonic(), _no_partial, stats) is None
    assert ran[:2] == ["CleanCounting"] * 2 and set(ran[2:]) == {"Counting"} and len(ran) >= 6, ran
    assert (stats.rounds, stats.clean_rounds, stats.clean_examples, stats.clean_due) == (2, 1, 2, False)
    # Where none is due (no fresh copy), or there is no clean machine, the round is plain.
    Counting.stats, Counting.ran = stats, ran = RunStats(), []
    assert _rounds(plain, clean, None, time.monotonic(), _no_partial, stats) is None
    assert set(ran) == {"Counting"} and stats.rounds == 1
    Counting.stats, Counting.ran = stats, ran = RunStats(clean_due=True), []
    assert _rounds(plain, NO_CLEAN, None, time.monotonic(), _no_partial, stats) is None
    assert set(ran) == {"Counting"} and stats.clean_examples == 0


def test_with_a_budget_a_refresh_makes_the_next_round_clean():
    Counting.stats, Counting.ran = stats, ran = RunStats(clean_due=True), []
    few = settings(ROUND, max_examples=3)

    def refresh():
        stats.clean_due = stats.rounds % 2 == 0  # a fresh copy before every other round

    assert _rounds((Counting, few), (CleanCounting, settings(ROUND, max_examples=1)), 1.0, time.monotonic(),
                   _no_partial, stats, refresh=refresh) is None
    assert stats.rounds >= 3 and ran[0] == "CleanCounting" and ran[1:4] == ["Counting"] * 3, ran
    assert stats.clean_rounds == (stats.rounds + 1) // 2, (stats.rounds, stats.clean_rounds)


def test_no_refresh_right_after_a_clean_round():
    """A slow model's clean round can outlast FRESH_EVERY_S: a refresh right after it would make the
    next round clean again, and without a budget the rounds would never end (seen: a campaign of
    15 examples and counting where 10 were planned)."""
    def reload_every_time():
        stats.clean_due = True

    Counting.stats, Counting.ran = stats, ran = RunStats(clean_due=True), []
    plain, clean = (Counting, settings(ROUND, max_examples=4)), (CleanCounting, settings(ROUND, max_examples=2))
    assert _rounds(plain, clean, None, time.monotonic(), _no_partial, stats, refresh=reload_every_time) is None
    assert ran[:2] == ["CleanCounting"] * 2 and set(ran[2:]) == {"Counting"}, ran
    Counting.stats, Counting.ran = stats, ran = RunStats(clean_due=True), []
    assert _rounds(plain, clean, 1.0, time.monotonic(), _no_partial, stats, refresh=reload_every_time) is None
    assert stats.rounds >= 3 and stats.clean_rounds == (stats.rounds + 1) // 2, (stats.rounds, stats.clean_rounds)


class TimedCounting(Counting):
    """Checks the clean round's time after each step, as the engine does."""

    @rule()
    def tick(self):
        time.sleep(0.01)
        if time.monotonic() >= self.stats.round_stop_at:
            raise RoundSpent("the clean round's time is spent")


class CleanTimedCounting(TimedCounting):
    pass


def test_a_clean_round_ends_at_its_time_and_the_plain_round_goes_on(monkeypatch):
    import fuzz.campaign as campaign

    monkeypatch.setattr(campaign, "CLEAN_ROUND_S", 0.3)
    Counting.stats, Counting.ran = stats, ran = RunStats(clean_due=True), []
    plain = (TimedCounting, settings(ROUND, max_examples=3, stateful_step_count=5))
    clean = (CleanTimedCounting, settings(ROUND, max_examples=1000, stateful_step_count=5))
    began = time.monotonic()
    assert _rounds(plain, clean, None, began, _no_partial, stats) is None
    assert time.monotonic() - began < 30 and ran.count("TimedCounting") >= 3, ran
    assert 1 <= ran.count("CleanTimedCounting") < 1000 and ran[0] == "CleanTimedCounting", ran
    assert stats.round_stop_at == float("inf") and stats.clean_rounds == 1


def test_a_round_told_to_run_nothing_ends_the_rounds_without_an_error_where_a_clean_round_ran():
    """A campaign that only replays a database runs nothing where none of its failures was saved
    for a round's machine (a clean round's are filed apart): Hypothesis says so with SkipTest."""
    from unittest import SkipTest

    from hypothesis import Phase

    nothing = settings(ROUND, phases=[Phase.reuse])
    Counting.stats, Counting.ran = stats, ran = RunStats(clean_due=True), []
    assert _rounds((Counting, nothing), (CleanCounting, settings(ROUND, max_examples=2)), None, time.monotonic(),
                   _no_partial, stats) is None
    assert ran == ["CleanCounting"] * 2, ran
    Counting.stats, Counting.ran = stats, ran = RunStats(clean_due=True), []
    error = _rounds((Counting, nothing), (CleanCounting, nothing), None, time.monotonic(), _no_partial, stats)
    assert isinstance(error, SkipTest) and ran == [], (error, ran)
