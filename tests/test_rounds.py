"""How a campaign's rounds of Hypothesis examples end (fuzz/campaign.py), on toy machines: no
server is involved, only the harness's reading of Hypothesis's errors."""
import itertools
import sys
import time

from hypothesis import settings, strategies as st
from hypothesis.errors import FlakyStrategyDefinition
from hypothesis.stateful import RuleBasedStateMachine, rule

from fuzz.campaign import UNSTEADY_STEPS, _rounds
from fuzz.harness.engine import RunStats

ROUND = settings(max_examples=50, database=None, deadline=None)
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
    assert _rounds(Unsteady, ROUND, 3.0, started, _no_partial, stats) is None
    assert stats.unsteady_rounds >= 1
    assert time.monotonic() - started >= 3.0  # rounds went on until the budget, not one past the draw
    assert UNSTEADY_STEPS not in capsys.readouterr().out  # Hypothesis's report of an "error" held back


def test_without_a_budget_an_unsteady_draw_ends_the_campaign_without_a_finding():
    stats = RunStats()
    for _ in range(20):  # each run of 50 examples is one chance for the draws to disagree
        assert _rounds(Unsteady, ROUND, None, time.monotonic(), _no_partial, stats) is None
        if stats.unsteady_rounds:
            break
    assert stats.unsteady_rounds == 1


def test_an_unsteady_draw_after_a_violation_is_judged_not_swallowed():
    stats = RunStats(shortest={"sums_match": object()})  # a promise broke earlier in the round
    for _ in range(20):
        error = _rounds(Unsteady, ROUND, None, time.monotonic(), _no_partial, stats)
        if error is not None:
            break
    assert isinstance(error, FlakyStrategyDefinition) and stats.unsteady_rounds == 0


def test_a_real_failure_ends_the_rounds_with_its_error():
    stats = RunStats()
    error = _rounds(Failing, ROUND, 30.0, time.monotonic(), _no_partial, stats)
    assert isinstance(error, ValueError) and stats.unsteady_rounds == 0


def test_a_harness_error_whose_shrink_meets_an_unsteady_draw_is_not_passed_off_as_one():
    for _ in range(5):
        UnsteadyAndErring.stats = stats = RunStats()
        error = _rounds(UnsteadyAndErring, ROUND, None, time.monotonic(), _no_partial, stats)
        assert error is not None and stats.unsteady_rounds == 0 and stats.harness_errors, (error, stats)


class Steady(RuleBasedStateMachine):
    @rule(x=st.integers(0, 10))
    def step(self, x):
        pass


def test_a_refresh_comes_before_every_round_but_the_first_and_a_stop_in_it_keeps_what_was_done():
    stats, calls = RunStats(), []
    few = settings(ROUND, max_examples=3)
    assert _rounds(Steady, few, 0.5, time.monotonic(), _no_partial, stats, refresh=lambda: calls.append(stats.rounds)) \
        is None
    assert stats.rounds >= 2 and calls == list(range(1, stats.rounds)), (stats.rounds, calls)

    def stop():
        raise KeyboardInterrupt("told to stop during a reload")

    stats, kept = RunStats(), []
    try:
        _rounds(Steady, few, 30.0, time.monotonic(), lambda s: kept.append(s) or "so far", stats, refresh=stop)
    except KeyboardInterrupt as stopped:
        assert stopped.partial_result == "so far" and len(kept) == 1
    else:
        raise AssertionError("the stop was swallowed")
