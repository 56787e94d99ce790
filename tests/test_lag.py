"""The hang bound widens with the latency a campaign measures (fuzz/harness/lag.py): pure."""
import pytest

from fuzz.harness.lag import GRACE_CAP_S, Lag


def test_an_idle_server_leaves_the_prompt_bound_almost_as_it_is():
    lag = Lag()
    assert lag.grace() == 0.0
    for _ in range(50):
        lag.saw(0.004, prompt_s=5.0)
    assert lag.grace() == pytest.approx(0.04)
    assert lag.slow == 0


def test_a_starved_server_widens_it_up_to_a_cap_and_counts_answers_past_the_bound():
    lag = Lag()
    lag.saw(0.8, prompt_s=5.0)
    assert lag.grace() == pytest.approx(8.0)
    lag.saw(7.5, prompt_s=5.0)  # answered late: not a hang
    assert lag.grace() == GRACE_CAP_S
    assert (lag.slow, lag.slowest_s) == (1, 7.5)


def test_the_slowest_answer_ages_out():
    lag = Lag()
    lag.saw(2.0, prompt_s=5.0)
    for _ in range(200):
        lag.saw(0.01, prompt_s=5.0)
    assert lag.grace() == pytest.approx(0.1)


def test_the_typical_pace_is_the_median_of_answers_the_model_ran():
    lag = Lag()
    assert lag.typical() == 0.0  # none yet: unknown
    for latency in (0.001, 0.002, 0.003):
        lag.saw(latency, prompt_s=5.0, ran=True)
    for _ in range(10):
        lag.saw(0.0001, prompt_s=5.0)  # refusals: the model did not run
    assert lag.typical() == 0.002
